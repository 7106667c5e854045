// The Engine's private state, shared by engine.cpp (API, bookkeeping), scheduler.cpp
// (schedule()) and stepper.cpp (complete(), the stable fast path).
//
//   slots_[k]  : EngineSeq (hot per-request state) + data[k] (its blocks, hashes, token ids); slots
//                are reused, so the vectors keep their capacity
//   index_     : SeqId -> slot
//   running_   : slots in scheduling order (admission order; preemption pops the back)
//   waiting_   : slots in FCFS order (a preempted request goes back to the front)
//   held: prefill_only requests done with prefill, holding blocks (in slots_ and index_ only)
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "omni/common/random.hpp"
#include "omni/engine/block_pool.hpp"
#include "omni/engine/engine.hpp"
#include "omni/engine/step_executor.hpp"
#include "omni/engine/u64_map.hpp"

namespace omni::engine {

enum class EngineSeqState : std::uint8_t { kFree, kWaiting, kRunning, kHeld };

// The per-request state a step touches, one cache line: a simulator steps thousands of engines
// and every step reads each running request once in schedule() and once in complete().
struct alignas(64) EngineSeq {
  SeqId id = 0;
  EngineSeqState state = EngineSeqState::kFree;
  bool prefill_only = false;
  bool kv_preloaded = false;    // until admitted: the prompt's KV arrives by transfer
  bool decoding = false;        // the prompt is computed; each step adds sampled tokens
  bool cache_reported = false;  // num_cached_tokens fixed at the first admission
  bool sched_decode = false;    // this step's schedule is a decode
  bool stops = false;           // reaching max_output is a stop (EOS), not the length limit
  bool preempted = false;       // preempted at least once (vLLM keeps its lookups apart)
  std::uint32_t prompt = 0;
  std::uint32_t max_output = 0;  // capped so that prompt + output fits max_model_len and the KV
  std::uint32_t output = 0;      // tokens generated so far
  std::uint32_t computed = 0;    // tokens whose KV is in the cache
  std::uint32_t cached_tokens = 0;
  std::uint32_t stored_blocks = 0;  // leading blocks already registered in the prefix cache
  std::uint32_t num_blocks = 0;     // == EngineSeqData::blocks.size()
  std::uint32_t num_hashes = 0;     // == EngineSeqData::hashes.size()
  std::uint32_t sched_tokens = 0;   // this step's tokens (0: not scheduled)
  std::uint32_t sched_drafts = 0;
  std::uint32_t external_tokens = 0;  // prompt tokens loaded by transfer (kv_preloaded)

  std::uint32_t known_tokens() const { return prompt + output; }
};
static_assert(sizeof(EngineSeq) == 64);

// Loops over a batch prefetch the EngineSeq this many requests ahead (memory latency, not compute,
// bounds a step of a cold engine).
inline constexpr std::size_t kPrefetchAhead = 12;
inline void prefetch(const EngineSeq& s) { __builtin_prefetch(&s, 1); }

// The rest of a request, touched at admission, on a new block, at the end (same slot index).
struct EngineSeqData {
  std::vector<BlockId> blocks;
  std::vector<std::uint64_t> hashes;
  std::vector<std::uint32_t> token_ids;
};

struct Engine::Impl {
  Impl(EngineConfig cfg, CostModel cost_model, std::uint64_t seed);

  EngineConfig config;
  CostModel cost;
  SeededRandom rng;
  std::uint32_t num_spec = 0;  // MTP drafts per decode step
  double acceptance = 0.0;
  std::vector<kvcache::KVEvent> pending_events;  // delivered by the next complete()
  BlockPool pool;

  std::vector<EngineSeq> slots;
  std::vector<EngineSeqData> data;  // parallel to slots
  std::vector<std::uint32_t> free_slots;
  U64Map index;  // SeqId -> slot
  std::vector<std::uint32_t> running;
  std::deque<std::uint32_t> waiting;
  std::uint32_t num_held = 0;

