#include "serve/loop.hpp"

#include <algorithm>

#include "omni/log/log.hpp"
#include "sim/driver.hpp"

namespace omni::serve {

using engine::FinishReason;

EngineLoop::EngineLoop(engine::Engine scheduler, ModelExecutor& executor, LoopOptions options,
                       sim::SimMetrics* metrics, EventSink sink, KvFetcher* fetcher,
                       TransferCounters* transfer)
    : engine_(std::move(scheduler)),
      config_(engine_.config()),
      total_blocks_(engine_.stats().total_blocks),
      executor_(executor),
      options_(std::move(options)),
      metrics_(metrics),
      sink_(std::move(sink)),
      fetcher_(fetcher),
      transfer_(transfer) {
  publish_gauges();
}

EngineLoop::~EngineLoop() { stop(); }

double EngineLoop::now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_).count();
}

void EngineLoop::start() {
  thread_ = std::thread([this] { run(); });
}

void EngineLoop::stop() {
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
    for (auto& s : c.seqs) s->channel->fail("engine shutting down", 503);
    if (c.done) c.done->set_value(false);
  }
  inbox_.clear();
}

void EngineLoop::post(Command command) {
  {
    std::lock_guard lock(mu_);
    inbox_.push_back(std::move(command));
  }
  wake_.notify_all();
}

Status EngineLoop::submit(std::vector<std::unique_ptr<Seq>> seqs) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return make_error(ErrorCode::kUnavailable, "engine shutting down");
    if (in_flight_ + seqs.size() > options_.max_in_flight) {
      return make_error(ErrorCode::kResourceExhausted,
                        "the engine's queue is full (" + std::to_string(in_flight_) +
                            " requests in flight, --max-in-flight " +
                            std::to_string(options_.max_in_flight) + ")");
    }
    for (auto& s : seqs) {
      s->id = next_id_++;
      s->channel->id = s->id;
    }
    in_flight_ += seqs.size();
    Command c{Command::Kind::kSubmit, 0, std::move(seqs), nullptr, {}};
    inbox_.push_back(std::move(c));
  }
  wake_.notify_all();
  return ok_status();
}

void EngineLoop::abort(engine::SeqId id) { post({Command::Kind::kAbort, id, {}, nullptr, {}}); }

std::future<bool> EngineLoop::reset_prefix_cache() {
  auto done = std::make_shared<std::promise<bool>>();
  std::future<bool> result = done->get_future();
  {
    std::lock_guard lock(mu_);
    if (stopping_) {
      done->set_value(false);
      return result;
    }
    inbox_.push_back({Command::Kind::kReset, 0, {}, done, {}});
  }
  wake_.notify_all();
  return result;
}

// ---- PD holds ----------------------------------------------------------------------------
std::optional<HeldKv> EngineLoop::take_hold(const std::string& key, TransferStatus& why) {
  std::lock_guard lock(mu_);
  auto it = holds_.find(key);
  if (it == holds_.end()) {
    why = TransferStatus::kNotHeld;
    return std::nullopt;
  }
  if (it->second.busy) {
    why = TransferStatus::kBusy;
    return std::nullopt;
  }
  it->second.busy = true;
  return it->second.kv;
}

void EngineLoop::end_pull(const std::string& key, bool acked) {
  {
    std::lock_guard lock(mu_);
    auto it = holds_.find(key);
    if (it == holds_.end()) return;
    it->second.busy = false;
    if (!acked && !it->second.drop_when_done) return;  // the lease frees it, or a retry reads it
    inbox_.push_back({Command::Kind::kRelease, it->second.id, {}, nullptr, {}});
    holds_.erase(it);
    shared_.holds = holds_.size();
  }
  if (metrics_) metrics_->on_kv_hold(acked ? "pulled" : "aborted");
  wake_.notify_all();
}

void EngineLoop::drop_hold(const std::string& key) {
  {
    std::lock_guard lock(mu_);
    auto it = holds_.find(key);
    if (it == holds_.end()) return;
    if (it->second.busy) {
      it->second.drop_when_done = true;
      return;
    }
    inbox_.push_back({Command::Kind::kRelease, it->second.id, {}, nullptr, {}});
    holds_.erase(it);
    shared_.holds = holds_.size();
  }
  if (metrics_) metrics_->on_kv_hold("aborted");
  wake_.notify_all();
}

