// RequestSpec and Workload: what a load generator or a simulator replays.
//
// A workload is a lazy, arrival-ordered stream of requests. A request does not carry its
// prompt tokens; it carries its length and one id per 512-token block (`hash_ids`). Block `h`
// always stands for the same 512 token ids (omni/workload/prompt.hpp derives them), so two
// requests whose hash_ids share a first k entries share their first k*512 prompt tokens. A
// simulator hashes blocks straight from the ids; omni-bench materialises tokens when it sends.
//
//   trace line / synthetic draw ──► RequestSpec{arrival_s, input_tokens, hash_ids, ...}
//                                          │
//                      omni-bench: prompt_tokens() ──► /v1/completions
//                      omni-cluster: hash_ids ──► prefix index, virtual time
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "omni/common/result.hpp"

namespace omni::workload {

// Tokens per hash id, as in the Mooncake trace release.
inline constexpr std::uint32_t kBlockTokens = 512;

// Ids the workloads invent themselves (synthetic prompts, Azure rows, Mooncake lines whose
// ids do not cover their length) start here, far above any id a trace file uses.
inline constexpr std::uint64_t kGeneratedIdBase = std::uint64_t{1} << 62;

// Position of a request inside a multi-turn conversation.
struct SessionInfo {
  std::uint64_t session_id = 0;
  std::uint32_t turn = 0;   // 0-based
  std::uint32_t turns = 1;  // turns in the whole session
  friend bool operator==(const SessionInfo&, const SessionInfo&) = default;
};

struct RequestSpec {
  std::uint64_t index = 0;  // 0-based position in the workload, in arrival order
  double arrival_s = 0.0;   // seconds since the workload's first arrival
  std::uint32_t input_tokens = 0;
  std::uint32_t max_output_tokens = 0;
  // Exactly ceil(input_tokens / 512) ids; the last block is partial when input_tokens is not
  // a multiple of 512.
  std::vector<std::uint64_t> hash_ids;
  std::optional<SessionInfo> session;
  friend bool operator==(const RequestSpec&, const RequestSpec&) = default;
};

// Blocks needed for `tokens` prompt tokens.
constexpr std::size_t blocks_for(std::uint32_t tokens) noexcept {
  return (std::size_t{tokens} + kBlockTokens - 1) / kBlockTokens;
}

// A lazy stream of requests in non-decreasing arrival order. Memory stays proportional to the
// work in flight (open sessions, one line of a file), never to the length of the trace.
// Threading: one consumer; not thread-safe.
class Workload {
 public:
  virtual ~Workload() = default;
  // The next request; std::nullopt at the end. An error (a malformed trace line, with its
  // line number) ends the stream.
  virtual Result<std::optional<RequestSpec>> next() = 0;
};

}  // namespace omni::workload
