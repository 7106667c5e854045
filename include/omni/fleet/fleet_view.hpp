// FleetView: what the other replicas of one omni-proxy fleet have dispatched to each engine,
// built from their messages (fleet_message.hpp), so that every replica places requests on the
// fleet-wide load and not only on its own share.
//
//   apply(message, now) ── delta: the sender's per-engine counts move by the change
//                       ── snapshot: the sender's counts are replaced (corrects lost deltas)
//                       ── bye: the sender is forgotten at once
//   expire(now) ── a replica silent for longer than the lease is forgotten (it died or is cut
//                  off): no phantom load stays behind
//   totals() ── per engine, the sum over the live replicas (never below zero)
//
// Times are this replica's own (the moment each message was received, on its monotonic clock):
// clocks are never compared across machines. A sender whose config digest differs is listed but
// its load is never mixed in (its block size or policy may disagree). A restarted sender (a new
// epoch) starts from nothing. Messages that arrive out of order (a sequence number not above
// the last) are dropped; a jump counts as a gap (deltas were lost; the next snapshot corrects).
//
// Pure and single-threaded: the owner serialises calls (omni-proxy: the scheduler's master).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "omni/common/clock.hpp"
#include "omni/fleet/fleet_message.hpp"

namespace omni::fleet {

struct RemoteLoad {
  std::uint64_t tokens = 0;
  std::uint64_t prompt = 0;
  std::uint32_t running = 0;
  friend bool operator==(const RemoteLoad&, const RemoteLoad&) = default;
};

// What apply() did with a message.
enum class Verdict : std::uint8_t {
  kApplied,
  kOwn,             // this replica's own message, echoed back by the broker
  kOtherFleet,      // another fleet's name
  kConfigMismatch,  // the sender's settings differ: listed, not mixed in
  kStale,           // not newer than what was applied from the sender
};
std::string_view verdict_name(Verdict verdict) noexcept;

struct ReplicaInfo {
  std::string replica;
  std::string epoch;
  std::uint64_t seq = 0;
  Duration since_heard{};
  std::uint64_t messages = 0;
  std::uint64_t gaps = 0;
  bool config_mismatch = false;
  std::int64_t tokens = 0;  // its load over every engine
  std::int64_t running = 0;
};

class FleetView {
 public:
  FleetView(std::string fleet, std::string self, std::string config, Duration lease);

  Verdict apply(const FleetMessage& message, TimePoint now);
  // Forgets replicas not heard from for longer than the lease; returns how many.
  std::size_t expire(TimePoint now);
  std::unordered_map<std::string, RemoteLoad> totals() const;
  std::vector<ReplicaInfo> replicas(TimePoint now) const;
  // Replicas whose load counts (heard within the lease, same config).
  std::size_t live() const;
  Duration lease() const noexcept { return lease_; }

 private:
  struct Counts {
    std::int64_t tokens = 0;
    std::int64_t prompt = 0;
    std::int64_t running = 0;
  };
  struct Replica {
    std::string epoch;
    std::uint64_t seq = 0;
    TimePoint heard{};
    std::uint64_t messages = 0;
    std::uint64_t gaps = 0;
    bool config_mismatch = false;
    std::unordered_map<std::string, Counts> loads;
  };

  std::string fleet_;
  std::string self_;
  std::string config_;
  Duration lease_;
  std::unordered_map<std::string, Replica> replicas_;
};

}  // namespace omni::fleet
