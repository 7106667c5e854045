#include "serve/text_stream.hpp"

#include <algorithm>

namespace omni::serve {
namespace {

// vLLM's INITIAL_INCREMENTAL_DETOKENIZATION_OFFSET: prompt tokens the first decode window keeps.
constexpr std::size_t kInitialOffset = 5;

// The decoded text ends inside a character: a replacement character (a tokenizer decoding
// partial bytes) or a UTF-8 lead byte whose continuation bytes are still to come.
bool ends_incomplete(const std::string& s) {
  if (s.size() >= 3 && s.compare(s.size() - 3, 3, "\xEF\xBF\xBD") == 0) return true;
  for (std::size_t back = 1; back <= 3 && back <= s.size(); ++back) {
    const auto c = static_cast<unsigned char>(s[s.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    const std::size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return need > back;
  }
  return false;
}

std::size_t utf8_floor(const std::string& s, std::size_t at) {
  while (at > 0 && at < s.size() && (static_cast<unsigned char>(s[at]) & 0xC0) == 0x80) --at;
  return at;
}

}  // namespace

std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t need = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
    if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    if (c >= 0xC2 && c <= 0xDF) {
      need = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      need = 2;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      need = 3;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    }
    std::size_t j = i + 1;
    for (std::size_t k = 0; k < need && j < s.size(); ++k, ++j) {
      const auto b = static_cast<unsigned char>(s[j]);
      if (b < (k == 0 ? lo : 0x80) || b > (k == 0 ? hi : 0xBF)) break;
    }
    if (need > 0 && j == i + 1 + need) {
      out.append(s.substr(i, need + 1));
    } else {
      out += "\xEF\xBF\xBD";
      j = std::max(j, i + 1);
    }
    i = j;
  }
  return out;
}

TextStream::TextStream(const sim::TextCodec& codec, StopRules rules,
                       std::span<const std::uint32_t> prompt)
    : codec_(codec), rules_(std::move(rules)) {
  std::erase_if(rules_.stop, [](const std::string& s) { return s.empty(); });
  if (!rules_.stop.empty() && !rules_.include_stop_str_in_output) {
    std::size_t longest = 0;
    for (const auto& s : rules_.stop) longest = std::max(longest, s.size());
    hold_ = longest - 1;
  }
  const std::size_t keep = std::min(prompt.size(), kInitialOffset);
  window_.assign(prompt.end() - static_cast<std::ptrdiff_t>(keep), prompt.end());
  prefix_offset_ = 0;
  read_offset_ = keep;
}

void TextStream::decode_new() {
  const std::span<const std::uint32_t> all(window_);
  const std::string prefix =
      codec_.decode(all.subspan(prefix_offset_, read_offset_ - prefix_offset_));
  const std::string full = codec_.decode(all.subspan(prefix_offset_));
  if (full.size() <= prefix.size() || ends_incomplete(full)) return;  // nothing complete yet
  text_ += valid_utf8(std::string_view(full).substr(prefix.size()));
  prefix_offset_ = read_offset_;
  read_offset_ = window_.size();
}

// vLLM's check_stop_strings over the text the last token added: the first stop string (in the
// request's order) found wins.
bool TextStream::check_stop_strings(std::size_t new_bytes) {
  for (const std::string& stop : rules_.stop) {
    const std::size_t from =
        text_.size() > new_bytes + stop.size() ? text_.size() - new_bytes - stop.size() + 1 : 0;
    const std::size_t at = text_.find(stop, from);
    if (at == std::string::npos) continue;
    text_.resize(rules_.include_stop_str_in_output ? at + stop.size() : at);
    stop_reason_ = "\"" + stop + "\"";
    for (std::size_t i = 1; i + 1 < stop_reason_.size(); ++i) {
      const char ch = stop_reason_[i];
      if (ch == '"' || ch == '\\') stop_reason_.insert(i++, 1, '\\');
    }
    return true;
  }
  return false;
}

Finish TextStream::push(std::uint32_t token) {
  if (finish_ != Finish::kNone) return finish_;
  tokens_.push_back(token);
  const auto n = static_cast<std::uint32_t>(tokens_.size());
  const bool checked = n > rules_.min_tokens;
  // The engine's checks first (vLLM's check_stop): length, EOS, stop token ids.
  Finish engine_finish = Finish::kNone;
  bool stop_token = false;
  if (n >= rules_.max_tokens) {
    engine_finish = Finish::kLength;
  } else if (checked && !rules_.ignore_eos && rules_.eos && token == *rules_.eos) {
    engine_finish = Finish::kStop;
    stop_token = true;
  } else if (checked && std::find(rules_.stop_token_ids.begin(), rules_.stop_token_ids.end(),
                                  token) != rules_.stop_token_ids.end()) {
    engine_finish = Finish::kStop;
    stop_token = true;
    stop_reason_ = std::to_string(token);
  }
  // A stop token's own text is not shown (unless include_stop_str_in_output).
  const std::size_t before = text_.size();
  window_.push_back(token);
  if (!stop_token || rules_.include_stop_str_in_output) decode_new();
  if (checked && !rules_.stop.empty() && check_stop_strings(text_.size() - before)) {
    finish_ = Finish::kStop;
    return finish_;
  }
  finish_ = engine_finish;
  if (finish_ == Finish::kLength) stop_reason_ = "null";
  return finish_;
}

std::size_t TextStream::shown() const noexcept {
  if (finish_ != Finish::kNone || hold_ == 0) return text_.size();
  if (text_.size() <= hold_) return 0;
  return utf8_floor(text_, text_.size() - hold_);
}

std::string TextStream::token_text(std::uint32_t token) const {
  return valid_utf8(codec_.token_text(token));
}

}  // namespace omni::serve
