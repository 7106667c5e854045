// Where a generation ends and what its text shows, decided before it runs: the engine model
// only counts tokens, so omni-sim works out from the request's stop conditions and the
// (deterministic) generated tokens at which output token the request stops and why, as
// vLLM's stop checker would (vllm/v1/engine/detokenizer.py, vllm/v1/core/sched/utils.py):
//
//   - nothing is checked while the output has min_tokens tokens or fewer;
//   - then, per new token in order: EOS (the model's own, from the output-length model;
//     never with ignore_eos), a stop token id, a stop string in the text (the stop strings in
//     the request's order; the text is cut before it, or after it with
//     include_stop_str_in_output);
//   - else the request runs to max_tokens ("length").
//
// The EOS token counts in completion_tokens but not in the text; a stop token's text is kept.
// Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/text_codec.hpp"
#include "sim/token_gen.hpp"

namespace omni::sim {

struct StopConditions {
  std::vector<std::string> stop;  // stop strings (empty ones are ignored)
  std::vector<std::uint32_t> stop_token_ids;
  bool ignore_eos = false;
  bool include_stop_str_in_output = false;
  std::uint32_t min_tokens = 0;
};

struct OutputPlan {
  std::uint32_t tokens = 0;          // output tokens produced, the stopping one included
  bool stops = false;                // finish_reason "stop"; false: "length" at max_tokens
  std::string stop_reason = "null";  // raw JSON: null (EOS or length), "<string>", or a token id
  std::uint32_t text_tokens = 0;     // leading tokens whose text is shown (the EOS is not)
  std::size_t text_bytes = std::string::npos;  // the shown text is cut to this many bytes
};

// `eos_after`: the output length at which the model emits EOS (its last token), from the
// output-length model; `max_tokens` the request's effective limit.
OutputPlan plan_output(const TokenGenerator& gen, const TextCodec& codec, std::uint32_t max_tokens,
                       std::uint32_t eos_after, const StopConditions& stop);

// Cuts streamed text to what the plan shows: feed() the decoded text of consecutive token
// ranges, get back the part to send.
class ShownText {
 public:
  explicit ShownText(const OutputPlan* plan) : plan_(plan) {}
  // The text of tokens [from, to), as it may be shown: when the plan stops, nothing past its
  // cut (not even the first bytes of a stop string whose end is still to come, as vLLM holds
  // them back).
  std::string feed(std::uint32_t from, std::uint32_t to, const TextCodec& codec,
                   const TokenGenerator& gen);

 private:
  const OutputPlan* plan_;
  std::size_t shown_ = 0;  // bytes shown so far
};

}  // namespace omni::sim
