// The engine model: a vLLM-v1-shaped continuous-batching scheduler over a paged KV cache with
// prefix caching, in virtual time. Pure: no I/O, no threads, no wall clock. omni-sim drives one
// Engine from a thread against a (sped-up) clock; omni-cluster drives thousands from one
// event loop. Both use only this header's API.
//
// Usage, one step:
//   StepPlan plan = engine.schedule();          // what runs in this step (may be empty)
//   double dt = engine.step_seconds(plan);       // its duration from the cost model
//   ... advance the clock by dt ...
//   StepOutputs out = engine.complete(plan);     // tokens produced, requests finished, events
//
// Requests are token-content agnostic: the engine sees the prompt length and the hashes of the
// prompt's full blocks (computed by the caller with omni::kvcache, or synthesised from a trace's
// hash ids); it counts generated tokens and never invents their values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "omni/common/result.hpp"
#include "omni/engine/block_pool.hpp"
#include "omni/engine/cost_model.hpp"
#include "omni/kvcache/kv_events.hpp"

namespace omni::engine {

using SeqId = std::uint64_t;  // assigned by the caller, unique within one Engine

struct EngineConfig {
  std::uint32_t block_size = 16;                // --block-size
  std::uint64_t num_gpu_blocks = 0;             // 0: derived from the profiles' memory
  std::uint32_t max_num_seqs = 256;             // --max-num-seqs
  std::uint32_t max_num_batched_tokens = 8192;  // --max-num-batched-tokens
  std::uint32_t max_model_len = 163840;         // prompt + output limit
  bool enable_chunked_prefill = true;
  bool enable_prefix_caching = true;
  bool emit_kv_events = false;                     // collect kvcache events in StepOutputs
  std::uint32_t long_prefill_token_threshold = 0;  // vLLM's; 0 = off
};

struct SeqSpec {
  SeqId id = 0;
  std::uint32_t prompt_tokens = 0;
  std::uint32_t max_output_tokens = 16;
  // Hashes of the prompt's full blocks in order (prompt_tokens / block_size of them), as
  // kvcache::event_int() values. Empty when prefix caching is not wanted for this request.
  std::vector<std::uint64_t> block_hashes;
  // Token ids of the prompt, only to fill BlockStored.token_ids when events are emitted.
  std::vector<std::uint32_t> prompt_token_ids;
  // PD, prefill side (kv_transfer_params.do_remote_decode): stop after the first token and hold
  // the blocks for a decode instance until release_held_blocks() or abort().
  bool prefill_only = false;
  // PD, decode side (do_remote_prefill): the prompt's KV arrives by transfer; the request is
  // admitted with its prompt already computed and goes straight to decode.
  bool kv_preloaded = false;
  // The request ends with FinishReason::kStop once it has produced this many output tokens
  // (an EOS, a stop token or a stop string at that position, decided by the caller); 0 or a
  // value past the output limit: it runs to its length.
  std::uint32_t stop_after = 0;
  // Priority in arrival order ties (lower first); vLLM's FCFS uses arrival order only.
  double arrival_time = 0.0;
};

enum class FinishReason { kNone, kLength, kStop, kAbort, kPrefillDone, kError };

struct ScheduledSeq {
  SeqId id = 0;
  std::uint32_t new_prefill_tokens = 0;  // computed this step (cached tokens excluded)
  std::uint32_t cached_tokens = 0;       // prefix-cache hits credited at admission (first chunk)
  std::uint32_t context_tokens = 0;      // tokens already in the KV cache before this step
  bool decode = false;                   // a decode step for this sequence
  std::uint32_t draft_tokens = 0;        // MTP drafts verified with this decode step
};

struct StepPlan {
  std::vector<ScheduledSeq> seqs;
  std::vector<SeqId> preempted;  // preempted by recompute to make room in this step
  std::uint32_t total_prefill_tokens = 0;
  std::uint32_t num_decode_seqs = 0;
  bool empty() const { return seqs.empty(); }
};

struct SeqOutput {
  SeqId id = 0;
  std::uint32_t new_tokens = 0;  // 1, or 1 + accepted MTP drafts; 0 for a mid-prompt chunk
  std::uint32_t total_output_tokens = 0;
  std::uint32_t num_cached_tokens = 0;  // prompt tokens served from the local prefix cache
  // kv_preloaded: prompt tokens whose KV arrived by transfer (the prompt minus the local prefix
  // hit), vLLM's num_external_computed_tokens; 0 otherwise.
  std::uint32_t num_external_tokens = 0;
  FinishReason finish = FinishReason::kNone;
};

struct StepOutputs {
  std::vector<SeqOutput> outputs;
  std::vector<kvcache::KVEvent> events;  // when EngineConfig::emit_kv_events
};

struct ExecutedStep;  // step_executor.hpp

struct EngineStats {
  std::uint32_t num_running = 0;
  std::uint32_t num_waiting = 0;
  std::uint64_t num_preemptions = 0;  // cumulative
  std::uint64_t total_blocks = 0;
  std::uint64_t used_blocks = 0;                 // referenced by a running or held sequence
  double kv_cache_usage = 0.0;                   // used / total, as vllm:kv_cache_usage_perc
  std::uint64_t prefix_cache_queries = 0;        // tokens looked up, cumulative
  std::uint64_t prefix_cache_hits = 0;           // tokens found, cumulative
  std::uint64_t outstanding_prefill_tokens = 0;  // uncomputed prompt tokens, waiting + running
  std::uint32_t num_held = 0;  // prefill_only requests holding blocks for a decode instance
};

class Engine {
 public:
  Engine(EngineConfig config, CostModel cost, std::uint64_t seed);
  ~Engine();
  Engine(Engine&&) noexcept;
  Engine& operator=(Engine&&) noexcept;

