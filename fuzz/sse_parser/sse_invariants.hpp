// Invariants of SseParser on arbitrary input, shared by the libFuzzer target and the corpus
// regression test (tests/common/http/sse_fuzz_corpus_test.cpp).
//
//   1. Any split of the input gives the same events and the same outcome as feeding it whole.
//   2. An event's data never holds a CR; event names and ids never hold CR or LF; ids no NUL.
//   3. Events never hold more bytes than the input did.
//   4. format_sse() of every event parses back to exactly that event.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "omni/http/sse.hpp"

namespace omni::http::fuzzing {

inline constexpr std::size_t kFuzzMaxEventBytes = 4096;

struct ParseOutcome {
  std::vector<SseEvent> events;
  bool ok = true;
  bool unterminated = false;
};

// Feeds `input` in pieces of at most `piece` bytes (0: whole), stopping at the first error.
inline ParseOutcome parse_in_pieces(std::string_view input, std::size_t piece) {
  SseParser parser(kFuzzMaxEventBytes);
  ParseOutcome outcome;
  if (piece == 0) piece = input.size() + 1;
  for (std::size_t at = 0; at < input.size() && outcome.ok; at += piece) {
    outcome.ok = parser.feed(input.substr(at, piece), outcome.events).ok();
  }
  if (outcome.ok) outcome.unterminated = parser.finish();
  return outcome;
}

// The first broken invariant, described; empty when all hold.
inline std::string check_sse_invariants(std::string_view input) {
  const ParseOutcome whole = parse_in_pieces(input, 0);
  for (std::size_t piece :
       {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{7}, std::size_t{64}}) {
    const ParseOutcome split = parse_in_pieces(input, piece);
    if (split.ok != whole.ok || split.events != whole.events ||
        split.unterminated != whole.unterminated) {
      return "pieces of " + std::to_string(piece) + " bytes parse differently from the whole";
    }
  }
  std::size_t total = 0;
  for (const SseEvent& event : whole.events) {
    if (event.data.find('\r') != std::string::npos) return "data holds a CR";
    if (event.event.find_first_of("\r\n") != std::string::npos)
      return "event type holds a line break";
    if (event.id.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
      return "id holds CR, LF or NUL";
    }
    total += event.data.size() + event.event.size() + event.id.size();
    SseParser again;
    std::vector<SseEvent> reparsed;
    if (!again.feed(format_sse(event), reparsed).ok() || reparsed.size() != 1 ||
        reparsed[0] != event) {
      return "format_sse does not round-trip an event";
    }
  }
  if (total > input.size()) return "events hold more bytes than the input";
  return {};
}

}  // namespace omni::http::fuzzing
