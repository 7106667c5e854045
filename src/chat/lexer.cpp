#include "lexer.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include "text.hpp"

namespace omni::chat::jinja {
namespace {

// The preprocessed source with, for every byte, the original line it came from.
struct Source {
  std::string text;
  std::vector<std::uint32_t> lines;

  void push(char c, std::uint32_t line) {
    text += c;
    lines.push_back(line);
  }
  void copy_from(const Source& other, std::size_t begin, std::size_t end) {
    text.append(other.text, begin, end - begin);
    lines.insert(lines.end(), other.lines.begin() + static_cast<std::ptrdiff_t>(begin),
                 other.lines.begin() + static_cast<std::ptrdiff_t>(end));
  }
};

Source with_lines(std::string_view source) {
  Source s;
  s.text.reserve(source.size());
  s.lines.reserve(source.size());
  std::uint32_t line = 1;
  for (char c : source) {
    s.push(c, line);
    if (c == '\n') ++line;
  }
  return s;
}

bool starts_block(std::string_view s, std::size_t pos) {
  return pos + 1 < s.size() && s[pos] == '{' &&
         (s[pos + 1] == '#' || s[pos + 1] == '%' || s[pos + 1] == '-');
}

// lstrip_blocks: /^[ \t]*({[#%-])/gm -> "$1".
Source lstrip_blocks(const Source& in) {
  Source out;
  const std::string_view s = in.text;
  bool line_start = true;
  for (std::size_t pos = 0; pos < s.size();) {
    if (line_start) {
      std::size_t end = pos;
      while (end < s.size() && (s[end] == ' ' || s[end] == '\t')) ++end;
      if (starts_block(s, end)) pos = end;
    }
    line_start = s[pos] == '\n' || s[pos] == '\r';
    out.copy_from(in, pos, pos + 1);
    ++pos;
  }
  return out;
}

// trim_blocks: /([#%-]})\n/g -> "$1".
Source trim_blocks(const Source& in) {
  Source out;
  const std::string_view s = in.text;
  for (std::size_t pos = 0; pos < s.size(); ++pos) {
    out.copy_from(in, pos, pos + 1);
    const bool closes = (s[pos] == '#' || s[pos] == '%' || s[pos] == '-') && pos + 2 < s.size() &&
                        s[pos + 1] == '}' && s[pos + 2] == '\n';
    if (closes) {
      out.copy_from(in, pos + 1, pos + 2);
      pos += 2;  // skip the '}' (copied) and the newline
    }
  }
  return out;
}

std::size_t skip_js_space(std::string_view s, std::size_t pos) {
  while (std::size_t n = js_space_at(s, pos)) pos += n;
  return pos;
}

// Matches `{%-? \s* (end)?generation \s* -?%}` at pos; returns its end (0 if no match).
std::size_t match_generation_tag(std::string_view s, std::size_t pos, bool& lstrip, bool& rstrip) {
  if (s.substr(pos, 2) != "{%") return 0;
  std::size_t p = pos + 2;
  lstrip = p < s.size() && s[p] == '-';
  if (lstrip) ++p;
  p = skip_js_space(s, p);
  if (s.substr(p, 3) == "end") p += 3;
  if (s.substr(p, 10) != "generation") return 0;
  p = skip_js_space(s, p + 10);
  rstrip = p < s.size() && s[p] == '-';
  if (rstrip) ++p;
  if (s.substr(p, 2) != "%}") return 0;
  return p + 2;
}

// Removes transformers' `{% generation %}` / `{% endgeneration %}` markers (and, with `-`,
// the whitespace around them), as @huggingface/jinja does.
Source drop_generation_tags(const Source& in) {
  const std::string_view s = in.text;
  if (s.find("generation") == std::string_view::npos) return in;
  Source out;
  std::size_t copied = 0;
  for (std::size_t pos = 0; pos < s.size(); ++pos) {
    bool lstrip = false;
    bool rstrip = false;
    const std::size_t tag_end = match_generation_tag(s, pos, lstrip, rstrip);
    if (tag_end == 0) continue;
    std::size_t ws_begin = pos;
    while (ws_begin > copied) {
      const std::size_t n = js_space_ending_at(s.substr(0, ws_begin), ws_begin);
      if (n == 0 || ws_begin - n < copied) break;
      ws_begin -= n;
    }
    const std::size_t ws_end = skip_js_space(s, tag_end);
    out.copy_from(in, copied, ws_begin);
    if (!lstrip) out.copy_from(in, ws_begin, pos);
    if (!rstrip) out.copy_from(in, tag_end, ws_end);
    copied = ws_end;
    pos = ws_end == 0 ? 0 : ws_end - 1;
  }
  out.copy_from(in, copied, s.size());
  return out;
}

Source preprocess(std::string_view source) {
  if (!source.empty() && source.back() == '\n') source.remove_suffix(1);
  return drop_generation_tags(trim_blocks(lstrip_blocks(with_lines(source))));
}

constexpr std::array<std::pair<std::string_view, TokenType>, 29> kSymbols{{
    {"{%", TokenType::kOpenStatement},  {"%}", TokenType::kCloseStatement},
    {"{{", TokenType::kOpenExpression}, {"}}", TokenType::kCloseExpression},
    {"(", TokenType::kOpenParen},       {")", TokenType::kCloseParen},
    {"{", TokenType::kOpenBrace},       {"}", TokenType::kCloseBrace},
    {"[", TokenType::kOpenBracket},     {"]", TokenType::kCloseBracket},
    {",", TokenType::kComma},           {".", TokenType::kDot},
    {":", TokenType::kColon},           {"|", TokenType::kPipe},
    {"<=", TokenType::kComparison},     {">=", TokenType::kComparison},
    {"==", TokenType::kComparison},     {"!=", TokenType::kComparison},
    {"<", TokenType::kComparison},      {">", TokenType::kComparison},
    {"+", TokenType::kAdditive},        {"-", TokenType::kAdditive},
    {"~", TokenType::kAdditive},        {"**", TokenType::kPower},
    {"*", TokenType::kMultiplicative},  {"//", TokenType::kMultiplicative},
    {"/", TokenType::kMultiplicative},  {"%", TokenType::kMultiplicative},
    {"=", TokenType::kEquals},
}};

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_word(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_';
}
int hex_value(char c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Lexer {
 public:
  explicit Lexer(Source src) : src_(std::move(src)), s_(src_.text) {}

  Result<std::vector<Token>> run() {
    while (pos_ < s_.size()) {
      Status st = step();
      if (!st.ok()) return std::move(st).error();
    }
    return std::move(tokens_);
  }

 private:
  Error error_at(std::size_t pos, const std::string& what) const {
    const std::uint32_t line =
        src_.lines.empty() ? 1 : src_.lines[std::min(pos, src_.lines.size() - 1)];
    return make_error(ErrorCode::kInvalidArgument, "line " + std::to_string(line) + ": " + what);
  }
  void push(TokenType type, std::string value, std::size_t at) {
    tokens_.push_back(Token{type, std::move(value), src_.lines[at]});
  }
  bool last_is(std::initializer_list<TokenType> types) const {
    if (tokens_.empty()) return false;
    for (TokenType t : types) {
      if (tokens_.back().type == t) return true;
    }
    return false;
  }
  bool at(std::string_view seq) const { return s_.substr(pos_, seq.size()) == seq; }
  bool at_tag_open() const {
    return pos_ + 1 < s_.size() && s_[pos_] == '{' &&
           (s_[pos_ + 1] == '%' || s_[pos_ + 1] == '{' || s_[pos_ + 1] == '#');
  }

  void strip_trailing_whitespace() {
    if (tokens_.empty() || tokens_.back().type != TokenType::kText) return;
    tokens_.back().value = std::string(js_trim_end(tokens_.back().value));
    if (tokens_.back().value.empty()) tokens_.pop_back();
  }
  void skip_leading_whitespace() { pos_ = skip_js_space(s_, pos_); }

  Status step();
  Status lex_comment();
  Status lex_sign(char sign);
  Status lex_string(char quote);
  void lex_number();
  Result<std::uint32_t> lex_escape();

  Source src_;
  std::string_view s_;
  std::size_t pos_ = 0;
  int brace_depth_ = 0;
  std::vector<Token> tokens_;
};

Status Lexer::step() {
  if (tokens_.empty() ||
      last_is({TokenType::kCloseStatement, TokenType::kCloseExpression, TokenType::kComment})) {
    const std::size_t begin = pos_;
    while (pos_ < s_.size() && !at_tag_open()) ++pos_;
    if (pos_ > begin) {
      push(TokenType::kText, std::string(s_.substr(begin, pos_ - begin)), begin);
      return {};
    }
  }
  if (at("{#")) return lex_comment();
  if (at("{%-") || at("{{-")) {
    strip_trailing_whitespace();
    const bool statement = s_[pos_ + 1] == '%';
    push(statement ? TokenType::kOpenStatement : TokenType::kOpenExpression,
         statement ? "{%" : "{{", pos_);
    if (!statement) brace_depth_ = 0;
    pos_ += 3;
    return {};
  }
  skip_leading_whitespace();
  if (pos_ >= s_.size()) return error_at(s_.size(), "unexpected end of template inside a tag");
  if (at("-%}") || at("-}}")) {
    const bool statement = s_[pos_ + 1] == '%';
    push(statement ? TokenType::kCloseStatement : TokenType::kCloseExpression,
         statement ? "%}" : "}}", pos_);
    pos_ += 3;
    skip_leading_whitespace();
    return {};
  }
  const char c = s_[pos_];
  if ((c == '-' || c == '+') &&
      !last_is({TokenType::kIdentifier, TokenType::kNumber, TokenType::kString,
                TokenType::kCloseParen, TokenType::kCloseBracket})) {
    return lex_sign(c);
  }
  for (const auto& [seq, type] : kSymbols) {
    if (seq == "}}" && brace_depth_ > 0) continue;
    if (!at(seq)) continue;
    push(type, std::string(seq), pos_);
    if (type == TokenType::kOpenExpression) brace_depth_ = 0;
    if (type == TokenType::kOpenBrace) ++brace_depth_;
    if (type == TokenType::kCloseBrace) --brace_depth_;
    pos_ += seq.size();
    return {};
  }
  if (c == '\'' || c == '"') return lex_string(c);
  if (is_digit(c)) {
    lex_number();
    return {};
  }
  if (is_word(c)) {
    const std::size_t begin = pos_;
    while (pos_ < s_.size() && is_word(s_[pos_])) ++pos_;
    push(TokenType::kIdentifier, std::string(s_.substr(begin, pos_ - begin)), begin);
    return {};
  }
  return error_at(pos_, "unexpected character '" + std::string(1, c) + "'");
}

Status Lexer::lex_comment() {
  const std::size_t begin = pos_;
  pos_ += 2;
  const bool strip_before = pos_ < s_.size() && s_[pos_] == '-';
  if (strip_before) ++pos_;
  const std::size_t end = s_.find("#}", pos_);
  if (end == std::string_view::npos)
    return error_at(begin, "comment '{#' is never closed with '#}'");
  std::string comment(s_.substr(pos_, end - pos_));
  const bool strip_after = !comment.empty() && comment.back() == '-';
  if (strip_after) comment.pop_back();
  if (strip_before) strip_trailing_whitespace();
  push(TokenType::kComment, std::move(comment), begin);
  pos_ = end + 2;
  if (strip_after) skip_leading_whitespace();
  return {};
}

Status Lexer::lex_sign(char sign) {
  if (tokens_.empty() || last_is({TokenType::kText})) {
    return error_at(pos_, std::string("unexpected character '") + sign + "'");
  }
  const std::size_t begin = pos_++;
  std::string num;
  while (pos_ < s_.size() && is_digit(s_[pos_])) num += s_[pos_++];
  if (!num.empty() && pos_ + 1 < s_.size() && s_[pos_] == '.' && is_digit(s_[pos_ + 1])) {
    num += s_[pos_++];
    while (pos_ < s_.size() && is_digit(s_[pos_])) num += s_[pos_++];
  }
  if (num.empty()) {
    push(TokenType::kUnary, std::string(1, sign), begin);
  } else {
    push(TokenType::kNumber, sign + num, begin);
  }
  return {};
}

void Lexer::lex_number() {
  const std::size_t begin = pos_;
  while (pos_ < s_.size() && is_digit(s_[pos_])) ++pos_;
  if (!last_is({TokenType::kDot}) && pos_ + 1 < s_.size() && s_[pos_] == '.' &&
      is_digit(s_[pos_ + 1])) {
    ++pos_;
    while (pos_ < s_.size() && is_digit(s_[pos_])) ++pos_;
  }
  push(TokenType::kNumber, std::string(s_.substr(begin, pos_ - begin)), begin);
}

// After a backslash: \n \t \r \b \f \v \' \" \\ \xHH \uHHHH. Returns the code unit.
Result<std::uint32_t> Lexer::lex_escape() {
  if (pos_ >= s_.size()) return error_at(pos_, "unexpected end of template in a string escape");
  const char e = s_[pos_++];
  if (e == 'x' || e == 'u') {
    const std::size_t len = e == 'x' ? 2 : 4;
    std::uint32_t unit = 0;
    for (std::size_t i = 0; i < len; ++i) {
      const int h = pos_ + i < s_.size() ? hex_value(s_[pos_ + i]) : -1;
      if (h < 0) return error_at(pos_, std::string("invalid hexadecimal escape \\") + e);
      unit = unit * 16 + static_cast<std::uint32_t>(h);
    }
    pos_ += len;
    return unit;
  }
  switch (e) {
    case 'n': return std::uint32_t{'\n'};
    case 't': return std::uint32_t{'\t'};
    case 'r': return std::uint32_t{'\r'};
    case 'b': return std::uint32_t{'\b'};
    case 'f': return std::uint32_t{'\f'};
    case 'v': return std::uint32_t{'\v'};
    case '\'': return std::uint32_t{'\''};
    case '"': return std::uint32_t{'"'};
    case '\\': return std::uint32_t{'\\'};
    default: return error_at(pos_ - 1, std::string("unsupported escape \\") + e + " in a string");
  }
}

Status Lexer::lex_string(char quote) {
  const std::size_t begin = pos_++;
  std::string value;
  std::uint32_t pending_high = 0;  // a \uD8xx waiting for its low surrogate
  auto flush_high = [&] {
    if (pending_high != 0) append_utf8(value, 0xFFFD);
    pending_high = 0;
  };
  while (true) {
    if (pos_ >= s_.size()) return error_at(begin, "string literal is never closed");
    const char c = s_[pos_];
    if (c == quote) break;
    if (c != '\\') {
      flush_high();
      value += c;
      ++pos_;
      continue;
    }
    ++pos_;
    auto unit = lex_escape();
    if (!unit.ok()) return std::move(unit).error();
    const std::uint32_t u = *unit;
    if (u >= 0xD800 && u <= 0xDBFF) {
      flush_high();
      pending_high = u;
    } else if (u >= 0xDC00 && u <= 0xDFFF && pending_high != 0) {
      append_utf8(value, 0x10000 + ((pending_high - 0xD800) << 10) + (u - 0xDC00));
      pending_high = 0;
    } else {
      flush_high();
      append_utf8(value, (u >= 0xD800 && u <= 0xDFFF) ? 0xFFFD : u);
    }
  }
  flush_high();
  ++pos_;  // the closing quote
  push(TokenType::kString, std::move(value), begin);
  return {};
}

}  // namespace

std::string_view token_type_name(TokenType type) {
  switch (type) {
    case TokenType::kText: return "text";
    case TokenType::kNumber: return "number";
    case TokenType::kString: return "string";
    case TokenType::kIdentifier: return "identifier";
    case TokenType::kEquals: return "'='";
    case TokenType::kOpenParen: return "'('";
    case TokenType::kCloseParen: return "')'";
    case TokenType::kOpenStatement: return "'{%'";
    case TokenType::kCloseStatement: return "'%}'";
    case TokenType::kOpenExpression: return "'{{'";
    case TokenType::kCloseExpression: return "'}}'";
    case TokenType::kOpenBracket: return "'['";
    case TokenType::kCloseBracket: return "']'";
    case TokenType::kOpenBrace: return "'{'";
    case TokenType::kCloseBrace: return "'}'";
    case TokenType::kComma: return "','";
    case TokenType::kDot: return "'.'";
    case TokenType::kColon: return "':'";
    case TokenType::kPipe: return "'|'";
    case TokenType::kAdditive: return "additive operator";
    case TokenType::kMultiplicative: return "multiplicative operator";
    case TokenType::kPower: return "'**'";
    case TokenType::kComparison: return "comparison operator";
    case TokenType::kUnary: return "sign";
    case TokenType::kComment: return "comment";
  }
  return "token";
}

Result<std::vector<Token>> tokenize(std::string_view source) {
  return Lexer(preprocess(source)).run();
}

}  // namespace omni::chat::jinja
