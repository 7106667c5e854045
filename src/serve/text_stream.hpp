// A request's output text as tokens arrive, and where it stops, as vLLM's incremental
// detokenizer and stop checker do (vllm/v1/engine/detokenizer.py, vllm/v1/core/sched/utils.py):
//
//   - text is decoded over a window of the last tokens (prefix_offset .. end, minus
//     prefix_offset .. read_offset), so a token whose bytes end inside a UTF-8 character
//     shows nothing until the character completes;
//   - while the output has min_tokens tokens or fewer nothing stops it; after that, per token:
//     the length limit first, then EOS (unless ignore_eos), then a stop token id, then a stop
//     string found in the new text (the text is cut before it, or after it with
//     include_stop_str_in_output; a stop string wins over the length limit);
//   - streamed text holds back the last (longest stop string - 1) characters until the end,
//     so a stop string is never half shown.
//
// Single-threaded; one per choice.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "sim/text_codec.hpp"

namespace omni::serve {

struct StopRules {
  std::vector<std::string> stop;  // stop strings (empty ones ignored)
  std::vector<std::uint32_t> stop_token_ids;
  std::optional<std::uint32_t> eos;  // the model's EOS
  bool ignore_eos = false;
  bool include_stop_str_in_output = false;
  std::uint32_t min_tokens = 0;
  std::uint32_t max_tokens = 16;
};

enum class Finish { kNone, kLength, kStop };

// `text` with every maximal invalid UTF-8 subpart replaced by U+FFFD (Rust's from_utf8_lossy,
// what Hugging Face's decoders return), so responses are always valid JSON strings.
std::string valid_utf8(std::string_view text);

class TextStream {
 public:
  TextStream(const sim::TextCodec& codec, StopRules rules, std::span<const std::uint32_t> prompt);

  // Appends one generated token; returns how it ends the output (kNone: go on).
  Finish push(std::uint32_t token);
  Finish finish() const noexcept { return finish_; }
  // vLLM's stop_reason as raw JSON: null, the stop string, or the stop token id.
  const std::string& stop_reason() const noexcept { return stop_reason_; }
  const std::vector<std::uint32_t>& tokens() const noexcept { return tokens_; }
  // The whole text so far (cut at a stop string once stopped).
  const std::string& text() const noexcept { return text_; }
  // Bytes of text() that may be shown now (held-back bytes excluded until the end).
  std::size_t shown() const noexcept;
  // The text of token i alone (its own bytes, for logprobs "tokens").
  std::string token_text(std::uint32_t token) const;
  const StopRules& rules() const noexcept { return rules_; }

 private:
  void decode_new();
  bool check_stop_strings(std::size_t new_bytes);

  const sim::TextCodec& codec_;
  StopRules rules_;
  std::vector<std::uint32_t> window_;  // the last prompt tokens, then every output token
  std::size_t prefix_offset_ = 0, read_offset_ = 0;
  std::vector<std::uint32_t> tokens_;
  std::string text_;
  std::size_t hold_ = 0;  // bytes held back while streaming
  Finish finish_ = Finish::kNone;
  std::string stop_reason_ = "null";
};

}  // namespace omni::serve
