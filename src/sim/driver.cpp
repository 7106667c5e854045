#include "sim/driver.hpp"

#include <algorithm>
#include <chrono>
#include <iterator>

namespace omni::sim {

using engine::FinishReason;

std::string_view finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kLength:
    case FinishReason::kPrefillDone: return "length";
    case FinishReason::kStop: return "stop";
    case FinishReason::kAbort: return "abort";
    case FinishReason::kError: return "error";
    case FinishReason::kNone: break;
  }
  return "";
}

struct EngineDriver::Tracked {
  std::shared_ptr<RequestChannel> channel;
  std::uint32_t prompt_tokens = 0;
  std::uint32_t max_tokens_param = 0;
  std::uint32_t output_tokens = 0;
  std::uint32_t cached_tokens = 0;
  std::string held_key;
  double arrival = 0, first_scheduled = -1, first_token = -1, last_token = -1;
};

EngineDriver::EngineDriver(engine::Engine engine, const Clock& clock, DriverOptions options,
                           SimMetrics* metrics, EventSink sink)
    : engine_(std::move(engine)),
      engine_config_(engine_.config()),
      cost_(engine_.cost_model()),
      clock_(clock),
      options_(options),
      metrics_(metrics),
      sink_(std::move(sink)) {
  publish_gauges();
}

EngineDriver::~EngineDriver() { stop(); }

double EngineDriver::now() const { return to_seconds(clock_.now().time_since_epoch()); }

void EngineDriver::start() {
  thread_ = std::thread([this] { run(); });
}

void EngineDriver::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopped_) return;
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard lock(mu_);
  stopped_ = true;
  for (Command& c : inbox_) {
    if (c.channel) c.channel->fail("engine shutting down");
    if (c.done) c.done->set_value(false);
  }
  inbox_.clear();
}

Result<std::shared_ptr<RequestChannel>> EngineDriver::submit(
    Submission submission, boost::asio::any_io_executor executor) {
  auto channel = std::make_shared<RequestChannel>(executor);
  {
    std::lock_guard lock(mu_);
    if (stopping_) return make_error(ErrorCode::kUnavailable, "engine shutting down");
    if (inbox_.size() >= options_.max_inbox || in_flight_ >= options_.max_in_flight) {
      return make_error(ErrorCode::kResourceExhausted, "engine queue is full");
    }
    if (!submission.held_key.empty()) {
      const std::string& key = submission.held_key;
      if (held_.count(key) || reserved_.count(key)) {
        if (metrics_) metrics_->on_kv_hold("refused");
        return make_error(ErrorCode::kInvalidArgument,
                          "KV is already held under " + key + " for another request");
      }
      reserved_.insert(key);
    }
    submission.spec.id = next_id_++;
    channel->id = submission.spec.id;
    ++in_flight_;
    inbox_.push_back(
        {Command::Kind::kSubmit, submission.spec.id, std::move(submission), channel, nullptr});
  }
  wake_.notify_all();
  return channel;
}

void EngineDriver::abort(engine::SeqId id) {
  {
    std::lock_guard lock(mu_);
    inbox_.push_back({Command::Kind::kAbort, id, std::nullopt, nullptr, nullptr});
  }
  wake_.notify_all();
}

std::optional<HeldKv> EngineDriver::release_held(const std::string& key) {
  std::optional<HeldKv> out;
  {
    std::lock_guard lock(mu_);
    auto it = held_.find(key);
    if (it == held_.end()) return std::nullopt;
    out = HeldKv{it->second.prompt_tokens};
    drop_held_locked(it, "pulled");
  }
  wake_.notify_all();
  return out;
}

void EngineDriver::drop_held_locked(std::unordered_map<std::string, Held>::iterator it,
                                    const char* outcome) {
  inbox_.push_back({Command::Kind::kRelease, it->second.id, std::nullopt, nullptr, nullptr});
  held_by_id_.erase(it->second.id);
  held_.erase(it);
  if (metrics_) metrics_->on_kv_hold(outcome);
}

std::future<bool> EngineDriver::reset_prefix_cache() {
  auto done = std::make_shared<std::promise<bool>>();
  std::future<bool> result = done->get_future();
  {
    std::lock_guard lock(mu_);
    if (stopping_) {
      done->set_value(false);
      return result;
    }
    inbox_.push_back({Command::Kind::kReset, 0, std::nullopt, nullptr, done});
  }
  wake_.notify_all();
  return result;
}

EngineGauges EngineDriver::gauges() const {
  std::lock_guard lock(mu_);
  return gauges_;
}

