// The results file of `vllm bench serve --save-result`, written beside omni-bench's own:
// vLLM's keys at the top level (so scripts written for vLLM read it unchanged), computed as
// vLLM's calculate_metrics() computes them (vllm/benchmarks/serve.py), and omni-bench's whole
// results object under "omni_bench". Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "omni/benchstat/record.hpp"
#include "omni/benchstat/summary.hpp"

namespace omni::benchstat {

struct VllmResultOptions {
  std::string date;                  // "%Y%m%d-%H%M%S", as vLLM
  std::string backend = "openai";    // vLLM's --backend: "openai" (completions) or "openai-chat"
  std::optional<std::string> label;  // --label
  std::string model_id;
  std::optional<std::uint64_t> num_prompts;
  std::vector<std::pair<std::string, std::string>> metadata;  // --metadata KEY=VALUE, top level
  std::optional<double> request_rate;                         // nullopt or +inf: "inf"
  double burstiness = 1.0;                                    // vLLM's gamma shape
  std::optional<std::uint32_t> max_concurrency;
  // --percentile-metrics (ttft, tpot, itl, e2el) and --metric-percentiles (default "99").
  std::vector<std::string> percentile_metrics = {"ttft", "tpot", "itl"};
  std::vector<double> percentiles = {99};
  bool detailed = false;  // --save-detailed: the per-request lists too
  // omni-bench's results JSON (to_json()), written under "omni_bench"; empty: left out.
  std::string omni_results_json;
};

// Validates "ttft,tpot,itl,e2el" and "50,90,99" as vLLM accepts them.
Result<std::vector<std::string>> parse_percentile_metrics(std::string_view text);
Result<std::vector<double>> parse_metric_percentiles(std::string_view text);

// `records` in request order (the order vLLM's lists have); `duration_s` the benchmark's.
std::string to_vllm_json(std::span<const RequestRecord> records, const Summary& summary,
                         const VllmResultOptions& options);

// vLLM's default file name: {label or
// backend}-{request_rate}qps[-concurrency{N}]-{model}-{date}.json
std::string vllm_result_filename(const VllmResultOptions& options);

// Python's str() of a float ("10.0", "0.5", "inf"), as vLLM's file names and JSON print it.
std::string python_float(double v);

}  // namespace omni::benchstat
