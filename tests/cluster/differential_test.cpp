// One gateway core for both clocks: the decisions of an omni-cluster run are exactly those of a
// fresh gateway core (the Scheduler omni-proxy runs) stepped by hand with the same inputs at the
// same times — submits, releases, first tokens, the engines' KV events and load reports —
// request by request. So the simulator adds no decision of its own: a policy measured in
// omni-cluster is the policy omni-proxy runs.
#include <gtest/gtest.h>

#include <cmath>

#include "omni/cluster/simulator.hpp"

namespace omni::cluster {
namespace {

engine::CostModel deepseek_cost() {
  auto model = engine::builtin_model_profile("deepseek-v3");
  auto hardware = engine::builtin_hardware_profile("h800");
  EXPECT_TRUE(model.ok() && hardware.ok());
  return engine::CostModel(*model, *hardware, engine::ParallelLayout{8, 1, true});
}

// Requests in sessions: every second one extends the previous one's prompt (a shared prefix).
std::vector<ClusterRequest> workload(int n) {
  std::vector<ClusterRequest> requests;
  for (int i = 0; i < n; ++i) {
    ClusterRequest r;
    r.id = static_cast<std::uint64_t>(i);
    r.arrival_s = i * 0.015;
    r.prompt_tokens = 1024 + static_cast<std::uint32_t>((i * 389) % 6000);
    r.output_tokens = 10 + static_cast<std::uint32_t>((i * 17) % 60);
    const std::uint64_t session = static_cast<std::uint64_t>(i / 2);
    for (std::uint32_t b = 0; b * 512 < r.prompt_tokens; ++b)
      r.hash_ids.push_back(session * 100 + b);
    requests.push_back(std::move(r));
  }
  return requests;
}

ClusterConfig cluster(std::uint32_t prefill, std::uint32_t decode, PdPattern pattern) {
  ClusterConfig config;
  config.prefill_instances = prefill;
  config.decode_instances = decode;
  config.pd_groups = prefill > 1 ? 2 : 1;
  config.pattern = pattern;
  for (engine::EngineConfig* e : {&config.prefill_engine, &config.decode_engine}) {
    e->block_size = 64;
    e->num_gpu_blocks = 2048;
    e->max_num_seqs = 16;
    e->max_num_batched_tokens = 8192;
  }
  config.decode_engine.num_gpu_blocks = 600;  // tight: decode holds happen
  config.gateway.node_limits = {40'000, 12};
  config.seed = 3;
  return config;
}

class CostTransfer final : public proxy::TransferModel {
 public:
  CostTransfer(const engine::CostModel& cost, double gbps) : cost_(cost), gbps_(gbps) {}
  double seconds(std::uint64_t prompt, std::uint32_t, std::uint32_t) const override {
    return cost_.kv_transfer_seconds(prompt, gbps_);
  }

 private:
  const engine::CostModel& cost_;
  double gbps_;
};

TimePoint at(double t) {
  return TimePoint{Duration{static_cast<Duration::rep>(std::llround(t * 1e9))}};
}

void expect_same(const std::vector<proxy::Decision>& got, const std::vector<proxy::Decision>& want,
                 double t) {
  ASSERT_EQ(got.size(), want.size()) << "at t=" << t;
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].ticket, want[i].ticket) << "at t=" << t;
    ASSERT_EQ(got[i].lease.ok(), want[i].lease.ok()) << "ticket " << want[i].ticket;
    if (!got[i].lease) continue;
    EXPECT_EQ(got[i].lease->node, want[i].lease->node) << "ticket " << want[i].ticket;
    EXPECT_EQ(got[i].lease->tokens, want[i].lease->tokens);
    EXPECT_EQ(got[i].lease->uncached_tokens, want[i].lease->uncached_tokens);
  }
}

struct Case {
  std::uint32_t prefill, decode;
  PdPattern pattern;
  std::string policy;
};

class Differential : public ::testing::TestWithParam<Case> {};

TEST_P(Differential, ClusterDecisionsAreTheCoresDecisionsRequestByRequest) {
  const Case c = GetParam();
  const ClusterConfig config = cluster(c.prefill, c.decode, c.pattern);
  const engine::CostModel cost = deepseek_cost();
  std::vector<GatewayInput> inputs;
  std::size_t placements = 0;
  std::size_t decisions = 0;
  VectorSource source(workload(120));
  auto policy = sched::make_placement_policy(c.policy);
  ASSERT_TRUE(policy.ok());
  auto result = simulate(
      config, cost, cost, source, std::move(*policy), {},
      [&](const GatewayDecision& d) {
        ++decisions;
        placements += d.node >= 0 ? 1 : 0;
      },
      [&](const GatewayInput& in) { inputs.push_back(in); });
  ASSERT_TRUE(result.ok()) << result.error().message;
  // Completed requests were placed on a prefill and a decode node (or their one aggregated
  // node); the tight setups also make the gateway refuse some (queue timeout): decisions too.
  EXPECT_GE(result->completed, 60u);
  EXPECT_GE(placements, (c.prefill > 0 ? 2 : 1) * result->completed);

  // The same inputs, by hand, into a fresh core.
  ManualClock clock;
  CostTransfer transfer(cost, config.kv_link_gbps);
  proxy::SchedulerOptions options = config.gateway;
  options.aggregated = c.prefill == 0;
  options.block_size = 64;
  options.transfer = &transfer;
  auto fresh = sched::make_placement_policy(c.policy);
  ASSERT_TRUE(fresh.ok());
  proxy::Scheduler core(clock, options, std::move(*fresh));
  std::size_t passes = 0;
  std::size_t decided = 0;
  for (const GatewayInput& in : inputs) {
    clock.set(at(in.t));
    switch (in.kind) {
      case GatewayInput::Kind::kSetNodes: core.set_nodes(in.nodes); break;
      case GatewayInput::Kind::kSubmit: ASSERT_TRUE(core.submit(in.ticket).ok()); break;
      case GatewayInput::Kind::kRelease: core.release(in.lease, in.outcome); break;
      case GatewayInput::Kind::kFirstToken: core.first_token(in.lease); break;
      case GatewayInput::Kind::kKvEvents: core.apply_kv_events(in.node, in.batch); break;
      case GatewayInput::Kind::kEngineLoad: core.report_engine_load(in.node, in.load); break;
      case GatewayInput::Kind::kSchedule: {
        ++passes;
        decided += in.decisions.size();
        expect_same(core.schedule(), in.decisions, in.t);
        if (::testing::Test::HasFatalFailure()) return;
        break;
      }
    }
  }
  EXPECT_GT(passes, 100u);
  EXPECT_EQ(decided, decisions);
  EXPECT_EQ(core.waiting(), 0u);
  EXPECT_EQ(core.decode_holds(), result->decode_holds);
}

INSTANTIATE_TEST_SUITE_P(Setups, Differential,
                         ::testing::Values(Case{2, 2, PdPattern::kSequential, "omni"},
                                           Case{2, 2, PdPattern::kConcurrent, "omni"},
                                           Case{0, 3, PdPattern::kSequential, "omni"},
                                           Case{2, 2, PdPattern::kSequential, "sglang-cache-aware"},
                                           Case{3, 1, PdPattern::kSequential, "least-outstanding"}),
                         [](const ::testing::TestParamInfo<Case>& p) {
                           std::string name =
                               std::to_string(p.param.prefill) + "p" +
                               std::to_string(p.param.decode) + "d_" +
                               (p.param.pattern == PdPattern::kSequential ? "seq_" : "conc_") +
                               p.param.policy;
                           for (char& ch : name) {
                             if (ch == '-') ch = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace omni::cluster