void EngineLoop::expire_leases() {
  const double t = now();
  std::vector<engine::SeqId> expired;
  {
    std::lock_guard lock(mu_);
    for (auto it = holds_.begin(); it != holds_.end();) {
      if (!it->second.busy && it->second.expires <= t) {
        expired.push_back(it->second.id);
        it = holds_.erase(it);
      } else {
        ++it;
      }
    }
    shared_.holds = holds_.size();
  }
  for (const engine::SeqId id : expired) {
    engine_.release_held_blocks(id);
    if (metrics_) metrics_->on_kv_hold("expired");
  }
  if (!expired.empty()) publish_gauges();  // an idle engine has no step to publish them
}

// ---- the loop ----------------------------------------------------------------------------
void EngineLoop::run() {
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) break;
    }
    take_inbox();
    expire_leases();
    start_fetches();
    if (engine_.has_work()) {
      step();
    } else {
      idle_wait();
    }
  }
  for (auto& [id, s] : seqs_) s->channel->fail("engine shutting down", 503);
  for (auto& [id, s] : fetching_) s->channel->fail("engine shutting down", 503);
  for (auto& s : to_fetch_) s->channel->fail("engine shutting down", 503);
  seqs_.clear();
  fetching_.clear();
  to_fetch_.clear();
}

void EngineLoop::take_inbox() {
  std::deque<Command> commands;
  {
    std::lock_guard lock(mu_);
    commands.swap(inbox_);
  }
  if (commands.empty()) return;
  for (Command& c : commands) {
    switch (c.kind) {
      case Command::Kind::kSubmit:
        for (auto& s : c.seqs) admit(std::move(s));
        break;
      case Command::Kind::kAbort: abort_now(c.id); break;
      case Command::Kind::kRelease: engine_.release_held_blocks(c.id); break;
      case Command::Kind::kReset: {
        const bool reset = engine_.reset_prefix_cache();
        if (reset) {
          // AllBlocksCleared comes with the next complete(); an idle engine has none coming.
          engine::StepOutputs out = engine_.complete(engine::StepPlan{});
          if (!out.events.empty() && sink_) sink_(std::move(out.events));
        }
        c.done->set_value(reset);
        break;
      }
      case Command::Kind::kFetched: fetched(c.id, std::move(c.fetched)); break;
    }
  }
  publish_gauges();
}

void EngineLoop::admit(std::unique_ptr<Seq> seq) {
  seq->arrival = now();
  if (seq->remote) {
    to_fetch_.push_back(std::move(seq));
    return;
  }
  enter_engine(std::move(seq));
}

void EngineLoop::enter_engine(std::unique_ptr<Seq> seq) {
  engine::SeqSpec spec;
  spec.id = seq->id;
  spec.prompt_tokens = static_cast<std::uint32_t>(seq->prompt.size());
  spec.max_output_tokens = seq->text.rules().max_tokens;
  const std::size_t prompt_blocks = seq->prompt.size() / config_.block_size;
  for (std::size_t i = 0; i < std::min(prompt_blocks, seq->hashes.size()); ++i) {
    spec.block_hashes.push_back(kvcache::event_int(seq->hashes[i]));
  }
  seq->hashes_given = spec.block_hashes.size();
  if (config_.emit_kv_events) spec.prompt_token_ids = seq->prompt;
  spec.prefill_only = seq->prefill_only;
  spec.kv_preloaded = seq->staged != nullptr;
  if (Status st = engine_.add(std::move(spec)); !st) {
    const engine::SeqId id = seq->id;
    seqs_.emplace(id, std::move(seq));
    fail_seq(id, st.error().message, st.error().code == ErrorCode::kInvalidArgument ? 400 : 500);
    return;
  }
  seqs_.emplace(seq->id, std::move(seq));
}