void EngineDriver::publish_gauges() {
  const engine::EngineStats s = engine_.stats();
  std::lock_guard lock(mu_);
  gauges_.running = s.num_running;
  gauges_.waiting = static_cast<double>(s.num_waiting + transfers_.size());
  gauges_.kv_cache_usage = s.kv_cache_usage;
  gauges_.prefix_cache_queries = static_cast<double>(s.prefix_cache_queries);
  gauges_.prefix_cache_hits = static_cast<double>(s.prefix_cache_hits);
  gauges_.preemptions = static_cast<double>(s.num_preemptions);
  gauges_.held = static_cast<double>(s.num_held);
}

void EngineDriver::run() {
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) break;
    }
    take_inbox();
    admit_ready_transfers();
    expire_leases();
    if (engine_.has_work()) {
      step();
    } else {
      idle_wait();
    }
  }
  for (auto& [id, t] : tracked_) t->channel->fail("engine shutting down");
  for (auto& [at, item] : transfers_) item.second->fail("engine shutting down");
  tracked_.clear();
  transfers_.clear();
}

void EngineDriver::take_inbox() {
  std::deque<Command> commands;
  {
    std::lock_guard lock(mu_);
    commands.swap(inbox_);
  }
  if (commands.empty()) return;
  for (Command& c : commands) {
    switch (c.kind) {
      case Command::Kind::kSubmit: admit(std::move(*c.submission), std::move(c.channel)); break;
      case Command::Kind::kAbort: abort_now(c.id); break;
      case Command::Kind::kRelease: engine_.release_held_blocks(c.id); break;
      case Command::Kind::kReset: reset_now(*c.done); break;
    }
  }
  // Aborts and releases change what /metrics shows even when no step follows (an idle engine).
  publish_gauges();
}

void EngineDriver::abort_now(engine::SeqId id) {
  if (tracked_.count(id)) {
    engine_.abort(id);
    finish(id, FinishReason::kAbort, now());
    return;
  }
  for (auto it = transfers_.begin(); it != transfers_.end(); ++it) {
    if (it->second.first.spec.id != id) continue;
    std::shared_ptr<RequestChannel> channel = std::move(it->second.second);
    transfers_.erase(it);
    channel->update(0, 0, FinishReason::kAbort);
    std::lock_guard lock(mu_);
    --in_flight_;
    return;
  }
  // Done with prefill and holding KV for a decode that will now never come for it.
  std::lock_guard lock(mu_);
  auto held = held_by_id_.find(id);
  if (held != held_by_id_.end()) drop_held_locked(held_.find(held->second), "aborted");
}

void EngineDriver::reset_now(std::promise<bool>& done) {
  const bool reset = engine_.reset_prefix_cache();
  if (reset) {
    // AllBlocksCleared is delivered by the next complete(); an idle engine has none coming.
    engine::StepOutputs out = engine_.complete(engine::StepPlan{});
    if (!out.events.empty() && sink_) sink_(std::move(out.events));
  }
  done.set_value(reset);
}

void EngineDriver::admit(Submission s, std::shared_ptr<RequestChannel> channel) {
  const double t = now();
  if (s.transfer_seconds > 0) {
    transfers_.emplace(t + s.transfer_seconds, std::make_pair(std::move(s), std::move(channel)));
    return;
  }
  const engine::SeqId id = s.spec.id;
  auto tracked = std::make_unique<Tracked>();
  tracked->channel = channel;
  tracked->prompt_tokens = s.spec.prompt_tokens;
  tracked->max_tokens_param = s.max_tokens_param;
  tracked->held_key = s.held_key;
  tracked->arrival = t;
  if (Status st = engine_.add(std::move(s.spec)); !st) {
    channel->fail(st.error().message, st.error().code == ErrorCode::kInvalidArgument ? 400 : 500);
    std::lock_guard lock(mu_);
    if (!s.held_key.empty()) reserved_.erase(s.held_key);
    --in_flight_;
    return;
  }
  tracked_.emplace(id, std::move(tracked));
}

void EngineDriver::admit_ready_transfers() {
  const double t = now();
  while (!transfers_.empty() && transfers_.begin()->first <= t) {
    auto node = transfers_.extract(transfers_.begin());
    Submission s = std::move(node.mapped().first);
    s.transfer_seconds = 0;
    admit(std::move(s), std::move(node.mapped().second));
  }
}

void EngineDriver::expire_leases() {
  const double t = now();
  bool any = false;
  {
    std::lock_guard lock(mu_);
    for (auto it = held_.begin(); it != held_.end();) {
      auto next = std::next(it);
      if (it->second.expires <= t) {
        drop_held_locked(it, "expired");
        any = true;
      }
      it = next;
    }
  }
  if (any) take_inbox();  // the releases just queued
}

