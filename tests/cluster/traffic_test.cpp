// Traffic classes in the simulator: the class mix reaches the gateway core's tickets, and at
// overload the core's bands, shedding and tenant fairness show in the per-class figures.
#include <gtest/gtest.h>

#include "omni/cluster/simulator.hpp"

namespace omni::cluster {
namespace {

engine::CostModel deepseek_cost() {
  auto model = engine::builtin_model_profile("deepseek-v3");
  auto hardware = engine::builtin_hardware_profile("h800");
  EXPECT_TRUE(model.ok() && hardware.ok());
  return engine::CostModel(*model, *hardware, engine::ParallelLayout{8, 1, true});
}

// Two aggregated instances; the gateway lets each run at most 4 requests, so that the backlog
// of an overload waits in the gateway's queue, where the classes are ordered.
ClusterConfig overload_cluster() {
  ClusterConfig config;
  config.prefill_instances = 0;
  config.decode_instances = 2;
  for (engine::EngineConfig* e : {&config.prefill_engine, &config.decode_engine}) {
    e->block_size = 64;
    e->num_gpu_blocks = 4096;
    e->max_num_seqs = 32;
    e->max_num_batched_tokens = 8192;
    e->max_model_len = 65536;
  }
  config.gateway.node_limits.running = 4;
  config.sample_interval_s = 0;
  config.seed = 5;
  return config;
}

// About twice what overload_cluster() serves (measured: it completes about 12 such requests/s at
// saturation).
constexpr int kOverloadRequests = 240;
constexpr double kOverloadGap = 0.04;

// Evenly spaced requests of one shape, unique prompts.
std::vector<ClusterRequest> steady(int n, double gap_s) {
  std::vector<ClusterRequest> requests;
  for (int i = 0; i < n; ++i) {
    ClusterRequest r;
    r.id = static_cast<std::uint64_t>(i);
    r.arrival_s = i * gap_s;
    r.prompt_tokens = 1024;
    r.output_tokens = 64;
    requests.push_back(std::move(r));
  }
  return requests;
}

ClusterResult run(const ClusterConfig& config, std::vector<ClusterRequest> requests,
                  const GatewayInputSink& inputs = {}) {
  const engine::CostModel cost = deepseek_cost();
  VectorSource source(std::move(requests));
  auto policy = sched::make_placement_policy("least-tokens", sched::PolicySettings{});
  EXPECT_TRUE(policy.ok());
  auto result = simulate(config, cost, cost, source, std::move(*policy), {}, {}, inputs);
  EXPECT_TRUE(result.ok()) << (result.ok() ? "" : result.error().message);
  return std::move(*result);
}

std::vector<proxy::BandSpec> two_bands(bool sheddable) {
  proxy::BandSpec high{"high", -1};
  proxy::BandSpec low{"low", 0};
  low.sheddable = sheddable;
  return {high, low};
}

std::vector<TrafficClass> interactive_and_batch() {
  return {TrafficClass{"interactive", 0.2, 0, 0, 1.0}, TrafficClass{"batch", 0.8, 1, 0, 1.0}};
}

TEST(ClusterTraffic, EveryTicketCarriesItsClassAndTheCountsAddUp) {
  ClusterConfig config = overload_cluster();
  config.gateway.traffic.bands = two_bands(false);
  config.classes = {TrafficClass{"a", 1, 0, 1, 3.0}, TrafficClass{"b", 2, 1, 2, 1.0}};
  std::map<std::uint64_t, std::pair<std::uint8_t, std::uint32_t>> seen;  // ticket → band, tenant
  const ClusterResult r = run(config, steady(60, 0.05), [&](const GatewayInput& in) {
    if (in.kind != GatewayInput::Kind::kSubmit) return;
    seen[in.ticket.id] = {in.ticket.band, in.ticket.tenant};
    const TrafficClass& c = config.classes[class_of_request(config.classes, 5, in.ticket.id / 2)];
    EXPECT_EQ(in.ticket.band, c.band);
    EXPECT_EQ(in.ticket.tenant, c.tenant);
    EXPECT_EQ(in.ticket.tenant_weight, c.tenant_weight);
  });
  EXPECT_EQ(seen.size(), 60u);
  ASSERT_EQ(r.classes.size(), 2u);
  EXPECT_EQ(r.classes[0].name, "a");
  EXPECT_EQ(r.classes[0].band, "high");
  EXPECT_EQ(r.classes[1].band, "low");
  EXPECT_EQ(r.classes[0].requests + r.classes[1].requests, 60u);
  EXPECT_GT(r.classes[0].requests, 0u);
  EXPECT_GT(r.classes[1].requests, r.classes[0].requests);
  EXPECT_EQ(r.classes[0].completed + r.classes[1].completed, r.completed);
  EXPECT_EQ(r.classes[0].ttft_ms.count() + r.classes[1].ttft_ms.count(), r.ttft_ms.count());
  // Same seed, same per-class result.
  const ClusterResult again = run(config, steady(60, 0.05));
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(again.classes[i].requests, r.classes[i].requests);
    EXPECT_EQ(again.classes[i].ttft_ms.quantile(0.99), r.classes[i].ttft_ms.quantile(0.99));
    EXPECT_EQ(again.classes[i].queue_wait_s, r.classes[i].queue_wait_s);
  }
}

TEST(ClusterTraffic, HighBandKeepsItsTtftAtOverload) {
  const auto requests = steady(kOverloadRequests, kOverloadGap);
  const ClusterResult one_queue = run(overload_cluster(), requests);
  ClusterConfig config = overload_cluster();
  config.gateway.traffic.bands = two_bands(false);
  config.classes = interactive_and_batch();
  const ClusterResult banded = run(config, requests);
  ASSERT_EQ(banded.classes.size(), 2u);
  const ClassResult& high = banded.classes[0];
  const ClassResult& low = banded.classes[1];
  EXPECT_EQ(banded.failed, 0u);
  const double high_p99 = high.ttft_ms.quantile(0.99);
  EXPECT_LT(high_p99, 0.5 * low.ttft_ms.quantile(0.99));
  EXPECT_LT(high_p99, 0.5 * one_queue.ttft_ms.quantile(0.99));
  // The low band waited behind the high one; the high band hardly waited for priority.
  const auto priority = static_cast<std::size_t>(proxy::WaitCause::kPriority);
  EXPECT_GT(low.queue_wait_s[priority], 0.0);
  EXPECT_GT(low.legs_delayed, high.legs_delayed);
}

TEST(ClusterTraffic, SheddableBandIsShedAndCountedAtOverload) {
  ClusterConfig config = overload_cluster();
  config.gateway.traffic.bands = two_bands(true);
  config.gateway.traffic.bands[1].max_waiting = 8;
  config.gateway.traffic.bands[1].queue_timeout = std::chrono::seconds(2);
  config.classes = interactive_and_batch();
  const ClusterResult r = run(config, steady(kOverloadRequests, kOverloadGap));
  const ClassResult& high = r.classes[0];
  const ClassResult& low = r.classes[1];
  EXPECT_EQ(high.failed, 0u);
  EXPECT_TRUE(high.shed_by_reason.empty());
  ASSERT_GT(low.failed, 0u);
  std::uint64_t shed = 0;
  for (const auto& [reason, count] : low.shed_by_reason) shed += count;
  EXPECT_EQ(shed, low.failed_by_kind.at("shed"));
  EXPECT_EQ(r.failed_by_kind.at("shed"), shed);
  EXPECT_GT(low.shed_by_reason.count("band_full"), 0u);
  EXPECT_EQ(low.completed + low.failed, low.requests);
}

TEST(ClusterTraffic, SmallTenantIsNotDrownedByABigOne) {
  const auto requests = steady(kOverloadRequests, kOverloadGap);
  ClusterConfig config = overload_cluster();
  // One tenant sends 10x the other; without tenants the very same requests share one queue.
  config.classes = {TrafficClass{"big", 10, 0, 1, 1.0}, TrafficClass{"small", 1, 0, 2, 1.0}};
  const ClusterResult fair = run(config, requests);
  config.classes = {TrafficClass{"big", 10, 0, 0, 1.0}, TrafficClass{"small", 1, 0, 0, 1.0}};
  const ClusterResult shared = run(config, requests);
  ASSERT_EQ(fair.classes[1].requests, shared.classes[1].requests);
  ASSERT_GT(fair.classes[1].completed, 0u);
  EXPECT_LT(fair.classes[1].ttft_ms.quantile(0.99), 0.5 * shared.classes[1].ttft_ms.quantile(0.99));
}

}  // namespace
}  // namespace omni::cluster
