// The engine against the float64 reference on micro models: prefill (expanded), decode and the
// 2-token MTP verify step (absorbed, on AMLA), chunked prefill, batches of sequences, the MTP
// module; every ISA this CPU has, both GEMM backends, fused and unfused operators, each
// weight dtype. With an f32 latent cache the engine's logits match the reference's to ~1e-5 of
// their RMS; with the bf16 cache (the default) to the tolerance stated below.
#include <gtest/gtest.h>

#include <cstdio>
#include <numeric>

#include "omni/model/engine.hpp"
#include "test_models.hpp"

namespace omni::model {
namespace {

struct Fixture {
  LoadedModel model;
};

std::unique_ptr<LoadedModel> micro_model(DType dtype, Arch arch = Arch::kDeepseekV3,
                                         std::uint64_t seed = 1) {
  auto m = std::make_unique<LoadedModel>();
  m->config = testing::micro_config(arch);
  auto src =
      to_source(random_weights(m->config, seed), dtype == DType::kQ8_0 ? DType::kF32 : dtype);
  EXPECT_TRUE(src.ok());
  m->source = std::move(*src);
  auto w = bind_weights(m->config, *m->source, true);
  EXPECT_TRUE(w.ok()) << w.error().message;
  m->weights = std::move(*w);
  return m;
}

// ||a - e||_inf / rms(e) over the span.
double scaled_error(std::span<const float> a, std::span<const double> e) {
  double rms = 0.0, worst = 0.0;
  for (std::size_t i = 0; i < e.size(); ++i) {
    rms += e[i] * e[i];
    worst = std::max(worst, std::fabs(a[i] - e[i]));
  }
  return worst / std::sqrt(rms / static_cast<double>(e.size()));
}

const std::vector<int> kTokens = {3,  141, 59,  265, 358, 97, 93, 238,
                                  46, 264, 338, 327, 95,  28, 8,  419};

struct Case {
  omni::amla::Isa isa;
  GemmBackend gemm;
  bool fused;
  int threads;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const auto isa : omni::amla::supported_isas()) {
    out.push_back({isa, GemmBackend::kBlas, true, 2});
    out.push_back({isa, GemmBackend::kOwn, false, 1});
  }
  return out;
}

std::string name(const Case& c) {
  return std::string(omni::amla::isa_name(c.isa)) +
         (c.gemm == GemmBackend::kBlas ? "/blas" : "/own") + (c.fused ? "/fused" : "/unfused") +
         "/t" + std::to_string(c.threads);
}

EngineOptions options(const Case& k, CacheDtype cache) {
  EngineOptions o;
  o.isa = k.isa;
  o.gemm = k.gemm;
  o.fused = k.fused;
  o.threads = k.threads;
  o.cache_dtype = cache;
  o.page_size = 4;  // several pages per sequence, so page boundaries are crossed
  o.num_pages = 64;
  return o;
}

// Prefill a prompt of `prompt` tokens at once, then decode the rest one token (or two, the MTP
// verify shape) at a time; every step's logits against the reference's rows.
double run_sequence(Engine& e, const ReferenceOutput& ref, int prompt, int step,
                    std::vector<std::int32_t> pages) {
  const int V = e.config().vocab_size;
  std::vector<std::int32_t> toks(kTokens.begin(), kTokens.end());
  double worst = 0.0;
  SequenceStep s{std::span(toks).first(static_cast<std::size_t>(prompt)), 0, pages, -1};
  auto out = e.forward(std::span(&s, 1));
  EXPECT_TRUE(out.ok()) << out.error().message;
  worst = std::max(worst, scaled_error(out->logits, std::span(ref.logits)
                                                        .first(static_cast<std::size_t>(prompt) *
                                                               static_cast<std::size_t>(V))));
  for (int pos = prompt; pos < static_cast<int>(toks.size()); pos += step) {
    const int n = std::min(step, static_cast<int>(toks.size()) - pos);
    SequenceStep d{
        std::span(toks).subspan(static_cast<std::size_t>(pos), static_cast<std::size_t>(n)), pos,
        pages, -1};
    auto o = e.forward(std::span(&d, 1));
    EXPECT_TRUE(o.ok()) << o.error().message;
    worst = std::max(
        worst,
        scaled_error(o->logits,
                     std::span(ref.logits)
                         .subspan(static_cast<std::size_t>(pos) * static_cast<std::size_t>(V),
                                  static_cast<std::size_t>(n) * static_cast<std::size_t>(V))));
  }
  return worst;
}

std::vector<std::int32_t> page_list(int first, int count) {
  std::vector<std::int32_t> p(static_cast<std::size_t>(count));
  std::iota(p.begin(), p.end(), first);
  std::reverse(p.begin(), p.end());  // not in order: the block table is honoured
  return p;
}

TEST(Engine, F32CacheMatchesTheReferenceOnEveryIsa) {
  for (const DType dtype : {DType::kF32, DType::kBF16, DType::kF8E4M3}) {
    auto m = micro_model(dtype);
    const auto ref = reference_forward(m->config, m->weights, kTokens);
    for (const auto& k : cases()) {
      auto e = Engine::create(*m, options(k, CacheDtype::kF32));
      ASSERT_TRUE(e.ok()) << e.error().message;
      const double decode = run_sequence(**e, ref, 5, 1, page_list(0, 4));
      const double verify = run_sequence(**e, ref, 3, 2, page_list(10, 4));
      const double chunked = run_sequence(
          **e, ref, 9, 4, page_list(20, 4));  // 4-token chunks: expanded over a cached context
      std::printf("%s %s: decode %.2e verify %.2e chunked %.2e\n",
                  std::string(dtype_name(dtype)).c_str(), name(k).c_str(), decode, verify, chunked);
      EXPECT_LT(decode, 2e-5) << name(k);
      EXPECT_LT(verify, 2e-5) << name(k);
      EXPECT_LT(chunked, 2e-5) << name(k);
    }
  }
}

TEST(Engine, Bf16CacheWithinItsToleranceAndGreedyAgrees) {
  auto m = micro_model(DType::kBF16);
  const auto ref = reference_forward(m->config, m->weights, kTokens);
  for (const auto& k : cases()) {
    auto e = Engine::create(*m, options(k, CacheDtype::kBF16));
    ASSERT_TRUE(e.ok());
    const double err = run_sequence(**e, ref, 6, 1, page_list(0, 4));
    std::printf("bf16 cache %s: %.2e\n", name(k).c_str(), err);
    // bf16 latents (8 significant bits) and, on AVX-512, bf16 P in the AMLA kernel.
    EXPECT_LT(err, 3e-2) << name(k);
  }
}

TEST(Engine, BatchOfSequencesEqualsEachAlone) {
  auto m = micro_model(DType::kF32);
  const auto ref = reference_forward(m->config, m->weights, kTokens);
  auto e = Engine::create(*m, options(cases().back(), CacheDtype::kF32));
  ASSERT_TRUE(e.ok());
  const int V = m->config.vocab_size;
  std::vector<std::int32_t> toks(kTokens.begin(), kTokens.end());
  const auto pa = page_list(0, 4), pb = page_list(8, 4), pc = page_list(16, 4);
  // Prefill three sequences of different lengths together.
  std::vector<SequenceStep> steps = {{std::span(toks).first(7), 0, pa, 1},
                                     {std::span(toks).first(2), 0, pb, 1},
                                     {std::span(toks).first(11), 0, pc, 1}};
  auto out = (*e)->forward(steps);
  ASSERT_TRUE(out.ok()) << out.error().message;
  ASSERT_EQ(out->rows, 3);
  const auto V_ = static_cast<std::size_t>(V);
  EXPECT_LT(scaled_error(out->logits.subspan(0, V_), std::span(ref.logits).subspan(6 * V_, V_)),
            2e-5);
  EXPECT_LT(scaled_error(out->logits.subspan(V_, V_), std::span(ref.logits).subspan(1 * V_, V_)),
            2e-5);
  EXPECT_LT(
      scaled_error(out->logits.subspan(2 * V_, V_), std::span(ref.logits).subspan(10 * V_, V_)),
      2e-5);
  // Then one mixed step: a decode, a verify of two, a chunk of three.
  steps = {{std::span(toks).subspan(7, 1), 7, pa, 1},
           {std::span(toks).subspan(2, 2), 2, pb, -1},
           {std::span(toks).subspan(11, 3), 11, pc, 1}};
  out = (*e)->forward(steps);
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(out->rows, 4);
  EXPECT_LT(scaled_error(out->logits.subspan(0, V_), std::span(ref.logits).subspan(7 * V_, V_)),
            2e-5);
  EXPECT_LT(
      scaled_error(out->logits.subspan(V_, 2 * V_), std::span(ref.logits).subspan(2 * V_, 2 * V_)),
      2e-5);
  EXPECT_LT(
      scaled_error(out->logits.subspan(3 * V_, V_), std::span(ref.logits).subspan(13 * V_, V_)),
      2e-5);
}

TEST(Engine, MtpDraftLogitsMatchTheReference) {
  auto m = micro_model(DType::kF32);
  const auto ref = reference_forward(m->config, m->weights, kTokens);
  const int n = 10;
  std::vector<int> next(kTokens.begin() + 1, kTokens.begin() + n + 1);
  const auto ref_draft = reference_mtp(
      m->config, m->weights, next,
      std::span(ref.hidden)
          .first(static_cast<std::size_t>(n) * static_cast<std::size_t>(m->config.hidden_size)));
  for (const auto& k : cases()) {
    auto e = Engine::create(*m, options(k, CacheDtype::kF32));
    ASSERT_TRUE(e.ok());
    std::vector<std::int32_t> toks(kTokens.begin(), kTokens.begin() + n);
    std::vector<std::int32_t> nt(next.begin(), next.end());
    const auto pages = page_list(0, 4);
    SequenceStep s{toks, 0, pages, -1};
    auto main = (*e)->forward(std::span(&s, 1));
    ASSERT_TRUE(main.ok());
    std::vector<float> hidden(main->hidden.begin(), main->hidden.end());
    // MTP prefill over the first 6 rows, then one row, then two (draft, verify shapes).
    const auto H = static_cast<std::size_t>(m->config.hidden_size),
               V = static_cast<std::size_t>(m->config.vocab_size);
    double worst = 0.0;
    int pos = 0;
    for (const int len : {6, 1, 2, 1}) {
      SequenceStep d{
          std::span(nt).subspan(static_cast<std::size_t>(pos), static_cast<std::size_t>(len)), pos,
          pages, -1};
      auto o = (*e)->forward_mtp(std::span(&d, 1),
                                 std::span(hidden).subspan(static_cast<std::size_t>(pos) * H,
                                                           static_cast<std::size_t>(len) * H));
      ASSERT_TRUE(o.ok()) << o.error().message;
      worst = std::max(worst, scaled_error(o->logits, std::span(ref_draft).subspan(
                                                          static_cast<std::size_t>(pos) * V,
                                                          static_cast<std::size_t>(len) * V)));
      pos += len;
    }
    std::printf("mtp %s: %.2e\n", name(k).c_str(), worst);
    EXPECT_LT(worst, 2e-5) << name(k);
  }
}

TEST(Engine, DeepSeekV2SoftmaxRouterMatches) {
  auto m = micro_model(DType::kF32, Arch::kDeepseekV2);
  const auto ref = reference_forward(m->config, m->weights, kTokens);
  for (const auto& k : cases()) {
    auto e = Engine::create(*m, options(k, CacheDtype::kF32));
    ASSERT_TRUE(e.ok());
    EXPECT_LT(run_sequence(**e, ref, 4, 1, page_list(0, 4)), 2e-5) << name(k);
  }
}

TEST(Engine, GgufQ8AndSplitKbVbMatchTheReference) {
  testing::TempDir dir;
  const auto config = testing::micro_config();
  const auto master = random_weights(config, 13);
  for (const DType dtype : {DType::kF32, DType::kQ8_0, DType::kF16}) {
    const auto file = dir.path() / ("m-" + std::string(dtype_name(dtype)) + ".gguf");
    ASSERT_TRUE(write_gguf_checkpoint(file, config, master, dtype, nullptr).ok());
    auto m = load_model(file);
    ASSERT_TRUE(m.ok()) << m.error().message;
    const auto ref = reference_forward((*m)->config, (*m)->weights, kTokens);
    for (const auto& k : cases()) {
      auto e = Engine::create(**m, options(k, CacheDtype::kF32));
      ASSERT_TRUE(e.ok());
      const double err = run_sequence(**e, ref, 6, 1, page_list(0, 4));
      const double verify = run_sequence(**e, ref, 7, 2, page_list(8, 4));
      EXPECT_LT(err, 2e-5) << dtype_name(dtype) << " " << name(k);
      EXPECT_LT(verify, 2e-5) << dtype_name(dtype) << " " << name(k);
    }
  }
}

TEST(Engine, BadStepsAreErrors) {
  auto m = micro_model(DType::kF32);
  auto e = Engine::create(*m, options(cases().front(), CacheDtype::kF32));
  ASSERT_TRUE(e.ok());
  std::vector<std::int32_t> toks = {1, 2, 3, 4, 5};
  std::vector<std::int32_t> one_page = {0};
  SequenceStep s{toks, 0, one_page, 1};
  auto r = (*e)->forward(std::span(&s, 1));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("pages cover 4 positions, the step needs 5"), std::string::npos);
  std::vector<std::int32_t> bad_tok = {600};
  std::vector<std::int32_t> pages = {1, 2};
  SequenceStep t{bad_tok, 0, pages, 1};
  EXPECT_FALSE((*e)->forward(std::span(&t, 1)).ok());
  std::vector<std::int32_t> far = {999};
  SequenceStep u{std::span(toks).first(1), 0, far, 1};
  EXPECT_FALSE((*e)->forward(std::span(&u, 1)).ok());
}

}  // namespace
}  // namespace omni::model
