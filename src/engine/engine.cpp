// Engine: the public API, request bookkeeping and prefix-cache helpers. The scheduling step is
// in scheduler.cpp, completion and the stable fast path in stepper.cpp.
#include "omni/engine/engine.hpp"

#include <algorithm>
#include <cassert>
#include <limits>

#include "engine_impl.hpp"

namespace omni::engine {
namespace {

std::uint32_t derive_num_blocks(const EngineConfig& cfg, const CostModel& cost) {
  std::uint64_t blocks = cfg.num_gpu_blocks;
  if (blocks == 0) blocks = cost.kv_capacity_tokens() / std::max(cfg.block_size, 1u);
  // At least one block, so that the pool is usable; add() rejects prompts that cannot fit.
  blocks = std::clamp<std::uint64_t>(blocks, 1, std::numeric_limits<std::uint32_t>::max() - 1);
  return static_cast<std::uint32_t>(blocks);
}

EngineConfig sanitized(EngineConfig cfg) {
  cfg.block_size = std::max(cfg.block_size, 1u);
  cfg.max_num_seqs = std::max(cfg.max_num_seqs, 1u);
  cfg.max_num_batched_tokens = std::max(cfg.max_num_batched_tokens, 1u);
  cfg.max_model_len = std::max(cfg.max_model_len, 2u);
  return cfg;
}

}  // namespace

Engine::Impl::Impl(EngineConfig cfg, CostModel cost_model, std::uint64_t seed)
    : config(sanitized(cfg)),
      cost(std::move(cost_model)),
      rng(seed),
      num_spec(cost.mtp().num_speculative_tokens),
      acceptance(std::clamp(cost.mtp().acceptance_rate, 0.0, 1.0)),
      pool(derive_num_blocks(config, cost), config.block_size,
           config.emit_kv_events ? &pending_events : nullptr) {}

std::uint64_t Engine::Impl::prefill_debt(const EngineSeq& s) {
  switch (s.state) {
    case EngineSeqState::kWaiting: return s.kv_preloaded ? 0 : s.known_tokens() - s.computed;
    case EngineSeqState::kRunning: return s.decoding ? 0 : s.known_tokens() - s.computed;
    default: return 0;
  }
}

std::uint32_t Engine::Impl::new_slot() {
  if (!free_slots.empty()) {
    const std::uint32_t slot = free_slots.back();
    free_slots.pop_back();
    return slot;
  }
  slots.emplace_back();
  data.emplace_back();
  return static_cast<std::uint32_t>(slots.size() - 1);
}

void Engine::Impl::free_slot(std::uint32_t slot) {
  EngineSeq& s = slots[slot];
  index.erase(s.id);
  s.state = EngineSeqState::kFree;
  EngineSeqData& d = data[slot];
  d.blocks.clear();
  d.hashes.clear();
  d.token_ids.clear();
  s.num_blocks = s.num_hashes = 0;
  free_slots.push_back(slot);
}

void Engine::Impl::release_blocks(EngineSeq& s) {
  if (s.num_blocks == 0) return;
  EngineSeqData& d = data_of(s);
  pool.release_all(d.blocks);
  d.blocks.clear();
  s.num_blocks = 0;
}

std::uint32_t Engine::Impl::drafts_for(const EngineSeq& s) const {
  // Drafts are proposed after a sampled token exists, and never past the output limit.
  if (num_spec == 0 || s.output == 0 || s.output + 1 >= s.max_output) return 0;
  return std::min(num_spec, s.max_output - s.output - 1);
}

std::uint32_t Engine::Impl::prefix_hits_of(const EngineSeq& s, std::uint32_t max_blocks,
                                           std::vector<BlockId>* hits,
                                           std::uint32_t& free_hits) const {
  free_hits = 0;
  if (!caching()) return 0;
  const std::uint32_t limit = std::min(s.num_hashes, max_blocks);
  if (limit == 0) return 0;
  const std::vector<std::uint64_t>& hashes = data_of(s).hashes;
  std::uint32_t found = 0;
  for (; found < limit; ++found) {
    const auto block = pool.lookup(hashes[found]);
    if (!block) break;
    if (pool.is_free(*block)) ++free_hits;
    if (hits != nullptr) hits->push_back(*block);
  }
  return found;
}

void Engine::Impl::record_lookup(const EngineSeq& s, std::uint32_t hit_blocks,
                                 std::uint64_t times) {
  if (!caching() || s.preempted) return;
  prefix_queries += times * s.known_tokens();
  prefix_hits += times * hit_blocks * config.block_size;
}

void Engine::Impl::commit_full_blocks(EngineSeq& s, std::uint32_t upto_tokens) {
  if (!caching()) return;
  const std::uint32_t bs = config.block_size;
  const std::uint32_t full =
      std::min({std::min(upto_tokens, s.known_tokens()) / bs, s.num_hashes, s.num_blocks});
  if (full <= s.stored_blocks) return;
  const EngineSeqData& d = data_of(s);
  const bool emit = config.emit_kv_events;
  kvcache::BlockStored event;
  auto flush = [&] {
    if (!event.block_hashes.empty()) pending_events.emplace_back(std::move(event));
    event = kvcache::BlockStored{};
  };
  for (std::uint32_t j = s.stored_blocks; j < full; ++j) {
    // A block whose hash another block already holds stays private (no event): the index
    // then sees exactly one store and one removal per cached hash.
    if (!pool.cache(d.blocks[j], d.hashes[j])) {
      if (emit) flush();
      continue;
    }
    if (!emit) continue;
    if (event.block_hashes.empty()) {
      event.block_size = bs;
      event.medium = "GPU";
      if (j > 0) event.parent_block_hash = kvcache::EventHash{d.hashes[j - 1]};
    }
    event.block_hashes.emplace_back(d.hashes[j]);
    if (d.token_ids.size() >= std::size_t{j + 1} * bs) {
      const auto first = d.token_ids.begin() + static_cast<std::ptrdiff_t>(j) * bs;
      event.token_ids.insert(event.token_ids.end(), first, first + bs);
    }
  }
  if (emit) flush();
  s.stored_blocks = full;
}

// ---- Engine ------------------------------------------------------------------------------

Engine::Engine(EngineConfig config, CostModel cost, std::uint64_t seed)
    : impl_(std::make_unique<Impl>(config, std::move(cost), seed)) {}
Engine::~Engine() = default;
Engine::Engine(Engine&&) noexcept = default;
Engine& Engine::operator=(Engine&&) noexcept = default;

Status Engine::add(SeqSpec spec) {
  Impl& e = *impl_;
  const EngineConfig& cfg = e.config;
  if (e.index.contains(spec.id)) {
    return make_error(ErrorCode::kInvalidArgument,
                      "duplicate request id " + std::to_string(spec.id));
  }
  if (spec.prompt_tokens == 0) {
    return make_error(ErrorCode::kInvalidArgument, "the prompt is empty");
  }
  if (spec.max_output_tokens == 0) {
    return make_error(ErrorCode::kInvalidArgument, "max_output_tokens must be at least 1");
  }
  if (spec.prompt_tokens >= cfg.max_model_len) {
    return make_error(ErrorCode::kInvalidArgument, "prompt of " +
                                                       std::to_string(spec.prompt_tokens) +
                                                       " tokens does not fit max_model_len " +
                                                       std::to_string(cfg.max_model_len));
  }
  if (spec.prompt_tokens >= e.kv_capacity_tokens()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "prompt of " + std::to_string(spec.prompt_tokens) +
                          " tokens is larger than the KV cache (" +
                          std::to_string(e.pool.num_blocks()) + " blocks of " +
                          std::to_string(cfg.block_size) + ")");
  }
  const std::uint32_t slot = e.new_slot();
  EngineSeq& s = e.slots[slot];
  s.id = spec.id;
  s.state = EngineSeqState::kWaiting;
  s.prefill_only = spec.prefill_only;
  s.kv_preloaded = spec.kv_preloaded;
  s.decoding = false;
  s.cache_reported = false;
  s.prompt = spec.prompt_tokens;
  // A request alone must always fit the KV cache, or it would preempt itself forever (vLLM
  // refuses to start when max_model_len exceeds the cache; here the output is capped instead).
  const std::uint64_t token_limit =
      std::min<std::uint64_t>(cfg.max_model_len, e.kv_capacity_tokens());
  s.max_output = static_cast<std::uint32_t>(
      std::min<std::uint64_t>(spec.max_output_tokens, token_limit - spec.prompt_tokens));
  // A stop inside the limit becomes the limit itself, reported as kStop.
  s.preempted = false;
  s.stops = spec.stop_after > 0 && spec.stop_after <= s.max_output;
  if (s.stops) s.max_output = spec.stop_after;
  s.external_tokens = 0;
  s.output = s.computed = s.cached_tokens = s.stored_blocks = 0;
  s.sched_tokens = s.sched_drafts = 0;
  s.sched_decode = false;
  EngineSeqData& d = e.data[slot];
  d.blocks.clear();
  s.num_blocks = 0;
  d.hashes = std::move(spec.block_hashes);
  if (d.hashes.size() > spec.prompt_tokens / cfg.block_size) {
    d.hashes.resize(spec.prompt_tokens / cfg.block_size);
  }
  s.num_hashes = static_cast<std::uint32_t>(d.hashes.size());
  d.token_ids.clear();
  if (cfg.emit_kv_events) d.token_ids = std::move(spec.prompt_token_ids);
  e.index.insert(spec.id, slot);
  e.waiting.push_back(slot);
  e.outstanding_prefill += Impl::prefill_debt(s);
  return ok_status();
}

