// omni-sim's configuration: vLLM's flag names where vLLM has the flag (--host, --port,
// --max-num-seqs, ...), our own for the rest (--hardware, --speed, --fault-*). Every field is
// settable from a YAML file (--config FILE) and from a flag of the same name.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "omni/common/clock.hpp"
#include "omni/common/result.hpp"
#include "omni/config/runtime.hpp"
#include "omni/config/schema.hpp"
#include "omni/engine/cost_model.hpp"
#include "omni/engine/engine.hpp"
#include "omni/kvcache/block_hash.hpp"
#include "omni/kvcache/zmq_publisher.hpp"

namespace omni::sim {

using namespace std::chrono_literals;

struct SimConfig {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8000;
  std::string model = "deepseek-ai/DeepSeek-V3";
  std::vector<std::string> served_model_name;
  std::optional<std::string> model_profile;
  std::string hardware = "h800";
  std::uint32_t max_num_seqs = 256;
  std::uint32_t max_num_batched_tokens = 8192;
  std::uint32_t block_size = 16;
  std::optional<std::uint64_t> num_gpu_blocks_override;
  std::optional<std::uint32_t> max_model_len;
  // Unset (neither flag, nor --num-gpu-blocks-override): omni-sim picks a layout that fits.
  std::optional<std::uint32_t> tensor_parallel_size;
  std::optional<std::uint32_t> data_parallel_size;
  bool enable_expert_parallel = false;
  bool enable_prefix_caching = true;
  std::string prefix_caching_hash_algo = "sha256";
  std::uint32_t num_speculative_tokens = 0;
  double speculative_acceptance_rate = 0.85;
  std::optional<std::string> kv_events_config;
  std::optional<std::string> kv_transfer_config;
  std::optional<std::string> tokenizer;
  std::uint64_t seed = 0;
  double speed = 1.0;
  double kv_link_gbps = engine::kDefaultKvLinkGbps;  // gigabits per second, as omni-cluster
  Duration request_timeout = 600s;
  std::string disaggregation_mode = "null";  // SGLang's flag: null, prefill, decode
  // SGLang's --disaggregation-bootstrap-port: the prefill side's bootstrap service (0: a free
  // port, printed). Defaulted and busy, it is skipped with a warning (see docs/omni-sim.md).
  std::optional<std::uint16_t> disaggregation_bootstrap_port;
  Duration bootstrap_timeout = 30s;
  bool enable_prompt_tokens_details = false;  // vLLM's flag: usage.prompt_tokens_details
  unsigned io_threads = 1;
  double fault_error_rate = 0.0;
  std::uint16_t fault_error_status = 500;
  Duration fault_latency = 0s;
  double fault_stall_rate = 0.0;
  Duration fault_stall_duration = 0s;  // 0: the stall lasts until the client goes away
  std::uint32_t fault_stall_after_tokens = 1;
  std::uint64_t fault_crash_after = 0;
  std::uint64_t fault_crash_after_tokens = 0;
  double fault_stream_error_rate = 0.0;
  std::uint32_t fault_stream_error_after_tokens = 1;
  double fault_hang_rate = 0.0;
  bool fault_unresponsive = false;
  bool fault_bootstrap_never_connects = false;
  Duration fault_refuse_connections_for = 0s;
  config::LogConfig log;
};

void describe(config::Schema<SimConfig>& s);

// --kv-events-config (vLLM's JSON). nullopt when events are off.
Result<std::optional<kvcache::ZmqPublisherConfig>> parse_kv_events_config(
    const std::optional<std::string>& json);

// --kv-transfer-config (vLLM's JSON): what omni-sim uses of it.
struct KvTransferConfig {
  std::string connector;  // "NixlConnector", ...; empty when not given
  std::string role = "kv_both";
  std::string engine_id;        // empty: derived from the seed and port
  double lease_seconds = 30.0;  // kv_connector_extra_config.kv_lease_duration
  // vLLM's kv_load_failure_policy: what a decode does when the remote KV cannot be loaded
  // (held no longer, prefill unreachable). omni-sim's default is recompute (vLLM's is fail).
  bool recompute_on_load_failure = true;
};
Result<KvTransferConfig> parse_kv_transfer_config(const std::optional<std::string>& json);

// The engine model the flags describe: profiles (by --model-profile, else guessed from --model),
// the parallel layout, the scheduler limits.
struct EngineSetup {
  engine::EngineConfig config;
  engine::ModelProfile model;
  engine::HardwareProfile hardware;
  engine::ParallelLayout layout;
  engine::MtpConfig mtp;
  // No layout was given (no --tensor-parallel-size, --data-parallel-size or
  // --num-gpu-blocks-override): `layout` is the smallest one whose KV cache holds a whole
  // max_model_len context, and `picked` says so in words (printed at start).
  std::optional<std::string> picked;
};
Result<EngineSetup> engine_setup(const SimConfig& cfg, bool emit_kv_events);

// The served names: --served-model-name, else --model.
std::vector<std::string> served_names(const SimConfig& cfg);

}  // namespace omni::sim
