// `vllm bench serve --save-result` files (omni/benchstat/vllm_result.hpp).
#include "omni/benchstat/vllm_result.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>

#include "omni/common/json_text.hpp"

namespace omni::benchstat {
namespace {

std::string number(double v) { return std::isfinite(v) ? fmt::format("{}", v) : "null"; }

std::string quoted(std::string_view text) {
  std::string out;
  json::append_string(out, text);
  return out;
}

// numpy's mean, median, std (population) and percentiles, of `values` in seconds, as ms;
// an empty list is numpy's `values or 0`: every figure 0.
struct Described {
  double mean = 0, median = 0, std = 0;
  std::vector<double> percentiles;
};
Described describe_ms(std::vector<double> values, const std::vector<double>& qs) {
  Described d;
  if (values.empty()) values.push_back(0.0);
  const double n = static_cast<double>(values.size());
  d.mean = std::accumulate(values.begin(), values.end(), 0.0) / n;
  double var = 0;
  for (double v : values) var += (v - d.mean) * (v - d.mean);
  d.std = std::sqrt(var / n) * 1000;
  d.mean *= 1000;
  d.median = percentile(values, 50) * 1000;
  for (double q : qs) d.percentiles.push_back(percentile(values, q) * 1000);
  return d;
}

// vLLM's "p99" / "p99.9" key word for a percentile.
std::string percentile_word(double q) {
  if (q == std::trunc(q)) return fmt::format("{}", static_cast<long long>(q));
  return python_float(q);
}

// vLLM's peak output tokens in any one-second bucket and peak concurrency (sweep line over
// [start, start + latency)), over successful requests.
std::pair<double, std::uint64_t> peaks(std::span<const RequestRecord> records) {
  double min_start = INFINITY, max_end = -INFINITY;
  for (const RequestRecord& r : records) {
    if (!r.ok) continue;
    min_start = std::min(min_start, r.start_s);
    max_end = std::max(max_end, r.start_s + r.e2e_s);
  }
  if (!std::isfinite(min_start)) return {0.0, 0};
  const auto buckets = static_cast<std::size_t>(std::ceil(max_end - min_start)) + 1;
  std::vector<double> tokens(buckets, 0.0);
  std::vector<std::pair<double, int>> events;
  for (const RequestRecord& r : records) {
    if (!r.ok) continue;
    double t = r.start_s + r.ttft_s;
    auto add = [&](double at) {
      const double b = std::floor(at - min_start);
      if (b >= 0 && b < static_cast<double>(buckets)) tokens[static_cast<std::size_t>(b)] += 1;
    };
    add(t);
    for (double itl : r.itl_s) add(t += itl);
    events.emplace_back(r.start_s, 1);
    events.emplace_back(r.start_s + r.e2e_s, -1);
  }
  std::sort(events.begin(), events.end());  // a departure (-1) before an arrival at the same time
  std::int64_t now = 0, peak = 0;
  for (const auto& e : events) peak = std::max(peak, now += e.second);
  return {*std::max_element(tokens.begin(), tokens.end()), static_cast<std::uint64_t>(peak)};
}

template <class F>
std::string list(std::span<const RequestRecord> records, F item) {
  std::string out = "[";
  for (std::size_t i = 0; i < records.size(); ++i) {
    if (i) out += ", ";
    out += item(records[i]);
  }
  return out + "]";
}

}  // namespace

std::string python_float(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "nan";
  if (v == std::trunc(v) && std::abs(v) < 1e16) return fmt::format("{:.1f}", v);
  return fmt::format("{}", v);
}

Result<std::vector<std::string>> parse_percentile_metrics(std::string_view text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto end = std::min(text.find(',', start), text.size());
    const std::string name(text.substr(start, end - start));
    if (name != "ttft" && name != "tpot" && name != "itl" && name != "e2el") {
      return make_error(ErrorCode::kInvalidArgument,
                        "--percentile-metrics: '" + name + "' is not one of ttft, tpot, itl, e2el");
    }
    out.push_back(name);
    start = end + 1;
  }
  return out;
}

Result<std::vector<double>> parse_metric_percentiles(std::string_view text) {
  std::vector<double> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto end = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, end - start);
    double q = 0;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), q);
    if (ec != std::errc() || ptr != item.data() + item.size() || !(q >= 0 && q <= 100)) {
      return make_error(ErrorCode::kInvalidArgument, "--metric-percentiles: '" + std::string(item) +
                                                         "' is not a percentile in [0, 100]");
    }
    out.push_back(q);
    start = end + 1;
  }
  return out;
}

