// The properties fuzz_proxy_migration checks on each input, shared with the unit test that
// replays the corpus. Header-only so that both compile it with their own flags.
//
// An input is an engine's SSE bytes (what a decode stream may send, valid or not). For any
// input: StreamSplice never crashes; what it relays does not depend on how the bytes were cut
// into pieces; a continuation's relayed chunks all carry the first stream's id and never an
// error event. A request body (the input read as one) gives a continuation that is valid JSON
// or a clean error.
#pragma once

#include <boost/json.hpp>
#include <string>
#include <string_view>

#include "omni/proxy/migration.hpp"

namespace omni::proxy::fuzz {

// Feeds `bytes` in pieces of `step` bytes (0: one piece); the relayed bytes.
inline std::string splice_all(std::string_view bytes, std::size_t step, StreamSplice& splice) {
  std::string out;
  if (step == 0) step = bytes.size() + 1;
  for (std::size_t at = 0; at < bytes.size(); at += step) {
    StreamSplice::Fed fed = splice.feed(bytes.substr(at, step));
    out += fed.out;
    if (fed.engine_error) break;
  }
  return out;
}

// Every data event of `relayed` that is a JSON object: no "error" member, and its "id" (if any)
// is `id`. Empty when that holds, else what broke.
inline std::string check_continuation(std::string_view relayed, std::string_view id) {
  std::size_t at = 0;
  while (at < relayed.size()) {
    std::size_t end = relayed.find("\n\n", at);
    if (end == std::string_view::npos) end = relayed.size();
    std::string_view event = relayed.substr(at, end - at);
    at = end + 2;
    if (event.substr(0, 6) != "data: ") continue;
    boost::system::error_code ec;
    boost::json::value v = boost::json::parse(event.substr(6), ec);
    if (ec || !v.is_object()) continue;
    const boost::json::object& o = v.as_object();
    if (o.contains("error") && !o.contains("choices"))
      return "a continuation relayed an error event";
    const boost::json::value* got = o.if_contains("id");
    if (got && got->is_string() && !id.empty() && got->as_string() != id) {
      return "a continuation relayed another stream's id";
    }
  }
  return "";
}

inline std::string check_migration(std::string_view input) {
  // Cutting the bytes differently never changes what is relayed.
  StreamSplice whole(64);
  StreamSplice bytewise(64);
  StreamSplice sevens(64);
  const std::string a = splice_all(input, 0, whole);
  if (a != splice_all(input, 1, bytewise)) return "byte-by-byte feeding relays other bytes";
  if (a != splice_all(input, 7, sevens)) return "7-byte pieces relay other bytes";
  if (whole.text() != bytewise.text()) return "the sent text depends on the pieces";
  // The same bytes as a continuation's, after a first stream with a known id.
  StreamSplice continued;
  (void)continued.feed("data: {\"id\":\"first\",\"choices\":[{\"index\":0,\"text\":\"a\"}]}\n\n");
  continued.continue_elsewhere(continued.tokens(), 5);
  const std::string c = splice_all(input, 0, continued);
  if (std::string failure = check_continuation(c, "first"); !failure.empty()) return failure;
  // The input as a request body.
  auto members = scan_object(input);
  if (members.ok()) {
    for (const Api api : {Api::kCompletions, Api::kChatCompletions}) {
      (void)migration_blocker(*members, api);
      SentSoFar sent{"x\"y", 3, std::vector<std::uint32_t>{1, 2}};
      auto body = continuation_body(*members, api, sent);
      if (!body.ok()) continue;
      boost::system::error_code ec;
      (void)boost::json::parse(*body, ec);
      if (ec) return "a continuation body is not valid JSON";
    }
  }
  return "";
}

}  // namespace omni::proxy::fuzz
