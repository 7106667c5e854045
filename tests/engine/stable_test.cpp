// The stable fast path must give exactly what stepping one by one gives: same tokens, same
// finishes, same time, same random draws (MTP).
#include <gtest/gtest.h>

#include <map>

#include "omni/common/random.hpp"
#include "test_engines.hpp"

namespace omni::engine {
namespace {

using testing::request;
using testing::small_config;
using testing::small_engine;

struct Trace {
  std::map<SeqId, std::uint32_t> total;
  std::map<SeqId, FinishReason> finish;
  std::vector<SeqId> finish_order;
  double seconds = 0;
  std::uint64_t stable_steps = 0;
  bool operator==(const Trace& o) const {
    return total == o.total && finish == o.finish && finish_order == o.finish_order &&
           seconds == o.seconds;
  }
};

void record(const StepOutputs& out, Trace& t) {
  for (const SeqOutput& o : out.outputs) {
    t.total[o.id] = o.total_output_tokens;
    if (o.finish != FinishReason::kNone) {
      t.finish[o.id] = o.finish;
      t.finish_order.push_back(o.id);
    }
  }
}

// Adds a wave of requests every 150 steps (so that batches stay stable for a while) and steps
// to the end; the fast path never runs across a wave boundary, as a simulator never runs an
// instance past its next event.
Trace drive(Engine& e, bool use_fast_path, std::uint64_t workload_seed) {
  SeededRandom rng(workload_seed);
  Trace t;
  SeqId next = 1;
  std::uint64_t step = 0;
  for (int wave = 0; wave < 4; ++wave) {
    const auto n = rng.uniform_int(1, 8);
    for (std::int64_t k = 0; k < n; ++k) {
      const auto prompt = static_cast<std::uint32_t>(rng.uniform_int(1, 300));
      const auto out = static_cast<std::uint32_t>(rng.uniform_int(1, 200));
      EXPECT_TRUE(e.add(request(next++, prompt, out)));
    }
    const std::uint64_t wave_end = wave == 3 ? 1'000'000 : step + 150;
    while (step < wave_end && e.has_work()) {
      if (use_fast_path) {
        const auto limit =
            static_cast<std::uint32_t>(std::min<std::uint64_t>(wave_end - step, 1000));
        const Engine::Stable run = e.stable_decode_run(limit);
        if (run.steps > 0) {
          const StepOutputs out = e.advance_stable(run.steps);
          t.seconds += run.seconds;
          t.stable_steps += run.steps;
          step += run.steps;
          record(out, t);
          continue;
        }
      }
      const StepPlan p = e.schedule();
      t.seconds += e.step_seconds(p);
      record(e.complete(p), t);
      ++step;
    }
    step = wave_end;
  }
  return t;
}

class StableRunTest : public ::testing::TestWithParam<std::uint32_t> {};

TEST_P(StableRunTest, MatchesSteppingOneByOne) {
  const std::uint32_t drafts = GetParam();
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    // A stable run sums its steps before the caller adds them, so the totals may differ in the
    // last bits: seconds get a tolerance, everything else must be identical.
    Engine slow = small_engine(small_config(128), {drafts, 0.8}, seed);
    Engine fast = small_engine(small_config(128), {drafts, 0.8}, seed);
    Trace a = drive(slow, false, seed);
    Trace b = drive(fast, true, seed);
    EXPECT_GT(b.stable_steps, 0u) << "seed " << seed;
    EXPECT_EQ(a.total, b.total) << "seed " << seed;
    EXPECT_EQ(a.finish, b.finish) << "seed " << seed;
    EXPECT_EQ(a.finish_order, b.finish_order) << "seed " << seed;
    EXPECT_NEAR(a.seconds, b.seconds, 1e-9 * a.seconds) << "seed " << seed;
    EXPECT_EQ(slow.stats().num_preemptions, fast.stats().num_preemptions);
  }
}

INSTANTIATE_TEST_SUITE_P(Drafts, StableRunTest, ::testing::Values(0u, 1u, 2u));

TEST(StableRun, SecondsAreTheSumOfTheStepTimes) {
  Engine e = small_engine(small_config(256));
  for (SeqId id = 1; id <= 4; ++id) ASSERT_TRUE(e.add(request(id, 20, 60)));
  e.complete(e.schedule());
  const Engine::Stable run = e.stable_decode_run(10);
  ASSERT_EQ(run.steps, 10u);
  Engine twin = small_engine(small_config(256));
  for (SeqId id = 1; id <= 4; ++id) ASSERT_TRUE(twin.add(request(id, 20, 60)));
  twin.complete(twin.schedule());
  double seconds = 0;
  for (int k = 0; k < 10; ++k) {
    const StepPlan p = twin.schedule();
    seconds += twin.step_seconds(p);
    twin.complete(p);
  }
  EXPECT_EQ(run.seconds, seconds);  // same additions in the same order
}

TEST(StableRun, StopsBeforeANewBlockOrAFinish) {
  Engine e = small_engine(small_config(256));
  ASSERT_TRUE(e.add(request(1, 20, 100)));  // 2 blocks = 32 slots after prefill
  e.complete(e.schedule());                 // computed 20, output 1
  // Steps k = 1..: the step computes token 20 + k - 1 into slot index 20 + k - 1 < 32.
  EXPECT_EQ(e.stable_decode_run(1000).steps, 12u);
  Engine near_end = small_engine(small_config(256));
  ASSERT_TRUE(near_end.add(request(1, 20, 3)));
  near_end.complete(near_end.schedule());
  EXPECT_EQ(near_end.stable_decode_run(1000).steps, 1u);  // output 1 -> 2; 3 finishes normally
}

TEST(StableRun, NotStableWhileSomethingCanBeAdmittedOrPrefilled) {
  Engine e = small_engine(small_config(256));
  EXPECT_EQ(e.stable_decode_run(10).steps, 0u);  // nothing running
  ASSERT_TRUE(e.add(request(1, 20, 100)));
  EXPECT_EQ(e.stable_decode_run(10).steps, 0u);  // waiting, not running
  e.complete(e.schedule());
  EXPECT_GT(e.stable_decode_run(10).steps, 0u);
  ASSERT_TRUE(e.add(request(2, 20, 100)));
  EXPECT_EQ(e.stable_decode_run(10).steps, 0u);  // request 2 would be admitted
}

TEST(StableRun, AWaitingRequestThatCannotFitDoesNotBreakTheRun) {
  // 10 blocks: two running requests hold 4 each, the waiting one needs 7.
  Engine e = small_engine(small_config(10));
  ASSERT_TRUE(e.add(request(1, 50, 100)));
  ASSERT_TRUE(e.add(request(2, 50, 100)));
  e.complete(e.schedule());
  ASSERT_TRUE(e.add(request(3, 100, 5)));
  const StepPlan p = e.schedule();
  EXPECT_EQ(p.seqs.size(), 2u);  // request 3 does not fit
  e.complete(p);
  EXPECT_EQ(e.stats().num_waiting, 1u);
  const Engine::Stable run = e.stable_decode_run(100);
  EXPECT_EQ(run.steps, 13u);  // 64 slots - 51 tokens computed
  e.advance_stable(run.steps);
  EXPECT_EQ(e.stats().num_waiting, 1u);
  EXPECT_EQ(e.stats().num_running, 2u);
}

TEST(StableRun, HorizonLimitsTheRunToStepsStartingBeforeIt) {
  Engine e = small_engine(small_config(256));
  ASSERT_TRUE(e.add(request(1, 20, 100)));
  e.complete(e.schedule());
  const Engine::Stable all = e.stable_decode_run(12);
  ASSERT_EQ(all.steps, 12u);
  const double step = all.seconds / 12;  // nearly constant at this size
  EXPECT_EQ(e.stable_decode_run(12, 0.0).steps, 0u);
  EXPECT_EQ(e.stable_decode_run(12, step * 0.5).steps, 1u);
  EXPECT_EQ(e.stable_decode_run(12, step * 2.5).steps, 3u);
}

}  // namespace
}  // namespace omni::engine