void Engine::abort(SeqId id) {
  Impl& e = *impl_;
  const std::uint32_t slot = e.index.find(id);
  if (slot == U64Map::kNone) return;
  EngineSeq& s = e.slots[slot];
  e.outstanding_prefill -= Impl::prefill_debt(s);
  switch (s.state) {
    case EngineSeqState::kWaiting:
      e.waiting.erase(std::find(e.waiting.begin(), e.waiting.end(), slot));
      break;
    case EngineSeqState::kRunning:
      e.running.erase(std::find(e.running.begin(), e.running.end(), slot));
      break;
    case EngineSeqState::kHeld: --e.num_held; break;
    case EngineSeqState::kFree: return;
  }
  e.release_blocks(s);
  e.free_slot(slot);
}

void Engine::release_held_blocks(SeqId id) {
  Impl& e = *impl_;
  const std::uint32_t slot = e.index.find(id);
  if (slot == U64Map::kNone || e.slots[slot].state != EngineSeqState::kHeld) return;
  abort(id);
}

StepPlan Engine::schedule() { return impl_->schedule(); }

double Engine::step_seconds(const StepPlan& plan) const {
  StepShape shape;
  for (const ScheduledSeq& s : plan.seqs) {
    if (s.decode) {
      ++shape.decode_seqs;
      shape.decode_query_tokens += 1 + s.draft_tokens;
      shape.decode_context_tokens += s.context_tokens;
    } else {
      const std::uint64_t n = s.new_prefill_tokens;
      ++shape.prefill_seqs;
      shape.prefill_tokens += s.new_prefill_tokens;
      shape.prefill_context_tokens += s.context_tokens;
      shape.prefill_attention_pairs += n * s.context_tokens + n * (n + 1) / 2;
    }
  }
  return impl_->cost.step_seconds(shape);
}

