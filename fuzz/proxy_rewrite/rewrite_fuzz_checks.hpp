// The properties fuzz_proxy_rewrite checks on each input, shared with the unit test that
// replays the corpus. Header-only so that both compile it with their own flags.
//
// For any input: inspect_request and the rewrites either fail cleanly or produce a valid JSON
// object; a rewritten body keeps every member the rewrite does not own, byte for byte; the
// prefill leg always has stream false and max_tokens 1.
#pragma once

#include <string>
#include <string_view>

#include "omni/proxy/rewrite.hpp"

namespace omni::proxy::fuzz {

inline const JsonMember* find_member(const std::vector<JsonMember>& members, std::string_view key) {
  for (const auto& m : members) {
    if (m.key == key) return &m;
  }
  return nullptr;
}

// An empty string when every property holds, else what broke.
inline std::string check_rewrites(std::string_view input) {
  (void)inspect_request(input, Api::kCompletions);
  (void)inspect_request(input, Api::kChatCompletions);
  (void)kv_transfer_params_of(input);
  auto original = scan_object(input);
  auto prefill = prefill_body(input);
  if (original.ok() != prefill.ok()) return "prefill_body disagrees with scan_object on validity";
  if (!original.ok()) return {};
  auto rescanned = scan_object(*prefill);
  if (!rescanned.ok()) return "prefill body is not a JSON object: " + *prefill;
  const JsonMember* stream = find_member(*rescanned, "stream");
  const JsonMember* max_tokens = find_member(*rescanned, "max_tokens");
  if (!stream || stream->value != "false") return "prefill body streams";
  if (!max_tokens || max_tokens->value != "1") return "prefill body max_tokens is not 1";
  if (find_member(*rescanned, "stream_options")) return "prefill body kept stream_options";
  for (const JsonMember& m : *original) {
    static const std::string_view owned[] = {"stream",
                                             "max_tokens",
                                             "stream_options",
                                             "min_tokens",
                                             "min_completion_tokens",
                                             "kv_transfer_params",
                                             "max_completion_tokens"};
    bool is_owned = false;
    for (auto key : owned) is_owned = is_owned || m.key == key;
    if (is_owned) continue;
    const JsonMember* kept = find_member(*rescanned, m.key);
    if (!kept) return "prefill body lost member " + m.key;
    // With duplicate keys the first occurrence is kept.
    if (find_member(*original, m.key) == &m && kept->value != m.value) {
      return "prefill body changed member " + m.key;
    }
  }
  const std::string params = R"({"remote_host":"h"})";
  auto decode = decode_body(input, params);
  if (!decode.ok()) return "decode_body failed on a valid object";
  auto decoded = scan_object(*decode);
  if (!decoded.ok()) return "decode body is not a JSON object";
  const JsonMember* kv = find_member(*decoded, "kv_transfer_params");
  if (!kv || kv->value != params) return "decode body lost the kv_transfer_params";
  auto boot = bootstrap_body(input, Bootstrap{"127.0.0.1", 8998, 7});
  if (!boot.ok() || !scan_object(*boot).ok()) return "bootstrap body is not a JSON object";
  return {};
}

}  // namespace omni::proxy::fuzz
