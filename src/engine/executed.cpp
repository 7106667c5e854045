// complete() with an executor's outcomes (step_executor.hpp): the real engine's sampled tokens,
// accepted drafts and stops, instead of the engine model's draws.
#include <algorithm>

#include "engine_impl.hpp"

namespace omni::engine {

const ExecutedSeq* Engine::Impl::find_executed(const ExecutedStep& executed, std::size_t k,
                                               SeqId id) {
  // Executors usually answer in plan order; otherwise search (plans are small).
  if (k < executed.seqs.size() && executed.seqs[k].id == id) return &executed.seqs[k];
  for (const ExecutedSeq& x : executed.seqs) {
    if (x.id == id) return &x;
  }
  return nullptr;
}

void Engine::Impl::apply_executed(EngineSeq& s, const ExecutedSeq& x, SeqOutput& o) {
  std::uint32_t produced = 0;
  if (s.sched_decode) {
    const std::uint32_t accepted = std::min(x.accepted_drafts, s.sched_drafts);
    s.computed += 1 + accepted;
    produced = std::min(1 + accepted, s.max_output - s.output);
  } else {
    s.computed += s.sched_tokens;
    if (s.computed >= s.known_tokens()) produced = 1;
  }
  s.sched_tokens = 0;
  s.output += produced;
  if (produced > 0) s.decoding = true;
  EngineSeqData& d = data_of(s);
  if (produced > 0 && config.emit_kv_events) {
    const std::size_t n = std::min<std::size_t>(produced, x.tokens.size());
    d.token_ids.insert(d.token_ids.end(), x.tokens.begin(), x.tokens.begin() + n);
  }
  if (caching() && !x.block_hashes.empty()) {
    // Only blocks of known tokens have hashes: never more than (prompt + output) / B.
    const std::size_t room = s.known_tokens() / config.block_size - d.hashes.size();
    const std::size_t n = std::min(room, x.block_hashes.size());
    d.hashes.insert(d.hashes.end(), x.block_hashes.begin(), x.block_hashes.begin() + n);
    s.num_hashes = static_cast<std::uint32_t>(d.hashes.size());
  }
  o.id = s.id;
  o.new_tokens = produced;
  o.total_output_tokens = s.output;
  o.num_cached_tokens = s.cached_tokens;
  o.num_external_tokens = s.external_tokens;
  if (produced > 0 && s.prefill_only) {
    o.finish = FinishReason::kPrefillDone;
  } else if (produced > 0 && x.stop) {
    o.finish = FinishReason::kStop;
  } else if (s.output >= s.max_output) {
    o.finish = s.stops ? FinishReason::kStop : FinishReason::kLength;
  }
}

}  // namespace omni::engine
