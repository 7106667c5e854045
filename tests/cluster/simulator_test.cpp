#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "omni/cluster/simulator.hpp"

namespace omni::cluster {
namespace {

engine::CostModel deepseek_cost() {
  auto model = engine::builtin_model_profile("deepseek-v3");
  auto hardware = engine::builtin_hardware_profile("h800");
  EXPECT_TRUE(model.ok() && hardware.ok());
  return engine::CostModel(*model, *hardware, engine::ParallelLayout{8, 1, true});
}

ClusterConfig small_cluster(std::uint32_t prefill, std::uint32_t decode) {
  ClusterConfig config;
  config.prefill_instances = prefill;
  config.decode_instances = decode;
  for (engine::EngineConfig* e : {&config.prefill_engine, &config.decode_engine}) {
    e->block_size = 64;
    e->num_gpu_blocks = 4096;
    e->max_num_seqs = 32;
    e->max_num_batched_tokens = 8192;
    e->max_model_len = 65536;
  }
  config.sample_interval_s = 0.5;
  config.seed = 7;
  return config;
}

// A steady stream of requests; every fourth shares a 2-block prefix with the one before.
std::vector<ClusterRequest> workload(int n, double gap_s) {
  std::vector<ClusterRequest> requests;
  for (int i = 0; i < n; ++i) {
    ClusterRequest r;
    r.id = static_cast<std::uint64_t>(i);
    r.arrival_s = i * gap_s;
    r.prompt_tokens = 600 + static_cast<std::uint32_t>((i * 137) % 1500);
    r.output_tokens = 20 + static_cast<std::uint32_t>((i * 31) % 90);
    const std::uint64_t base = (i % 4 == 3) ? static_cast<std::uint64_t>(i - 1) * 10 : i * 10;
    for (std::uint32_t b = 0; b * 512 < r.prompt_tokens; ++b) r.hash_ids.push_back(base + b);
    requests.push_back(std::move(r));
  }
  return requests;
}

struct Outcome {
  ClusterResult result;
  std::map<std::uint64_t, RequestRecord> records;
};

Outcome simulate_requests(const ClusterConfig& config, std::vector<ClusterRequest> requests,
                          const std::string& policy_name = "least-tokens") {
  const engine::CostModel cost = deepseek_cost();
  VectorSource source(std::move(requests));
  sched::PolicySettings settings;
  settings.seed = config.seed;
  auto policy = sched::make_placement_policy(policy_name, settings);
  EXPECT_TRUE(policy.ok());
  Outcome out;
  auto result = simulate(config, cost, cost, source, std::move(*policy),
                         [&](const RequestRecord& r) { out.records[r.id] = r; });
  EXPECT_TRUE(result.ok()) << (result.ok() ? "" : result.error().message);
  out.result = std::move(*result);
  return out;
}

TEST(ClusterSimulator, AggregatedClusterCompletesEveryRequest) {
  const auto requests = workload(60, 0.05);
  std::uint64_t expected_output = 0;
  for (const auto& r : requests) expected_output += r.output_tokens;
  const Outcome r = simulate_requests(small_cluster(0, 2), requests);
  EXPECT_EQ(r.result.completed, 60u);
  EXPECT_EQ(r.result.failed, 0u);
  EXPECT_EQ(r.result.output_tokens, expected_output);
  EXPECT_EQ(r.records.size(), 60u);
  for (const auto& [id, record] : r.records) {
    EXPECT_TRUE(record.ok);
    EXPECT_GT(record.ttft_s, 0.0);
    EXPECT_GE(record.e2e_s, record.ttft_s);
    EXPECT_EQ(record.prefill_instance, -1);
    EXPECT_GE(record.decode_instance, 0);
  }
  EXPECT_GT(r.result.duration_s, 0.0);
  EXPECT_FALSE(r.result.timeline.empty());
}

TEST(ClusterSimulator, LoneRequestTtftIsOnePrefillStepPlusTheHops) {
  ClusterConfig config = small_cluster(0, 1);
  config.network_latency_s = 0.001;
  ClusterRequest request{1, 0.0, 1000, 5, {}};
  const Outcome r = simulate_requests(config, {request});
  ASSERT_EQ(r.result.completed, 1u);
  engine::StepShape shape;
  shape.prefill_tokens = 1000;
  shape.prefill_seqs = 1;
  shape.prefill_attention_pairs = 1000ULL * 1001ULL / 2;
  const double step = deepseek_cost().step_seconds(shape);
  EXPECT_NEAR(r.records.at(1).ttft_s, step + 2 * config.network_latency_s, step * 0.02);
  EXPECT_EQ(r.records.at(1).output_tokens, 5u);
}

TEST(ClusterSimulator, SameSeedSameResultBitForBit) {
  const ClusterConfig config = small_cluster(2, 2);
  const Outcome a = simulate_requests(config, workload(80, 0.02), "random");
  const Outcome b = simulate_requests(config, workload(80, 0.02), "random");
  EXPECT_EQ(a.result.completed, b.result.completed);
  EXPECT_EQ(a.result.events, b.result.events);
  EXPECT_EQ(a.result.duration_s, b.result.duration_s);
  EXPECT_EQ(a.result.ttft_ms.quantile(0.99), b.result.ttft_ms.quantile(0.99));
  ASSERT_EQ(a.records.size(), b.records.size());
  for (const auto& [id, record] : a.records) {
    EXPECT_EQ(record.ttft_s, b.records.at(id).ttft_s);
    EXPECT_EQ(record.e2e_s, b.records.at(id).e2e_s);
    EXPECT_EQ(record.decode_instance, b.records.at(id).decode_instance);
  }
}

TEST(ClusterSimulator, FastForwardGivesTheSameTimesAsSteppingEveryStep) {
  ClusterConfig stepped = small_cluster(1, 2);
  stepped.fast_forward = false;
  ClusterConfig fast = small_cluster(1, 2);
  const Outcome a = simulate_requests(stepped, workload(40, 0.08));
  const Outcome b = simulate_requests(fast, workload(40, 0.08));
  EXPECT_EQ(a.result.stable_runs, 0u);
  EXPECT_GT(b.result.stable_runs, 0u);
  EXPECT_LT(b.result.events, a.result.events);
  ASSERT_EQ(a.records.size(), b.records.size());
  for (const auto& [id, record] : a.records) {
    const RequestRecord& other = b.records.at(id);
    EXPECT_NEAR(record.ttft_s, other.ttft_s, 1e-9) << "request " << id;
    EXPECT_NEAR(record.e2e_s, other.e2e_s, 1e-9) << "request " << id;
    EXPECT_EQ(record.output_tokens, other.output_tokens);
  }
}

TEST(ClusterSimulator, DisaggregatedPatternsBothCompleteAndConcurrentSavesTheRoundTrip) {
  ClusterConfig sequential = small_cluster(2, 1);
  sequential.network_latency_s = 0.002;
  ClusterConfig concurrent = sequential;
  concurrent.pattern = PdPattern::kConcurrent;
  ClusterRequest lone{1, 0.0, 2048, 10, {1, 2, 3, 4}};
  const Outcome s = simulate_requests(sequential, {lone});
  const Outcome c = simulate_requests(concurrent, {lone});
  ASSERT_EQ(s.result.completed, 1u);
  ASSERT_EQ(c.result.completed, 1u);
  EXPECT_GE(s.records.at(1).prefill_instance, 0);
  // Sequential pays the prefill's answer to the gateway and the decode request: two more hops.
  EXPECT_NEAR(s.records.at(1).ttft_s - c.records.at(1).ttft_s, 2 * sequential.network_latency_s,
              1e-6);
  const Outcome loaded = simulate_requests(sequential, workload(60, 0.03));
  EXPECT_EQ(loaded.result.completed, 60u);
}

TEST(ClusterSimulator, SharedPrefixesHitThePrefixCache) {
  ClusterConfig config = small_cluster(1, 1);
  ClusterRequest first{1, 0.0, 2048, 4, {10, 11, 12, 13}};
  ClusterRequest second{2, 1.0, 2048, 4, {10, 11, 12, 99}};
  const Outcome r = simulate_requests(config, {first, second});
  ASSERT_EQ(r.result.completed, 2u);
  EXPECT_EQ(r.records.at(1).cached_tokens, 0u);
  EXPECT_EQ(r.records.at(2).cached_tokens, 3u * 512u);
  EXPECT_NEAR(r.result.prefix_cache_hit_rate(), 1536.0 / 4096.0, 1e-12);
}

TEST(ClusterSimulator, ImpossibleRequestsFailWithoutStoppingTheOthers) {
  ClusterConfig config = small_cluster(0, 1);
  ClusterRequest too_long{1, 0.0, 100000, 4, {}};
  ClusterRequest fine{2, 0.1, 500, 4, {}};
  const Outcome r = simulate_requests(config, {too_long, fine});
  EXPECT_EQ(r.result.completed, 1u);
  EXPECT_EQ(r.result.failed, 1u);
  EXPECT_FALSE(r.records.at(1).ok);
  EXPECT_FALSE(r.records.at(1).error.empty());
  EXPECT_TRUE(r.records.at(2).ok);
}

// A decode pool too small for the load: omni holds prefilled requests at the gateway while every
// decode instance is over its thresholds, and the wait is bounded, so everything finishes.
TEST(ClusterSimulator, DecodeHoldsAreBoundedAndEveryRequestFinishes) {
  ClusterConfig config = small_cluster(2, 1);
  config.decode_engine.num_gpu_blocks = 160;  // 10,240 tokens: a handful of sequences
  config.gateway.max_decode_wait = std::chrono::milliseconds(500);
  config.engine_metrics_interval_s = 0;  // the gateway sees every step's KV usage
  const Outcome held = simulate_requests(config, workload(40, 0.01), "omni");
  EXPECT_EQ(held.result.completed, 40u);
  EXPECT_EQ(held.result.failed, 0u);
  EXPECT_GT(held.result.decode_holds, 0u);
  EXPECT_LE(held.result.decode_hold_timeouts, held.result.decode_holds);
  // No waiting allowed: the policy is never asked to hold.
  config.gateway.max_decode_wait = Duration::zero();
  const Outcome none = simulate_requests(config, workload(40, 0.01), "omni");
  EXPECT_EQ(none.result.completed, 40u);
  EXPECT_EQ(none.result.decode_holds, 0u);
  // Policies that never hold leave the counters at zero.
  const Outcome never = simulate_requests(config, workload(40, 0.01), "least-load");
  EXPECT_EQ(never.result.decode_holds, 0u);
  EXPECT_EQ(never.result.completed, 40u);
}

// Offered goodput is counted over the arrival span, so the tail of the last decodes does not
// count; plain goodput is vLLM's, per second of the run.
TEST(ClusterSimulator, OfferedGoodputIsPerSecondOfTheArrivalSpan) {
  ClusterConfig config = small_cluster(1, 1);
  config.slo.ttft_s = 1e9;
  const Outcome r = simulate_requests(config, workload(20, 0.1));
  EXPECT_NEAR(r.result.arrival_span_s, 1.9, 1e-9);
  EXPECT_GT(r.result.duration_s, r.result.arrival_span_s);
  EXPECT_NEAR(r.result.goodput_offered(), 20 / 1.9, 1e-9);
  EXPECT_LT(r.result.request_throughput(), r.result.goodput_offered());
  EXPECT_NEAR(r.result.goodput(), 20 / r.result.duration_s, 1e-9);
}

TEST(ClusterSimulator, SloCountsGoodRequestsOnly) {
  ClusterConfig config = small_cluster(0, 1);
  config.slo.ttft_s = 1e-9;  // nobody can meet it
  const Outcome none = simulate_requests(config, workload(10, 0.1));
  EXPECT_EQ(none.result.good, 0u);
  config.slo.ttft_s = 1e9;
  const Outcome all = simulate_requests(config, workload(10, 0.1));
  EXPECT_EQ(all.result.good, 10u);
  EXPECT_GT(all.result.goodput(), 0.0);
}

}  // namespace
}  // namespace omni::cluster
