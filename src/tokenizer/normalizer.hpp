// Normalizers of tokenizer.json: Unicode forms (NFC, NFD, NFKC, NFKD, through ICU), Lowercase,
// Prepend, Replace (literal pattern), Strip and Sequence. Each one reports whether it changed
// the text, so the common case (already NFC) costs one check and no copy.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "omni/common/result.hpp"

namespace omni::tokenizer {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // Normalizes `text` into `out`; returns false (leaving `out` untouched) when `text` is already
  // normalized.
  virtual bool apply(std::string_view text, std::string& out) const = 0;
  // True when normalizing text split before any "boundary" character gives the concatenation of
  // the normalized parts (the Unicode forms); the prefix cache relies on it.
  virtual bool is_boundary_before(char32_t cp) const = 0;
  // True when the normalizer can change text at its start only (Prepend): the prefix cache is off.
  virtual bool depends_on_start() const { return false; }
};

enum class UnicodeForm { kNfc, kNfd, kNfkc, kNfkd };

Result<std::unique_ptr<Normalizer>> make_unicode_normalizer(UnicodeForm form);
std::unique_ptr<Normalizer> make_lowercase_normalizer();
std::unique_ptr<Normalizer> make_prepend_normalizer(std::string prefix);
std::unique_ptr<Normalizer> make_replace_normalizer(std::string pattern, std::string content);
std::unique_ptr<Normalizer> make_sequence_normalizer(
    std::vector<std::unique_ptr<Normalizer>> parts);

}  // namespace omni::tokenizer
