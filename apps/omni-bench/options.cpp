#include "options.hpp"

#include <fmt/format.h>

#include <cmath>

#include "omni/config/codec.hpp"
#include "omni/workload/synthetic.hpp"
#include "omni/workload/trace.hpp"

namespace omni::bench {
namespace {

Error flag_error(std::string_view flag, std::string_view why) {
  return make_error(ErrorCode::kInvalidArgument, fmt::format("{}: {}", flag, why));
}

std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out.push_back('\\');
    if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
      continue;
    }
    out.push_back(c);
  }
  return out + "\"";
}

// vLLM's --dataset-name random as a synthetic spec: lengths uniform in [len(1-r), len(1+r)],
// a shared prefix before every prompt, all sent at once unless --request-rate says otherwise.
Status fold_random_dataset(Flags& f) {
  if (f.dataset_name.empty()) return ok_status();
  if (f.dataset_name != "random") {
    return flag_error("--dataset-name",
                      "only 'random' is generated here; replay Mooncake or Azure traces "
                      "with --trace (or --dataset-path)");
  }
  if (!f.trace.empty() || !f.synthetic.empty()) {
    return flag_error("--dataset-name", "random makes its own prompts: drop --trace/--synthetic");
  }
  const double r = f.random_range_ratio;
  if (!(r >= 0 && r < 1)) return flag_error("--random-range-ratio", "must be in [0, 1)");
  auto dist = [r](std::uint32_t len) {
    if (r == 0) return fmt::format("const:{}", len);
    const auto lo = static_cast<std::uint64_t>(std::floor(len * (1 - r)));
    const auto hi = static_cast<std::uint64_t>(std::ceil(len * (1 + r)));
    return fmt::format("uniform:{}:{}", std::max<std::uint64_t>(lo, 1),
                       std::max<std::uint64_t>(hi, 1));
  };
  f.synthetic =
      fmt::format("n={},input={},output={},system={}", f.num_prompts.value_or(1000),
                  dist(f.random_input_len), dist(f.random_output_len), f.random_prefix_len);
  if (!f.request_rate) f.request_rate = INFINITY;  // vLLM's default: everything at once
  return ok_status();
}

// vLLM's --goodput KEY:VALUE (ms) as omni-bench's --slo.
Status fold_goodput(Flags& f) {
  if (f.goodput.empty()) return ok_status();
  if (!f.slo.empty()) return flag_error("--goodput", "give --slo or --goodput, not both");
  std::string slo;
  for (const std::string& item : f.goodput) {
    const auto colon = item.find(':');
    if (colon == std::string::npos) {
      return flag_error("--goodput",
                        fmt::format("'{}': expected KEY:VALUE (milliseconds), as vLLM", item));
    }
    std::string name = item.substr(0, colon);
    if (name == "e2el") name = "e2e";
    if (name != "ttft" && name != "tpot" && name != "e2e") {
      return flag_error("--goodput",
                        fmt::format("'{}': the metric must be ttft, tpot or e2el", item));
    }
    slo += fmt::format("{}{}={}ms", slo.empty() ? "" : ",", name, item.substr(colon + 1));
  }
  f.slo = slo;
  return ok_status();
}

Status validate_mode(const Flags& f, Options& o) {
  if (f.time_scale <= 0 || !std::isfinite(f.time_scale))
    return flag_error("--time-scale", "must be > 0");
  if (f.burstiness && f.arrival_cv)
    return flag_error("--burstiness", "give --burstiness or --arrival-cv, not both");
  double cv = 1.0;
  if (f.burstiness) {
    if (!(*f.burstiness > 0) || !std::isfinite(*f.burstiness))
      return flag_error("--burstiness", "must be > 0");
    cv = 1.0 / std::sqrt(*f.burstiness);
    o.notes.push_back(
        fmt::format("--burstiness is vLLM's gamma shape: {} gives a coefficient of variation of "
                    "{:.4g}; omni-bench's "
                    "former --burstiness (the coefficient of variation itself) is now --arrival-cv",
                    *f.burstiness, cv));
  }
  if (f.arrival_cv) {
    if (!(*f.arrival_cv > 0) || !std::isfinite(*f.arrival_cv))
      return flag_error("--arrival-cv", "must be > 0");
    cv = *f.arrival_cv;
  }
  o.concurrency = f.concurrency;
  o.pacing.time_scale = f.time_scale;
  o.pacing.burstiness = cv;
  if (f.request_rate) {
    if (!(*f.request_rate > 0)) return flag_error("--request-rate", "must be > 0 (or inf)");
    o.pacing.mode = workload::PacingOptions::Mode::kRate;
    o.pacing.rate = *f.request_rate;
  } else if (f.concurrency > 0) {
    // Fixed concurrency without a rate: a closed loop, the next request as a slot frees.
    o.pacing.mode = workload::PacingOptions::Mode::kBurst;
  } else {
    o.pacing.mode = workload::PacingOptions::Mode::kTrace;
  }
  return ok_status();
}

