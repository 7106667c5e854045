// A PCRE2 regex compiled with JIT, for the Split pre-tokenizer. Hugging Face compiles these
// patterns with Oniguruma; the few places where PCRE2 reads a pattern differently are rewritten
// at compile time (see translate_pattern in regex.cpp).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "omni/common/result.hpp"

namespace omni::tokenizer {

class RegexScratch;

class Regex {
 public:
  // `pattern` is a regex in Oniguruma syntax, or a literal string when `literal` is set.
  static Result<Regex> compile(std::string_view pattern, bool literal);

  // The next match in `text` at or after `from`: true and [begin, end) set, or false.
  // `text` must be valid UTF-8. A match failure other than "no match" (the JIT stack limit on a
  // pathological input) is reported as an error value.
  Result<bool> find(std::string_view text, std::size_t from, RegexScratch& scratch,
                    std::size_t& begin, std::size_t& end) const;

  const std::string& pattern() const noexcept { return pattern_; }

 private:
  struct Code;
  std::shared_ptr<Code> code_;
  std::string pattern_;
};

// Per-thread matching state (match data and JIT stack); never shared between threads.
class RegexScratch {
 public:
  RegexScratch();
  ~RegexScratch();
  RegexScratch(const RegexScratch&) = delete;
  RegexScratch& operator=(const RegexScratch&) = delete;

 private:
  friend class Regex;
  struct State;
  std::unique_ptr<State> state_;
};

// Exposed for tests: the PCRE2 spelling of an Oniguruma pattern.
std::string translate_pattern(std::string_view onig_pattern);

}  // namespace omni::tokenizer
