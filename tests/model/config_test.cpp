#include <gtest/gtest.h>

#include <cmath>

#include "omni/model/config.hpp"
#include "omni/model/make_model.hpp"

namespace omni::model {
namespace {

// DeepSeek-V3's published config.json (the fields the architecture reads).
constexpr const char* kDeepSeekV3 = R"({
  "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
  "vocab_size": 129280, "hidden_size": 7168, "intermediate_size": 18432,
  "moe_intermediate_size": 2048, "num_hidden_layers": 61, "num_attention_heads": 128,
  "num_key_value_heads": 128, "n_shared_experts": 1, "n_routed_experts": 256,
  "routed_scaling_factor": 2.5, "kv_lora_rank": 512, "q_lora_rank": 1536,
  "qk_rope_head_dim": 64, "v_head_dim": 128, "qk_nope_head_dim": 128, "topk_method": "noaux_tc",
  "n_group": 8, "topk_group": 4, "num_experts_per_tok": 8, "moe_layer_freq": 1,
  "first_k_dense_replace": 3, "norm_topk_prob": true, "scoring_func": "sigmoid",
  "max_position_embeddings": 163840, "rms_norm_eps": 1e-06, "rope_theta": 10000,
  "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0,
                   "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096, "type": "yarn"},
  "num_nextn_predict_layers": 1, "tie_word_embeddings": false, "bos_token_id": 0,
  "eos_token_id": 1, "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3",
  "quant_method": "fp8", "weight_block_size": [128, 128]}})";

TEST(ModelConfig, ParsesDeepSeekV3) {
  auto c = parse_config_json(kDeepSeekV3, "config.json");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->arch, Arch::kDeepseekV3);
  EXPECT_EQ(c->num_hidden_layers, 61);
  EXPECT_EQ(c->latent_dim(), 576);
  EXPECT_EQ(c->qk_head_dim(), 192);
  EXPECT_FALSE(c->is_moe_layer(2));
  EXPECT_TRUE(c->is_moe_layer(3));
  EXPECT_TRUE(c->rope_scaling.yarn);
  // transformers: 192^-0.5 * (0.1 * ln 40 + 1)^2; attention_factor = mscale/mscale_all_dim = 1.
  const double m = 0.1 * std::log(40.0) + 1.0;
  EXPECT_NEAR(c->softmax_scale(), m * m / std::sqrt(192.0), 1e-15);
  EXPECT_DOUBLE_EQ(c->rope_attention_factor(), 1.0);
  EXPECT_EQ(c->eos_token_id, 1);
}

TEST(ModelConfig, YarnInverseFrequenciesRampBetweenCorrectionDims) {
  auto c = parse_config_json(kDeepSeekV3, "config.json");
  ASSERT_TRUE(c.ok());
  const auto inv = c->rope_inv_freq();
  ASSERT_EQ(inv.size(), 32U);
  // High frequencies are extrapolated (unchanged), the lowest interpolated by the factor.
  EXPECT_DOUBLE_EQ(inv[0], 1.0);
  EXPECT_NEAR(inv[31], std::pow(10000.0, -62.0 / 64.0) / 40.0, 1e-18);
  // find_correction_dim(32) = 64 ln(4096 / (64 pi)) / (2 ln 10000) = 10.47 -> low = 10
  EXPECT_DOUBLE_EQ(inv[10], std::pow(10000.0, -20.0 / 64.0));
  EXPECT_LT(inv[11], std::pow(10000.0, -22.0 / 64.0));
}

TEST(ModelConfig, ErrorsNameTheFileAndKey) {
  std::string text = kDeepSeekV3;
  text.replace(text.find("\"num_experts_per_tok\": 8"), 24, "\"num_experts_per_tok\": 300");
  auto c = parse_config_json(text, "dir/config.json");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(c.error().message.find("dir/config.json: num_experts_per_tok"), std::string::npos)
      << c.error().message;
  auto bad_type = parse_config_json(R"({"model_type": "llama", "vocab_size": 1})", "c.json");
  ASSERT_FALSE(bad_type.ok());
  EXPECT_EQ(bad_type.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(bad_type.error().message.find("'llama'"), std::string::npos);
  auto not_json = parse_config_json("{", "c.json");
  ASSERT_FALSE(not_json.ok());
  EXPECT_NE(not_json.error().message.find("not valid JSON"), std::string::npos);
  auto wrong_kind =
      parse_config_json(R"({"model_type": "deepseek_v3", "hidden_size": "big"})", "c.json");
  ASSERT_FALSE(wrong_kind.ok());
  EXPECT_NE(wrong_kind.error().message.find("hidden_size: expected a non-negative integer"),
            std::string::npos);
  EXPECT_NE(wrong_kind.error().message.find("vocab_size: missing"), std::string::npos);
}

TEST(ModelConfig, RoundTripsThroughJson) {
  for (const auto arch : {Arch::kDeepseekV3, Arch::kDeepseekV2}) {
    for (const char* preset : {"micro", "tiny", "small"}) {
      auto c = preset_config(arch, preset);
      ASSERT_TRUE(c.ok()) << c.error().message;
      auto back = parse_config_json(to_config_json(*c), "roundtrip");
      ASSERT_TRUE(back.ok()) << back.error().message;
      EXPECT_EQ(to_config_json(*back), to_config_json(*c));
      EXPECT_EQ(back->topk_method, c->topk_method);
    }
  }
}

TEST(ModelConfig, DeepSeekV2DefaultsToTheSoftmaxRouter) {
  auto c = parse_config_json(R"({"model_type": "deepseek_v2", "vocab_size": 100, "hidden_size": 64,
    "intermediate_size": 128, "moe_intermediate_size": 32, "num_hidden_layers": 2,
    "num_attention_heads": 2, "kv_lora_rank": 64, "qk_nope_head_dim": 16, "qk_rope_head_dim": 16,
    "v_head_dim": 16, "n_routed_experts": 4, "num_experts_per_tok": 2, "first_k_dense_replace": 1})",
                             "v2.json");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->scoring_func, ScoringFunc::kSoftmax);
  EXPECT_EQ(c->topk_method, TopkMethod::kGreedy);
  EXPECT_FALSE(c->norm_topk_prob);
  EXPECT_EQ(c->q_lora_rank, 0);
}

}  // namespace
}  // namespace omni::model
