#include "normalizer.hpp"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include "utf8.hpp"

namespace omni::tokenizer {
namespace {

bool all_ascii(std::string_view text) {
  for (char c : text) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

class UnicodeNormalizer final : public Normalizer {
 public:
  UnicodeNormalizer(const icu::Normalizer2* n, bool compatibility)
      : n_(n), compatibility_(compatibility) {}
  bool apply(std::string_view text, std::string& out) const override {
    // ASCII is invariant under every form; most prompts are.
    if (all_ascii(text)) return false;
    UErrorCode status = U_ZERO_ERROR;
    const icu::StringPiece piece(text.data(), static_cast<int32_t>(text.size()));
    if (n_->isNormalizedUTF8(piece, status) && U_SUCCESS(status)) return false;
    status = U_ZERO_ERROR;
    std::string result;
    icu::StringByteSink<std::string> sink(&result, static_cast<int32_t>(text.size()));
    n_->normalizeUTF8(0, piece, sink, nullptr, status);
    if (U_FAILURE(status)) return false;
    out = std::move(result);
    return true;
  }
  bool is_boundary_before(char32_t cp) const override {
    return n_->hasBoundaryBefore(static_cast<UChar32>(cp)) && !compatibility_;
  }

 private:
  const icu::Normalizer2* n_;
  bool compatibility_;
};

class LowercaseNormalizer final : public Normalizer {
 public:
  bool apply(std::string_view text, std::string& out) const override {
    bool changed = false;
    std::string result;
    result.reserve(text.size());
    std::size_t i = 0;
    while (i < text.size()) {
      char32_t cp = 0;
      const std::size_t n = utf8::decode_valid(text, i, cp);
      const auto lower = static_cast<char32_t>(u_tolower(static_cast<UChar32>(cp)));
      changed = changed || lower != cp;
      utf8::append(result, lower);
      i += n;
    }
    if (changed) out = std::move(result);
    return changed;
  }
  bool is_boundary_before(char32_t) const override { return true; }
};

class PrependNormalizer final : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  bool apply(std::string_view text, std::string& out) const override {
    if (text.empty()) return false;
    out = prefix_ + std::string(text);
    return true;
  }
  bool is_boundary_before(char32_t) const override { return true; }
  bool depends_on_start() const override { return true; }

 private:
  std::string prefix_;
};

class ReplaceNormalizer final : public Normalizer {
 public:
  ReplaceNormalizer(std::string pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  bool apply(std::string_view text, std::string& out) const override {
    if (pattern_.empty() || text.find(pattern_) == std::string_view::npos) return false;
    std::string result;
    std::size_t from = 0;
    for (std::size_t at = text.find(pattern_); at != std::string_view::npos;
         at = text.find(pattern_, from)) {
      result.append(text.substr(from, at - from));
      result += content_;
      from = at + pattern_.size();
    }
    result.append(text.substr(from));
    out = std::move(result);
    return true;
  }
  // A multi-character pattern may straddle a split point.
  bool is_boundary_before(char32_t) const override { return pattern_.size() <= 1; }

 private:
  std::string pattern_;
  std::string content_;
};

class SequenceNormalizer final : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> parts)
      : parts_(std::move(parts)) {}
  bool apply(std::string_view text, std::string& out) const override {
    bool changed = false;
    std::string current;
    for (const auto& part : parts_) {
      std::string next;
      if (part->apply(changed ? std::string_view(current) : text, next)) {
        current = std::move(next);
        changed = true;
      }
    }
    if (changed) out = std::move(current);
    return changed;
  }
  bool is_boundary_before(char32_t cp) const override {
    for (const auto& part : parts_) {
      if (!part->is_boundary_before(cp)) return false;
    }
    return true;
  }
  bool depends_on_start() const override {
    for (const auto& part : parts_) {
      if (part->depends_on_start()) return true;
    }
    return false;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

}  // namespace

Result<std::unique_ptr<Normalizer>> make_unicode_normalizer(UnicodeForm form) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* n = nullptr;
  switch (form) {
    case UnicodeForm::kNfc: n = icu::Normalizer2::getNFCInstance(status); break;
    case UnicodeForm::kNfd: n = icu::Normalizer2::getNFDInstance(status); break;
    case UnicodeForm::kNfkc: n = icu::Normalizer2::getNFKCInstance(status); break;
    case UnicodeForm::kNfkd: n = icu::Normalizer2::getNFKDInstance(status); break;
  }
  if (U_FAILURE(status) || n == nullptr) {
    return make_error(ErrorCode::kInternal,
                      std::string("ICU normalizer unavailable: ") + u_errorName(status));
  }
  const bool compatibility = form == UnicodeForm::kNfkc || form == UnicodeForm::kNfkd;
  return std::unique_ptr<Normalizer>(std::make_unique<UnicodeNormalizer>(n, compatibility));
}

std::unique_ptr<Normalizer> make_lowercase_normalizer() {
  return std::make_unique<LowercaseNormalizer>();
}
std::unique_ptr<Normalizer> make_prepend_normalizer(std::string prefix) {
  return std::make_unique<PrependNormalizer>(std::move(prefix));
}
std::unique_ptr<Normalizer> make_replace_normalizer(std::string pattern, std::string content) {
  return std::make_unique<ReplaceNormalizer>(std::move(pattern), std::move(content));
}
std::unique_ptr<Normalizer> make_sequence_normalizer(
    std::vector<std::unique_ptr<Normalizer>> parts) {
  return std::make_unique<SequenceNormalizer>(std::move(parts));
}

}  // namespace omni::tokenizer
