// The proxy's log lines about nodes and requests (node_events.hpp).
#include "node_events.hpp"

#include <algorithm>

#include <gtest/gtest.h>

#include "proxy_metrics.hpp"
#include "recent_decisions.hpp"

namespace omni::proxy {
namespace {

using std::chrono::seconds;

TEST(DescribeHealthChange, SaysWhichNodeWhatAndWhy) {
  const NodeSpec prefill{"10.0.0.1:8000", Role::kPrefill, ""};
  EXPECT_EQ(describe_health_change(prefill, NodeHealth::kUp, NodeHealth::kEjected,
                                   HealthCause::kConsecutiveFailures, seconds(5)),
            "node 10.0.0.1:8000 (prefill) ejected for 5s: consecutive failed requests");
  const NodeSpec decode{"d:1", Role::kDecode, ""};
  EXPECT_EQ(describe_health_change(decode, NodeHealth::kTrial, NodeHealth::kUp,
                                   HealthCause::kTrialSucceeded, {}),
            "node d:1 (decode) re-admitted: its trial request succeeded");
  EXPECT_EQ(describe_health_change(decode, NodeHealth::kDown, NodeHealth::kUp,
                                   HealthCause::kProbeRecovered, {}),
            "node d:1 (decode) up again: its /health probe succeeded");
  EXPECT_EQ(describe_health_change(decode, NodeHealth::kUp, NodeHealth::kDown,
                                   HealthCause::kProbeFailed, {}),
            "node d:1 (decode) down: its /health probe failed");
}

TEST(DescribePlacement, NamesTheChoiceAndEveryCandidatesInputs) {
  const NodeSpec a{"10.0.0.1:8000", Role::kDecode, ""};
  const NodeSpec b{"10.0.0.2:8000", Role::kDecode, ""};
  Ticket ticket;
  ticket.id = 7;
  ticket.role = Role::kDecode;
  ticket.prompt_tokens = 412;
  ticket.attempt = 1;
  sched::Candidate busy;
  busy.outstanding_tokens = 1200;
  busy.outstanding_requests = 2;
  busy.running = 3;
  busy.kv_usage = 0.5;
  sched::Candidate cached;
  cached.matched_tokens = 256;
  cached.kv_transfer_seconds = 0.002;
  const std::vector<PlacementInput> inputs{{&a, busy}, {&b, cached}};
  EXPECT_EQ(describe_placement(ticket, inputs, 1),
            "placed ticket 7 (decode, 412 prompt tokens, attempt 1) on 10.0.0.2:8000; weighed "
            "10.0.0.1:8000 {matched 0 tokens, outstanding 1200 tokens / 2 requests, queued "
            "prefill 0 tokens (0 long), engine running 3 waiting 0 kv 50%}, 10.0.0.2:8000 "
            "{matched 256 tokens, outstanding 0 tokens / 0 requests, queued prefill 0 tokens (0 "
            "long), engine running 0 waiting 0 kv 0%, kv transfer 0.002s}");
}

TEST(ThrottledEvents, OneLineAKindAnIntervalWithTheCountHeldBack) {
  ThrottledEvents events(seconds(10));
  const TimePoint t0{};
  EXPECT_EQ(events.note("requests failed", "r1 got 502", t0), "requests failed: r1 got 502");
  EXPECT_FALSE(events.note("requests failed", "r2", t0 + seconds(1)));
  EXPECT_FALSE(events.note("requests failed", "r3", t0 + seconds(9)));
  // Another kind is not held back by the first.
  EXPECT_EQ(events.note("streams migrated", "r4", t0 + seconds(2)), "streams migrated: r4");
  EXPECT_EQ(events.note("requests failed", "r5 got 504", t0 + seconds(12)),
            "requests failed: r5 got 504 (2 more in the last 12s)");
  EXPECT_FALSE(events.note("requests failed", "r6", t0 + seconds(13)));
  EXPECT_EQ(events.note("requests failed", "r7", t0 + seconds(40)),
            "requests failed: r7 (1 more in the last 28s)");
  EXPECT_EQ(events.note("requests failed", "r8", t0 + seconds(60)), "requests failed: r8");
}

}  // namespace
}  // namespace omni::proxy

namespace omni::proxy {
namespace {

TEST(LatencyBuckets, IncludeTheRoundSloValuesInOrder) {
  const std::vector<double> bounds = latency_buckets();
  for (const double slo : {0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0}) {
    EXPECT_NE(std::find(bounds.begin(), bounds.end(), slo), bounds.end()) << slo;
  }
  EXPECT_TRUE(std::is_sorted(bounds.begin(), bounds.end()));
  EXPECT_EQ(std::adjacent_find(bounds.begin(), bounds.end()), bounds.end());
  EXPECT_DOUBLE_EQ(bounds.front(), 50e-6);
}

}  // namespace
}  // namespace omni::proxy

namespace omni::proxy {
namespace {

TEST(RecentDecisions, KeepsTheNewestFirstWithinItsCapacity) {
  RecentDecisions ring(3);
  for (int i = 0; i < 5; ++i) {
    RoutingDecision d;
    d.request_id = "r" + std::to_string(i);
    d.status = 200;
    d.ttft_ms = i == 4 ? -1 : 1.5;
    ring.add(std::move(d));
  }
  const std::string json = ring.json();
  EXPECT_EQ(json.find("\"r1\""), std::string::npos) << json;  // pushed out
  const auto r4 = json.find("\"r4\"");
  const auto r3 = json.find("\"r3\"");
  const auto r2 = json.find("\"r2\"");
  ASSERT_NE(r2, std::string::npos) << json;
  EXPECT_LT(r4, r3);
  EXPECT_LT(r3, r2);
  // No first token: no ttft_ms for that one.
  EXPECT_EQ(json.substr(r4, r3 - r4).find("ttft_ms"), std::string::npos) << json;
  EXPECT_NE(json.substr(r3).find("\"ttft_ms\":1.5"), std::string::npos) << json;
}

}  // namespace
}  // namespace omni::proxy