  // Queues a request. Errors (kInvalidArgument) for prompts over max_model_len or larger than the
  // whole KV cache, duplicate ids.
  Status add(SeqSpec spec);
  // Removes a waiting, running or held request; its blocks return to the pool (cached ones stay
  // reusable). Unknown ids are ignored.
  void abort(SeqId id);
  // PD prefill side: the decode instance has pulled the KV; free the held blocks.
  void release_held_blocks(SeqId id);

  StepPlan schedule();
  double step_seconds(const StepPlan& plan) const;
  StepOutputs complete(const StepPlan& plan);
  // The same for a step executed outside the engine model (step_executor.hpp): with
  // `executed.decided`, each sequence gains 1 + its accepted drafts (decodes) or its sampled
  // token (a prompt's last chunk), stops where the executor says, and its new block hashes
  // extend its prefix-cache chain (decode-time blocks are cached and announced as vLLM's are).
  // Without it, this is complete(plan).
  StepOutputs complete(const StepPlan& plan, const ExecutedStep& executed);
  // The blocks holding a request's KV, in token order (block i holds tokens [i*B, (i+1)*B)),
  // valid until the next schedule(), complete() or abort(); empty for an unknown request or
  // one without blocks. A real KV cache uses the block ids as its page indices.
  std::span<const BlockId> blocks(SeqId id) const;

  // Fast path for simulators: when the batch will not change for k steps (only decodes, nothing
  // waiting that could be admitted, nobody finishing or needing a new block before step k),
  // returns the largest such k <= max_steps and their total time; 0 when the next step differs.
  struct Stable {
    std::uint32_t steps = 0;
    double seconds = 0.0;
  };
  Stable stable_decode_run(std::uint32_t max_steps) const;
  // The same, limited to the steps that START before `horizon_s` seconds from now (the next
  // external event of a simulator: an arrival added during a step waits for the next
  // schedule() either way, so running up to the step that spans it changes nothing).
  Stable stable_decode_run(std::uint32_t max_steps, double horizon_s) const;
  // Applies `steps` stable decode steps at once (each sequence gains the tokens it would have).
  StepOutputs advance_stable(std::uint32_t steps);

  bool has_work() const;
  EngineStats stats() const;
  const EngineConfig& config() const;
  const CostModel& cost_model() const;
  // Longest cached prefix, in tokens, for these block hashes (no side effects).
  std::uint32_t cached_prefix_tokens(const std::vector<std::uint64_t>& block_hashes) const;
  // vLLM's reset_prefix_cache: forgets every cached block (AllBlocksCleared is delivered with the
  // next complete()). False, and nothing changes, while any block is in use.
  bool reset_prefix_cache();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace omni::engine
