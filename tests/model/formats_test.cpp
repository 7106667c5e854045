// The checkpoint formats: writing and reading back, bad input (truncated, corrupt, wrong
// shapes, contradicting configs, NaN weights) answered with errors naming file and tensor.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "omni/model/formats.hpp"
#include "support/corpus.hpp"
#include "test_models.hpp"

namespace omni::model {
namespace {

using testing::TempDir;

std::vector<std::byte> read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(s.size());
  std::memcpy(out.data(), s.data(), s.size());
  return out;
}

TEST(Safetensors, WritesAndParsesBack) {
  TempDir dir;
  const std::vector<float> a = {1.0f, -2.0f, 3.5f, 0.25f, 5.0f, 6.0f};
  const std::vector<std::uint16_t> b = {float_to_bf16(1.5f), float_to_bf16(-0.5f)};
  const std::vector<TensorToWrite> tensors = {
      {"a", DType::kF32, {2, 3}, std::as_bytes(std::span(a))},
      {"b", DType::kBF16, {2}, std::as_bytes(std::span(b))}};
  ASSERT_TRUE(write_safetensors(dir.path() / "x.safetensors", tensors).ok());
  const auto bytes = read_bytes(dir.path() / "x.safetensors");
  auto h = parse_safetensors(bytes, "x.safetensors");
  ASSERT_TRUE(h.ok()) << h.error().message;
  ASSERT_EQ(h->tensors.size(), 2U);
  const auto& ta = h->tensors[0].name == "a" ? h->tensors[0] : h->tensors[1];
  EXPECT_EQ(ta.shape, (std::vector<std::int64_t>{2, 3}));
  Matrix m{DType::kF32, 2, 3, ta.data, 12};
  EXPECT_EQ(m.at(1, 2), 6.0);
  EXPECT_EQ(m.at(0, 1), -2.0);
}

TEST(Safetensors, RejectsTruncatedAndCorruptHeaders) {
  TempDir dir;
  const std::vector<float> a(64, 1.0f);
  const std::vector<TensorToWrite> tensors = {
      {"w", DType::kF32, {8, 8}, std::as_bytes(std::span(a))}};
  ASSERT_TRUE(write_safetensors(dir.path() / "x.safetensors", tensors).ok());
  auto bytes = read_bytes(dir.path() / "x.safetensors");
  for (const std::size_t keep :
       {std::size_t{0}, std::size_t{5}, std::size_t{20}, bytes.size() - 1}) {
    auto h = parse_safetensors(std::span(bytes).first(keep), "x.safetensors");
    ASSERT_FALSE(h.ok()) << keep;
    EXPECT_NE(h.error().message.find("x.safetensors"), std::string::npos);
  }
  auto cut = parse_safetensors(std::span(bytes).first(bytes.size() - 1), "x.safetensors");
  EXPECT_NE(cut.error().message.find("tensor 'w'"), std::string::npos) << cut.error().message;
  auto corrupt = bytes;
  corrupt[8] = std::byte{'#'};  // the header's opening brace
  EXPECT_FALSE(parse_safetensors(corrupt, "x").ok());
}

TEST(Gguf, WritesAndParsesBack) {
  TempDir dir;
  const std::vector<float> w(32 * 3);
  const std::vector<GgufKv> kv = {{"general.architecture", gguf_string("deepseek2")},
                                  {"deepseek2.block_count", gguf_u32(7)},
                                  {"x.f", gguf_f32(0.5f)},
                                  {"x.list", gguf_string_array({"a", "bb"})}};
  const std::vector<TensorToWrite> t = {{"m", DType::kF32, {3, 32}, std::as_bytes(std::span(w))}};
  ASSERT_TRUE(write_gguf(dir.path() / "x.gguf", kv, t).ok());
  const auto bytes = read_bytes(dir.path() / "x.gguf");
  auto h = parse_gguf(bytes, "x.gguf");
  ASSERT_TRUE(h.ok()) << h.error().message;
  EXPECT_EQ(*h->get_uint("deepseek2.block_count"), 7U);
  EXPECT_EQ(*h->get_float("x.f"), 0.5);
  EXPECT_EQ(*h->get_string("general.architecture"), "deepseek2");
  ASSERT_EQ(h->tensors.size(), 1U);
  EXPECT_EQ(h->tensors[0].shape, (std::vector<std::int64_t>{3, 32}));
  for (std::size_t keep = 0; keep < bytes.size(); keep += 7) {
    EXPECT_FALSE(parse_gguf(std::span(bytes).first(keep), "x.gguf").ok()) << keep;
  }
}

TEST(Loader, HfAndGgufCheckpointsGiveTheSameReferenceLogits) {
  TempDir dir;
  const auto c = testing::micro_config();
  const auto master = random_weights(c, 7);
  ASSERT_TRUE(write_hf_checkpoint(dir.path() / "hf", c, master, DType::kF32, nullptr).ok());
  ASSERT_TRUE(write_gguf_checkpoint(dir.path() / "m.gguf", c, master, DType::kF32, nullptr).ok());
  auto hf = load_model(dir.path() / "hf");
  ASSERT_TRUE(hf.ok()) << hf.error().message;
  auto gg = load_model(dir.path() / "m.gguf");
  ASSERT_TRUE(gg.ok()) << gg.error().message;
  EXPECT_TRUE((*gg)->weights.layers[0].attn.uk_transposed);
  EXPECT_FALSE((*gg)->weights.mtp.has_value());
  ASSERT_TRUE((*hf)->weights.mtp.has_value());
  const std::vector<int> tokens = {5, 77, 300, 12, 511};
  const auto a = reference_forward((*hf)->config, (*hf)->weights, tokens);
  const auto b = reference_forward((*gg)->config, (*gg)->weights, tokens);
  ASSERT_EQ(a.logits.size(), b.logits.size());
  // Same f32 weights; GGUF stores rms_norm_eps and the RoPE constants as f32, nothing else
  // differs.
  EXPECT_LT(testing::max_rel_error(b.logits, a.logits), 1e-6);
}

TEST(Loader, MissingTensorWrongShapeAndNaNAreNamed) {
  TempDir dir;
  const auto c = testing::micro_config();
  auto master = random_weights(c, 3);
  auto mutated = master;
  mutated.erase("model.layers.1.mlp.experts.5.up_proj.weight");
  ASSERT_TRUE(write_hf_checkpoint(dir.path() / "missing", c, mutated, DType::kBF16, nullptr).ok());
  auto m1 = load_model(dir.path() / "missing");
  ASSERT_FALSE(m1.ok());
  EXPECT_NE(m1.error().message.find("'model.layers.1.mlp.experts.5.up_proj.weight' is missing"),
            std::string::npos)
      << m1.error().message;

  mutated = master;
  mutated["model.layers.0.self_attn.o_proj.weight"].shape = {32, 128};
  ASSERT_TRUE(write_hf_checkpoint(dir.path() / "shape", c, mutated, DType::kF32, nullptr).ok());
  auto m2 = load_model(dir.path() / "shape");
  ASSERT_FALSE(m2.ok());
  EXPECT_NE(m2.error().message.find("o_proj.weight': shape [32, 128], the config needs [64, 64]"),
            std::string::npos)
      << m2.error().message;
  EXPECT_NE(m2.error().message.find("model.safetensors"), std::string::npos);

  mutated = master;
  mutated["model.layers.2.mlp.gate.weight"].values[17] = std::nanf("");
  ASSERT_TRUE(write_hf_checkpoint(dir.path() / "nan", c, mutated, DType::kF8E4M3, nullptr).ok());
  auto m3 = load_model(dir.path() / "nan");
  ASSERT_FALSE(m3.ok());
  EXPECT_NE(m3.error().message.find("model.layers.2.mlp.gate.weight': holds NaN"),
            std::string::npos)
      << m3.error().message;
}

TEST(Loader, ConfigContradictingTheTensorsIsAnError) {
  TempDir dir;
  auto c = testing::micro_config();
  const auto master = random_weights(c, 3);
  c.moe_intermediate_size = 48;  // the experts were drawn 32 wide
  ASSERT_TRUE(write_hf_checkpoint(dir.path() / "m", c, master, DType::kF32, nullptr).ok());
  auto m = load_model(dir.path() / "m");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("the config needs [48, 64]"), std::string::npos)
      << m.error().message;
}