std::string to_vllm_json(std::span<const RequestRecord> records, const Summary& s,
                         const VllmResultOptions& o) {
  std::string out = "{";
  auto key = [&](std::string_view k, const std::string& value) {
    if (out.size() > 1) out += ", ";
    out += quoted(k) + ": " + value;
  };
  // The setup keys, in vLLM's order.
  key("date", quoted(o.date));
  key("endpoint_type", quoted(o.backend));
  key("backend", quoted(o.backend));
  key("label", o.label ? quoted(*o.label) : "null");
  key("model_id", quoted(o.model_id));
  key("tokenizer_id", "null");
  key("num_prompts", o.num_prompts ? std::to_string(*o.num_prompts) : "null");
  for (const auto& [k, v] : o.metadata) key(k, quoted(v));
  key("request_rate",
      !o.request_rate || std::isinf(*o.request_rate) ? "\"inf\"" : number(*o.request_rate));
  key("burstiness", number(o.burstiness));
  key("max_concurrency", o.max_concurrency ? std::to_string(*o.max_concurrency) : "null");
  // calculate_metrics().
  key("duration", number(s.duration_s));
  key("completed", std::to_string(s.completed));
  key("failed", std::to_string(s.failed));
  key("total_input_tokens", std::to_string(s.total_input_tokens));
  key("total_output_tokens", std::to_string(s.total_output_tokens));
  key("request_throughput", number(s.request_throughput));
  key("request_goodput", s.goodput ? number(*s.goodput) : "null");
  key("output_throughput", number(s.output_token_throughput));
  key("total_token_throughput", number(s.total_token_throughput));
  if (o.detailed) {
    key("input_lens",
        list(records, [](const RequestRecord& r) { return std::to_string(r.input_tokens); }));
    key("output_lens", list(records, [](const RequestRecord& r) {
          return std::to_string(r.ok ? r.output_tokens : 0);
        }));
    key("ttfts",
        list(records, [](const RequestRecord& r) { return number(r.ok ? r.ttft_s : 0.0); }));
    key("itls", list(records, [](const RequestRecord& r) {
          std::string l = "[";
          for (std::size_t i = 0; i < r.itl_s.size(); ++i)
            l += (i ? ", " : "") + number(r.itl_s[i]);
          return l + "]";
        }));
    key("start_times", list(records, [](const RequestRecord& r) { return number(r.start_s); }));
    key("generated_texts", list(records, [](const RequestRecord&) { return std::string("\"\""); }));
    key("errors",
        list(records, [](const RequestRecord& r) { return quoted(r.ok ? "" : r.error_message); }));
  }
  key("latencies",
      list(records, [](const RequestRecord& r) { return number(r.ok ? r.e2e_s : 0.0); }));
  const auto [peak_tokens, peak_concurrency] = peaks(records);
  key("max_output_tokens_per_s", number(peak_tokens));
  key("max_concurrent_requests", std::to_string(peak_concurrency));
  key("rtfx", "0.0");
  // process_one_metric() for each selected metric, over successful requests.
  std::vector<double> ttft, tpot, itl, e2el;
  for (const RequestRecord& r : records) {
    if (!r.ok) continue;
    ttft.push_back(r.ttft_s);
    e2el.push_back(r.e2e_s);
    if (auto t = tpot_s(r)) tpot.push_back(*t);
    itl.insert(itl.end(), r.itl_s.begin(), r.itl_s.end());
  }
  for (const std::string& metric : o.percentile_metrics) {
    const std::vector<double>& values = metric == "ttft"   ? ttft
                                        : metric == "tpot" ? tpot
                                        : metric == "itl"  ? itl
                                                           : e2el;
    const Described d = describe_ms(values, o.percentiles);
    key("mean_" + metric + "_ms", number(d.mean));
    key("median_" + metric + "_ms", number(d.median));
    key("std_" + metric + "_ms", number(d.std));
    for (std::size_t k = 0; k < o.percentiles.size(); ++k) {
      key("p" + percentile_word(o.percentiles[k]) + "_" + metric + "_ms", number(d.percentiles[k]));
    }
  }
  if (!o.omni_results_json.empty()) key("omni_bench", o.omni_results_json);
  return out + "}";
}

std::string vllm_result_filename(const VllmResultOptions& o) {
  std::string model = o.model_id;
  if (auto slash = model.rfind('/'); slash != std::string::npos) model = model.substr(slash + 1);
  const double rate = o.request_rate.value_or(INFINITY);
  std::string name = o.label.value_or(o.backend) + "-" + python_float(rate) + "qps";
  if (o.max_concurrency) name += "-concurrency" + std::to_string(*o.max_concurrency);
  return name + "-" + model + "-" + o.date + ".json";
}

}  // namespace omni::benchstat
