#include "regex.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace omni::tokenizer {

struct Regex::Code {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Code() { pcre2_code_free(code); }
};

struct RegexScratch::State {
  pcre2_match_data* data = nullptr;
  pcre2_jit_stack* stack = nullptr;
  pcre2_match_context* context = nullptr;
  State() {
    data = pcre2_match_data_create(4, nullptr);
    context = pcre2_match_context_create(nullptr);
    // Backtracking over a long run needs more than the default 32 KiB of JIT stack.
    stack = pcre2_jit_stack_create(32 * 1024, 64 * 1024 * 1024, nullptr);
    pcre2_jit_stack_assign(context, nullptr, stack);
    // The interpreter, used when even that is exhausted, keeps its backtracking frames on the
    // heap: allow up to 1 GiB for a pathological 10 MB run (the limit is in KiB).
    pcre2_set_heap_limit(context, 1u << 20);
    // Backtracking steps: "\s*[\r\n]+" backtracks once per byte of a whitespace run before an
    // alternative matches; the default (10 million) would refuse a 10 MB run of spaces.
    pcre2_set_match_limit(context, 1u << 30);
  }
  ~State() {
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(stack);
    pcre2_match_data_free(data);
  }
};

RegexScratch::RegexScratch() : state_(std::make_unique<State>()) {}
RegexScratch::~RegexScratch() = default;

namespace {

// Oniguruma's \s (Ruby syntax, Unicode) also matches U+0085 NEXT LINE, which PCRE2's \s does not.
constexpr std::string_view kSpaceClassBody = "\\s\\x{85}";

std::string escape_literal(std::string_view text) {
  std::string out = "\\Q";
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text.substr(i, 2) == "\\E") {
      out += "\\E\\\\E\\Q";
      ++i;
    } else {
      out.push_back(text[i]);
    }
  }
  out += "\\E";
  return out;
}

}  // namespace

std::string translate_pattern(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 16);
  int class_depth = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char n = p[i + 1];
      ++i;
      if (n == 's') {
        out += class_depth > 0 ? std::string(kSpaceClassBody)
                               : "[" + std::string(kSpaceClassBody) + "]";
      } else if (n == 'S' && class_depth == 0) {
        out += "[^" + std::string(kSpaceClassBody) + "]";
      } else {
        out.push_back('\\');
        out.push_back(n);
      }
      continue;
    }
    if (c == '[') {
      ++class_depth;
      out.push_back(c);
      // A ']' right after '[' or '[^' is a literal member.
      if (i + 1 < p.size() && p[i + 1] == '^') out.push_back(p[++i]);
      if (i + 1 < p.size() && p[i + 1] == ']') out.push_back(p[++i]);
      continue;
    }
    if (c == ']' && class_depth > 0) --class_depth;
    out.push_back(c);
  }
  return out;
}

Result<Regex> Regex::compile(std::string_view pattern, bool literal) {
  const std::string source = literal ? escape_literal(pattern) : translate_pattern(pattern);
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(source.data()), source.size(),
                                   PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof message);
    return make_error(ErrorCode::kInvalidArgument,
                      "Split regex '" + std::string(pattern) + "' does not compile at offset " +
                          std::to_string(offset) + ": " + reinterpret_cast<const char*>(message));
  }
  Regex regex;
  regex.code_ = std::make_shared<Code>();
  regex.code_->code = code;
  regex.code_->jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  regex.pattern_ = std::string(pattern);
  return regex;
}

Result<bool> Regex::find(std::string_view text, std::size_t from, RegexScratch& scratch,
                         std::size_t& begin, std::size_t& end) const {
  auto& st = *scratch.state_;
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  int rc = code_->jit
               ? pcre2_jit_match(code_->code, subject, text.size(), from, 0, st.data, st.context)
               : PCRE2_ERROR_JIT_STACKLIMIT;
  if (rc ==
      PCRE2_ERROR_JIT_STACKLIMIT) {  // a pathological run: the interpreter (heap frames) copes
    rc = pcre2_match(code_->code, subject, text.size(), from, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT,
                     st.data, st.context);
  }
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  if (rc < 0) {
    return make_error(ErrorCode::kResourceExhausted,
                      "pre-tokenizer regex failed with PCRE2 error " + std::to_string(rc));
  }
  const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(st.data);
  begin = ov[0];
  end = ov[1];
  return true;
}

}  // namespace omni::tokenizer
