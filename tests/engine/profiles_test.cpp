#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "omni/engine/cost_model.hpp"
#include "omni/engine/output_length.hpp"

namespace omni::engine {
namespace {

TEST(Profiles, EveryBuiltinModelLoadsWithPublishedShapes) {
  for (const char* name : {"deepseek-v3", "deepseek-r1", "openpangu-ultra-moe-718b",
                           "qwen3-235b-a22b", "llama-3.1-70b"}) {
    auto m = builtin_model_profile(name);
    ASSERT_TRUE(m) << name << ": " << m.error().to_string();
    EXPECT_EQ(m->name, name);
  }
  auto ds = builtin_model_profile("deepseek-r1");
  ASSERT_TRUE(ds);
  EXPECT_EQ(ds->num_layers, 61u);
  EXPECT_EQ(ds->num_experts, 256u);
  EXPECT_EQ(ds->attention, AttentionKind::kMla);
  // 671B parameters in the main model (the 14B MTP module excluded).
  EXPECT_NEAR(ds->total_params() / 1e9, 671.0, 671.0 * 0.02);
  // MLA caches 576 elements per token per layer.
  EXPECT_DOUBLE_EQ(ds->kv_bytes_per_token(), 576.0 * 2 * 61);
  auto qwen = builtin_model_profile("qwen3-235b-a22b");
  ASSERT_TRUE(qwen);
  EXPECT_EQ(qwen->attention, AttentionKind::kGqa);
  EXPECT_NEAR(qwen->total_params() / 1e9, 235.0, 235.0 * 0.02);
  auto llama = builtin_model_profile("llama-3.1-70b");
  ASSERT_TRUE(llama);
  EXPECT_NEAR(llama->total_params() / 1e9, 70.6, 70.6 * 0.02);
}

TEST(Profiles, EveryBuiltinHardwareLoads) {
  for (const char* name : {"h800", "h200", "ascend-910c"}) {
    auto h = builtin_hardware_profile(name);
    ASSERT_TRUE(h) << name;
    EXPECT_EQ(h->name, name);
    EXPECT_GT(h->dense_tflops, 0);
  }
  EXPECT_DOUBLE_EQ(builtin_hardware_profile("h200")->hbm_tbps, 4.8);
  EXPECT_DOUBLE_EQ(builtin_hardware_profile("h800")->dense_tflops, 989);
}

TEST(Profiles, NamesListTheBuiltins) {
  const auto models = builtin_model_names();
  EXPECT_NE(std::find(models.begin(), models.end(), "deepseek-r1"), models.end());
  const auto hw = builtin_hardware_names();
  EXPECT_EQ(hw.size(), 3u);
}

TEST(Profiles, UnknownNamesAreNotFound) {
  EXPECT_EQ(builtin_model_profile("gpt-9").error().code, ErrorCode::kNotFound);
  EXPECT_EQ(load_hardware_profile("tpu-v9").error().code, ErrorCode::kNotFound);
  EXPECT_EQ(load_model_profile("/nonexistent/model.yaml").error().code, ErrorCode::kNotFound);
}

TEST(Profiles, LoadsFromFilesAndMatchesTheEmbeddedCopy) {
  const std::filesystem::path dir = OMNI_PROFILE_DIR;
  auto from_file = load_model_profile((dir / "models" / "deepseek-v3.yaml").string());
  ASSERT_TRUE(from_file) << from_file.error().to_string();
  auto builtin = builtin_model_profile("deepseek-v3");
  EXPECT_EQ(from_file->hidden_size, builtin->hidden_size);
  EXPECT_EQ(from_file->expert_intermediate, builtin->expert_intermediate);
  auto hw = load_hardware_profile((dir / "hardware" / "h800.yaml").string());
  ASSERT_TRUE(hw);
  EXPECT_DOUBLE_EQ(hw->mfu, builtin_hardware_profile("h800")->mfu);
}

TEST(Profiles, BadYamlIsAnErrorNamingTheKey) {
  auto bad_type = parse_model_profile("name: x\nnum_layers: many\n");
  ASSERT_FALSE(bad_type);
  EXPECT_NE(bad_type.error().message.find("num_layers"), std::string::npos);
  EXPECT_FALSE(parse_model_profile("[1, 2]"));
  EXPECT_FALSE(parse_model_profile("name: x\nattention: rnn\n"));
  EXPECT_FALSE(
      parse_model_profile("name: x\nnum_layers: 2\nhidden_size: 8\nnum_heads: 2\n"
                          "vocab_size: 10\nattention: gqa\n"));  // no kv heads
  EXPECT_FALSE(
      parse_hardware_profile("name: x\ndense_tflops: 1\nhbm_tbps: 1\nhbm_gib: 1\n"
                             "mfu: 1.5\n"));
  EXPECT_FALSE(parse_hardware_profile("{{{"));
}

TEST(Profiles, LayoutValidation) {
  auto ds = builtin_model_profile("deepseek-v3").value();
  EXPECT_TRUE(validate_layout(ds, {8, 1, false}));
  EXPECT_TRUE(validate_layout(ds, {1, 32, true}));
  EXPECT_FALSE(validate_layout(ds, {3, 1, false}));  // 128 heads over 3 devices
  EXPECT_FALSE(validate_layout(ds, {0, 1, false}));
  auto llama = builtin_model_profile("llama-3.1-70b").value();
  EXPECT_FALSE(validate_layout(llama, {8, 1, true}));  // no experts to spread
}

TEST(OutputLength, DrawsFollowTheProfileAndAreKeyed) {
  auto model = builtin_model_profile("deepseek-v3");
  ASSERT_TRUE(model);
  EXPECT_EQ(sample_output_length(*model, 42), sample_output_length(*model, 42));
  double sum = 0;
  std::uint32_t lo = 1u << 30;
  const int n = 20000;
  for (int k = 0; k < n; ++k) {
    const std::uint32_t len = sample_output_length(*model, static_cast<std::uint64_t>(k));
    sum += len;
    lo = std::min(lo, len);
  }
  EXPECT_GE(lo, model->output_length_min);
  // The floor lifts the mean a little above the lognormal's.
  EXPECT_NEAR(sum / n, model->output_length_mean, 0.05 * model->output_length_mean);
  ModelProfile fixed = *model;
  fixed.output_length_sd = 0;
  fixed.output_length_mean = 100;
  EXPECT_EQ(sample_output_length(fixed, 7), 100u);
}

TEST(OutputLength, BadValuesAreRejected) {
  auto text = R"(name: m
num_layers: 2
hidden_size: 8
attention: gqa
num_heads: 2
num_kv_heads: 1
head_dim: 4
num_dense_layers: 2
dense_intermediate: 16
vocab_size: 10
output_length_min: 0
)";
  auto m = parse_model_profile(text);
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("output_length"), std::string::npos);
}

}  // namespace
}  // namespace omni::engine
