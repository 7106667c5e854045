// What omni-bench does before measuring: ask the server what it is (its model, and a
// sped-up clock's speed for model time), warm it up, reset its prefix cache.
#pragma once

#include <optional>
#include <string>

#include "omni/common/result.hpp"
#include "omni/workload/request_spec.hpp"
#include "options.hpp"

namespace omni::bench {

struct ServerInfo {
  std::optional<double> speed;  // omni-sim's /version "omni_sim":{"speed"}
  std::string model_id;         // /v1/models data[0].root (else .id), as vllm bench serve reads it
};

// GET /version (when `speed`) and /v1/models (when `model`), each bounded by a few seconds;
// what did not answer stays unset (any OpenAI server works).
ServerInfo probe_server(const Options& options, bool speed, bool model);

// Sends `spec` `count` times (at most --concurrency at once) and waits for every answer, as
// vllm bench serve's --num-warmups; kUnavailable when none completed.
Status warm_up(const Options& options, const workload::RequestSpec& spec, std::uint32_t count);

// POST /reset_prefix_cache; the server's error (status and message) when it refused.
Status reset_prefix_cache(const Options& options);

}  // namespace omni::bench
