// ModelConfig: a Hugging Face config.json of a DeepSeek-V3-architecture MoE model, typed and
// validated (deepseek_v3, which Kimi-K2 and Moonlight also ship, and deepseek_v2). Field names
// follow transformers' DeepseekV3Config; derived quantities (softmax scale with YaRN's mscale,
// RoPE inverse frequencies) are computed here once, exactly as transformers computes them.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "omni/common/result.hpp"

namespace omni::model {

enum class Arch { kDeepseekV3, kDeepseekV2 };
enum class ScoringFunc { kSigmoid, kSoftmax };
// noaux_tc: DeepSeek-V3's bias-corrected group-limited top-k; greedy and group_limited_greedy:
// DeepSeek-V2's (group score = the group's max).
enum class TopkMethod { kNoauxTc, kGreedy, kGroupLimitedGreedy };

struct RopeScaling {
  bool yarn = false;  // otherwise no scaling ("default")
  double factor = 1.0;
  int original_max_position_embeddings = 0;  // 0: max_position_embeddings
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  double mscale = 0.0;          // 0: absent
  double mscale_all_dim = 0.0;  // 0: absent
  std::optional<double> attention_factor;
  bool truncate = true;
};

struct ModelConfig {
  Arch arch = Arch::kDeepseekV3;
  int vocab_size = 0;
  int hidden_size = 0;
  int intermediate_size = 0;      // dense MLP (layers < first_k_dense_replace)
  int moe_intermediate_size = 0;  // one routed expert
  int num_hidden_layers = 0;
  int num_attention_heads = 0;
  int q_lora_rank = 0;  // 0: no q LoRA (q_proj directly, DeepSeek-V2-Lite)
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
  int n_routed_experts = 0;
  int n_shared_experts = 0;
  int num_experts_per_tok = 0;
  int n_group = 1;
  int topk_group = 1;
  int first_k_dense_replace = 0;
  int moe_layer_freq = 1;
  ScoringFunc scoring_func = ScoringFunc::kSigmoid;
  TopkMethod topk_method = TopkMethod::kNoauxTc;
  bool norm_topk_prob = true;
  double routed_scaling_factor = 1.0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  int max_position_embeddings = 4096;
  bool rope_interleave = true;  // rotate pairs (2i, 2i+1) of the checkpoint's layout
  int num_nextn_predict_layers = 0;
  bool tie_word_embeddings = false;
  std::optional<int> bos_token_id;
  std::optional<int> eos_token_id;

  int qk_head_dim() const noexcept { return qk_nope_head_dim + qk_rope_head_dim; }
  int latent_dim() const noexcept { return kv_lora_rank + qk_rope_head_dim; }  // cache row
  bool is_moe_layer(int layer) const noexcept;
  // transformers: qk_head_dim^-0.5, times yarn_get_mscale(factor, mscale_all_dim)^2.
  double softmax_scale() const noexcept;
  // The factor applied to cos and sin (YaRN's attention_factor; 1 without scaling).
  double rope_attention_factor() const noexcept;
  // qk_rope_head_dim / 2 inverse frequencies, YaRN-corrected, in float64.
  std::vector<double> rope_inv_freq() const;
};

std::string_view arch_name(Arch arch) noexcept;  // the model_type: "deepseek_v3"

// Parses and validates config.json. Errors (kInvalidArgument) name `source` and the key:
//   "model/config.json: num_experts_per_tok: must be <= n_routed_experts (got 9 > 8)".
// An unknown model_type is kUnsupported and names it.
Result<ModelConfig> parse_config_json(std::string_view text, std::string_view source);
Status validate(const ModelConfig& config, std::string_view source);
// config.json text that parse_config_json reads back to an equal config.
std::string to_config_json(const ModelConfig& config);

}  // namespace omni::model
