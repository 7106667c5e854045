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

Status validate_mode(const Flags& f, Options& o) {
  if (f.time_scale <= 0 || !std::isfinite(f.time_scale)) return flag_error("--time-scale", "must be > 0");
  if (f.burstiness <= 0 || !std::isfinite(f.burstiness)) return flag_error("--burstiness", "must be > 0");
  o.concurrency = f.concurrency;
  o.pacing.time_scale = f.time_scale;
  o.pacing.burstiness = f.burstiness;
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

}  // namespace

Result<std::pair<http::Endpoint, std::string>> parse_base_url(std::string_view url) {
  constexpr std::string_view kScheme = "http://";
  if (!url.starts_with(kScheme)) return flag_error("--base-url", "expected http://HOST:PORT (https is not supported)");
  std::string_view rest = url.substr(kScheme.size());
  const auto slash = rest.find('/');
  std::string prefix(slash == std::string_view::npos ? "" : rest.substr(slash));
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  auto endpoint = http::Endpoint::parse(rest.substr(0, slash));
  if (!endpoint) return flag_error("--base-url", endpoint.error().message);
  return std::pair{*endpoint, prefix};
}

Result<Options> validate(const Flags& f, bool stderr_is_tty) {
  Options o;
  auto url = parse_base_url(f.base_url);
  if (!url) return url.error();
  o.server = url->first;
  if (f.endpoint.empty() || f.endpoint.front() != '/') return flag_error("--endpoint", "must start with '/'");
  o.target = url->second + f.endpoint;
  auto api = workload::api_of_endpoint(f.endpoint);
  if (!api) return flag_error("--endpoint", api.error().message);
  o.body.api = *api;
  o.body.model = f.model;
  o.body.ignore_eos = !f.no_ignore_eos;
  if (f.vocab_begin >= f.vocab_end) return flag_error("--vocab-begin", "must be below --vocab-end");
  o.body.prompt.vocab_begin = f.vocab_begin;
  o.body.prompt.vocab_end = f.vocab_end;
  o.body.prompt.salt = 0;  // block contents depend on the trace only, never on --seed
  if (f.trace.empty() == f.synthetic.empty()) return flag_error("workload", "give exactly one of --trace or --synthetic");
  if (auto s = validate_mode(f, o); !s) return std::move(s).error();
  o.max_requests = f.max_requests;
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
  o.seed = f.seed;
  o.progress = f.progress || (stderr_is_tty && !f.no_progress);
  return o;
}

Result<std::unique_ptr<workload::Workload>> open_workload(const Flags& f) {
  if (!f.synthetic.empty()) {
    auto spec = workload::parse_synthetic_spec(f.synthetic);
    if (!spec) return flag_error("--synthetic", spec.error().message);
    return workload::make_synthetic_workload(*spec, f.seed);
  }
  auto format = workload::parse_trace_format(f.trace_format);
  if (!format) return flag_error("--trace-format", format.error().message);
  workload::TraceOptions options;
  options.system_prompt_tokens = f.system_prompt_tokens;
  return workload::open_trace_workload(f.trace, *format, options);
}

std::string config_json(const Flags& f) {
  std::string workload = f.synthetic.empty() ? fmt::format("{}:{}", f.trace_format, f.trace) : "synthetic:" + f.synthetic;
  std::string rate = "null";
  if (f.request_rate) rate = std::isfinite(*f.request_rate) ? fmt::format("{}", *f.request_rate) : "\"inf\"";
  return fmt::format(
      R"({{"tool":"omni-bench","base_url":{},"endpoint":{},"model":{},"workload":{},"request_rate":{},)"
      R"("burstiness":{},"concurrency":{},"time_scale":{},"max_requests":{},"duration":{},"timeout":{},"seed":{}}})",
      json_string(f.base_url), json_string(f.endpoint), json_string(f.model), json_string(workload), rate,
      f.burstiness, f.concurrency, f.time_scale, f.max_requests, json_string(f.duration), json_string(f.timeout),
      f.seed);
}

}  // namespace omni::bench
