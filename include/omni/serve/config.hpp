// omni-serve's configuration: vLLM's flag names where vLLM has the flag (--host, --port,
// --max-model-len, --max-num-seqs, --max-num-batched-tokens, --block-size,
// --enable-prefix-caching, --prefix-caching-hash-algo, --kv-events-config,
// --kv-transfer-config, --speculative-config, --enable-expert-parallel,
// --data-parallel-size, --enable-eplb, --eplb-config, --served-model-name, --seed,
// --num-gpu-blocks-override, --kv-cache-memory-bytes, --enable-prompt-tokens-details), the CPU
// engine's own for the rest (--threads, --cache-dtype, --isa, ...). Every field is settable
// from a YAML file (--config FILE) and from a flag of the same name.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "omni/common/clock.hpp"
#include "omni/common/result.hpp"
#include "omni/config/runtime.hpp"
#include "omni/config/schema.hpp"

namespace omni::serve {

using namespace std::chrono_literals;

struct ServeConfig {
  std::string model;  // the positional MODEL: an HF directory or a .gguf file
  std::string host = "127.0.0.1";
  std::uint16_t port = 8000;
  std::vector<std::string> served_model_name;
  std::uint32_t max_model_len = 4096;
  std::uint32_t max_num_seqs = 64;
  std::uint32_t max_num_batched_tokens = 2048;
  std::uint32_t block_size = 16;
  std::optional<std::uint64_t> num_gpu_blocks_override;
  std::uint64_t kv_cache_memory_bytes = 512ull << 20;
  bool enable_prefix_caching = true;
  std::string prefix_caching_hash_algo = "sha256";
  std::optional<std::string> kv_events_config;
  std::optional<std::string> kv_transfer_config;
  std::optional<std::string> speculative_config;
  bool enable_expert_parallel = false;
  std::uint32_t data_parallel_size = 1;  // with --enable-expert-parallel: the expert ranks
  bool enable_eplb = false;
  std::optional<std::string> eplb_config;
  std::optional<std::string> expert_placement;  // an `omni-placement plan` JSON file
  std::uint64_t seed = 0;
  bool enable_prompt_tokens_details = false;
  std::optional<std::string> tokenizer;  // default: the model's tokenizer.json
  // The CPU engine.
  int threads = 1;
  bool pin_threads = false;
  std::string cache_dtype = "bf16";
  std::string isa;  // empty: the best (or OMNI_FORCE_ISA)
  std::string gemm = "blas";
  bool fused = true;
  bool check_weights = true;
  // PD: the KV-transfer side channel (NIXL's VLLM_NIXL_SIDE_CHANNEL_HOST/PORT); port 0 picks a
  // free one. The environment variables win over the defaults, flags over both.
  std::optional<std::string> kv_transfer_host;
  std::optional<std::uint16_t> kv_transfer_port;
  std::uint64_t kv_staging_bytes = 256ull << 20;  // decode side: fetched KV waiting for blocks
  unsigned io_threads = 1;
  std::uint32_t max_in_flight = 4096;  // requests in the engine or waiting for KV (503 beyond)
  Duration request_timeout = 600s;
  config::LogConfig log;
};

void describe(config::Schema<ServeConfig>& s);

// --speculative-config '{"method":"deepseek_mtp","num_speculative_tokens":k}' (vLLM's JSON;
// "mtp" is accepted for the method too). nullopt: off.
struct SpeculativeConfig {
  std::uint32_t num_speculative_tokens = 1;
};
Result<std::optional<SpeculativeConfig>> parse_speculative_config(
    const std::optional<std::string>& json);

// --eplb-config (vLLM's JSON keys, and omni-serve's own): when and how the live rebalancer
// runs on the counted expert loads.
struct EplbConfig {
  std::uint32_t window_size = 32;    // steps of loads the smoother's window covers
  std::uint32_t step_interval = 64;  // rebalance every this many steps (0: only on imbalance)
  std::uint32_t num_redundant_experts = 0;  // extra slots per layer for hot copies
  double imbalance_threshold = 1.25;        // or sooner when max / mean rank load exceeds this
  std::uint32_t max_moves = 8;              // weight moves per rebalance
  double smoothing = 0.5;                   // weight of the newest window in the moving average
  bool log_balancedness = false;
};
Result<EplbConfig> parse_eplb_config(const std::optional<std::string>& json);

// What --kv-transfer-config asks of omni-serve (vLLM's NixlConnector form).
struct KvTransfer {
  bool enabled = false;
  std::string role = "kv_both";            // kv_producer, kv_consumer, kv_both
  std::string engine_id;                   // empty: a random one
  double lease_seconds = 30.0;             // kv_connector_extra_config.kv_lease_duration
  bool recompute_on_load_failure = false;  // kv_load_failure_policy (vLLM's default: fail)
};
Result<KvTransfer> parse_kv_transfer(const std::optional<std::string>& json);

}  // namespace omni::serve
