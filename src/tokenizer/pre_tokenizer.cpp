#include "pre_tokenizer.hpp"

#include <unicode/uchar.h>

#include "utf8.hpp"

namespace omni::tokenizer {
namespace {

// GPT-2's pre-tokenization regex, used by ByteLevel when use_regex is set.
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

struct Span {
  std::uint32_t begin;
  std::uint32_t end;
  bool match;
};

// Applies a delimiter behaviour to the alternating match / non-match spans of one piece.
void emit_with_behavior(const std::vector<Span>& spans, SplitBehavior behavior,
                        std::vector<Piece>& out) {
  std::size_t pending_begin = 0;
  bool pending = false;  // for MergedWithNext: a match waiting for what follows
  for (std::size_t i = 0; i < spans.size(); ++i) {
    const Span& s = spans[i];
    switch (behavior) {
      case SplitBehavior::kRemoved:
        if (!s.match) out.push_back({s.begin, s.end});
        break;
      case SplitBehavior::kIsolated: out.push_back({s.begin, s.end}); break;
      case SplitBehavior::kMergedWithPrevious:
        if (s.match && !out.empty() && i > 0 && !spans[i - 1].match) {
          out.back().end = s.end;
        } else {
          out.push_back({s.begin, s.end});
        }
        break;
      case SplitBehavior::kMergedWithNext:
        if (s.match) {
          if (pending) out.push_back({static_cast<std::uint32_t>(pending_begin), spans[i - 1].end});
          pending = true;
          pending_begin = s.begin;
        } else {
          out.push_back({pending ? static_cast<std::uint32_t>(pending_begin) : s.begin, s.end});
          pending = false;
        }
        break;
      case SplitBehavior::kContiguous:
        if (s.match && i > 0 && spans[i - 1].match && !out.empty()) {
          out.back().end = s.end;
        } else {
          out.push_back({s.begin, s.end});
        }
        break;
    }
  }
  if (pending) out.push_back({static_cast<std::uint32_t>(pending_begin), spans.back().end});
}

class SplitPreTokenizer final : public PreTokenizer {
 public:
  SplitPreTokenizer(Regex regex, SplitBehavior behavior, bool invert)
      : regex_(std::move(regex)), behavior_(behavior), invert_(invert) {}

  Status split(std::string_view text, const std::vector<Piece>& in, std::vector<Piece>& out,
               RegexScratch& scratch) const override {
    std::vector<Span> spans;
    for (const Piece& piece : in) {
      spans.clear();
      if (auto st = find_spans(text.substr(piece.begin, piece.end - piece.begin), piece.begin,
                               spans, scratch);
          !st.ok()) {
        return st;
      }
      emit_with_behavior(spans, behavior_, out);
    }
    return {};
  }

 private:
  Status find_spans(std::string_view piece, std::uint32_t base, std::vector<Span>& spans,
                    RegexScratch& scratch) const {
    std::size_t pos = 0;
    std::size_t prev = 0;
    while (pos <= piece.size()) {
      std::size_t b = 0;
      std::size_t e = 0;
      auto found = regex_.find(piece, pos, scratch, b, e);
      if (!found.ok()) return std::move(found).error();
      if (!*found) break;
      if (e == b) {  // an empty match cuts nothing; step over one character
        if (b >= piece.size()) break;
        char32_t cp = 0;
        pos = b + utf8::decode_valid(piece, b, cp);
        continue;
      }
      if (b > prev)
        spans.push_back({base + static_cast<std::uint32_t>(prev),
                         base + static_cast<std::uint32_t>(b), invert_});
      spans.push_back(
          {base + static_cast<std::uint32_t>(b), base + static_cast<std::uint32_t>(e), !invert_});
      prev = e;
      pos = e;
    }
    if (prev < piece.size()) {
      spans.push_back({base + static_cast<std::uint32_t>(prev),
                       base + static_cast<std::uint32_t>(piece.size()), invert_});
    }
    return {};
  }

  Regex regex_;
  SplitBehavior behavior_;
  bool invert_;
};

class ByteLevelPreTokenizer final : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, std::unique_ptr<PreTokenizer> regex_split)
      : add_prefix_space_(add_prefix_space), regex_split_(std::move(regex_split)) {}
  Status split(std::string_view text, const std::vector<Piece>& in, std::vector<Piece>& out,
               RegexScratch& scratch) const override {
    if (regex_split_) return regex_split_->split(text, in, out, scratch);
    out.insert(out.end(), in.begin(), in.end());
    return {};
  }
  bool prefix_space() const override { return add_prefix_space_; }
  bool byte_level() const override { return true; }

