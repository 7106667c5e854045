// A sequence's numbers never depend on the rest of the batch (what continuous batching, PD and
// MTP rely on for greedy outputs to be identical): its logits are bit-identical alone or next
// to prefills and decodes of other sequences; the rows of an MTP verify step equal the
// single-token decodes they replace; and expert parallelism (any placement, redundant copies)
// gives the same logits as the model's own experts. Every ISA this CPU has, both caches.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "omni/model/engine.hpp"
#include "test_models.hpp"

namespace omni::model {
namespace {

std::unique_ptr<LoadedModel> micro_model(std::uint64_t seed = 3) {
  auto m = std::make_unique<LoadedModel>();
  m->config = testing::micro_config();
  auto src = to_source(random_weights(m->config, seed), DType::kBF16);
  EXPECT_TRUE(src.ok());
  m->source = std::move(*src);
  auto w = bind_weights(m->config, *m->source, true);
  EXPECT_TRUE(w.ok()) << w.error().message;
  m->weights = std::move(*w);
  return m;
}

std::unique_ptr<Engine> make_engine(const LoadedModel& m, omni::amla::Isa isa, CacheDtype cache,
                                    int threads = 2) {
  EngineOptions o;
  o.isa = isa;
  o.cache_dtype = cache;
  o.threads = threads;
  o.page_size = 4;
  o.num_pages = 256;
  auto e = Engine::create(m, o);
  EXPECT_TRUE(e.ok());
  return std::move(*e);
}

std::vector<std::int32_t> tokens(int n, int salt) {
  std::vector<std::int32_t> t;
  for (int i = 0; i < n; ++i) t.push_back((i * 37 + salt * 101 + 5) % 500 + 1);
  return t;
}

std::vector<std::int32_t> pages(int first, int count) {
  std::vector<std::int32_t> p;
  for (int i = 0; i < count; ++i) p.push_back(first + i);
  return p;
}

std::vector<float> last_rows(const StepOutput& out, int first_row, int rows, int vocab) {
  return {out.logits.begin() + static_cast<std::ptrdiff_t>(first_row) * vocab,
          out.logits.begin() + static_cast<std::ptrdiff_t>(first_row + rows) * vocab};
}

struct Param {
  omni::amla::Isa isa;
  CacheDtype cache;
};

std::vector<Param> params() {
  std::vector<Param> out;
  for (const auto isa : omni::amla::supported_isas()) {
    out.push_back({isa, CacheDtype::kBF16});
    out.push_back({isa, CacheDtype::kF32});
  }
  return out;
}

std::string label(const Param& p) {
  return std::string(omni::amla::isa_name(p.isa)) +
         (p.cache == CacheDtype::kF32 ? "/f32" : "/bf16");
}

TEST(Invariance, ASequenceIsTheSameAloneAndInABatch) {
  auto m = micro_model();
  const int V = m->config.vocab_size;
  for (const Param& p : params()) {
    SCOPED_TRACE(label(p));
    auto alone = make_engine(*m, p.isa, p.cache);
    auto batched = make_engine(*m, p.isa, p.cache);
    const auto a = tokens(21, 1);  // a long prefill (GEMMs)
    const auto pa = pages(0, 8);
    SequenceStep sa{a, 0, pa, 1};
    auto ra = alone->forward(std::span(&sa, 1));
    ASSERT_TRUE(ra.ok());
    const auto want_prefill = last_rows(*ra, 0, 1, V);
    // The same prefill beside another long prefill and a short one.
    const auto b = tokens(30, 2), c = tokens(3, 3);
    const auto pb = pages(100, 8), pc = pages(150, 2);
    const std::vector<SequenceStep> mixed = {{b, 0, pb, 1}, {a, 0, pa, 1}, {c, 0, pc, 1}};
    auto rm = batched->forward(mixed);
    ASSERT_TRUE(rm.ok());
    EXPECT_EQ(last_rows(*rm, 1, 1, V), want_prefill);
    // Decodes: alone, then beside 12 other decodes (more rows than a GEMV pass takes).
    const std::int32_t next = 7;
    SequenceStep da{std::span(&next, 1), 21, pa, 1};
    auto rda = alone->forward(std::span(&da, 1));
    ASSERT_TRUE(rda.ok());
    const auto want_decode = last_rows(*rda, 0, 1, V);
    std::vector<std::vector<std::int32_t>> others;
    std::vector<std::vector<std::int32_t>> other_pages;
    for (int i = 0; i < 12; ++i) {
      others.push_back(tokens(5, 10 + i));
      other_pages.push_back(pages(160 + 4 * i, 3));
      std::vector<SequenceStep> prefill = {{others.back(), 0, other_pages.back(), 1}};
      ASSERT_TRUE(batched->forward(prefill).ok());
    }
    std::vector<SequenceStep> decodes;
    for (int i = 0; i < 12; ++i) {
      decodes.push_back({std::span(others[static_cast<std::size_t>(i)]).subspan(4, 1), 4,
                         other_pages[static_cast<std::size_t>(i)], 1});
      if (i == 5) decodes.push_back(da);
    }
    auto rd = batched->forward(decodes);
    ASSERT_TRUE(rd.ok());
    EXPECT_EQ(last_rows(*rd, 6, 1, V), want_decode);
  }
}

TEST(Invariance, VerifyRowsEqualSingleTokenDecodes) {
  auto m = micro_model();
  const int V = m->config.vocab_size;
  for (const Param& p : params()) {
    SCOPED_TRACE(label(p));
    auto single = make_engine(*m, p.isa, p.cache);
    auto verify = make_engine(*m, p.isa, p.cache);
    const auto prompt = tokens(13, 4);
    const auto pg = pages(0, 6);
    SequenceStep pre{prompt, 0, pg, 1};
    ASSERT_TRUE(single->forward(std::span(&pre, 1)).ok());
    ASSERT_TRUE(verify->forward(std::span(&pre, 1)).ok());
    const std::vector<std::int32_t> next = {11, 23};
    SequenceStep d0{std::span(next).subspan(0, 1), 13, pg, 1};
    auto r0 = single->forward(std::span(&d0, 1));
    ASSERT_TRUE(r0.ok());
    const auto want0 = last_rows(*r0, 0, 1, V);
    SequenceStep d1{std::span(next).subspan(1, 1), 14, pg, 1};
    auto r1 = single->forward(std::span(&d1, 1));
    ASSERT_TRUE(r1.ok());
    const auto want1 = last_rows(*r1, 0, 1, V);
    SequenceStep both{next, 13, pg, 2};
    auto rv = verify->forward(std::span(&both, 1));
    ASSERT_TRUE(rv.ok());
    EXPECT_EQ(last_rows(*rv, 0, 1, V), want0);
    EXPECT_EQ(last_rows(*rv, 1, 1, V), want1);
  }
}

// Two ranks; every expert on one rank and the first four with a second copy on the other.
std::shared_ptr<ExpertMap> two_rank_map(const LoadedModel& m) {
  auto map = std::make_shared<ExpertMap>();
  map->ranks = 2;
  map->experts = m.config.n_routed_experts;
  const int E = map->experts;
  for (int l = 0; l < m.config.num_hidden_layers; ++l) {
    const LayerWeights& lw = m.weights.layers[static_cast<std::size_t>(l)];
    if (!lw.is_moe) continue;
    LayerExpertMap lm;
    for (int e = 0; e < E; ++e)
      lm.slots.push_back({e % 2, e, lw.moe.experts[static_cast<std::size_t>(e)]});
    for (int e = 0; e < 4; ++e)
      lm.slots.push_back({(e + 1) % 2, e, lw.moe.experts[static_cast<std::size_t>(e)]});
    lm.offsets.push_back(0);
    for (int src = 0; src < 2; ++src) {
      for (int e = 0; e < E; ++e) {
        lm.targets.push_back(static_cast<std::uint32_t>(e));
        if (e < 4) lm.targets.push_back(static_cast<std::uint32_t>(E + e));
        lm.offsets.push_back(static_cast<std::uint32_t>(lm.targets.size()));
      }
    }
    map->layers.push_back(std::move(lm));
  }
  return map;
}

TEST(Invariance, ExpertParallelismGivesTheSameLogits) {
  auto m = micro_model();
  const int V = m->config.vocab_size;
  for (const auto isa : omni::amla::supported_isas()) {
    SCOPED_TRACE(omni::amla::isa_name(isa));
    auto plain = make_engine(*m, isa, CacheDtype::kBF16);
    auto ep = make_engine(*m, isa, CacheDtype::kBF16);
    ASSERT_TRUE(ep->set_expert_map(two_rank_map(*m)).ok());
    const auto a = tokens(17, 5), b = tokens(6, 6);
    const auto pa = pages(0, 5), pb = pages(10, 2);
    const std::vector<SequenceStep> steps = {{a, 0, pa, 1}, {b, 0, pb, 1}};
    auto r1 = plain->forward(steps);
    ASSERT_TRUE(r1.ok());
    const auto want = last_rows(*r1, 0, 2, V);
    auto r2 = ep->forward(steps);
    ASSERT_TRUE(r2.ok());
    EXPECT_EQ(last_rows(*r2, 0, 2, V), want);
    const ExpertCounters& c = ep->expert_counters();
    std::uint64_t routed = 0, served = 0;
    for (const auto v : c.expert_tokens) routed += v;
    for (const auto v : c.slot_tokens) served += v;
    EXPECT_EQ(routed, static_cast<std::uint64_t>(c.moe_layers) * 23u *
                          static_cast<std::uint64_t>(m->config.num_experts_per_tok));
    EXPECT_EQ(served, routed);
    ep->reset_expert_counters();
    EXPECT_EQ(ep->expert_counters().expert_tokens[0], 0u);
  }
}

TEST(Invariance, ABadExpertMapIsRefused) {
  auto m = micro_model();
  auto e = make_engine(*m, omni::amla::Isa::kScalar, CacheDtype::kBF16, 1);
  auto map = two_rank_map(*m);
  map->layers.pop_back();
  EXPECT_FALSE(e->set_expert_map(map).ok());
  map = two_rank_map(*m);
  map->layers[0].targets[0] = 999;
  EXPECT_FALSE(e->set_expert_map(map).ok());
  EXPECT_TRUE(e->set_expert_map(nullptr).ok());
}

}  // namespace
}  // namespace omni::model
