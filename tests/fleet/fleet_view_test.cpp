// FleetView: deltas and snapshots from other replicas add up per engine; a silent replica's
// load expires after the lease; own echoes, other fleets, other configurations and old
// messages are not mixed in; a restarted replica starts from nothing.
#include "omni/fleet/fleet_view.hpp"

#include <gtest/gtest.h>

namespace omni::fleet {
namespace {

using namespace std::chrono_literals;

FleetMessage from(std::string replica, std::uint64_t seq, MessageKind kind,
                  std::vector<NodeLoadEntry> loads, std::string epoch = "e1") {
  FleetMessage m;
  m.fleet = "prod";
  m.replica = std::move(replica);
  m.epoch = std::move(epoch);
  m.config = "cfg";
  m.seq = seq;
  m.kind = kind;
  m.loads = std::move(loads);
  return m;
}

class FleetViewTest : public ::testing::Test {
 protected:
  FleetView view{"prod", "me", "cfg", 3s};
  TimePoint t0{};
};

TEST_F(FleetViewTest, DeltasFromSeveralReplicasAddUpPerEngine) {
  EXPECT_EQ(view.apply(from("a", 1, MessageKind::kDelta, {{"e1", 100, 0, 1}}), t0),
            Verdict::kApplied);
  EXPECT_EQ(view.apply(from("a", 2, MessageKind::kDelta, {{"e1", 50, 0, 1}, {"e2", 10, 0, 1}}), t0),
            Verdict::kApplied);
  EXPECT_EQ(view.apply(from("b", 1, MessageKind::kDelta, {{"e1", 7, 0, 1}}), t0),
            Verdict::kApplied);
  auto totals = view.totals();
  EXPECT_EQ(totals["e1"], (RemoteLoad{157, 0, 3}));
  EXPECT_EQ(totals["e2"], (RemoteLoad{10, 0, 1}));
  // A release brings an engine back to nothing.
  view.apply(from("a", 3, MessageKind::kDelta, {{"e2", -10, 0, -1}}), t0);
  EXPECT_EQ(view.totals().count("e2"), 0u);
  EXPECT_EQ(view.live(), 2u);
}

TEST_F(FleetViewTest, ASnapshotReplacesWhatTheReplicaReportedBefore) {
  view.apply(from("a", 1, MessageKind::kDelta, {{"e1", 100, 0, 1}, {"e2", 5, 0, 1}}), t0);
  // Deltas 2..4 were lost: a gap, corrected by the snapshot.
  view.apply(from("a", 5, MessageKind::kSnapshot, {{"e1", 30, 0, 2}}), t0);
  auto totals = view.totals();
  EXPECT_EQ(totals["e1"], (RemoteLoad{30, 0, 2}));
  EXPECT_EQ(totals.count("e2"), 0u);
  EXPECT_EQ(view.replicas(t0).at(0).gaps, 1u);
}

TEST_F(FleetViewTest, ASilentReplicasLoadExpiresAfterTheLease) {
  view.apply(from("a", 1, MessageKind::kDelta, {{"e1", 100, 0, 1}}), t0);
  view.apply(from("b", 1, MessageKind::kSnapshot, {{"e1", 1, 0, 1}}), t0 + 2s);
  EXPECT_EQ(view.expire(t0 + 3s), 0u) << "exactly the lease: still live";
  EXPECT_EQ(view.expire(t0 + 3s + 1ms), 1u);
  EXPECT_EQ(view.totals()["e1"], (RemoteLoad{1, 0, 1}));
  EXPECT_EQ(view.replicas(t0 + 4s).at(0).since_heard, 2s);
}

TEST_F(FleetViewTest, AGoodbyeForgetsTheReplicaAtOnce) {
  view.apply(from("a", 1, MessageKind::kDelta, {{"e1", 100, 0, 1}}), t0);
  view.apply(from("a", 2, MessageKind::kBye, {}), t0);
  EXPECT_TRUE(view.totals().empty());
  EXPECT_TRUE(view.replicas(t0).empty());
}

TEST_F(FleetViewTest, WhatMustNotBeMixedInIsNot) {
  EXPECT_EQ(view.apply(from("me", 1, MessageKind::kDelta, {{"e1", 1, 0, 1}}), t0), Verdict::kOwn);
  FleetMessage other = from("a", 1, MessageKind::kDelta, {{"e1", 1, 0, 1}});
  other.fleet = "staging";
  EXPECT_EQ(view.apply(other, t0), Verdict::kOtherFleet);
  FleetMessage mismatch = from("c", 1, MessageKind::kDelta, {{"e1", 1, 0, 1}});
  mismatch.config = "another block size";
  EXPECT_EQ(view.apply(mismatch, t0), Verdict::kConfigMismatch);
  EXPECT_TRUE(view.totals().empty());
  auto listed = view.replicas(t0);
  ASSERT_EQ(listed.size(), 1u) << "the mismatched replica is listed";
  EXPECT_TRUE(listed[0].config_mismatch);
  EXPECT_EQ(view.live(), 0u);
}

TEST_F(FleetViewTest, OldMessagesAreDroppedAndARestartStartsOver) {
  view.apply(from("a", 5, MessageKind::kDelta, {{"e1", 100, 0, 1}}), t0);
  EXPECT_EQ(view.apply(from("a", 5, MessageKind::kDelta, {{"e1", 100, 0, 1}}), t0),
            Verdict::kStale);
  EXPECT_EQ(view.apply(from("a", 3, MessageKind::kDelta, {{"e1", 1, 0, 1}}), t0), Verdict::kStale);
  EXPECT_EQ(view.totals()["e1"], (RemoteLoad{100, 0, 1}));
  // The process restarted (kill -9, then up again): a new epoch, its old load gone.
  EXPECT_EQ(view.apply(from("a", 1, MessageKind::kDelta, {{"e2", 8, 0, 1}}, "e2"), t0),
            Verdict::kApplied);
  auto totals = view.totals();
  EXPECT_EQ(totals.count("e1"), 0u);
  EXPECT_EQ(totals["e2"], (RemoteLoad{8, 0, 1}));
}

TEST_F(FleetViewTest, CountsNeverGoBelowZero) {
  view.apply(from("a", 1, MessageKind::kDelta, {{"e1", -100, 0, -3}}), t0);
  EXPECT_EQ(view.totals()["e1"], (RemoteLoad{0, 0, 0}));
}

}  // namespace
}  // namespace omni::fleet