 private:
  bool add_prefix_space_;
  std::unique_ptr<PreTokenizer> regex_split_;
};

bool is_numeric(char32_t cp) {
  const auto type = u_charType(static_cast<UChar32>(cp));
  return type == U_DECIMAL_DIGIT_NUMBER || type == U_LETTER_NUMBER || type == U_OTHER_NUMBER;
}

class DigitsPreTokenizer final : public PreTokenizer {
 public:
  explicit DigitsPreTokenizer(bool individual) : individual_(individual) {}
  Status split(std::string_view text, const std::vector<Piece>& in, std::vector<Piece>& out,
               RegexScratch&) const override {
    std::vector<Span> spans;
    for (const Piece& piece : in) {
      spans.clear();
      std::uint32_t i = piece.begin;
      while (i < piece.end) {
        char32_t cp = 0;
        const auto n = static_cast<std::uint32_t>(utf8::decode_valid(text, i, cp));
        spans.push_back({i, i + n, is_numeric(cp)});
        i += n;
      }
      // Non-digits are merged back into runs; digits alone or in runs.
      std::vector<Span> merged;
      for (const Span& s : spans) {
        if (!merged.empty() && merged.back().match == s.match && (!s.match || !individual_)) {
          merged.back().end = s.end;
        } else {
          merged.push_back(s);
        }
      }
      emit_with_behavior(merged, SplitBehavior::kIsolated, out);
    }
    return {};
  }

 private:
  bool individual_;
};

class SequencePreTokenizer final : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> parts)
      : parts_(std::move(parts)) {}
  Status split(std::string_view text, const std::vector<Piece>& in, std::vector<Piece>& out,
               RegexScratch& scratch) const override {
    std::vector<Piece> current = in;
    std::vector<Piece> next;
    for (const auto& part : parts_) {
      next.clear();
      if (auto st = part->split(text, current, next, scratch); !st.ok()) return st;
      current.swap(next);
    }
    out.insert(out.end(), current.begin(), current.end());
    return {};
  }
  bool prefix_space() const override { return !parts_.empty() && parts_.front()->prefix_space(); }
  bool byte_level() const override {
    for (const auto& part : parts_) {
      if (part->byte_level()) return true;
    }
    return false;
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

}  // namespace

Result<std::unique_ptr<PreTokenizer>> make_split(std::string_view pattern, bool literal,
                                                 SplitBehavior behavior, bool invert) {
  auto regex = Regex::compile(pattern, literal);
  if (!regex.ok()) return std::move(regex).error();
  return std::unique_ptr<PreTokenizer>(
      std::make_unique<SplitPreTokenizer>(std::move(*regex), behavior, invert));
}

Result<std::unique_ptr<PreTokenizer>> make_byte_level_pre_tokenizer(bool add_prefix_space,
                                                                    bool use_regex) {
  std::unique_ptr<PreTokenizer> regex_split;
  if (use_regex) {
    auto split = make_split(kGpt2Pattern, false, SplitBehavior::kIsolated, false);
    if (!split.ok()) return std::move(split).error();
    regex_split = std::move(*split);
  }
  return std::unique_ptr<PreTokenizer>(
      std::make_unique<ByteLevelPreTokenizer>(add_prefix_space, std::move(regex_split)));
}

std::unique_ptr<PreTokenizer> make_digits(bool individual_digits) {
  return std::make_unique<DigitsPreTokenizer>(individual_digits);
}

Result<std::unique_ptr<PreTokenizer>> make_whitespace(bool split_only) {
  if (split_only) return make_split(R"(\s+)", false, SplitBehavior::kRemoved, false);
  return make_split(R"(\w+|[^\w\s]+)", false, SplitBehavior::kRemoved, true);
}

std::unique_ptr<PreTokenizer> make_sequence_pre_tokenizer(
    std::vector<std::unique_ptr<PreTokenizer>> parts) {
  return std::make_unique<SequencePreTokenizer>(std::move(parts));
}

}  // namespace omni::tokenizer
