// schedule(): one step of a vLLM-v1-shaped scheduler (vllm/v1/core/sched/scheduler.py).
//   1. Running requests first, in order: decodes (1 token + MTP drafts) and ongoing chunked
//      prefills, under the token budget. When a request's blocks cannot be allocated, the LAST
//      running request is preempted by recompute (blocks freed, back to the front of waiting),
//      until the allocation fits or the request itself was the one preempted.
//   2. Then, only if nobody was preempted, waiting requests in FCFS order while the budget,
//      max_num_seqs and free blocks allow, after a prefix-cache lookup.
#include <algorithm>

#include "engine_impl.hpp"

namespace omni::engine {
namespace {

std::uint32_t blocks_for(std::uint32_t tokens, std::uint32_t block_size) {
  return (tokens + block_size - 1) / block_size;
}

}  // namespace

bool Engine::Impl::grow_blocks(EngineSeq& s, std::uint32_t total_tokens) {
  const std::uint32_t want = blocks_for(total_tokens, config.block_size);
  const std::uint32_t have = s.num_blocks;
  if (want <= have) return true;
  if (pool.num_free() < want - have) return false;
  std::vector<BlockId>& blocks = data_of(s).blocks;
  for (std::uint32_t k = have; k < want; ++k) blocks.push_back(*pool.allocate());
  s.num_blocks = want;
  return true;
}

void Engine::Impl::preempt(std::uint32_t slot, StepPlan& plan) {
  EngineSeq& s = slots[slot];
  outstanding_prefill -= prefill_debt(s);
  release_blocks(s);
  s.computed = 0;
  s.stored_blocks = 0;
  s.decoding = false;
  s.kv_preloaded = false;  // recomputed locally from now on
  s.preempted = true;
  s.sched_tokens = 0;
  s.state = EngineSeqState::kWaiting;
  waiting.push_front(slot);
  outstanding_prefill += prefill_debt(s);
  plan.preempted.push_back(s.id);
  ++num_preemptions;
}

// Schedules running_[i]; false when it was preempted itself (the running pass then stops).
bool Engine::Impl::schedule_running(std::size_t i, std::uint32_t& budget, StepPlan& plan) {
  const std::uint32_t slot = running[i];
  EngineSeq& s = slots[slot];
  std::uint32_t want = 0;
  std::uint32_t drafts = 0;
  if (s.decoding) {
    drafts = drafts_for(s);
    want = 1 + drafts;
  } else {
    want = s.known_tokens() - s.computed;
    if (config.long_prefill_token_threshold > 0) {
      want = std::min(want, config.long_prefill_token_threshold);
    }
  }
  const std::uint32_t n = std::min(want, budget);
  if (s.decoding) drafts = n - 1;
  while (!grow_blocks(s, s.computed + n)) {
    const std::uint32_t victim = running.back();
    running.pop_back();
    preempt(victim, plan);
    if (victim == slot) return false;
  }
  // Decodes add no prompt blocks; a real engine's decodes fill blocks of generated tokens
  // (their hashes come with ExecutedSeq), cached once this step computes them, as vLLM does.
  if (!s.decoding || s.num_hashes > s.stored_blocks) commit_full_blocks(s, s.computed + n);
  s.sched_tokens = n;
  s.sched_drafts = drafts;
  s.sched_decode = s.decoding;
  ScheduledSeq out;
  out.id = s.id;
  out.new_prefill_tokens = s.decoding ? 0 : n;
  out.context_tokens = s.computed;
  out.decode = s.decoding;
  out.draft_tokens = drafts;
  plan.seqs.push_back(out);
  scheduled.push_back(slot);
  budget -= n;
  if (s.decoding) {
    ++plan.num_decode_seqs;
  } else {
    plan.total_prefill_tokens += n;
  }
  return true;
}

Engine::Impl::Admission Engine::Impl::plan_admission(const EngineSeq& s, std::uint32_t budget,
                                                     std::vector<BlockId>* hits) const {
  Admission a;
  const std::uint32_t bs = config.block_size;
  const std::uint32_t known = s.known_tokens();
  // vLLM always recomputes at least the last known token, so a full hit is one block short.
  std::uint32_t free_hits = 0;
  a.hit_blocks = prefix_hits_of(s, (known - 1) / bs, hits, free_hits);
  // A preloaded request (PD decode side) has its prompt's KV by transfer: it only computes the
  // last prompt token, which samples its first output token.
  a.preloaded = s.kv_preloaded && s.output == 0;
  a.start = a.preloaded ? known - 1 : a.hit_blocks * bs;
  a.tokens = known - a.start;
  if (!a.preloaded && config.long_prefill_token_threshold > 0) {
    a.tokens = std::min(a.tokens, config.long_prefill_token_threshold);
  }
  if (!config.enable_chunked_prefill && a.tokens > budget) return a;
  a.tokens = std::min(a.tokens, budget);
  if (a.tokens == 0) return a;
  // Hit blocks that sit in the free queue are taken out of it: they count against free space.
  a.new_blocks = blocks_for(a.start + a.tokens, bs) - a.hit_blocks;
  a.ok = pool.num_free() >= std::uint64_t{a.new_blocks} + free_hits;
  return a;
}

// Admits the head of waiting; false when it cannot run in this step (the waiting pass stops).
bool Engine::Impl::admit_waiting(std::uint32_t slot, std::uint32_t& budget, StepPlan& plan) {
  EngineSeq& s = slots[slot];
  hit_scratch.clear();
  const Admission a = plan_admission(s, budget, &hit_scratch);
  // vLLM looks the prompt up every time it tries to admit it, admitted or not.
  record_lookup(s, a.hit_blocks);
  if (!a.ok) return false;
  outstanding_prefill -= prefill_debt(s);
  std::vector<BlockId>& blocks = data_of(s).blocks;
  for (const BlockId b : hit_scratch) {
    pool.touch(b);
    blocks.push_back(b);
  }
  for (std::uint32_t k = 0; k < a.new_blocks; ++k) blocks.push_back(*pool.allocate());
  s.num_blocks = static_cast<std::uint32_t>(blocks.size());
  const std::uint32_t hit_tokens = a.hit_blocks * config.block_size;
  s.computed = a.start;
  s.stored_blocks = a.hit_blocks;
  if (!s.cache_reported) {
    s.cached_tokens = hit_tokens;
    if (a.preloaded) s.external_tokens = s.prompt - hit_tokens;
    s.cache_reported = true;
  }
  commit_full_blocks(s, a.preloaded ? s.prompt : a.start + a.tokens);
  s.kv_preloaded = false;
  s.decoding = a.preloaded;
  s.state = EngineSeqState::kRunning;
  s.sched_tokens = a.tokens;
  s.sched_drafts = 0;
  s.sched_decode = a.preloaded;
  outstanding_prefill += prefill_debt(s);

  ScheduledSeq out;
  out.id = s.id;
  out.new_prefill_tokens = a.preloaded ? 0 : a.tokens;
  out.cached_tokens = hit_tokens;
  out.context_tokens = a.start;
  out.decode = a.preloaded;
  plan.seqs.push_back(out);
  scheduled.push_back(slot);
  budget -= a.tokens;
  if (a.preloaded) {
    ++plan.num_decode_seqs;
  } else {
    plan.total_prefill_tokens += a.tokens;
  }
  return true;
}

StepPlan Engine::Impl::schedule() {
  StepPlan plan;
  plan.seqs.reserve(std::min<std::size_t>(running.size() + waiting.size(), config.max_num_seqs));
  scheduled.clear();
  std::uint32_t budget = config.max_num_batched_tokens;
  for (std::size_t i = 0; i < running.size() && budget > 0; ++i) {
    // Each request's state is one cache line, usually cold (thousands of engines share the
    // caches): ask for the next ones while this one is scheduled.
    if (i + kPrefetchAhead < running.size()) prefetch(slots[running[i + kPrefetchAhead]]);
    if (!schedule_running(i, budget, plan)) break;
  }
  if (!plan.preempted.empty()) return plan;
  while (!waiting.empty() && budget > 0 && running.size() < config.max_num_seqs) {
    const std::uint32_t slot = waiting.front();
    if (!admit_waiting(slot, budget, plan)) break;
    waiting.pop_front();
    running.push_back(slot);
  }
  return plan;
}

}  // namespace omni::engine