TEST(Loader, ShardedDirectoryWithIndex) {
  TempDir dir;
  const auto c = testing::micro_config();
  const auto master = random_weights(c, 9);
  ASSERT_TRUE(write_hf_checkpoint(dir.path(), c, master, DType::kBF16, nullptr).ok());
  // Re-shard: move every tensor whose name contains "experts" into a second file.
  const auto bytes = read_bytes(dir.path() / "model.safetensors");
  auto h = parse_safetensors(bytes, "model.safetensors");
  ASSERT_TRUE(h.ok());
  std::vector<TensorToWrite> one, two;
  std::string index = R"({"metadata": {}, "weight_map": {)";
  for (const auto& t : h->tensors) {
    const bool second = t.name.find("experts") != std::string::npos;
    (second ? two : one).push_back({t.name, t.dtype, t.shape, {t.data, t.bytes}});
    index += "\"" + t.name + "\": \"" + (second ? "b.safetensors" : "a.safetensors") + "\",";
  }
  index.back() = '}';
  index += "}";
  ASSERT_TRUE(write_safetensors(dir.path() / "a.safetensors", one).ok());
  ASSERT_TRUE(write_safetensors(dir.path() / "b.safetensors", two).ok());
  std::filesystem::remove(dir.path() / "model.safetensors");
  std::ofstream(dir.path() / "model.safetensors.index.json") << index;
  auto m = load_model(dir.path());
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_NE((*m)->source->describe().find("2 safetensors files"), std::string::npos);
}