void EngineDriver::step() {
  const double start = now();
  engine::StepPlan plan = engine_.schedule();
  if (plan.empty()) {
    // Work exists but nothing fits this step (e.g. blocks held for PD pulls): wait briefly.
    idle_wait();
    return;
  }
  for (const engine::ScheduledSeq& s : plan.seqs) {
    auto it = tracked_.find(s.id);
    if (it != tracked_.end() && it->second->first_scheduled < 0)
      it->second->first_scheduled = start;
  }
  const double end = start + engine_.step_seconds(plan);
  sleep_until(end);
  engine::StepOutputs out = engine_.complete(plan);
  if (metrics_) metrics_->on_step(plan.total_prefill_tokens + plan.num_decode_seqs);
  dispatch(out, plan, end);
  if (!out.events.empty() && sink_) sink_(std::move(out.events));
  // /metrics reflects the step before any handler answers from it: a client that has its
  // answer never reads a gauge from before it.
  publish_gauges();
  for (Notice& n : notices_) n.channel->update(n.tokens, n.cached, n.finish);
  notices_.clear();
}

void EngineDriver::dispatch(const engine::StepOutputs& out, const engine::StepPlan&, double end) {
  for (const engine::SeqOutput& o : out.outputs) {
    auto it = tracked_.find(o.id);
    if (it == tracked_.end()) continue;
    Tracked& t = *it->second;
    // vLLM's num_cached_tokens: local prefix hits plus transferred KV, less the last prompt
    // token, which is always recomputed.
    t.cached_tokens =
        o.num_external_tokens == 0
            ? o.num_cached_tokens
            : std::min(o.num_cached_tokens + o.num_external_tokens, t.prompt_tokens - 1);
    if (o.new_tokens > 0) {
      const bool first = t.first_token < 0;
      if (metrics_) {
        metrics_->on_tokens(o.new_tokens, first ? end - t.arrival : end - t.last_token, first);
        // vLLM's iteration stats count a request's prompt once, with its first output.
        if (first) metrics_->on_prompt(t.prompt_tokens, t.cached_tokens, o.num_external_tokens);
      }
      if (first) t.first_token = end;
      t.last_token = end;
    }
    t.output_tokens = o.total_output_tokens;
    // Book-keeping first (held KV registered), then the handler hears of it (step() sends the
    // notices): a decode instance told about the params must find the KV held.
    notices_.push_back({t.channel, t.output_tokens, t.cached_tokens, o.finish});
    if (o.finish != FinishReason::kNone) finish(o.id, o.finish, end);
  }
}

void EngineDriver::finish(engine::SeqId id, FinishReason reason, double at) {
  auto it = tracked_.find(id);
  if (it == tracked_.end()) return;
  Tracked& t = *it->second;
  if (reason == FinishReason::kAbort) t.channel->update(t.output_tokens, t.cached_tokens, reason);
  if (metrics_) {
    FinishedRequest f;
    f.finished_reason = std::string(finish_reason_name(reason));
    f.prompt_tokens = t.prompt_tokens;
    f.generation_tokens = t.output_tokens;
    f.max_tokens_param = t.max_tokens_param;
    const double scheduled = t.first_scheduled < 0 ? at : t.first_scheduled;
    const double first = t.first_token < 0 ? at : t.first_token;
    f.queue_s = scheduled - t.arrival;
    f.prefill_s = first - scheduled;
    f.decode_s = at - first;
    f.ttft_s = first - t.arrival;
    f.e2e_s = at - t.arrival;
    metrics_->on_finish(f);
  }
  std::lock_guard lock(mu_);
  if (!t.held_key.empty()) {
    reserved_.erase(t.held_key);
    if (reason == FinishReason::kPrefillDone) {
      // The key was reserved at submit(): nothing else can hold it.
      held_.emplace(t.held_key, Held{id, t.prompt_tokens, at + options_.kv_lease_seconds});
      held_by_id_.emplace(id, t.held_key);
      if (metrics_) metrics_->on_kv_hold("held");
    }
  }
  --in_flight_;
  tracked_.erase(it);
}

void EngineDriver::idle_wait() {
  std::chrono::microseconds wait = std::chrono::milliseconds(20);
  if (!transfers_.empty()) wait = std::min(wait, wall_of(transfers_.begin()->first - now()));
  std::unique_lock lock(mu_);
  wake_.wait_for(lock, wait, [&] { return stopping_ || !inbox_.empty(); });
}

void EngineDriver::sleep_until(double model_time) {
  std::unique_lock lock(mu_);
  for (;;) {
    const double left = model_time - now();
    if (left <= 0 || stopping_) return;
    // Waits in slices of at most 20 ms so stop() is prompt; re-reads the clock after each.
    wake_.wait_for(
        lock, std::min<std::chrono::microseconds>(wall_of(left), std::chrono::milliseconds(20)),
        [&] { return stopping_; });
  }
}

}  // namespace omni::sim

namespace omni::sim {

std::chrono::microseconds EngineDriver::wall_of(double model_seconds) const {
  const double wall = std::max(0.0, model_seconds) / std::max(1e-9, options_.speed);
  return std::chrono::microseconds(static_cast<std::int64_t>(std::min(wall, 3600.0) * 1e6) + 1);
}

}  // namespace omni::sim
