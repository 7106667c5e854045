#include "omni/proxy/scheduler.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <numeric>
#include <utility>

#include "omni/sched/event_feed.hpp"
#include "omni/sched/policy.hpp"

namespace omni::proxy {

std::string_view health_cause_name(HealthCause cause) noexcept {
  switch (cause) {
    case HealthCause::kProbeFailed: return "its /health probe failed";
    case HealthCause::kProbeRecovered: return "its /health probe succeeded";
    case HealthCause::kConsecutiveFailures: return "consecutive failed requests";
    case HealthCause::kTrialFailed: return "its trial request failed";
    case HealthCause::kTrialSucceeded: return "its trial request succeeded";
    case HealthCause::kCoolDownOver: return "its ejection time is over";
  }
  return "unknown";
}

std::string_view health_name(NodeHealth health) noexcept {
  switch (health) {
    case NodeHealth::kUp: return "up";
    case NodeHealth::kDown: return "down";
    case NodeHealth::kEjected: return "ejected";
    case NodeHealth::kTrial: return "trial";
  }
  return "unknown";
}

std::string_view role_name(Role role) noexcept {
  return role == Role::kPrefill ? "prefill" : "decode";
}

namespace {

double to_seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

Scheduler::Scheduler(const Clock& clock, SchedulerOptions options,
                     std::unique_ptr<sched::PlacementPolicy> policy)
    : clock_(clock), options_(options), policy_(std::move(policy)), fair_(options_.traffic) {
  if (options_.prefix.enabled) {
    sched::PrefixIndexOptions index;
    index.max_entries = options_.prefix.max_entries;
    index.predicted_ttl_s = to_seconds(options_.prefix.predicted_ttl);
    index_ = std::make_unique<sched::PrefixIndex>(index);
  }
}

Scheduler::~Scheduler() = default;

std::vector<std::uint32_t> Scheduler::set_nodes(const std::vector<NodeSpec>& specs) {
  std::vector<std::uint32_t> ids;
  ids.reserve(specs.size());
  for (Node& node : nodes_) node.status.removed = true;
  for (const NodeSpec& spec : specs) {
    auto known = std::find_if(nodes_.begin(), nodes_.end(), [&](const Node& node) {
      return node.status.spec.name == spec.name && node.status.spec.role == spec.role;
    });
    if (known != nodes_.end()) {
      known->status.removed = false;
      known->status.spec = spec;
      ids.push_back(known->status.id);
      continue;
    }
    Node node;
    node.status.id = next_id_++;
    node.status.spec = spec;
    node.next_ejection = options_.ejection_time;
    ids.push_back(node.status.id);
    nodes_.push_back(std::move(node));
  }
  // A node that left the pool holds nothing anyone can use any more.
  for (const Node& node : nodes_) {
    if (node.status.removed && index_) index_->remove_instance(node.status.id);
  }
  reindex();
  forget_removed();
  return ids;
}

Status Scheduler::submit(Ticket ticket) {
  for (const Waiting& waiting : queue_) {
    if (waiting.ticket.id == ticket.id) {
      return make_error(ErrorCode::kInvalidArgument, "ticket already waiting");
    }
  }
  const std::size_t bands = std::max<std::size_t>(options_.traffic.bands.size(), 1);
  ticket.band = static_cast<std::uint8_t>(std::min<std::size_t>(ticket.band, bands - 1));
  if (ticket.tenant != 0) tenants_seen_ = true;
  if (Status admitted = admit_band(ticket); !admitted) return admitted;
  const TimePoint now = clock_.now();
  if (queue_.size() >= options_.queue_capacity && !evict_for(ticket, now)) {
    return make_error(ErrorCode::kResourceExhausted, "the proxy queue is full");
  }
  if (band_waiting_.size() < bands) band_waiting_.resize(bands);
  ++band_waiting_[ticket.band];
  Waiting waiting{std::move(ticket), now};
  waiting.cause_since = now;
  queue_.push_back(std::move(waiting));
  return {};
}

std::string_view shed_reason_name(ShedReason reason) noexcept {
  switch (reason) {
    case ShedReason::kEvicted: return "evicted";
    case ShedReason::kBandFull: return "band_full";
    case ShedReason::kBandTimeout: return "band_timeout";
    case ShedReason::kQueueShare: return "queue_share";
  }
  return "unknown";
}

void Scheduler::set_traffic(TrafficOptions traffic) {
  options_.traffic = std::move(traffic);
  fair_.configure(options_.traffic);
  const std::size_t bands = std::max<std::size_t>(options_.traffic.bands.size(), 1);
  band_waiting_.assign(bands, 0);
  for (Waiting& waiting : queue_) {
    waiting.ticket.band =
        static_cast<std::uint8_t>(std::min<std::size_t>(waiting.ticket.band, bands - 1));
    ++band_waiting_[waiting.ticket.band];
  }
}

const BandSpec* Scheduler::band_spec(std::uint8_t band) const {
  return band < options_.traffic.bands.size() ? &options_.traffic.bands[band] : nullptr;
}

Status Scheduler::admit_band(const Ticket& ticket) {
  const BandSpec* spec = band_spec(ticket.band);
  if (spec == nullptr || !spec->sheddable || spec->max_waiting == 0) return {};
  if (ticket.band >= band_waiting_.size() || band_waiting_[ticket.band] < spec->max_waiting) {
    return {};
  }
  if (options_.observer) options_.observer->on_shed(ticket, ShedReason::kBandFull);
  return make_error(ErrorCode::kResourceExhausted, "band '" + spec->name + "' is shedding load (" +
                                                       std::to_string(spec->max_waiting) +
                                                       " of its requests wait already)");
}

// The queue is full: a less urgent sheddable ticket, else a ticket of a tenant over its share of
// the incoming ticket's band (traffic.hpp, "fair drop"), gives its place up. Returns whether one
// did.
bool Scheduler::evict_for(const Ticket& incoming, TimePoint now) {
  ShedReason reason = ShedReason::kEvicted;
  auto victim = sheddable_victim(incoming);
  if (victim == queue_.end()) {
    victim = share_victim(incoming);
    reason = ShedReason::kQueueShare;
  }
  if (victim == queue_.end()) return false;
  if (victim->held) --decodes_held_now_;
  if (options_.observer) options_.observer->on_shed(victim->ticket, reason);
  shed_.push_back(
      {victim->ticket.id,
       make_error(ErrorCode::kResourceExhausted,
                  reason == ShedReason::kEvicted
                      ? "shed under overload: a more urgent request took its place in the full "
                        "queue"
                      : "shed under overload: the queue is full and its tenant held more than "
                        "its share of it")});
  leave(*victim, now);
  queue_.erase(victim);
  return true;
}

// The newest waiting ticket of the least urgent sheddable band less urgent than `incoming`.
std::deque<Scheduler::Waiting>::iterator Scheduler::sheddable_victim(const Ticket& incoming) {
  auto victim = queue_.end();
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    const BandSpec* spec = band_spec(it->ticket.band);
    if (spec == nullptr || !spec->sheddable || it->ticket.band <= incoming.band) continue;
    if (victim == queue_.end() || it->ticket.band >= victim->ticket.band) victim = it;
  }
  return victim;
}

// The newest ticket, in the incoming ticket's band, of the tenant holding the most of that band
// per weight, if it holds more than the incoming ticket's tenant would with it.
std::deque<Scheduler::Waiting>::iterator Scheduler::share_victim(const Ticket& incoming) {
  if (!tenants_seen_) return queue_.end();  // one tenant (none): nobody is over its share
  struct Held {
    std::size_t count = 0;
    double weight = 1.0;
  };
  std::unordered_map<std::uint32_t, Held> held;
  for (const Waiting& waiting : queue_) {
    if (waiting.ticket.band != incoming.band) continue;
    Held& h = held[waiting.ticket.tenant];
    ++h.count;
    h.weight = waiting.ticket.tenant_weight > 0 ? waiting.ticket.tenant_weight : 1.0;
  }
  const double incoming_weight = incoming.tenant_weight > 0 ? incoming.tenant_weight : 1.0;
  const double newcomer = static_cast<double>(held[incoming.tenant].count + 1) / incoming_weight;
  std::optional<std::uint32_t> heaviest;
  double most = newcomer;
  for (const auto& [tenant, h] : held) {
    const double per_weight = static_cast<double>(h.count) / h.weight;
    if (tenant != incoming.tenant && per_weight > most) {
      most = per_weight;
      heaviest = tenant;
    }
  }
  if (!heaviest) return queue_.end();
  for (auto it = queue_.end(); it != queue_.begin();) {
    --it;
    if (it->ticket.band == incoming.band && it->ticket.tenant == *heaviest) return it;
  }
  return queue_.end();
}

double Scheduler::node_share(const Ticket& ticket) const {
  const BandSpec* spec = band_spec(ticket.band);
  const double band = spec == nullptr ? 1.0 : spec->node_share;
  return std::clamp(std::min(band, ticket.tenant_node_share), 1e-6, 1.0);
}

void Scheduler::note_cause(Waiting& waiting, WaitCause cause, TimePoint now) {
  waiting.waited[static_cast<std::size_t>(waiting.cause)] += now - waiting.cause_since;
  waiting.cause = cause;
  waiting.cause_since = now;
}

void Scheduler::leave(Waiting& waiting, TimePoint now) {
  note_cause(waiting, waiting.cause, now);
  if (waiting.ticket.band < band_waiting_.size() && band_waiting_[waiting.ticket.band] > 0) {
    --band_waiting_[waiting.ticket.band];
  }
  if (options_.observer) options_.observer->on_waited(waiting.ticket, waiting.waited);
}

Duration Scheduler::timeout_of(const Ticket& ticket) const {
  const BandSpec* spec = band_spec(ticket.band);
  return spec != nullptr && spec->queue_timeout > Duration::zero() ? spec->queue_timeout
                                                                   : options_.queue_timeout;
}

std::uint8_t Scheduler::effective_band(const Waiting& waiting, TimePoint now) const {
  const Duration aging = options_.traffic.aging;
  if (aging <= Duration::zero() || waiting.ticket.band == 0) return waiting.ticket.band;
  const auto steps = (now - waiting.enqueued) / aging;
  return static_cast<std::uint8_t>(waiting.ticket.band -
                                   std::min<std::int64_t>(steps, waiting.ticket.band));
}

FairOrder::Entry Scheduler::fair_entry(const Waiting& waiting, TimePoint now) const {
  const Ticket& t = waiting.ticket;
  FairOrder::Entry entry;
  entry.band = effective_band(waiting, now);
  entry.tenant = t.tenant;
  entry.weight = t.tenant_weight > 0 ? t.tenant_weight : 1.0;
  // Its token cost: what it asks of the stage it waits for.
  const sched::Stage stage = stage_of(t);
  const std::uint64_t cost = stage == sched::Stage::kPrefill  ? t.prompt_tokens
                             : stage == sched::Stage::kDecode ? t.max_tokens
                                                              : t.prompt_tokens + t.max_tokens;
  entry.cost = static_cast<double>(std::max<std::uint64_t>(cost, 1));
  return entry;
}

// The pass order with traffic classes: FairOrder's over every waiting ticket.
void Scheduler::order_queue(TimePoint now) {
  fair_entries_.clear();
  for (std::size_t i = 0; i < queue_.size(); ++i) {
    FairOrder::Entry entry = fair_entry(queue_[i], now);
    entry.score = policy_->queue_score(request_of(queue_[i], now));
    entry.index = i;
    fair_entries_.push_back(entry);
  }
  fair_.order(fair_entries_, pass_order_);
  order_.clear();
  for (std::size_t index : pass_order_) order_.emplace_back(0.0, index);
}

std::vector<Decision> Scheduler::schedule() {
  std::vector<Decision> decisions;
  schedule(decisions);
  return decisions;
}

void Scheduler::schedule(std::vector<Decision>& decisions) {
  // Tickets shed at submit are answered with this pass.
  for (Decision& shed : shed_) decisions.push_back(std::move(shed));
  shed_.clear();
  if (queue_.empty()) return;
  const TimePoint now = clock_.now();
  refresh_circuits(now);
  settle_prefills(now);

  if (classes()) {
    order_queue(now);
  } else {
    // Policy order, computed once per pass; ties keep arrival order (stable sort).
    order_.clear();
    for (std::size_t i = 0; i < queue_.size(); ++i) {
      order_.emplace_back(policy_->queue_score(request_of(queue_[i], now)), i);
    }
    if (order_.size() > 1) {
      std::stable_sort(order_.begin(), order_.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
    }
  }

  finished_.assign(queue_.size(), 0);
  blocked_.clear();
  for (const auto& [score, index] : order_) {
    Waiting& waiting = queue_[index];
    const Ticket& ticket = waiting.ticket;
    const std::uint8_t band = classes() ? effective_band(waiting, now) : 0;
    // A ticket that excludes no node sees what every such ticket of its stage and group sees:
    // once one of them could not go, none behind it can (and none may overtake it).
    // A decode leg whose hold bound has passed is placed regardless.
    const sched::Stage stage = stage_of(ticket);
    const bool bound_reached =
        stage == sched::Stage::kDecode && now - waiting.enqueued >= options_.max_decode_wait;
    const bool unrestricted = ticket.tried.empty();
    const double share = node_share(ticket);
    auto blocker = std::find_if(blocked_.begin(), blocked_.end(), [&](const Blocked& b) {
      return b.stage == stage && b.group == ticket.group && b.share >= share;
    });
    const bool blocked = unrestricted && !bound_reached && blocker != blocked_.end();
    Lease lease;
    const Placed placed = blocked ? Placed::kNoCandidate : place(waiting, now, lease);
    if (placed == Placed::kPlaced) {
      if (classes()) {
        FairOrder::Entry entry = fair_entry(waiting, now);
        entry.band = band;
        fair_.placed(entry);
      }
      leave(waiting, now);
      decisions.push_back({ticket.id, lease, waiting.waited});
      finished_[index] = 1;
      continue;
    }
    note_cause(waiting,
               blocked ? (blocker->band < band ? WaitCause::kPriority : WaitCause::kQueueOrder)
               : placed == Placed::kHeld ? WaitCause::kPolicyHold
                                         : WaitCause::kNoCapacity,
               now);
    // Unrestricted tickets of one stage and group can all go to the same nodes.
    const bool possible = blocked ? blocker->possible : any_possible(ticket);
    if (unrestricted && !blocked && blocker == blocked_.end()) {
      blocked_.push_back({stage, ticket.group, possible, band, share});
    }
    if (!possible) {
      decisions.push_back(
          {ticket.id, make_error(ErrorCode::kUnavailable,
                                 std::string("no usable ") + std::string(role_name(ticket.role)) +
                                     " node (every one is draining or already tried)")});
      finished_[index] = 1;
    } else if (now - waiting.enqueued >= timeout_of(ticket)) {
      decisions.push_back({ticket.id, timeout_error(ticket)});
      finished_[index] = 1;
    }
    if (finished_[index]) {
      if (waiting.held) --decodes_held_now_;
      leave(waiting, now);
      decisions.back().waited = waiting.waited;
    }
  }
  // Compact the queue in place. Never move an entry onto itself: a self-moved vector is left
  // empty, and a waiting ticket would lose its block hashes (and its tried list) to the next pass.
  std::size_t kept = 0;
  for (std::size_t i = 0; i < queue_.size(); ++i) {
    if (finished_[i]) continue;
    if (kept != i) queue_[kept] = std::move(queue_[i]);
    ++kept;
  }
  queue_.resize(kept);
}

// A ticket that waited past its timeout: a sheddable band's is shed ("retry later"); any other
// says whether the nodes were busy or the role had none usable (down, ejected).
Error Scheduler::timeout_error(const Ticket& ticket) {
  const BandSpec* spec = band_spec(ticket.band);
  if (spec != nullptr && spec->sheddable) {
    if (options_.observer) options_.observer->on_shed(ticket, ShedReason::kBandTimeout);
    return make_error(ErrorCode::kResourceExhausted, "shed under overload: band '" + spec->name +
                                                         "' waited past its queue timeout");
  }
  const bool none_usable = !usable(ticket.role);
  return make_error(ErrorCode::kTimeout,
                    none_usable ? "no usable " + std::string(role_name(ticket.role)) +
                                      " node (down or ejected) within the queue timeout"
                                : std::string("no engine was free within the queue timeout"));
}

sched::Stage Scheduler::stage_of(const Ticket& ticket) const {
  if (options_.aggregated) return sched::Stage::kAggregated;
  return ticket.role == Role::kPrefill ? sched::Stage::kPrefill : sched::Stage::kDecode;
}

namespace {
double seconds_of(TimePoint t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}
}  // namespace

sched::PlacementRequest Scheduler::request_of(const Waiting& waiting, TimePoint now) const {
  const Ticket& t = waiting.ticket;
  sched::PlacementRequest r;
  r.id = t.id;
  r.now = seconds_of(now);
  r.arrival = seconds_of(t.arrival.value_or(waiting.enqueued));
  r.prompt_tokens =
      static_cast<std::uint32_t>(std::min<std::uint64_t>(t.prompt_tokens, UINT32_MAX));
  r.max_output_tokens =
      static_cast<std::uint32_t>(std::min<std::uint64_t>(t.max_tokens, UINT32_MAX));
  r.block_size = options_.block_size;
  r.stage = stage_of(t);
  r.prefill_instance = t.prefill_node;
  return r;
}

// The candidates of one placement, in node-id order, as the policy sees them: the core's own
// dispatch-time counts, the engine-reported load, and (stage decode) the transfer from the
// prefill node. An aggregated node's requests stay outstanding through their whole decode;
// their reserved outputs (max_tokens, an upper bound) are not prefill work, which is what the
// policies weigh there, so only prompt tokens count.
void Scheduler::fill_candidates(const Ticket& ticket) {
  candidates_.clear();
  const sched::Stage stage = stage_of(ticket);
  for (const Node& node : nodes_) {
    if (!candidate(node, ticket)) continue;
    const NodeStatus& s = node.status;
    sched::Candidate c;
    c.instance = s.id;
    c.outstanding_requests = s.load.running + s.fleet.running;
    c.outstanding_tokens = stage == sched::Stage::kAggregated
                               ? s.outstanding_prompt_tokens + s.fleet.prompt_tokens
                               : s.load.outstanding_tokens + s.fleet.tokens;
    c.queued_prefill_tokens = s.queued_prefill_tokens;
    c.queued_long_prefills = s.queued_long_prefills;
    c.running = s.engine.running;
    c.waiting = s.engine.waiting;
    c.kv_usage = s.engine.kv_usage;
    c.dispatched = s.dispatched;
    if (stage == sched::Stage::kDecode && ticket.prefill_node && options_.transfer) {
      c.kv_transfer_seconds =
          options_.transfer->seconds(ticket.prompt_tokens, *ticket.prefill_node, s.id);
    }
    candidates_.push_back(c);
  }
}

bool Scheduler::may_hold_decode(const Waiting& waiting, TimePoint now) const {
  if (stage_of(waiting.ticket) != sched::Stage::kDecode) return false;
  if (now - waiting.enqueued >= options_.max_decode_wait) return false;
  return waiting.held || decodes_held_now_ < options_.max_decode_held;
}

Scheduler::Placed Scheduler::place(Waiting& waiting, TimePoint now, Lease& lease) {
  const Ticket& ticket = waiting.ticket;
  fill_candidates(ticket);
  if (candidates_.empty()) return Placed::kNoCandidate;
  const bool looked_up = fill_matches(ticket, now);
  sched::PlacementRequest request = request_of(waiting, now);
  request.decode_may_wait = may_hold_decode(waiting, now);
  auto chosen = policy_->choose(request, request.stage, candidates_);
  if (!chosen && request.stage == sched::Stage::kDecode && !request.decode_may_wait) {
    // A decode hold's bound: the KV must not wait on its prefill node any longer.
    if (waiting.held) ++decode_hold_timeouts_;
    chosen = static_cast<std::size_t>(
        std::min_element(candidates_.begin(), candidates_.end(),
                         [](const sched::Candidate& a, const sched::Candidate& b) {
                           return a.outstanding_tokens < b.outstanding_tokens;
                         }) -
        candidates_.begin());
    if (!waiting.held) ++decode_holds_;
  }
  if (!chosen || *chosen >= candidates_.size()) {
    if (request.stage == sched::Stage::kDecode && !waiting.held) {
      waiting.held = true;
      ++decode_holds_;
      ++decodes_held_now_;
    }
    return Placed::kHeld;
  }
  if (waiting.held) {
    waiting.held = false;
    --decodes_held_now_;
  }
  if (options_.observer && options_.observer->wants_placements()) {
    placement_inputs_.clear();
    for (const sched::Candidate& candidate : candidates_) {
      placement_inputs_.push_back({&find(candidate.instance)->status.spec, candidate});
    }
    options_.observer->on_placement(ticket, placement_inputs_, *chosen);
  }
  const std::uint32_t matched = candidates_[*chosen].matched_tokens;
  lease = dispatch(*find(candidates_[*chosen].instance), ticket, matched, now);
  if (looked_up) {
    lookups_ += 1;
    if (options_.observer) options_.observer->on_prefix_lookup(matched);
  }
  return Placed::kPlaced;
}

Lease Scheduler::dispatch(Node& node, const Ticket& ticket, std::uint32_t matched, TimePoint now) {
  const std::uint64_t tokens = ticket.role == Role::kPrefill
                                   ? ticket.prompt_tokens
                                   : ticket.prompt_tokens + ticket.max_tokens;
  node.status.load.outstanding_tokens += tokens;
  node.status.load.running += 1;
  node.status.dispatched += 1;
  Lease lease;
  lease.ticket = ticket.id;
  lease.node = node.status.id;
  lease.tokens = tokens;
  lease.dispatched = now;
  lease.prompt_tokens = ticket.prompt_tokens;
  node.status.outstanding_prompt_tokens += ticket.prompt_tokens;
  load_changed(node, static_cast<std::int64_t>(tokens),
               static_cast<std::int64_t>(ticket.prompt_tokens), 1);
  if (prefills(ticket)) {
    lease.uncached_tokens =
        ticket.prompt_tokens - std::min<std::uint64_t>(ticket.prompt_tokens, matched);
    queue_prefill(node, ticket.id, lease.uncached_tokens, now);
    after_placement(node, ticket, now);
  }
  return lease;
}

bool Scheduler::prefills(const Ticket& ticket) const {
  return ticket.role == Role::kPrefill || options_.aggregated;
}

double Scheduler::index_time(TimePoint t) const {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

bool Scheduler::fill_matches(const Ticket& ticket, TimePoint now) {
  if (ticket.block_hashes.empty() || !prefills(ticket) || !policy_->uses_prefix_matches())
    return false;
  if (!index_ && !options_.fresh_cache) return false;
  const double t = index_time(now);
  for (sched::Candidate& c : candidates_) {
    std::uint64_t tokens = 0;
    if (options_.fresh_cache)
      tokens = options_.fresh_cache->cached_tokens(c.instance, ticket.block_hashes);
    // Stale: its entries may be long gone, so no attraction (a fresh oracle is never stale).
    if (index_ && (options_.fresh_cache || !stale(*find(c.instance), now))) {
      tokens = std::max<std::uint64_t>(
          tokens, index_->match_instance(c.instance, ticket.block_hashes, t) * options_.block_size);
    }
    c.matched_tokens =
        static_cast<std::uint32_t>(std::min<std::uint64_t>(tokens, ticket.prompt_tokens));
  }
  return true;
}

void Scheduler::after_placement(Node& node, const Ticket& ticket, TimePoint now) {
  if (!index_ || ticket.block_hashes.empty()) return;
  const double t = index_time(now);
  // Blocks the node does not hold yet will be stored, and the engine then owes us events.
  const bool new_blocks =
      index_->match_instance(node.status.id, ticket.block_hashes, t) < ticket.block_hashes.size();
  if (new_blocks && node.status.spec.kv_events && !node.owed_events_since)
    node.owed_events_since = now;
  index_->insert_predicted(node.status.id, ticket.block_hashes, t);
  if (options_.load_observer) {
    options_.load_observer->on_predicted_blocks(node.status.spec, ticket.block_hashes);
  }
}

bool Scheduler::stale(const Node& node, TimePoint now) const {
  return node.status.spec.kv_events && node.owed_events_since &&
         now - *node.owed_events_since > options_.prefix.stale_after;
}

void Scheduler::queue_prefill(Node& node, std::uint64_t ticket, std::uint64_t uncached,
                              TimePoint now) {
  node.status.queued_prefill_tokens += uncached;
  if (uncached >= sched::kLongPrefillTokens) node.status.queued_long_prefills += 1;
  if (!options_.aggregated) return;
  // The proxy never sees an aggregated request's first token: its prefill is taken to end
  // when the nominal speed says, or at its release if that comes first.
  const double seconds =
      static_cast<double>(uncached) / options_.aggregated_prefill_tokens_per_second;
  node.prefilling.push_back(
      {ticket, now + std::chrono::duration_cast<Duration>(std::chrono::duration<double>(seconds)),
       uncached});
}

void Scheduler::unqueue_prefill(NodeStatus& s, std::uint64_t uncached) {
  s.queued_prefill_tokens -= std::min(s.queued_prefill_tokens, uncached);
  if (uncached >= sched::kLongPrefillTokens && s.queued_long_prefills > 0)
    s.queued_long_prefills -= 1;
}

void Scheduler::settle_prefills(TimePoint now) {
  if (!options_.aggregated) return;
  for (Node& node : nodes_) {
    std::erase_if(node.prefilling, [&](const Prefilling& p) {
      if (p.until > now) return false;
      unqueue_prefill(node.status, p.tokens);
      return true;
    });
  }
}

void Scheduler::end_prefill(Node& node, const Lease& lease, Outcome outcome, TimePoint now) {
  NodeStatus& s = node.status;
  if (!options_.aggregated) {
    unqueue_prefill(s, lease.uncached_tokens);
  } else {
    auto it = std::find_if(node.prefilling.begin(), node.prefilling.end(),
                           [&](const Prefilling& p) { return p.ticket == lease.ticket; });
    if (it != node.prefilling.end()) {  // ended before its estimated prefill end
      unqueue_prefill(s, it->tokens);
      node.prefilling.erase(it);
    }
    node.first_tokens.erase(lease.ticket);
  }
  const bool prefill_node = s.spec.role == Role::kPrefill && !options_.aggregated;
  if (!prefill_node || outcome != Outcome::kSuccess) return;
  learn_prefill(node, lease, now);
}

// Busy since the later of its dispatch and the node's previous completion, as a gateway that
// sees only dispatches and completions can tell.
void Scheduler::learn_prefill(Node& node, const Lease& lease, TimePoint now) {
  const TimePoint since = std::max(lease.dispatched, node.last_prefill_done);
  node.last_prefill_done = now;
  policy_->observe_prefill(node.status.id, lease.uncached_tokens, to_seconds(now - since));
}

void Scheduler::first_token(const Lease& lease) {
  if (!options_.aggregated) return;
  Node* node = find(lease.node);
  if (!node) return;
  auto it = std::find_if(node->prefilling.begin(), node->prefilling.end(),
                         [&](const Prefilling& p) { return p.ticket == lease.ticket; });
  const bool estimated_over = it == node->prefilling.end();
  if (!estimated_over) {
    unqueue_prefill(node->status, it->tokens);
    node->prefilling.erase(it);
  }
  if (node->first_tokens.insert(lease.ticket).second) learn_prefill(*node, lease, clock_.now());
}

template <class Fn>
void Scheduler::for_named(std::string_view name, Fn fn) {
  for (Node& node : nodes_) {
    if (node.status.spec.name == name && !node.status.removed) fn(node);
  }
}

void Scheduler::apply_kv_events(std::string_view name, const kvcache::KVEventBatch& batch,
                                bool restart) {
  for_named(name, [&](Node& node) { apply_kv_events(node.status.id, batch, restart); });
}

void Scheduler::apply_kv_events(std::uint32_t id, const kvcache::KVEventBatch& batch,
                                bool restart) {
  Node* node = find(id);
  if (!index_ || !node || node->status.removed) return;
  const double t = index_time(clock_.now());
  if (restart) index_->cleared(id);
  index_->apply_events(id, batch, t);
  node->status.kv_events_applied += 1;
  node->owed_events_since.reset();
}

bool Scheduler::apply_kv_payload(std::string_view name, std::span<const std::uint8_t> payload) {
  if (!index_) return false;
  const double t = index_time(clock_.now());
  bool ok = true;
  for_named(name, [&](Node& node) {
    sched::EventFeedStats stats;
    if (sched::feed_payload(*index_, node.status.id, payload, t, stats)) {
      node.status.kv_events_applied += 1;
      node.owed_events_since.reset();
    } else {
      node.status.kv_events_dropped += 1;
      ok = false;
    }
  });
  return ok;
}

void Scheduler::count_kv_events_dropped(std::string_view name, std::uint64_t batches) {
  for_named(name, [&](Node& node) { node.status.kv_events_dropped += batches; });
}

void Scheduler::report_fleet_load(std::string_view node, FleetLoad load) {
  for_named(node, [&](Node& n) { n.status.fleet = load; });
}

void Scheduler::apply_predicted_blocks(std::string_view node,
                                       std::span<const std::uint64_t> hashes) {
  if (!index_ || hashes.empty()) return;
  const double t = index_time(clock_.now());
  for_named(node, [&](Node& n) { index_->insert_predicted(n.status.id, hashes, t); });
}

void Scheduler::load_changed(const Node& node, std::int64_t tokens, std::int64_t prompt_tokens,
                             std::int32_t running) const {
  if (!options_.load_observer || (tokens == 0 && prompt_tokens == 0 && running == 0)) return;
  options_.load_observer->on_load_change(node.status.spec, tokens, prompt_tokens, running);
}

void Scheduler::report_engine_load(std::string_view name, EngineLoad load) {
  for_named(name, [&](Node& node) { node.status.engine = load; });
}

void Scheduler::report_engine_load(std::uint32_t id, EngineLoad load) {
  if (Node* node = find(id)) node->status.engine = load;
}

std::optional<TimePoint> Scheduler::next_deadline() const {
  if (queue_.empty()) return std::nullopt;
  std::optional<TimePoint> next;
  auto consider = [&next](TimePoint t) {
    if (!next || t < *next) next = t;
  };
  for (const Waiting& waiting : queue_) {
    consider(waiting.enqueued + timeout_of(waiting.ticket));
    if (waiting.held) consider(waiting.enqueued + options_.max_decode_wait);
  }
  for (const Node& node : nodes_) {
    if (node.status.health == NodeHealth::kEjected) consider(node.ejected_until);
    for (const Prefilling& p : node.prefilling) consider(p.until);
  }
  return next;
}

PrefixIndexReport Scheduler::prefix_report() const {
  PrefixIndexReport report;
  if (!index_) return report;
  report.enabled = true;
  report.stats = index_->stats();
  report.lookups = lookups_;
  const TimePoint now = clock_.now();
  for (const Node& node : nodes_) report.stale_nodes += stale(node, now) ? 1 : 0;
  return report;
}

void Scheduler::release(const Lease& lease, Outcome outcome) {
  Node* node = find(lease.node);
  if (!node) return;
  NodeLoad& load = node->status.load;
  const std::uint64_t tokens = std::min(load.outstanding_tokens, lease.tokens);
  const std::uint32_t running = std::min<std::uint32_t>(load.running, 1);
  load.outstanding_tokens -= tokens;
  load.running -= running;
  NodeStatus& s = node->status;
  const std::uint64_t prompt = std::min(s.outstanding_prompt_tokens, lease.prompt_tokens);
  s.outstanding_prompt_tokens -= prompt;
  // One change for the whole release: the fleet sync publishes one delta per change.
  load_changed(*node, -static_cast<std::int64_t>(tokens), -static_cast<std::int64_t>(prompt),
               -static_cast<std::int32_t>(running));
  end_prefill(*node, lease, outcome, clock_.now());
  if (options_.observer) {
    options_.observer->on_release(node->status.spec, outcome, clock_.now() - lease.dispatched);
  }
  if (outcome == Outcome::kFailure) {
    record_failure(*node, clock_.now());
  } else if (outcome == Outcome::kSuccess) {
    node->status.consecutive_failures = 0;
    if (node->status.health == NodeHealth::kTrial) {
      set_health(*node, NodeHealth::kUp, HealthCause::kTrialSucceeded);
      node->next_ejection = options_.ejection_time;
    }
  }
  forget_removed();
}

bool Scheduler::cancel(std::uint64_t ticket) {
  auto it = std::find_if(queue_.begin(), queue_.end(),
                         [&](const Waiting& waiting) { return waiting.ticket.id == ticket; });
  if (it == queue_.end()) return false;
  if (it->held) --decodes_held_now_;
  leave(*it, clock_.now());
  queue_.erase(it);
  return true;
}

void Scheduler::report_probe(std::uint32_t id, bool healthy) {
  Node* node = find(id);
  if (!node) return;
  const NodeHealth health = node->status.health;
  if (!healthy) {
    if (health == NodeHealth::kUp || health == NodeHealth::kTrial) {
      set_health(*node, NodeHealth::kDown, HealthCause::kProbeFailed);
    }
    return;
  }
  if (health == NodeHealth::kDown) {
    set_health(*node, NodeHealth::kUp, HealthCause::kProbeRecovered);
    node->status.consecutive_failures = 0;
  } else if (health == NodeHealth::kEjected) {
    // A real request decides whether the circuit closes.
    set_health(*node, NodeHealth::kTrial, HealthCause::kProbeRecovered);
  }
}

Status Scheduler::set_draining(std::string_view name, bool draining) {
  bool found = false;
  for (Node& node : nodes_) {
    if (node.status.spec.name != name || node.status.removed) continue;
    node.status.draining = draining;
    found = true;
  }
  if (!found) return make_error(ErrorCode::kNotFound, "no node named " + std::string(name));
  return {};
}

std::vector<NodeStatus> Scheduler::nodes() const {
  std::vector<NodeStatus> out;
  out.reserve(nodes_.size());
  const TimePoint now = clock_.now();
  for (const Node& node : nodes_) {
    out.push_back(node.status);
    out.back().kv_stale = stale(node, now);
  }
  return out;
}

bool Scheduler::usable(Role role) const {
  return std::any_of(nodes_.begin(), nodes_.end(), [&](const Node& node) {
    return node.status.spec.role == role && selectable(node);
  });
}

bool Scheduler::selectable(const Node& node) const {
  const NodeStatus& s = node.status;
  if (s.removed || s.draining) return false;
  if (s.health == NodeHealth::kDown || s.health == NodeHealth::kEjected) return false;
  // Half-open: one trial request at a time.
  return s.health != NodeHealth::kTrial || s.load.running == 0;
}

bool Scheduler::candidate(const Node& node, const Ticket& ticket) const {
  const NodeStatus& s = node.status;
  if (s.spec.role != ticket.role || !selectable(node)) return false;
  if (!ticket.group.empty() && !s.spec.group.empty() && s.spec.group != ticket.group) return false;
  if (std::find(ticket.tried.begin(), ticket.tried.end(), s.id) != ticket.tried.end()) return false;
  // Under the thresholds now (scaled by the ticket's band's node share): an idle node takes even
  // a request larger than its limit.
  const double share = node_share(ticket);
  NodeLoad limits = options_.node_limits;
  if (share < 1.0) {
    limits.outstanding_tokens = std::max<std::uint64_t>(
        static_cast<std::uint64_t>(static_cast<double>(limits.outstanding_tokens) * share), 1);
    limits.running = std::max<std::uint32_t>(
        static_cast<std::uint32_t>(static_cast<double>(limits.running) * share), 1);
  }
  return s.load.outstanding_tokens + s.fleet.tokens < limits.outstanding_tokens &&
         s.load.running + s.fleet.running < limits.running;
}

// Whether some node could still take `ticket` by waiting: one of its role and group, not tried
// by it, not draining. A node down by its probes or ejected counts: one failed probe (a busy
// engine answering late) marks a node down, and failing every request at once on it would turn
// a blip into an outage; the request waits (queue timeout) and says why when it gives up. A role
// whose every node is draining (the operator's word) fails at once.
bool Scheduler::any_possible(const Ticket& ticket) const {
  return std::any_of(nodes_.begin(), nodes_.end(), [&](const Node& node) {
    const NodeStatus& s = node.status;
    if (s.spec.role != ticket.role || s.removed || s.draining) return false;
    if (!ticket.group.empty() && !s.spec.group.empty() && s.spec.group != ticket.group)
      return false;
    return std::find(ticket.tried.begin(), ticket.tried.end(), s.id) == ticket.tried.end();
  });
}

void Scheduler::refresh_circuits(TimePoint now) {
  for (Node& node : nodes_) {
    if (node.status.health == NodeHealth::kEjected && now >= node.ejected_until) {
      set_health(node, NodeHealth::kTrial, HealthCause::kCoolDownOver);
    }
  }
}

bool Scheduler::may_eject(Role role) const {
  std::size_t pool = 0;
  std::size_t ejected = 0;
  for (const Node& node : nodes_) {
    if (node.status.spec.role != role || node.status.removed) continue;
    ++pool;
    ejected += node.status.health == NodeHealth::kEjected ? 1 : 0;
  }
  const auto allowed = std::max<std::size_t>(
      1,
      static_cast<std::size_t>(static_cast<double>(pool) * options_.max_ejection_percent / 100.0));
  return ejected < allowed;
}

void Scheduler::record_failure(Node& node, TimePoint now) {
  NodeStatus& s = node.status;
  s.failures += 1;
  s.consecutive_failures += 1;
  const bool trial_failed = s.health == NodeHealth::kTrial;
  if (!trial_failed && s.consecutive_failures < options_.failures_to_eject) return;
  if (s.health == NodeHealth::kDown) return;             // already out; the probe brings it back
  if (!trial_failed && !may_eject(s.spec.role)) return;  // the ejection floor
  const Duration cool_down = node.next_ejection;
  node.ejected_until = now + cool_down;
  node.next_ejection = std::min(node.next_ejection * 2, options_.max_ejection_time);
  set_health(node, NodeHealth::kEjected,
             trial_failed ? HealthCause::kTrialFailed : HealthCause::kConsecutiveFailures,
             cool_down);
}

void Scheduler::set_health(Node& node, NodeHealth to, HealthCause cause, Duration for_how_long) {
  const NodeHealth from = node.status.health;
  if (from == to) return;
  node.status.health = to;
  if (options_.observer) {
    options_.observer->on_health_change(node.status.spec, from, to, cause, for_how_long);
  }
}

Scheduler::Node* Scheduler::find(std::uint32_t id) {
  if (id >= slot_of_id_.size() || slot_of_id_[id] < 0) return nullptr;
  return &nodes_[static_cast<std::size_t>(slot_of_id_[id])];
}

const Scheduler::Node* Scheduler::find(std::uint32_t id) const {
  if (id >= slot_of_id_.size() || slot_of_id_[id] < 0) return nullptr;
  return &nodes_[static_cast<std::size_t>(slot_of_id_[id])];
}

void Scheduler::reindex() {
  slot_of_id_.assign(next_id_, -1);
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    slot_of_id_[nodes_[i].status.id] = static_cast<std::int32_t>(i);
  }
}

void Scheduler::forget_removed() {
  const auto gone = std::erase_if(nodes_, [](const Node& node) {
    return node.status.removed && node.status.load.running == 0;
  });
  if (gone > 0) reindex();
}

}  // namespace omni::proxy
