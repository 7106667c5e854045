// The cost model: how long one engine step takes, from what the step computes, for a model on a
// hardware profile under a parallel layout. Profiles are data files (profiles/models/*.yaml,
// profiles/hardware/*.yaml) loaded by load_model_profile() / load_hardware_profile(); the
// built-in ones are embedded so binaries work from any directory.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "omni/common/result.hpp"

namespace omni::engine {

enum class AttentionKind { kMla, kGqa };

struct ModelProfile {
  std::string name;  // "deepseek-v3", "openpangu-ultra-moe-718b", "qwen3-235b-a22b", ...
  std::uint32_t num_layers = 0;
  std::uint32_t num_dense_layers = 0;  // leading dense FFN layers of a MoE model
  std::uint32_t hidden_size = 0;
  AttentionKind attention = AttentionKind::kMla;
  std::uint32_t num_heads = 0;
  std::uint32_t num_kv_heads = 0;  // GQA
  std::uint32_t head_dim = 0;      // GQA
  std::uint32_t q_lora_rank = 0, kv_lora_rank = 0, rope_dim = 0, nope_dim = 0, v_head_dim = 0;
  std::uint32_t num_experts = 0, num_shared_experts = 0, experts_per_token = 0;
  std::uint32_t expert_intermediate = 0, dense_intermediate = 0;
  std::uint32_t vocab_size = 0;
  std::uint32_t num_mtp_layers = 0;
  double bytes_per_param = 1.0;  // fp8 weights: 1; bf16: 2
  double kv_bytes_per_elem = 2.0;
  std::uint32_t max_model_len = 0;
  // The output-length model: where a generation ends at EOS when nothing else ends it first
  // (lognormal with this mean and standard deviation of the length itself, never below the
  // minimum). See omni/engine/output_length.hpp.
  double output_length_mean = 256;
  double output_length_sd = 320;
  std::uint32_t output_length_min = 16;
  std::vector<std::string> aliases;  // other names builtin_model_profile() accepts
  // KV bytes per token over all layers (derived; what a PD transfer moves).
  double kv_bytes_per_token() const;
  // Parameter counts (derived from the shapes above).
  double attention_params_per_layer() const;  // projections (MLA or GQA), no norms
  double expert_params() const;               // one routed expert (gate, up, down)
  double total_params() const;                // all layers + embeddings + lm_head, no MTP
};

struct HardwareProfile {
  std::string name;         // "h800", "h200", "ascend-910c"
  double dense_tflops = 0;  // bf16 matrix peak per device
  double fp8_tflops = 0;
  double hbm_tbps = 0;           // memory bandwidth per device
  double hbm_gib = 0;            // memory per device
  double interconnect_gbps = 0;  // per-device scale-out bandwidth (EP all-to-all)
  double mfu = 0.5;              // achieved fraction of peak for large GEMMs (calibrated)
  double mbu = 0.7;              // achieved fraction of HBM bandwidth (calibrated)
  double step_overhead_s = 0.0;  // fixed per-step cost (scheduling, launch)
  double scaleup_gbps = 0;       // per-device intra-node bandwidth, Gb/s (TP all-reduce); 0: free
  double comm_efficiency = 0.7;  // achieved fraction of link bandwidth (all-to-all, all-reduce)
  double attention_mfu = 0;      // achieved fraction of peak in attention kernels; 0: mfu
  std::uint32_t devices_per_node = 8;  // devices on one scale-up domain (NVLink / UB)
};

struct ParallelLayout {
  std::uint32_t tp = 1, dp = 1;
  bool ep = false;  // --enable-expert-parallel: experts sharded over tp*dp devices
  std::uint32_t devices() const { return tp * dp; }
};

struct MtpConfig {
  std::uint32_t num_speculative_tokens = 0;  // 0: off
  double acceptance_rate = 0.85;             // per draft token
};

struct StepShape {
  std::uint32_t prefill_tokens = 0;          // computed (uncached) prompt tokens
  std::uint64_t prefill_context_tokens = 0;  // sum over prefill chunks of tokens before them
  std::uint32_t decode_seqs = 0;
  std::uint64_t decode_context_tokens = 0;  // sum of decode sequences' context lengths
  // Optional detail (0: estimated from the fields above).
  std::uint32_t prefill_seqs = 0;  // prefill chunks in the step (lm_head samples)
  // Sum over chunks of n*ctx + n*(n+1)/2: query-key pairs of causal prefill attention.
  std::uint64_t prefill_attention_pairs = 0;
  std::uint32_t decode_query_tokens = 0;  // decode tokens incl. MTP drafts to verify
};

// Where one step's time goes (seconds, per device; the step time is their sum).
struct StepBreakdown {
  double overhead = 0;
  double attention = 0;  // projections + attention core, all layers
  double ffn = 0;        // MoE experts (routed + shared + gate) and dense FFN layers
  double comm = 0;       // EP all-to-all not hidden behind compute, plus TP all-reduce
  double lm_head = 0;
  double mtp = 0;  // draft passes of the MTP module
  double total() const { return overhead + attention + ffn + comm + lm_head + mtp; }
};

// The default bandwidth of one PD KV transfer, in gigabits per second: one 400 Gb/s RDMA NIC, as
// H800/H200 nodes carry one per GPU. omni-cluster and omni-sim both default to it.
inline constexpr double kDefaultKvLinkGbps = 400.0;

class CostModel {
 public:
  CostModel(ModelProfile model, HardwareProfile hw, ParallelLayout layout, MtpConfig mtp = {});
  double step_seconds(const StepShape& shape) const;
  StepBreakdown breakdown(const StepShape& shape) const;
  // KV blocks that fit in memory after weights and activations (for num_gpu_blocks = 0).
  std::uint64_t kv_capacity_tokens() const;
  // Moving `tokens` tokens of KV over a link of `link_gbps` gigabits (not bytes) per second.
  double kv_transfer_seconds(std::uint64_t tokens, double link_gbps) const;
  const ModelProfile& model() const { return model_; }
  const HardwareProfile& hardware() const { return hw_; }
  const ParallelLayout& layout() const { return layout_; }
  const MtpConfig& mtp() const { return mtp_; }

 private:
  ModelProfile model_;
  HardwareProfile hw_;
  ParallelLayout layout_;
  MtpConfig mtp_;
};

Result<ModelProfile> builtin_model_profile(std::string_view name);
Result<HardwareProfile> builtin_hardware_profile(std::string_view name);
Result<ModelProfile> load_model_profile(const std::string& path_or_name);
Result<HardwareProfile> load_hardware_profile(const std::string& path_or_name);
std::vector<std::string> builtin_model_names();
std::vector<std::string> builtin_hardware_names();
// Parses a profile from YAML text (the format of profiles/*/*.yaml); errors name the key.
Result<ModelProfile> parse_model_profile(std::string_view yaml_text);
Result<HardwareProfile> parse_hardware_profile(std::string_view yaml_text);
// Checks a layout against a model: positive sizes, heads divisible by tp, experts for EP.
Status validate_layout(const ModelProfile& model, const ParallelLayout& layout);

}  // namespace omni::engine
