// Encoder: per-thread caches, and the prefix cache for multi-turn conversations.
//
// The prefix cache keeps the previous text, its ids (before post-processing) and the restart
// points of that encoding: pre-token starts where the normalizer has a boundary. For a new text
// sharing the first L bytes with the previous one, encoding restarts at the start of the last
// pre-token that ends within those L bytes. Everything before it was decided by bytes < L:
// the split regexes of the supported families look at most two characters past a match
// (`\s+(?!\S)` ends a whitespace run before its last character when a non-space follows it), so
// the two characters at the restart point must lie inside the common prefix too; the pre-token
// after the restart point lies wholly inside it. A restart point right after whitespace is never
// taken: a whitespace pre-token's end depends on how far the run goes (`\s*[\r\n]+` takes every
// space up to the run's last newline), which the common prefix may not show. The restart point is
// refused when an added token of the new text could straddle it.
#include <algorithm>

#include "tokenizer_impl.hpp"
#include "utf8.hpp"

namespace omni::tokenizer {

struct Encoder::State {
  State(std::shared_ptr<const Tokenizer> t, std::size_t entries)
      : tokenizer(std::move(t)), scratch(entries) {}
  std::shared_ptr<const Tokenizer> tokenizer;
  EncodeScratch scratch;
  // Prefix cache.
  std::string last_text;
  std::vector<TokenId> last_ids;
  std::vector<Checkpoint> checkpoints;
};

namespace {

constexpr std::size_t kMaxRestartTries = 16;

std::size_t common_prefix(std::string_view a, std::string_view b) {
  const std::size_t n = std::min(a.size(), b.size());
  const auto mismatch =
      std::mismatch(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(n), b.begin());
  return static_cast<std::size_t>(mismatch.first - a.begin());
}

// Whether the two characters of `text` from `pos` exist and end within the first `shared` bytes:
// what decided the end of the pre-token before `pos` (a whitespace run's end looks at the
// character after it and the one after that) is then the same in the old and the new text.
bool lookahead_shared(std::string_view text, std::size_t pos, std::size_t shared) {
  for (int n = 0; n < 2; ++n) {
    if (pos >= text.size()) return false;
    char32_t cp = 0;
    pos += utf8::decode_valid(text, pos, cp);
  }
  return pos <= shared;
}

bool is_whitespace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

// Whether the character before `pos` is whitespace (the kept pre-tokens would end in a run).
bool after_whitespace(std::string_view text, std::size_t pos) {
  if (pos == 0) return false;
  std::size_t start = pos - 1;
  while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0u) == 0x80u) --start;
  char32_t cp = 0;
  (void)utf8::decode_valid(text, start, cp);
  return is_whitespace(cp);
}

bool straddled_by(const AddedTokenMatcher& matcher, std::string_view text, std::size_t pos) {
  if (matcher.empty() || pos == 0) return false;
  const std::size_t from = pos >= matcher.max_length() ? pos - matcher.max_length() + 1 : 0;
  for (std::size_t s = from; s < pos; ++s) {
    std::uint32_t index = 0;
    if (matcher.longest_at(text, s, index) > pos - s) return true;
  }
  return false;
}

}  // namespace

Encoder::Encoder(std::shared_ptr<const Tokenizer> tokenizer, std::size_t word_cache_entries)
    : state_(std::make_unique<State>(std::move(tokenizer), word_cache_entries)) {}
Encoder::~Encoder() = default;
Encoder::Encoder(Encoder&&) noexcept = default;
Encoder& Encoder::operator=(Encoder&&) noexcept = default;

const EncoderStats& Encoder::stats() const noexcept { return state_->scratch.stats; }

Result<std::vector<TokenId>> Encoder::encode(std::string_view text, const EncodeOptions& options) {
  const auto& impl = state_->tokenizer->impl();
  ++state_->scratch.stats.encodes;
  std::string repaired;
  if (!utf8::is_valid(text)) {
    repaired = utf8::to_valid_lossy(text);
    text = repaired;
  }
  std::vector<TokenId> ids;
  ids.reserve(text.size() / 3 + 4);
  if (auto st = impl.encode_text(text, ids, state_->scratch, nullptr, 0); !st.ok())
    return std::move(st).error();
  impl.post_process(ids, options);
  return ids;
}

Result<std::vector<TokenId>> Encoder::encode_incremental(std::string_view input,
                                                         const EncodeOptions& options) {
  State& s = *state_;
  const auto& impl = s.tokenizer->impl();
  ++s.scratch.stats.encodes;
  std::string text = utf8::is_valid(input) ? std::string(input) : utf8::to_valid_lossy(input);

  std::size_t restart = 0;   // byte offset where encoding resumes
  std::size_t kept_ids = 0;  // ids of the previous encoding kept as they are
  std::size_t kept_checkpoints = 0;
  if (impl.prefix_cache_safe && !s.last_text.empty()) {
    const std::size_t shared = common_prefix(s.last_text, text);
    // The last restart point whose pre-token ends within the shared prefix.
    auto it = std::upper_bound(s.checkpoints.begin(), s.checkpoints.end(), shared,
                               [](std::size_t l, const Checkpoint& c) { return l < c.end; });
    for (std::size_t tries = 0; it != s.checkpoints.begin() && tries < kMaxRestartTries; ++tries) {
      --it;
      if (!lookahead_shared(text, it->begin, shared) || after_whitespace(text, it->begin)) continue;
      if (straddled_by(impl.raw_added, text, it->begin) ||
          straddled_by(impl.normalized_added, text, it->begin))
        continue;
      restart = it->begin;
      kept_ids = it->token_index;
      kept_checkpoints = static_cast<std::size_t>(it - s.checkpoints.begin());
      break;
    }
  }
  s.last_ids.resize(kept_ids);
  s.checkpoints.resize(kept_checkpoints);
  if (restart > 0) {
    ++s.scratch.stats.prefix_reuses;
    s.scratch.stats.reused_bytes += restart;
  }
  auto st = impl.encode_text(std::string_view(text).substr(restart), s.last_ids, s.scratch,
                             &s.checkpoints, restart);
  if (!st.ok()) {
    s.last_text.clear();
    s.last_ids.clear();
    s.checkpoints.clear();
    return std::move(st).error();
  }
  s.last_text = std::move(text);
  std::vector<TokenId> ids = s.last_ids;
  impl.post_process(ids, options);
  return ids;
}

}  // namespace omni::tokenizer