// Decode side: pulls start while the staging budget allows (always at least one).
void EngineLoop::start_fetches() {
  const model::PagedLatentCache& cache = executor_.model().cache();
  while (!to_fetch_.empty()) {
    Seq& seq = *to_fetch_.front();
    const RemoteKv& remote = *seq.remote;
    const auto n = static_cast<std::uint32_t>(seq.prompt.size());
    const std::uint32_t bs = config_.block_size;
    // Blocks this instance already has (its prefix cache) are not pulled, as vLLM's
    // NixlConnector pulls the prompt minus the local hit; the last prompt token's block is.
    std::vector<std::uint64_t> ints;
    for (std::size_t i = 0; i < std::min<std::size_t>(seq.hashes.size(), (n - 1) / bs); ++i) {
      ints.push_back(kvcache::event_int(seq.hashes[i]));
    }
    const std::uint32_t first = engine_.cached_prefix_tokens(ints) / bs;
    const auto total = static_cast<std::uint32_t>(remote.block_ids.size());
    const std::uint32_t count = total > first ? total - first : 0;
    const std::uint64_t bytes =
        std::uint64_t{count} * static_cast<std::uint64_t>(cache.layers()) * cache.page_bytes() +
        std::uint64_t(executor_.model().config().hidden_size) * 4;
    if (staged_bytes_ > 0 && staged_bytes_ + bytes > options_.staging_bytes) return;
    staged_bytes_ += bytes;
    seq.staged_bytes = bytes;
    std::unique_ptr<Seq> owned = std::move(to_fetch_.front());
    to_fetch_.pop_front();
    const engine::SeqId id = owned->id;
    RemoteKv copy = remote;
    const auto layers = static_cast<std::uint32_t>(cache.layers());
    const std::size_t page_bytes = cache.page_bytes();
    const auto hidden = static_cast<std::uint32_t>(executor_.model().config().hidden_size);
    fetching_.emplace(id, std::move(owned));
    TransferCounters* counters = transfer_;
    fetcher_->post([this, id, copy, first, count, layers, page_bytes, hidden, counters] {
      FetchOutcome outcome = fetch_kv(copy, first, count, layers, page_bytes, hidden, *counters);
      Command c{Command::Kind::kFetched, id, {}, nullptr, std::move(outcome)};
      post(std::move(c));
    });
  }
}

void EngineLoop::fetched(engine::SeqId id, FetchOutcome outcome) {
  auto it = fetching_.find(id);
  if (it == fetching_.end()) return;
  std::unique_ptr<Seq> seq = std::move(it->second);
  fetching_.erase(it);
  if (seq->aborted) {
    staged_bytes_ -= seq->staged_bytes;
    {
      std::lock_guard lock(mu_);
      --in_flight_;
    }
    return;
  }
  if (outcome.kv) {
    const std::uint64_t actual = outcome.kv->bytes();
    staged_bytes_ = staged_bytes_ - seq->staged_bytes + actual;
    seq->staged_bytes = actual;
    seq->staged = std::move(outcome.kv);
    seq->external_tokens = static_cast<std::uint32_t>(seq->prompt.size()) -
                           seq->staged->first_block * config_.block_size;
    enter_engine(std::move(seq));
    return;
  }
  staged_bytes_ -= seq->staged_bytes;
  seq->staged_bytes = 0;
  const std::string reason = outcome.not_held ? "not_held" : "unreachable";
  const bool recompute = options_.recompute_on_load_failure;
  if (metrics_) metrics_->on_kv_load_failure(reason, recompute ? "recompute" : "fail");
  if (recompute) {
    log::get("serve")->info("request {}: remote KV not loaded ({}); recomputing the prompt", id,
                            outcome.error);
    seq->remote.reset();
    enter_engine(std::move(seq));
    return;
  }
  log::get("serve")->warn("request {}: {}", id, outcome.error);
  const engine::SeqId sid = seq->id;
  seqs_.emplace(sid, std::move(seq));
  fail_seq(sid, outcome.error, 500);
}

