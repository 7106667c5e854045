// complete(): applies a step's results (vLLM's update_from_output), and the stable fast path
// that applies k identical decode steps at once with exactly the same results.
#include <algorithm>
#include <cassert>

#include "engine_impl.hpp"

namespace omni::engine {

// Drafts are verified in order; the first rejected one ends the run (rejection sampling).
std::uint32_t Engine::Impl::accept_drafts(SeededRandom& rng_state, std::uint32_t drafts) const {
  std::uint32_t accepted = 0;
  while (accepted < drafts && rng_state.bernoulli(acceptance)) ++accepted;
  return accepted;
}

// The slot of plan.seqs[k]: the one schedule() recorded, or (for a plan from elsewhere or after
// an abort) a lookup; kNone when the request is gone.
std::uint32_t Engine::Impl::slot_of(const StepPlan& plan, std::size_t k) const {
  const SeqId id = plan.seqs[k].id;
  if (plan.seqs.size() == scheduled.size()) {
    const std::uint32_t slot = scheduled[k];
    if (slots[slot].id == id && slots[slot].state == EngineSeqState::kRunning) return slot;
  }
  return index.find(id);
}

// Applies one scheduled step to `s` and fills `o`.
void Engine::Impl::apply(EngineSeq& s, SeqOutput& o) {
  std::uint32_t produced = 0;
  if (s.sched_decode) {
    const std::uint32_t accepted = accept_drafts(rng, s.sched_drafts);
    s.computed += 1 + accepted;
    produced = std::min(1 + accepted, s.max_output - s.output);
  } else {
    s.computed += s.sched_tokens;
    // The whole prompt (and, after a preemption, the regenerated output) is computed: this
    // step samples the next token.
    if (s.computed >= s.known_tokens()) produced = 1;
  }
  s.sched_tokens = 0;
  s.output += produced;
  if (produced > 0) s.decoding = true;
  o.id = s.id;
  o.new_tokens = produced;
  o.total_output_tokens = s.output;
  o.num_cached_tokens = s.cached_tokens;
  o.num_external_tokens = s.external_tokens;
  if (produced > 0 && s.prefill_only) {
    o.finish = FinishReason::kPrefillDone;
  } else if (s.output >= s.max_output) {
    o.finish = s.stops ? FinishReason::kStop : FinishReason::kLength;
  }
}

StepOutputs Engine::Impl::complete(const StepPlan& plan, const ExecutedStep* executed) {
  StepOutputs out;
  out.events.swap(pending_events);
  out.outputs.reserve(plan.seqs.size());
  bool any_left = false;
  const bool ours = plan.seqs.size() == scheduled.size();
  for (std::size_t k = 0; k < plan.seqs.size(); ++k) {
    if (ours && k + kPrefetchAhead < scheduled.size()) {
      prefetch(slots[scheduled[k + kPrefetchAhead]]);
    }
    const std::uint32_t slot = slot_of(plan, k);
    if (slot == U64Map::kNone) continue;  // aborted since schedule()
    EngineSeq& s = slots[slot];
    if (s.state != EngineSeqState::kRunning || s.sched_tokens == 0) continue;
    const ExecutedSeq* x = executed ? find_executed(*executed, k, s.id) : nullptr;
    SeqOutput& o = out.outputs.emplace_back();
    outstanding_prefill -= prefill_debt(s);
    if (x != nullptr) {
      apply_executed(s, *x, o);
    } else {
      apply(s, o);
    }
    if (o.finish == FinishReason::kNone) {
      outstanding_prefill += prefill_debt(s);
      continue;
    }
    any_left = true;
    if (o.finish == FinishReason::kPrefillDone) {
      s.state = EngineSeqState::kHeld;  // blocks stay until release_held_blocks() or abort()
      ++num_held;
    } else {
      release_blocks(s);
      s.state = EngineSeqState::kFree;  // the slot is recycled after the running list is compacted
    }
  }
  scheduled.clear();
  if (any_left) {
    std::size_t kept = 0;
    for (const std::uint32_t slot : running) {
      const EngineSeqState state = slots[slot].state;
      if (state == EngineSeqState::kRunning) {
        running[kept++] = slot;
      } else if (state == EngineSeqState::kFree) {
        free_slot(slot);
      }
    }
    running.resize(kept);
  }
  return out;
}

// The number of upcoming steps that are pure decodes of an unchanged batch: nobody admitted,
// finishing, preempted or needing a new block. Decodes grow by at most 1 + drafts tokens per
// step; the bounds below assume the maximum, so they hold whatever the MTP draws are.
std::uint32_t Engine::Impl::stable_limit(std::uint32_t max_steps) const {
  if (max_steps == 0 || running.empty() || !pending_events.empty()) return 0;
  const std::uint32_t bs = config.block_size;
  const std::uint32_t growth = 1 + num_spec;
  const std::uint64_t decode_tokens = std::uint64_t{growth} * running.size();
  const bool room_for_more =
      running.size() < config.max_num_seqs && decode_tokens < config.max_num_batched_tokens;
  // The waiting head stays out during the run only if it cannot be admitted now: the budget
  // left by the decodes, the free blocks and the cached prefixes do not change while the batch
  // only decodes inside its blocks.
  if (!waiting.empty() && room_for_more) {
    const auto left = static_cast<std::uint32_t>(config.max_num_batched_tokens - decode_tokens);
    if (plan_admission(slots[waiting.front()], left, nullptr).ok) return 0;
  }
  // Newly admitted requests sit at the back: check the likeliest spoiler before scanning.
  const EngineSeq& last = slots[running.back()];
  if (!last.decoding || last.output == 0) return 0;
  std::uint64_t step_tokens = 0;
  std::uint32_t steps = max_steps;
  for (std::size_t i = 0; i < running.size(); ++i) {
    if (i + kPrefetchAhead < running.size()) prefetch(slots[running[i + kPrefetchAhead]]);
    const EngineSeq& s = slots[running[i]];
    if (!s.decoding || s.output == 0 || s.computed + 1 != s.known_tokens()) return 0;
    // Each step must schedule exactly `growth` tokens (all drafts), and stay below the limit:
    // output + steps * growth <= max_output - 1.
    if (s.output + growth >= s.max_output) return 0;
    steps = std::min(steps, (s.max_output - 1 - s.output) / growth);
    const std::uint32_t capacity = s.num_blocks * bs;
    steps = std::min(steps, (capacity - s.computed) / growth);
    step_tokens += growth;
    if (steps == 0) return 0;
  }
  if (step_tokens > config.max_num_batched_tokens) return 0;
  return steps;
}

Engine::Stable Engine::Impl::stable_decode_run(std::uint32_t max_steps, double horizon_s) const {
  Stable result;
  const std::uint32_t limit = horizon_s > 0 ? stable_limit(max_steps) : 0;
  if (limit == 0) return result;
  const auto batch = static_cast<std::uint32_t>(running.size());
  StepShape shape;
  shape.decode_seqs = batch;
  shape.decode_query_tokens = batch * (1 + num_spec);
  for (const std::uint32_t slot : running) shape.decode_context_tokens += slots[slot].computed;
  // With MTP the context grows by the accepted drafts: replay the draws on a copy of the
  // generator, in the order complete() would make them.
  SeededRandom replay = rng;
  while (result.steps < limit && result.seconds < horizon_s) {
    result.seconds += cost.step_seconds(shape);
    ++result.steps;
    if (num_spec == 0) {
      shape.decode_context_tokens += batch;
      continue;
    }
    for (std::uint32_t j = 0; j < batch; ++j) {
      shape.decode_context_tokens += 1 + accept_drafts(replay, num_spec);
    }
  }
  return result;
}

StepOutputs Engine::Impl::advance_stable(std::uint32_t steps) {
  StepOutputs out;
  steps = stable_limit(steps);
  if (steps == 0) return out;
  // Each of these steps would have tried (and failed) to admit the waiting head, as
  // stable_limit() checked; vLLM counts each try as a prefix-cache lookup.
  const std::uint64_t decode_tokens = std::uint64_t{1 + num_spec} * running.size();
  if (!waiting.empty() && running.size() < config.max_num_seqs &&
      decode_tokens < config.max_num_batched_tokens) {
    const EngineSeq& head = slots[waiting.front()];
    const auto left = static_cast<std::uint32_t>(config.max_num_batched_tokens - decode_tokens);
    record_lookup(head, plan_admission(head, left, nullptr).hit_blocks, steps);
  }
  out.outputs.reserve(running.size());
  for (const std::uint32_t slot : running) {
    EngineSeq& s = slots[slot];
    SeqOutput o;
    o.id = s.id;
    o.num_cached_tokens = s.cached_tokens;
    o.num_external_tokens = s.external_tokens;
    out.outputs.push_back(o);
  }
  if (num_spec == 0) {
    for (std::size_t j = 0; j < running.size(); ++j) {
      EngineSeq& s = slots[running[j]];
      s.computed += steps;
      s.output += steps;
      out.outputs[j].new_tokens = steps;
      out.outputs[j].total_output_tokens = s.output;
    }
    return out;
  }
  for (std::uint32_t k = 0; k < steps; ++k) {
    for (std::size_t j = 0; j < running.size(); ++j) {
      EngineSeq& s = slots[running[j]];
      const std::uint32_t gained = 1 + accept_drafts(rng, num_spec);
      s.computed += gained;
      s.output += gained;
      out.outputs[j].new_tokens += gained;
    }
  }
  for (std::size_t j = 0; j < running.size(); ++j) {
    out.outputs[j].total_output_tokens = slots[running[j]].output;
  }
  return out;
}

}  // namespace omni::engine
