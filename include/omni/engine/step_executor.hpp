// One scheduler and block pool, two ways of executing a step.
//
//   Engine::schedule() ──► StepPlan ──► StepExecutor::execute() ──► ExecutedStep
//                                                                        │
//   Engine::complete(plan, executed) ◄───────────────────────────────────┘
//
// The engine model (omni-sim, omni-cluster) executes a step with its cost model: the step lasts
// step_seconds(plan) and MTP drafts are accepted at the profile's rate (CostModelExecutor
// below; the engine draws the acceptances). The real CPU engine (omni-serve, src/serve) runs
// the forward pass over the plan: it samples tokens, verifies drafts, and tells the engine what
// happened — how many drafts each decode accepted, which requests stopped (EOS, a stop token
// or string), and the hashes of the blocks its sampled tokens completed (so decode-time blocks
// enter the prefix cache and the KV events as vLLM's do).
//
// Threading: an executor is used by the thread that owns its Engine.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "omni/common/result.hpp"
#include "omni/engine/engine.hpp"

namespace omni::engine {

// What executing one scheduled sequence produced.
struct ExecutedSeq {
  SeqId id = 0;
  // Decode steps: drafted tokens accepted (<= ScheduledSeq::draft_tokens). The sequence gains
  // 1 + accepted tokens (capped by its output limit).
  std::uint32_t accepted_drafts = 0;
  // The last token produced ends the request (FinishReason::kStop).
  bool stop = false;
  // The tokens produced by this step, in order (their values; for BlockStored.token_ids when
  // events are on). May be empty when events are off.
  std::span<const std::uint32_t> tokens;
  // kvcache::event_int() hashes of the blocks the request's known tokens (prompt + output)
  // filled since the last call, in block order: they follow the hashes the request already
  // has. Empty when prefix caching is off.
  std::span<const std::uint64_t> block_hashes;
};

struct ExecutedStep {
  double seconds = 0.0;  // how long the step took (modelled or measured)
  // True when `seqs` decides each scheduled sequence's outcome; false leaves it to the engine
  // (the engine model: drafts accepted at the cost model's rate, stops planned at add()).
  bool decided = false;
  std::vector<ExecutedSeq> seqs;  // decided: one per scheduled sequence, in any order
};

class StepExecutor {
 public:
  virtual ~StepExecutor() = default;
  // Executes `plan` (a schedule() of `engine`). An error leaves the engine as it was: the caller
  // fails the plan's requests (abort) or retries.
  virtual Result<ExecutedStep> execute(const Engine& engine, const StepPlan& plan) = 0;
};

// The engine model's way: the step's time from the cost model, outcomes left to the engine.
class CostModelExecutor final : public StepExecutor {
 public:
  Result<ExecutedStep> execute(const Engine& engine, const StepPlan& plan) override {
    ExecutedStep step;
    step.seconds = engine.step_seconds(plan);
    return step;
  }
};

}  // namespace omni::engine