StepOutputs Engine::complete(const StepPlan& plan) { return impl_->complete(plan, nullptr); }

StepOutputs Engine::complete(const StepPlan& plan, const ExecutedStep& executed) {
  return impl_->complete(plan, executed.decided ? &executed : nullptr);
}

std::span<const BlockId> Engine::blocks(SeqId id) const {
  const Impl& e = *impl_;
  const std::uint32_t slot = e.index.find(id);
  if (slot == U64Map::kNone) return {};
  return e.data[slot].blocks;
}

Engine::Stable Engine::stable_decode_run(std::uint32_t max_steps) const {
  return impl_->stable_decode_run(max_steps, std::numeric_limits<double>::infinity());
}

Engine::Stable Engine::stable_decode_run(std::uint32_t max_steps, double horizon_s) const {
  return impl_->stable_decode_run(max_steps, horizon_s);
}

StepOutputs Engine::advance_stable(std::uint32_t steps) { return impl_->advance_stable(steps); }

bool Engine::has_work() const { return !impl_->running.empty() || !impl_->waiting.empty(); }

EngineStats Engine::stats() const {
  const Impl& e = *impl_;
  EngineStats st;
  st.num_running = static_cast<std::uint32_t>(e.running.size());
  st.num_waiting = static_cast<std::uint32_t>(e.waiting.size());
  st.num_held = e.num_held;
  st.num_preemptions = e.num_preemptions;
  st.total_blocks = e.pool.num_blocks();
  st.used_blocks = e.pool.num_used();
  st.kv_cache_usage = static_cast<double>(st.used_blocks) /
                      static_cast<double>(std::max<std::uint64_t>(st.total_blocks, 1));
  st.prefix_cache_queries = e.prefix_queries;
  st.prefix_cache_hits = e.prefix_hits;
  st.outstanding_prefill_tokens = e.outstanding_prefill;
#ifndef NDEBUG
  std::uint64_t recount = 0;
  for (const std::uint32_t slot : e.waiting) recount += Impl::prefill_debt(e.slots[slot]);
  for (const std::uint32_t slot : e.running) recount += Impl::prefill_debt(e.slots[slot]);
  assert(recount == e.outstanding_prefill);
#endif
  return st;
}

const EngineConfig& Engine::config() const { return impl_->config; }
const CostModel& Engine::cost_model() const { return impl_->cost; }

std::uint32_t Engine::cached_prefix_tokens(const std::vector<std::uint64_t>& block_hashes) const {
  const Impl& e = *impl_;
  if (!e.caching()) return 0;
  std::uint32_t blocks = 0;
  for (const std::uint64_t hash : block_hashes) {
    if (!e.pool.lookup(hash)) break;
    ++blocks;
  }
  return blocks * e.config.block_size;
}

bool Engine::reset_prefix_cache() { return impl_->pool.reset_prefix_cache(); }

}  // namespace omni::engine
