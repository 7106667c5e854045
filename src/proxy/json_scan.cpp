#include "json_scan.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

namespace omni::proxy::detail {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::size_t skip_space(std::string_view s, std::size_t i) {
  while (i < s.size() && is_space(s[i])) ++i;
  return i;
}

// `i` is at the opening quote; returns the index after the closing one.
std::size_t skip_string(std::string_view s, std::size_t i) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == '"') {
      return i + 1;
    }
  }
  return s.size();
}

std::size_t skip_value(std::string_view s, std::size_t i) {
  if (i >= s.size()) return i;
  if (s[i] == '"') return skip_string(s, i);
  if (s[i] == '{' || s[i] == '[') {
    int depth = 0;
    while (i < s.size()) {
      const char c = s[i];
      if (c == '"') {
        i = skip_string(s, i);
        continue;
      }
      if (c == '{' || c == '[') ++depth;
      if (c == '}' || c == ']') --depth;
      ++i;
      if (depth == 0) return i;
    }
    return i;
  }
  while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']' && !is_space(s[i])) ++i;
  return i;
}

// A key as written (quotes included) to its text; escapes are rare, so only they pay for a parse.
std::string decode_key(std::string_view raw) {
  if (raw.find('\\') == std::string_view::npos) return std::string(raw.substr(1, raw.size() - 2));
  boost::system::error_code ec;
  const boost::json::value value = boost::json::parse(raw, ec);
  return !ec && value.is_string() ? std::string(value.get_string()) : std::string();
}

}  // namespace

std::vector<JsonMember> scan_valid_object(std::string_view s) {
  std::vector<JsonMember> members;
  std::size_t i = skip_space(s, 0);
  if (i >= s.size() || s[i] != '{') return members;
  i = skip_space(s, i + 1);
  while (i < s.size() && s[i] == '"') {
    const std::size_t key_end = skip_string(s, i);
    std::string key = decode_key(s.substr(i, key_end - i));
    i = skip_space(s, key_end);
    if (i < s.size() && s[i] == ':') ++i;
    i = skip_space(s, i);
    const std::size_t value_end = skip_value(s, i);
    members.push_back({std::move(key), s.substr(i, value_end - i)});
    i = skip_space(s, value_end);
    if (i < s.size() && s[i] == ',') i = skip_space(s, i + 1);
  }
  return members;
}

}  // namespace omni::proxy::detail
