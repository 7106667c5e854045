// Mid-stream migration (docs/proxy.md, "Mid-stream migration"): when a decode engine fails after
// part of the answer reached the client, another engine continues the request from the text
// already sent, and its events are spliced into the same client stream.
//
//   relay ── StreamSplice::feed ──▶ whole events for the client (the engine's error event and
//     │                             what follows withheld); the text and tokens sent so far
//     └─ the stream breaks ── continuation_body(members, sent) ──▶ the same request with the
//        sent text appended to its prompt (or as a final assistant message to continue) and
//        max_tokens reduced ── a new decode (or prefill + decode) leg ── StreamSplice in
//        continuation mode: the first stream's id on every event, usage with the true totals
//
// Only requests whose continuation means the same thing migrate (migration_blocker): one
// choice, no logprobs, no structured output, no echo, no tools.
//
// A token-id prompt continues on token ids, exactly: the proxy asks the engines for the ids
// they generate (vLLM's `return_token_ids`), the splice keeps them and hides them from a client
// that did not ask for them (wants_token_ids, StreamSplice::track_token_ids).
//
// Pure: no I/O. Threading: a StreamSplice belongs to one request.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/fwd.hpp>

#include "omni/common/result.hpp"
#include "omni/proxy/rewrite.hpp"

namespace omni::proxy {

// Why a stream was continued elsewhere (the label of omni_proxy_migrations_total).
enum class MigrationCause : std::uint8_t {
  kConnection,   // the engine's connection broke (reset, EOF) mid-stream
  kIdle,         // the engine was silent for timeouts.decode_idle
  kEngineError,  // the engine ended the stream with an error event
  kDrain,        // the node was drained and its grace ran out
};
inline constexpr std::size_t kMigrationCauseCount = 4;
std::string_view migration_cause_name(MigrationCause cause) noexcept;

// Why `members` (a validated request of `api`, as the engines receive it) cannot be continued
// with the same meaning on another engine; empty when it can. Blockers: n or best_of above 1,
// logprobs / top_logprobs / prompt_logprobs, response_format (not "text") and guided or
// structured output, echo, suffix, tools, a batch of prompts, continue_final_message already
// set by the client.
std::string migration_blocker(std::span<const JsonMember> members, Api api);

// Whether the engines' prompt in `members` is token ids (one prompt of ids, or a batch of one):
// such a request continues on the generated ids, which the proxy then asks the engines for.
bool prompt_is_token_ids(std::span<const JsonMember> members);

// What was sent before the stream broke.
struct SentSoFar {
  std::string text;          // choice 0's text (completions) or delta content (chat)
  std::uint64_t tokens = 0;  // tokens that text came in (the engine's count when known)
  // The text's token ids, needed when the prompt is token ids (the proxy's tokenizer).
  std::optional<std::vector<std::uint32_t>> ids;
};

// The body that continues the request: a completions prompt (text, or token ids with `sent.ids`)
// extended by the sent text; a chat request with the sent text as a final assistant message
// that the engine continues (continue_final_message, add_generation_prompt false: vLLM's
// fields); max_tokens / max_completion_tokens and min_tokens reduced by the sent tokens.
// kInvalidArgument when it cannot be built (a token-id prompt without `sent.ids`).
Result<std::string> continuation_body(std::span<const JsonMember> members, Api api,
                                      const SentSoFar& sent);

// Follows one decode stream as the client receives it, across engines.
class StreamSplice {
 public:
  // `max_text_bytes`: the sent text kept for a continuation; a longer answer can no longer be
  // continued (the text is dropped, and a stream that was not continued yet passes through
  // untouched from then on), which bounds what a stream holds.
  explicit StreamSplice(std::size_t max_text_bytes = std::size_t{256} << 10)
      : max_text_bytes_(max_text_bytes) {}

  // What one piece of engine bytes gave.
  struct Fed {
    std::string out;            // whole events for the client; a partial one waits
    bool engine_error = false;  // the engine sent an error event (withheld, as is the rest)
  };
  Fed feed(std::string_view piece);

  // The stream broke after `tokens_sent` tokens (the count the continuation's max_tokens was
  // reduced by); another engine continues it. `prompt_tokens`: the original prompt's exact size
  // when the proxy knows it (else the continuation's own count less the sent tokens is
  // reported). From now on every event carries the first stream's id, a chat role-only opening
  // chunk is dropped, and usage reports the whole request's totals.
  void continue_elsewhere(std::uint64_t tokens_sent, std::optional<std::uint64_t> prompt_tokens);

  // Keep the ids of the generated tokens (the events' choices[0].token_ids, which the proxy
  // asked the engine for); `hide`: the client did not ask for them, so every event's
  // token_ids and prompt_token_ids are nulled before it is relayed.
  void track_token_ids(bool hide) {
    track_ids_ = true;
    hide_ids_ = hide;
  }
  // The generated ids, when tracked and every event carried them.
  std::optional<std::vector<std::uint32_t>> token_ids() const;

  // Whether another engine may still continue the stream (its text was within the bound).
  bool can_continue() const noexcept { return !over_limit_; }
  const std::string& text() const noexcept { return text_; }
  // Tokens generated so far, as the engine counted them when its events carried usage
  // (continuous_usage_stats), else one per event with text.
  std::uint64_t tokens() const noexcept { return usage_tokens_ ? *usage_tokens_ : events_; }
  bool usage_counted() const noexcept { return usage_tokens_.has_value(); }
  // A finish_reason was sent: the answer is complete (only [DONE] or usage may be missing).
  bool finished() const noexcept { return finished_; }
  bool done_seen() const noexcept { return done_seen_; }
  const std::string& engine_error() const noexcept { return engine_error_; }
  std::uint32_t continuations() const noexcept { return continuations_; }

 private:
  // Appends the event (without its blank line) as the client is to see it; false: an error event.
  bool event(std::string_view event, std::string& out);
  bool take_token_ids(boost::json::object& choice, bool has_text);

  std::size_t max_text_bytes_;
  bool over_limit_ = false;
  bool track_ids_ = false;
  bool hide_ids_ = false;
  bool ids_missing_ = false;  // an event with text came without its token ids
  std::vector<std::uint32_t> ids_;
  std::string pending_;  // bytes of an event not yet complete
  std::string text_;
  std::uint64_t events_ = 0;  // events with text (from the sent count on a new leg)
  std::optional<std::uint64_t> usage_tokens_;
  std::uint64_t tokens_before_ = 0;  // generated before the current leg
  std::optional<std::uint64_t> prompt_tokens_;
  std::string id_;  // the first stream's id
  std::string engine_error_;
  std::uint32_t continuations_ = 0;
  bool finished_ = false;
  bool done_seen_ = false;
  bool error_seen_ = false;
};

}  // namespace omni::proxy
