#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "omni/workload/synthetic.hpp"

namespace omni::workload {
namespace {

std::vector<RequestSpec> drain(Workload& w) {
  std::vector<RequestSpec> out;
  while (true) {
    auto next = w.next();
    EXPECT_TRUE(next.ok());
    if (!next.ok() || !next->has_value()) return out;
    out.push_back(std::move(**next));
  }
}

TEST(SyntheticSpec, ParsesEveryKey) {
  auto spec = parse_synthetic_spec(
      "n=50,rate=4,arrival=gamma,cv=2,input=lognormal:2000:1500,output=uniform:50:300,turns=3,user="
      "exp:40,"
      "think=1500ms,system=1024");
  ASSERT_TRUE(spec.ok()) << spec.error().to_string();
  EXPECT_EQ(spec->requests, 50u);
  EXPECT_EQ(spec->rate, 4.0);
  EXPECT_EQ(spec->arrival, SyntheticSpec::Arrival::kGamma);
  EXPECT_EQ(spec->cv, 2.0);
  EXPECT_EQ(spec->input.kind, LengthDist::Kind::kLogNormal);
  EXPECT_EQ(spec->input.a, 2000.0);
  EXPECT_EQ(spec->input.b, 1500.0);
  EXPECT_EQ(spec->output.kind, LengthDist::Kind::kUniform);
  EXPECT_EQ(spec->turns.kind, LengthDist::Kind::kConst);
  EXPECT_EQ(spec->turns.a, 3.0);
  EXPECT_EQ(spec->user.kind, LengthDist::Kind::kExponential);
  EXPECT_DOUBLE_EQ(spec->think_s, 1.5);
  EXPECT_EQ(spec->system_tokens, 1024u);
}

TEST(SyntheticSpec, EmptySpecIsTheDefault) {
  auto spec = parse_synthetic_spec("");
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->requests, 1000u);
  EXPECT_EQ(spec->input.a, 512.0);
}

TEST(SyntheticSpec, RejectsBadItemsNamingThem) {
  for (const char* bad :
       {"n=0", "rate=0", "rate=-1", "arrival=weibull", "input=uniform:5:1", "input=normal:1",
        "input=zipf:1", "think=5", "bogus=1", "n", "system=x", "cv=abc", "input=lognormal:0:1"}) {
    auto spec = parse_synthetic_spec(bad);
    ASSERT_FALSE(spec.ok()) << bad;
    EXPECT_NE(spec.error().message.find(bad), std::string::npos) << spec.error().message;
  }
}

TEST(LengthDist, ClampsAndRounds) {
  SeededRandom rng(1);
  EXPECT_EQ((LengthDist{LengthDist::Kind::kConst, 0.2, 0}.sample(rng)), 1u);
  EXPECT_EQ((LengthDist{LengthDist::Kind::kConst, 99.6, 0}.sample(rng)), 100u);
  for (int i = 0; i < 1000; ++i) {
    const auto v = LengthDist{LengthDist::Kind::kUniform, 10, 20}.sample(rng);
    EXPECT_GE(v, 10u);
    EXPECT_LE(v, 20u);
  }
}

TEST(LengthDist, LogNormalHasTheRequestedMean) {
  SeededRandom rng(7);
  const LengthDist d{LengthDist::Kind::kLogNormal, 2000, 1500};
  double sum = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) sum += d.sample(rng);
  EXPECT_NEAR(sum / n, 2000.0, 60.0);
}

TEST(GammaGap, HasTheRequestedMeanAndVariation) {
  for (double cv : {0.5, 1.0, 2.0}) {
    SeededRandom rng(3);
    const int n = 40000;
    double sum = 0, sq = 0;
    for (int i = 0; i < n; ++i) {
      const double g = gamma_gap(rng, 5.0, cv);
      sum += g;
      sq += g * g;
    }
    const double mean = sum / n;
    const double sd = std::sqrt(sq / n - mean * mean);
    EXPECT_NEAR(mean, 0.2, 0.01) << cv;
    EXPECT_NEAR(sd / mean, cv, 0.08 * cv) << cv;
  }
}

TEST(SyntheticWorkload, SameSeedSameRequestsAndArrivalsAreOrdered) {
  auto spec = *parse_synthetic_spec(
      "n=300,rate=20,input=uniform:10:3000,output=exp:50,turns=uniform:1:4,think=200ms");
  auto a = drain(*make_synthetic_workload(spec, 11));
  auto b = drain(*make_synthetic_workload(spec, 11));
  auto c = drain(*make_synthetic_workload(spec, 12));
  ASSERT_EQ(a.size(), 300u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].index, i);
    EXPECT_EQ(a[i].hash_ids.size(), blocks_for(a[i].input_tokens));
    if (i > 0) {
      EXPECT_GE(a[i].arrival_s, a[i - 1].arrival_s);
    }
  }
}

TEST(SyntheticWorkload, PoissonRateIsRespected) {
  auto spec = *parse_synthetic_spec("n=20000,rate=50");
  auto reqs = drain(*make_synthetic_workload(spec, 5));
  EXPECT_NEAR(static_cast<double>(reqs.size() - 1) / reqs.back().arrival_s, 50.0, 1.5);
}

TEST(SyntheticWorkload, SessionsGrowByTheAnswerAndShareTheirPrefix) {
  auto spec = *parse_synthetic_spec(
      "n=3,rate=0.001,input=600,output=100,user=30,turns=3,think=2s,system=512");
  auto reqs = drain(*make_synthetic_workload(spec, 1));
  ASSERT_EQ(reqs.size(), 3u);
  for (std::uint32_t t = 0; t < 3; ++t) {
    ASSERT_TRUE(reqs[t].session.has_value());
    EXPECT_EQ(*reqs[t].session, (SessionInfo{0, t, 3}));
    EXPECT_DOUBLE_EQ(reqs[t].arrival_s, 2.0 * t);
  }
  EXPECT_EQ(reqs[0].input_tokens, 512u + 600u);
  EXPECT_EQ(reqs[1].input_tokens, 512u + 600u + 100u + 30u);
  EXPECT_EQ(reqs[2].input_tokens, 512u + 730u + 100u + 30u);
  // Turn 0's ids are a prefix of turn 1's, which are a prefix of turn 2's.
  EXPECT_TRUE(
      std::equal(reqs[0].hash_ids.begin(), reqs[0].hash_ids.end(), reqs[1].hash_ids.begin()));
  EXPECT_TRUE(
      std::equal(reqs[1].hash_ids.begin(), reqs[1].hash_ids.end(), reqs[2].hash_ids.begin()));
  EXPECT_EQ(reqs[0].hash_ids[0], kGeneratedIdBase);  // the system block
}

TEST(SyntheticWorkload, DifferentSessionsShareOnlyTheSystemPrompt) {
  auto spec = *parse_synthetic_spec("n=2,rate=1,input=1024,system=1024");
  auto reqs = drain(*make_synthetic_workload(spec, 1));
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].hash_ids[0], reqs[1].hash_ids[0]);
  EXPECT_EQ(reqs[0].hash_ids[1], reqs[1].hash_ids[1]);
  EXPECT_NE(reqs[0].hash_ids[2], reqs[1].hash_ids[2]);
  EXPECT_NE(reqs[0].session->session_id, reqs[1].session->session_id);
}

}  // namespace
}  // namespace omni::workload