void EngineLoop::step() {
  const double start = now();
  engine::StepPlan plan = engine_.schedule();
  if (plan.empty()) {
    idle_wait();  // work exists but nothing fits this step (e.g. blocks held for PD pulls)
    return;
  }
  for (const engine::ScheduledSeq& s : plan.seqs) {
    auto it = seqs_.find(s.id);
    if (it != seqs_.end() && it->second->first_scheduled < 0) it->second->first_scheduled = start;
  }
  auto executed = executor_.execute(engine_, plan);
  if (!executed) {
    log::get("serve")->error("forward pass failed: {}", executed.error().message);
    for (const engine::ScheduledSeq& s : plan.seqs) {
      fail_seq(s.id, "engine error: " + executed.error().message, 500);
    }
    publish_gauges();
    return;
  }
  engine::StepOutputs out = engine_.complete(plan, *executed);
  const double end = now();
  if (metrics_) metrics_->on_step(plan.total_prefill_tokens + plan.num_decode_seqs);
  deliver(out, end);
  for (const engine::ScheduledSeq& s : plan.seqs) {
    auto it = seqs_.find(s.id);
    if (it != seqs_.end() && !it->second->staged && it->second->staged_bytes > 0) {
      staged_bytes_ -= it->second->staged_bytes;  // imported into its blocks
      it->second->staged_bytes = 0;
    }
  }
  if (!out.events.empty() && sink_) sink_(std::move(out.events));
  {
    std::lock_guard lock(mu_);
    shared_.busy_seconds += end - start;
    ++shared_.steps;
  }
  publish_gauges();
  if (between_) between_();
}

void EngineLoop::deliver(const engine::StepOutputs& out, double end) {
  for (const engine::SeqOutput& o : out.outputs) {
    auto it = seqs_.find(o.id);
    if (it == seqs_.end()) continue;
    Seq& seq = *it->second;
    const auto prompt = static_cast<std::uint32_t>(seq.prompt.size());
    // vLLM's num_cached_tokens: local prefix hits plus transferred KV, less the last prompt
    // token (recomputed there; here its logits come from the prefill's hidden state).
    const std::uint32_t external = seq.external_tokens;
    const std::uint32_t cached =
        external == 0 ? o.num_cached_tokens : std::min(o.num_cached_tokens + external, prompt - 1);
    if (o.new_tokens > 0) {
      const bool first = seq.first_token < 0;
      if (metrics_) {
        metrics_->on_tokens(o.new_tokens, first ? end - seq.arrival : end - seq.last_token, first);
        if (first) metrics_->on_prompt(prompt, cached, external);
      }
      if (first) seq.first_token = end;
      seq.last_token = end;
    }
    const std::size_t n = std::min<std::size_t>(o.new_tokens, seq.step_tokens.size());
    std::vector<std::uint32_t> tokens(seq.step_tokens.begin(),
                                      seq.step_tokens.begin() + static_cast<std::ptrdiff_t>(n));
    std::vector<TokenLogprobs> logprobs;
    if (seq.sampling.logprobs) {
      const std::size_t m = std::min(n, seq.step_logprobs.size());
      logprobs.assign(seq.step_logprobs.begin(),
                      seq.step_logprobs.begin() + static_cast<std::ptrdiff_t>(m));
    }
    std::string shown = seq.text.text().substr(0, seq.text.shown());
    notify(seq.channel, [tokens = std::move(tokens), logprobs = std::move(logprobs),
                         shown = std::move(shown), cached](ChoiceProgress& p) {
      p.tokens.insert(p.tokens.end(), tokens.begin(), tokens.end());
      p.logprobs.insert(p.logprobs.end(), logprobs.begin(), logprobs.end());
      if (shown.size() > p.text.size()) p.text.append(shown, p.text.size(), std::string::npos);
      p.cached_tokens = cached;
    });
    if (o.finish != FinishReason::kNone) finish(seq, o.finish, end);
  }
}

