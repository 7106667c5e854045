// omni-sim's /metrics: vLLM's names, types, labels (model_name, engine) and bucket bounds
// (spec §4), plus omni_sim_* metrics of its own (faults, KV events, HTTP). Times are in the
// model's virtual seconds (equal to wall seconds at --speed 1).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "omni/common/result.hpp"
#include "omni/metrics/metrics.hpp"

namespace omni::sim {

struct FinishedRequest {
  std::string finished_reason;  // stop, length, abort, error
  std::uint32_t prompt_tokens = 0;
  std::uint32_t generation_tokens = 0;
  std::uint32_t max_tokens_param = 0;
  double queue_s = 0, prefill_s = 0, decode_s = 0, ttft_s = 0, e2e_s = 0;
};

// Live values read at scrape time (from the driver's last step).
struct EngineGauges {
  double running = 0, waiting = 0, kv_cache_usage = 0;
  double prefix_cache_queries = 0, prefix_cache_hits = 0, preemptions = 0;
  double held = 0;  // PD prefill side: requests holding KV for a decode instance
};

struct CacheInfo {
  std::uint32_t block_size = 16;
  std::string hash_algo = "sha256";
  bool enable_prefix_caching = true;
  std::uint64_t num_gpu_blocks = 0;
};

class SimMetrics {
 public:
  static Result<std::unique_ptr<SimMetrics>> create(metrics::Registry& registry,
                                                    const std::string& model_name,
                                                    std::uint32_t max_model_len,
                                                    const CacheInfo& cache,
                                                    std::function<EngineGauges()> gauges);

  void on_step(std::uint32_t scheduled_tokens);
  // A request's prompt, counted once with its first output token as vLLM's iteration stats do
  // (PromptTokenStats): `cached` is vLLM's num_cached_tokens (local prefix hits plus KV
  // transferred, at most prompt - 1), `external` the tokens whose KV was transferred.
  void on_prompt(std::uint32_t prompt, std::uint32_t cached, std::uint32_t external);
  // PD prefill side: a hold registered ("held") or ended ("pulled", "expired", "aborted"), or
  // a second request refused a key already held ("refused").
  void on_kv_hold(const std::string& outcome);
  // PD decode side: the remote KV could not be loaded (`reason`: not_held, unreachable,
  // bootstrap_timeout) and the request was recomputed locally or failed (`action`).
  void on_kv_load_failure(const std::string& reason, const std::string& action);
  void on_tokens(std::uint32_t new_tokens, double since_last_token_s, bool first);
  void on_finish(const FinishedRequest& r);
  void on_fault(const std::string& kind);
  void on_kv_events(std::uint64_t batches_dropped_total_delta, std::uint64_t published_delta);
  void on_http(const std::string& route, int status);

 private:
  SimMetrics() = default;
  Status init(metrics::Registry& registry, const std::string& model, std::uint32_t max_model_len,
              const CacheInfo& cache, std::function<EngineGauges()> gauges);

  metrics::Registry* registry_ = nullptr;
  std::string model_;
  metrics::Counter* prompt_tokens_ = nullptr;
  metrics::Counter* prompt_tokens_cached_ = nullptr;
  metrics::Counter* prompt_tokens_recomputed_ = nullptr;
  metrics::Counter* prompt_local_compute_ = nullptr;
  metrics::Counter* prompt_local_cache_hit_ = nullptr;
  metrics::Counter* prompt_external_ = nullptr;
  metrics::CounterFamily* kv_holds_ = nullptr;
  metrics::CounterFamily* kv_load_failures_ = nullptr;
  metrics::Counter* generation_tokens_ = nullptr;
  metrics::Histogram* ttft_ = nullptr;
  metrics::Histogram* itl_ = nullptr;
  metrics::Histogram* tpot_ = nullptr;
  metrics::Histogram* e2e_ = nullptr;
  metrics::Histogram* queue_ = nullptr;
  metrics::Histogram* inference_ = nullptr;
  metrics::Histogram* prefill_ = nullptr;
  metrics::Histogram* decode_ = nullptr;
  metrics::Histogram* req_prompt_tokens_ = nullptr;
  metrics::Histogram* req_generation_tokens_ = nullptr;
  metrics::Histogram* req_max_tokens_ = nullptr;
  metrics::Histogram* iteration_tokens_ = nullptr;
  metrics::CounterFamily* success_ = nullptr;
  metrics::CounterFamily* faults_ = nullptr;
  metrics::CounterFamily* http_ = nullptr;
  metrics::Counter* kv_published_ = nullptr;
  metrics::Counter* kv_dropped_ = nullptr;
};

}  // namespace omni::sim
