// The encode pipeline of Tokenizer::Impl: added tokens, normalization, pre-tokenization, BPE.
#include "tokenizer_impl.hpp"
#include "utf8.hpp"

namespace omni::tokenizer {
namespace {

constexpr std::size_t kNoBase = ~std::size_t{0};
constexpr std::size_t kMaxCachedWord = 128;  // longer words are rare; caching them wastes memory

}  // namespace

Status Tokenizer::Impl::encode_text(std::string_view text, std::vector<TokenId>& out,
                                    EncodeScratch& scratch, std::vector<Checkpoint>* checkpoints,
                                    std::size_t base) const {
  std::vector<AddedMatch> matches;
  raw_added.find_all(text, 0, matches);
  std::size_t pos = 0;
  for (const AddedMatch& m : matches) {
    if (auto st =
            encode_segment(text.substr(pos, m.begin - pos), out, scratch, checkpoints, base + pos);
        !st.ok())
      return st;
    out.push_back(m.id);
    pos = m.end;
  }
  return encode_segment(text.substr(pos), out, scratch, checkpoints, base + pos);
}

// One stretch between raw added tokens: normalize, then split on normalized added tokens.
Status Tokenizer::Impl::encode_segment(std::string_view segment, std::vector<TokenId>& out,
                                       EncodeScratch& scratch, std::vector<Checkpoint>* checkpoints,
                                       std::size_t base) const {
  if (segment.empty()) return {};
  std::string normalized;
  std::string_view text = segment;
  if (normalizer && normalizer->apply(segment, normalized)) {
    text = normalized;
    base = kNoBase;  // offsets no longer map to the input: no restart points here
  }
  if (normalized_added.empty()) return encode_pieces(text, out, scratch, checkpoints, base);
  std::vector<AddedMatch> matches;
  normalized_added.find_all(text, 0, matches);
  std::size_t pos = 0;
  const auto shifted = [&](std::size_t p) { return base == kNoBase ? kNoBase : base + p; };
  for (const AddedMatch& m : matches) {
    if (auto st =
            encode_pieces(text.substr(pos, m.begin - pos), out, scratch, checkpoints, shifted(pos));
        !st.ok())
      return st;
    out.push_back(m.id);
    pos = m.end;
  }
  return encode_pieces(text.substr(pos), out, scratch, checkpoints, shifted(pos));
}

Status Tokenizer::Impl::encode_pieces(std::string_view text, std::vector<TokenId>& out,
                                      EncodeScratch& scratch, std::vector<Checkpoint>* checkpoints,
                                      std::size_t base) const {
  if (text.empty()) return {};
  std::string prefixed;
  if (pre_tokenizer && pre_tokenizer->prefix_space() && text.front() != ' ') {
    prefixed = " " + std::string(text);
    text = prefixed;
    base = kNoBase;
  }
  if (!pre_tokenizer) {
    encode_word(text, out, scratch);
    return {};
  }
  scratch.pieces_in.assign(1, Piece{0, static_cast<std::uint32_t>(text.size())});
  scratch.pieces_out.clear();
  if (auto st = pre_tokenizer->split(text, scratch.pieces_in, scratch.pieces_out, scratch.regex);
      !st.ok())
    return st;
  const bool record = checkpoints != nullptr && base != kNoBase;
  for (const Piece& piece : scratch.pieces_out) {
    if (piece.end <= piece.begin) continue;
    if (record) {
      char32_t cp = 0;
      utf8::decode_valid(text, piece.begin, cp);
      if (!normalizer || normalizer->is_boundary_before(cp)) {
        checkpoints->push_back({base + piece.begin, base + piece.end, out.size()});
      }
    }
    encode_word(text.substr(piece.begin, piece.end - piece.begin), out, scratch);
  }
  return {};
}

void Tokenizer::Impl::encode_word(std::string_view word, std::vector<TokenId>& out,
                                  EncodeScratch& scratch) const {
  if (word.size() > kMaxCachedWord || scratch.word_cache_capacity == 0) {
    model.encode_word(word, out);
    return;
  }
  if (const auto* hit = scratch.word_cache.find(word)) {
    ++scratch.stats.word_cache_hits;
    const auto* first = scratch.word_ids.data() + hit->first;
    out.insert(out.end(), first, first + hit->second);
    return;
  }
  ++scratch.stats.word_cache_misses;
  const std::size_t before = out.size();
  model.encode_word(word, out);
  if (scratch.word_cache.size() >= scratch.word_cache_capacity) {  // bounded: start over when full
    scratch.word_cache.clear();
    scratch.word_ids.clear();
  }
  const auto offset = static_cast<std::uint32_t>(scratch.word_ids.size());
  scratch.word_ids.insert(scratch.word_ids.end(), out.begin() + static_cast<std::ptrdiff_t>(before),
                          out.end());
  scratch.word_cache.insert(word, {offset, static_cast<std::uint32_t>(out.size() - before)});
}

void Tokenizer::Impl::post_process(std::vector<TokenId>& ids, const EncodeOptions& options) const {
  if (!options.add_special_tokens) return;
  if (!post.prefix.empty()) ids.insert(ids.begin(), post.prefix.begin(), post.prefix.end());
  ids.insert(ids.end(), post.suffix.begin(), post.suffix.end());
}

}  // namespace omni::tokenizer