Status validate_time_base(const Flags& f, Options& o) {
  if (f.server_speed) {
    if (!(*f.server_speed > 0) || !std::isfinite(*f.server_speed))
      return flag_error("--server-speed", "must be > 0");
    if (f.time_base == "wall")
      return flag_error("--server-speed", "means model time: drop --time-base wall");
    o.server_speed = *f.server_speed;
  }
  o.detect_speed = f.time_base != "wall" && !f.server_speed;
  return ok_status();
}

Status validate_outputs(const Flags& f, Options& o) {
  auto metrics = benchstat::parse_percentile_metrics(f.percentile_metrics);
  if (!metrics) return metrics.error();
  auto percentiles = benchstat::parse_metric_percentiles(f.metric_percentiles);
  if (!percentiles) return percentiles.error();
  o.percentile_metrics = *metrics;
  o.percentiles = *percentiles;
  for (const std::string& item : f.metadata) {
    const auto eq = item.find('=');
    if (eq == std::string::npos)
      return flag_error("--metadata", fmt::format("'{}': expected KEY=VALUE", item));
    o.metadata.emplace_back(item.substr(0, eq), item.substr(eq + 1));
  }
  if (!f.save_result && (f.save_detailed || !f.result_dir.empty() || !f.result_filename.empty())) {
    return flag_error("--save-detailed/--result-dir/--result-filename",
                      "apply to --save-result: add it");
  }
  return ok_status();
}

}  // namespace

Result<std::pair<http::Endpoint, std::string>> parse_base_url(std::string_view url) {
  constexpr std::string_view kScheme = "http://";
  if (!url.starts_with(kScheme))
    return flag_error("--base-url", "expected http://HOST:PORT (https is not supported)");
  std::string_view rest = url.substr(kScheme.size());
  const auto slash = rest.find('/');
  std::string prefix(slash == std::string_view::npos ? "" : rest.substr(slash));
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  auto endpoint = http::Endpoint::parse(rest.substr(0, slash));
  if (!endpoint) return flag_error("--base-url", endpoint.error().message);
  return std::pair{*endpoint, prefix};
}

Result<Options> validate(Flags& f, bool stderr_is_tty) {
  Options o;
  if (f.base_url.empty())
    f.base_url = fmt::format("http://{}:{}", f.host, f.port);  // vLLM's default
  auto url = parse_base_url(f.base_url);
  if (!url) return url.error();
  o.server = url->first;
  o.prefix = url->second;
  if (!f.endpoint_given && f.backend == "openai-chat") f.endpoint = "/v1/chat/completions";
  if (f.endpoint.empty() || f.endpoint.front() != '/')
    return flag_error("--endpoint", "must start with '/'");
  o.target = url->second + f.endpoint;
  auto api = workload::api_of_endpoint(f.endpoint);
  if (!api) return flag_error("--endpoint", api.error().message);
  o.body.api = *api;
  o.body.model = f.model;
  if (f.ignore_eos && f.no_ignore_eos)
    return flag_error("--ignore-eos", "contradicts --no-ignore-eos");
  o.body.ignore_eos = !f.no_ignore_eos;
  if (f.vocab_begin >= f.vocab_end) return flag_error("--vocab-begin", "must be below --vocab-end");
  o.body.prompt.vocab_begin = f.vocab_begin;
  o.body.prompt.vocab_end = f.vocab_end;
  o.body.prompt.salt = 0;  // block contents depend on the trace only, never on --seed
  if (Status s = fold_random_dataset(f); !s) return std::move(s).error();
  if (Status s = fold_goodput(f); !s) return std::move(s).error();
  if (f.trace.empty() == f.synthetic.empty()) {
    return flag_error("workload",
                      "give exactly one of --trace, --synthetic or --dataset-name random");
  }
  if (Status s = validate_mode(f, o); !s) return std::move(s).error();
  o.max_requests = f.max_requests;
  if (f.num_prompts && o.max_requests == 0) o.max_requests = *f.num_prompts;
  if (!f.duration.empty()) {
    auto d = config::parse_duration(f.duration);
    if (!d) return flag_error("--duration", d.error().message);
    if (d->count() <= 0) return flag_error("--duration", "must be > 0");
    o.duration_s = to_seconds(*d);
  }
  auto timeout = config::parse_duration(f.timeout);
  if (!timeout) return flag_error("--timeout", timeout.error().message);
  if (timeout->count() <= 0) return flag_error("--timeout", "must be > 0");
  o.timeout = *timeout;
  auto slo = benchstat::parse_slo(f.slo);
  if (!slo) return slo.error();
  o.slo = *slo;
  if (Status s = validate_time_base(f, o); !s) return std::move(s).error();
  if (Status s = validate_outputs(f, o); !s) return std::move(s).error();
  o.seed = f.seed;
  o.request_id_prefix = f.request_id_prefix;
  o.num_warmups = f.num_warmups;
  o.reset_prefix_cache = f.reset_prefix_cache;
  o.progress = f.progress || (stderr_is_tty && !f.no_progress);
  return o;
}