TEST(Dtypes, ConversionsRoundTrip) {
  for (int code = 0; code < 256; ++code) {
    const auto v = static_cast<std::uint8_t>(code);
    const float f = fp8_e4m3_to_float(v);
    if (std::isnan(f)) continue;
    EXPECT_EQ(float_to_fp8_e4m3(f), v == 0x80 ? 0x80 : v) << code;
  }
  EXPECT_EQ(fp8_e4m3_to_float(0x7e), 448.0f);
  EXPECT_EQ(fp8_e4m3_to_float(0x01), 1.0f / 512.0f);
  for (const float f : {0.0f, 1.0f, -2.5f, 65504.0f, 6.103515625e-05f, 2.384185791015625e-07f}) {
    EXPECT_EQ(f16_to_float(float_to_f16(f)), f) << f;
  }
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.00390625f)), 1.0f);  // ties to even
}

// The fuzz targets' corpora, replayed: every input parses or fails cleanly.
TEST(FuzzCorpus, SafetensorsHeaders) {
  for (const auto& f : test_support::read_corpus(OMNI_SAFETENSORS_CORPUS_DIR)) {
    auto r = parse_safetensors(std::as_bytes(std::span(f.bytes)), f.path.string());
    const bool valid = f.path.filename().string().starts_with("valid");
    EXPECT_EQ(r.ok(), valid) << f.path;
    if (!r.ok()) {
      EXPECT_FALSE(r.error().message.empty()) << f.path;
    }
  }
}

TEST(FuzzCorpus, GgufHeaders) {
  for (const auto& f : test_support::read_corpus(OMNI_GGUF_CORPUS_DIR)) {
    auto r = parse_gguf(std::as_bytes(std::span(f.bytes)), f.path.string());
    const bool valid = f.path.filename().string().starts_with("valid");
    EXPECT_EQ(r.ok(), valid) << f.path;
    if (!r.ok()) {
      EXPECT_FALSE(r.error().message.empty()) << f.path;
    }
  }
}

}  // namespace
}  // namespace omni::model