  std::uint64_t outstanding_prefill = 0;  // Σ prefill_debt() over all requests
  std::uint64_t num_preemptions = 0;
  std::uint64_t prefix_queries = 0;
  std::uint64_t prefix_hits = 0;

  std::vector<BlockId> hit_scratch;  // prefix hits of the request being admitted
  // Slots of the last schedule()'s plan, in plan order: complete() finds them without a lookup.
  std::vector<std::uint32_t> scheduled;

  EngineSeqData& data_of(const EngineSeq& s) {
    return data[static_cast<std::size_t>(&s - slots.data())];
  }
  const EngineSeqData& data_of(const EngineSeq& s) const {
    return data[static_cast<std::size_t>(&s - slots.data())];
  }

  // engine.cpp
  // Prompt tokens `s` still has to compute (EngineStats::outstanding_prefill_tokens); kept as a
  // running sum: callers subtract it before changing a request and add it back after.
  static std::uint64_t prefill_debt(const EngineSeq& s);
  std::uint32_t new_slot();
  void free_slot(std::uint32_t slot);
  void release_blocks(EngineSeq& s);
  std::uint32_t drafts_for(const EngineSeq& s) const;
  bool caching() const { return config.enable_prefix_caching; }
  std::uint64_t kv_capacity_tokens() const {
    return std::uint64_t{pool.num_blocks()} * config.block_size;
  }
  // Leading prompt blocks found in the prefix cache (at most max_blocks); their ids go to
  // `hits` when given; `free_hits` counts those sitting in the free queue.
  std::uint32_t prefix_hits_of(const EngineSeq& s, std::uint32_t max_blocks,
                               std::vector<BlockId>* hits, std::uint32_t& free_hits) const;
  // vLLM's PrefixCacheStats.record() for `times` lookups of `s` that found `hit_blocks`:
  // counted (prefix_cache_queries/hits) only with caching on and for never-preempted requests.
  void record_lookup(const EngineSeq& s, std::uint32_t hit_blocks, std::uint64_t times = 1);
  // Registers the blocks of known tokens (the prompt's; with an executor's hashes also
  // generated ones) that are full once `upto_tokens` are computed and emits
  // BlockStored for them.
  void commit_full_blocks(EngineSeq& s, std::uint32_t upto_tokens);

  // scheduler.cpp
  StepPlan schedule();
  bool schedule_running(std::size_t i, std::uint32_t& budget, StepPlan& plan);
  // What admitting `s` under `budget` would take; no side effects (the stable fast path asks
  // whether the waiting head could start).
  struct Admission {
    bool ok = false;
    bool preloaded = false;
    std::uint32_t hit_blocks = 0, start = 0, tokens = 0, new_blocks = 0;
  };
  Admission plan_admission(const EngineSeq& s, std::uint32_t budget,
                           std::vector<BlockId>* hits) const;
  bool admit_waiting(std::uint32_t slot, std::uint32_t& budget, StepPlan& plan);
  bool grow_blocks(EngineSeq& s, std::uint32_t total_tokens);
  void preempt(std::uint32_t slot, StepPlan& plan);

  // stepper.cpp
  // `executed` (may be null: the engine model decides) gives each sequence's outcome.
  StepOutputs complete(const StepPlan& plan, const ExecutedStep* executed);
  std::uint32_t slot_of(const StepPlan& plan, std::size_t k) const;
  void apply(EngineSeq& s, SeqOutput& o);
  // executed.cpp: apply() with the executor's outcome; the request's known tokens grow by
  // what it produced (their values and new block hashes recorded for the prefix cache).
  void apply_executed(EngineSeq& s, const ExecutedSeq& x, SeqOutput& o);
  static const ExecutedSeq* find_executed(const ExecutedStep& executed, std::size_t k, SeqId id);
  std::uint32_t accept_drafts(SeededRandom& rng_state, std::uint32_t drafts) const;
  std::uint32_t stable_limit(std::uint32_t max_steps) const;
  Stable stable_decode_run(std::uint32_t max_steps, double horizon_s) const;
  StepOutputs advance_stable(std::uint32_t steps);
};

}  // namespace omni::engine
