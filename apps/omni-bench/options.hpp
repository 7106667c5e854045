// omni-bench's run options, validated once: a bad flag is reported before anything is sent.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "omni/benchstat/summary.hpp"
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
  std::string endpoint = "/v1/completions";
  std::string model;
  std::string trace;
  std::string trace_format = "mooncake";
  std::string synthetic;
  std::uint32_t system_prompt_tokens = 0;
  std::optional<double> request_rate;  // +inf allowed
  double burstiness = 1.0;
  std::uint32_t concurrency = 0;  // 0: unlimited
  double time_scale = 1.0;
  std::uint64_t max_requests = 0;  // 0: the whole workload
  std::string duration;            // e.g. "60s"; empty: no limit
  std::string timeout = "300s";
  std::string slo;
  std::string out;
  std::string requests_out;
  std::uint64_t seed = 0;
  std::uint32_t vocab_begin = 1000;
  std::uint32_t vocab_end = 30000;
  bool no_ignore_eos = false;
  bool progress = false;
  bool no_progress = false;
};

// The validated form the runner uses.
struct Options {
  http::Endpoint server;
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
};

// "http://host:port[/prefix]" → endpoint and path prefix (no trailing slash).
Result<std::pair<http::Endpoint, std::string>> parse_base_url(std::string_view url);
// Every flag checked; the message names the flag.
Result<Options> validate(const Flags& flags, bool stderr_is_tty);
// The workload the flags name (a trace file or a synthetic spec).
Result<std::unique_ptr<workload::Workload>> open_workload(const Flags& flags);
// The "config" object of the results JSON: what was run, so two files can be told apart.
std::string config_json(const Flags& flags);

}  // namespace omni::bench
