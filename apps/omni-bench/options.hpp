// omni-bench's run options, validated once: a bad flag is reported before anything is sent.
// vLLM's `vllm bench serve` spellings are accepted with vLLM's meaning (flags.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "omni/benchstat/summary.hpp"
#include "omni/benchstat/vllm_result.hpp"
#include "omni/common/clock.hpp"
#include "omni/common/result.hpp"
#include "omni/http/client.hpp"
#include "omni/workload/openai_request.hpp"
#include "omni/workload/pacing.hpp"
#include "omni/workload/request_spec.hpp"

namespace omni::bench {

// What the command line gives, as typed text and numbers.
struct Flags {
  std::string base_url;
  std::string host = "127.0.0.1";  // vLLM's --host/--port, used without --base-url
  std::uint16_t port = 8000;
  std::string endpoint = "/v1/completions";
  bool endpoint_given = false;
  std::string backend;  // vLLM's --backend: openai, vllm (completions) or openai-chat
  std::string model;
  std::string trace;  // --trace, or vLLM's --dataset-path
  std::string trace_format = "auto";
  std::string synthetic;
  std::string dataset_name;  // vLLM's --dataset-name: only "random" (a synthetic workload)
  std::optional<std::uint64_t> num_prompts;
  std::uint32_t random_input_len = 1024, random_output_len = 128, random_prefix_len = 0;
  double random_range_ratio = 0.0;
  std::uint32_t system_prompt_tokens = 0;
  std::optional<double> request_rate;  // +inf allowed
  std::optional<double> burstiness;    // vLLM's gamma shape
  std::optional<double> arrival_cv;    // coefficient of variation of the gaps
  std::uint32_t concurrency = 0;       // 0: unlimited (--concurrency, vLLM's --max-concurrency)
  double time_scale = 1.0;
  std::uint64_t max_requests = 0;  // 0: the whole workload
  std::string duration;            // e.g. "60s"; empty: no limit
  std::string timeout = "300s";
  std::string slo;
  std::vector<std::string> goodput;  // vLLM's --goodput ttft:2000 tpot:80 (ms)
  std::string out;
  std::string requests_out;
  std::uint64_t seed = 0;
  std::uint32_t vocab_begin = 1000;
  std::uint32_t vocab_end = 30000;
  bool no_ignore_eos = false;
  bool ignore_eos = false;  // vLLM's --ignore-eos: omni-bench's default already
  bool progress = false;
  bool no_progress = false;  // also vLLM's --disable-tqdm
  std::string request_id_prefix = "omni-bench-";
  std::uint32_t num_warmups = 0;
  bool reset_prefix_cache = false;
  std::string time_base = "auto";  // auto, model, wall
  std::optional<double> server_speed;
  // vLLM's result file.
  bool save_result = false;
  bool save_detailed = false;
  std::string result_dir;
  std::string result_filename;
  std::string label;
  std::vector<std::string> metadata;
  std::string percentile_metrics = "ttft,tpot,itl";
  std::string metric_percentiles = "99";
};

// The validated form the runner uses.
struct Options {
  http::Endpoint server;
  std::string prefix;  // the base URL's path prefix (for /version, /reset_prefix_cache)
  std::string target;  // base URL path prefix + endpoint
  workload::BodyOptions body;
  workload::PacingOptions pacing;
  std::uint32_t concurrency = 0;
  std::uint64_t max_requests = 0;
  std::optional<double> duration_s;
  Duration timeout = std::chrono::seconds(300);
  benchstat::Slo slo;
  std::uint64_t seed = 0;
  bool progress = false;
  std::string request_id_prefix = "omni-bench-";
  std::uint32_t num_warmups = 0;
  bool reset_prefix_cache = false;
  // Model time: the server's clock speed-up when known (--server-speed, or detected); times are
  // then reported, paced and judged against SLOs in model time.
  std::optional<double> server_speed;
  bool detect_speed = true;  // --time-base auto
  std::vector<std::string> percentile_metrics;
  std::vector<double> percentiles;
  std::vector<std::pair<std::string, std::string>> metadata;
  std::vector<std::string> notes;  // warnings to print before the run (old spellings, ...)
};

// "http://host:port[/prefix]" → endpoint and path prefix (no trailing slash).
Result<std::pair<http::Endpoint, std::string>> parse_base_url(std::string_view url);
// Every flag checked; the message names the flag. vLLM's spellings are folded into ours here.
Result<Options> validate(Flags& flags, bool stderr_is_tty);
// Model time: the pacing of `options` turned into wall time for a server `speed` times faster.
void apply_server_speed(Options& options, double speed);
// The workload the flags name (a trace file, its format detected unless given, or a synthetic
// spec); validate() must have run.
Result<std::unique_ptr<workload::Workload>> open_workload(const Flags& flags);
// The "config" object of the results JSON: what was run, so two files can be told apart.
std::string config_json(const Flags& flags, const Options& options);
// vLLM's --save-result options from the flags.
benchstat::VllmResultOptions vllm_result_options(const Flags& flags, const Options& options,
                                                 const std::string& model_id);

}  // namespace omni::bench
