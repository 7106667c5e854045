// The fleet-wide load view (omni/fleet/fleet_view.hpp).
#include "omni/fleet/fleet_view.hpp"

#include <algorithm>
#include <array>

namespace omni::fleet {

std::string_view verdict_name(Verdict verdict) noexcept {
  static constexpr std::array<std::string_view, 5> kNames = {"applied", "own", "other_fleet",
                                                             "config_mismatch", "stale"};
  return kNames[static_cast<std::size_t>(verdict)];
}

FleetView::FleetView(std::string fleet, std::string self, std::string config, Duration lease)
    : fleet_(std::move(fleet)), self_(std::move(self)), config_(std::move(config)), lease_(lease) {}

Verdict FleetView::apply(const FleetMessage& m, TimePoint now) {
  if (m.fleet != fleet_) return Verdict::kOtherFleet;
  if (m.replica == self_) return Verdict::kOwn;
  if (m.kind == MessageKind::kBye) {
    const auto it = replicas_.find(m.replica);
    if (it != replicas_.end() && it->second.epoch == m.epoch) replicas_.erase(it);
    return Verdict::kApplied;
  }
  Replica& r = replicas_[m.replica];
  if (r.epoch != m.epoch) {  // a new sender, or one that restarted: nothing of it is known
    r = Replica{};
    r.epoch = m.epoch;
  } else if (m.seq <= r.seq) {
    return Verdict::kStale;
  } else if (m.seq > r.seq + 1) {
    ++r.gaps;
  }
  r.seq = m.seq;
  r.heard = now;
  ++r.messages;
  r.config_mismatch = m.config != config_;
  if (r.config_mismatch) {
    r.loads.clear();
    return Verdict::kConfigMismatch;
  }
  if (m.kind == MessageKind::kSnapshot) r.loads.clear();
  for (const NodeLoadEntry& l : m.loads) {
    Counts& c = r.loads[l.node];
    c.tokens += l.tokens;
    c.prompt += l.prompt;
    c.running += l.running;
  }
  // Engines at zero need no entry (a snapshot lists only what is in flight).
  std::erase_if(r.loads, [](const auto& entry) {
    return entry.second.tokens == 0 && entry.second.prompt == 0 && entry.second.running == 0;
  });
  return Verdict::kApplied;
}

std::size_t FleetView::expire(TimePoint now) {
  return std::erase_if(replicas_,
                       [&](const auto& entry) { return now - entry.second.heard > lease_; });
}

std::unordered_map<std::string, RemoteLoad> FleetView::totals() const {
  std::unordered_map<std::string, Counts> sums;
  for (const auto& [name, r] : replicas_) {
    if (r.config_mismatch) continue;
    for (const auto& [node, c] : r.loads) {
      Counts& s = sums[node];
      s.tokens += c.tokens;
      s.prompt += c.prompt;
      s.running += c.running;
    }
  }
  std::unordered_map<std::string, RemoteLoad> out;
  for (const auto& [node, s] : sums) {
    out[node] =
        RemoteLoad{static_cast<std::uint64_t>(std::max<std::int64_t>(0, s.tokens)),
                   static_cast<std::uint64_t>(std::max<std::int64_t>(0, s.prompt)),
                   static_cast<std::uint32_t>(std::clamp<std::int64_t>(s.running, 0, UINT32_MAX))};
  }
  return out;
}

std::vector<ReplicaInfo> FleetView::replicas(TimePoint now) const {
  std::vector<ReplicaInfo> out;
  for (const auto& [name, r] : replicas_) {
    ReplicaInfo info;
    info.replica = name;
    info.epoch = r.epoch;
    info.seq = r.seq;
    info.since_heard = now - r.heard;
    info.messages = r.messages;
    info.gaps = r.gaps;
    info.config_mismatch = r.config_mismatch;
    for (const auto& [node, c] : r.loads) {
      info.tokens += c.tokens;
      info.running += c.running;
    }
    out.push_back(std::move(info));
  }
  std::sort(out.begin(), out.end(),
            [](const ReplicaInfo& a, const ReplicaInfo& b) { return a.replica < b.replica; });
  return out;
}

std::size_t FleetView::live() const {
  return static_cast<std::size_t>(std::count_if(
      replicas_.begin(), replicas_.end(), [](const auto& e) { return !e.second.config_mismatch; }));
}

}  // namespace omni::fleet