void apply_server_speed(Options& o, double speed) {
  o.server_speed = speed;
  // The workload's times, rates and --duration are model time: S model seconds pass per wall
  // second.
  o.pacing.time_scale /= speed;
  o.pacing.rate *= speed;
  if (o.duration_s) *o.duration_s /= speed;
}

Result<std::unique_ptr<workload::Workload>> open_workload(const Flags& f) {
  if (!f.synthetic.empty()) {
    auto spec = workload::parse_synthetic_spec(f.synthetic);
    if (!spec) return flag_error("--synthetic", spec.error().message);
    return workload::make_synthetic_workload(*spec, f.seed);
  }
  auto detected = workload::detect_trace_file_format(f.trace);
  if (!detected && detected.error().code == ErrorCode::kNotFound) return detected.error();
  workload::TraceFormat format;
  if (f.trace_format == "auto") {
    if (!detected)
      return flag_error("--trace", detected.error().message + " (or give --trace-format)");
    format = *detected;
  } else {
    auto given = workload::parse_trace_format(f.trace_format);
    if (!given) return flag_error("--trace-format", given.error().message);
    if (detected && *detected != *given) {
      return flag_error("--trace-format",
                        fmt::format("{}, but {} looks like the {} format", f.trace_format, f.trace,
                                    workload::trace_format_name(*detected)));
    }
    format = *given;
  }
  workload::TraceOptions options;
  options.system_prompt_tokens = f.system_prompt_tokens;
  return workload::open_trace_workload(f.trace, format, options);
}

std::string config_json(const Flags& f, const Options& o) {
  std::string workload = f.synthetic.empty() ? fmt::format("{}:{}", f.trace_format, f.trace)
                                             : "synthetic:" + f.synthetic;
  std::string rate = "null";
  if (f.request_rate)
    rate = std::isfinite(*f.request_rate) ? fmt::format("{}", *f.request_rate) : "\"inf\"";
  const double cv = o.pacing.burstiness;
  return fmt::format(
      R"({{"tool":"omni-bench","label":{},"base_url":{},"endpoint":{},"model":{},"workload":{},"request_rate":{},)"
      R"("arrival_cv":{},"burstiness":{},"concurrency":{},"time_scale":{},"max_requests":{},"duration":{},)"
      R"("timeout":{},"seed":{},"num_warmups":{},"reset_prefix_cache":{}}})",
      f.label.empty() ? "null" : json_string(f.label), json_string(f.base_url),
      json_string(f.endpoint), json_string(f.model), json_string(workload), rate, cv,
      1.0 / (cv * cv), f.concurrency, f.time_scale, o.max_requests, json_string(f.duration),
      json_string(f.timeout), f.seed, f.num_warmups, f.reset_prefix_cache);
}

benchstat::VllmResultOptions vllm_result_options(const Flags& f, const Options& o,
                                                 const std::string& model_id) {
  benchstat::VllmResultOptions v;
  v.backend = f.backend.empty() ? (o.body.api == workload::Api::kChat ? "openai-chat" : "openai")
                                : f.backend;
  if (!f.label.empty()) v.label = f.label;
  v.model_id = model_id;
  v.num_prompts = f.num_prompts ? f.num_prompts
                                : (o.max_requests ? std::optional(o.max_requests) : std::nullopt);
  v.metadata = o.metadata;
  v.request_rate = f.request_rate;
  const double cv = o.pacing.burstiness;
  v.burstiness = 1.0 / (cv * cv);
  if (f.concurrency > 0) v.max_concurrency = f.concurrency;
  v.percentile_metrics = o.percentile_metrics;
  v.percentiles = o.percentiles;
  v.detailed = f.save_detailed;
  return v;
}

}  // namespace omni::bench