void EngineLoop::finish(Seq& seq, FinishReason reason, double at) {
  const engine::SeqId id = seq.id;
  std::string params = "null";
  if (reason == FinishReason::kPrefillDone) {
    Hold hold;
    hold.id = id;
    for (const engine::BlockId b : engine_.blocks(id)) {
      hold.kv.pages.push_back(static_cast<std::int32_t>(b));
    }
    hold.kv.hidden = seq.last_hidden;
    hold.expires = at + options_.lease_seconds;
    if (options_.hold_params) {
      params = options_.hold_params(seq.hold_key, engine_.blocks(id),
                                    static_cast<std::uint32_t>(seq.prompt.size()));
    }
    {
      std::lock_guard lock(mu_);
      holds_[seq.hold_key] = std::move(hold);
      shared_.holds = holds_.size();
    }
    if (metrics_) metrics_->on_kv_hold("held");
  }
  const std::string stop_reason = reason == FinishReason::kStop ? seq.text.stop_reason() : "null";
  notify(seq.channel, [text = seq.text.text(), reason, stop_reason, params](ChoiceProgress& p) {
    if (text.size() > p.text.size()) p.text.append(text, p.text.size(), std::string::npos);
    p.finish = reason;
    p.stop_reason = stop_reason;
    p.kv_transfer_params = params;
  });
  if (metrics_) {
    sim::FinishedRequest f;
    f.finished_reason = std::string(sim::finish_reason_name(reason));
    f.prompt_tokens = static_cast<std::uint32_t>(seq.prompt.size());
    f.generation_tokens = seq.output_len();
    f.max_tokens_param = seq.max_tokens_param;
    const double scheduled = seq.first_scheduled < 0 ? at : seq.first_scheduled;
    const double first = seq.first_token < 0 ? at : seq.first_token;
    f.queue_s = scheduled - seq.arrival;
    f.prefill_s = first - scheduled;
    f.decode_s = at - first;
    f.ttft_s = first - seq.arrival;
    f.e2e_s = at - seq.arrival;
    metrics_->on_finish(f);
  }
  staged_bytes_ -= seq.staged_bytes;
  seqs_.erase(id);
  std::lock_guard lock(mu_);
  --in_flight_;
}

void EngineLoop::fail_seq(engine::SeqId id, const std::string& message, int status) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return;
  engine_.abort(id);
  notify(it->second->channel, [message, status](ChoiceProgress& p) {
    if (!p.error) {
      p.error = message;
      p.error_status = status;
    }
  });
  staged_bytes_ -= it->second->staged_bytes;
  seqs_.erase(it);
  std::lock_guard lock(mu_);
  --in_flight_;
}

void EngineLoop::abort_now(engine::SeqId id) {
  if (auto it = seqs_.find(id); it != seqs_.end()) {
    engine_.abort(id);  // its blocks return to the pool (cached ones stay reusable)
    finish(*it->second, FinishReason::kAbort, now());
    return;
  }
  if (auto it = fetching_.find(id); it != fetching_.end()) {
    it->second->aborted = true;  // dropped when its pull ends
    notify(it->second->channel, [](ChoiceProgress& p) { p.finish = FinishReason::kAbort; });
    return;
  }
  for (auto it = to_fetch_.begin(); it != to_fetch_.end(); ++it) {
    if ((*it)->id != id) continue;
    notify((*it)->channel, [](ChoiceProgress& p) { p.finish = FinishReason::kAbort; });
    to_fetch_.erase(it);
    std::lock_guard lock(mu_);
    --in_flight_;
    return;
  }
}

void EngineLoop::idle_wait() {
  std::unique_lock lock(mu_);
  wake_.wait_for(lock, std::chrono::milliseconds(20), [&] { return stopping_ || !inbox_.empty(); });
}

void EngineLoop::notify(std::shared_ptr<ChoiceChannel> channel,
                        std::function<void(ChoiceProgress&)> update) {
  notices_.push_back({std::move(channel), std::move(update)});
}

// Handlers hear of what a step did only after the gauges show it: a client that reads
// /metrics after its answer sees the blocks freed and the counters moved.
void EngineLoop::publish_gauges() {
  publish_stats();
  for (Notice& n : notices_) n.channel->publish(n.update);
  notices_.clear();
}

void EngineLoop::publish_stats() {
  const engine::EngineStats s = engine_.stats();
  std::lock_guard lock(mu_);
  sim::EngineGauges& g = shared_.gauges;
  g.running = s.num_running;
  g.waiting = static_cast<double>(s.num_waiting + fetching_.size() + to_fetch_.size());
  g.kv_cache_usage = s.kv_cache_usage;
  g.prefix_cache_queries = static_cast<double>(s.prefix_cache_queries);
  g.prefix_cache_hits = static_cast<double>(s.prefix_cache_hits);
  g.preemptions = static_cast<double>(s.num_preemptions);
  g.held = static_cast<double>(s.num_held);
  shared_.executor = executor_.stats();
  shared_.fetching = fetching_.size() + to_fetch_.size();
  shared_.staged_bytes = staged_bytes_;
}

LoopStats EngineLoop::stats() const {
  std::lock_guard lock(mu_);
  return shared_;
}

}  // namespace omni::serve
