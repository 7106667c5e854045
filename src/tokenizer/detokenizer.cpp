// Detokenizer: streaming decode that never splits a UTF-8 character.
//
// Byte-level decoders: each id stands for fixed bytes; bytes are held back only while they are
// the valid beginning of a character not yet complete. Other decoders: the text of a sliding
// window of ids is decoded twice (without and with the new id) and the difference emitted once
// it does not end in U+FFFD, the approach of vLLM and text-generation-inference.
#include "tokenizer_impl.hpp"
#include "utf8.hpp"

namespace omni::tokenizer {

struct Detokenizer::State {
  std::shared_ptr<const Tokenizer> tokenizer;
  DecodeOptions options;
  std::string pending;            // byte-level path: bytes not yet emitted
  std::vector<TokenId> ids;       // window path
  std::size_t prefix_offset = 0;  // ids[prefix_offset, read_offset) decode to text already emitted
  std::size_t read_offset = 0;
};

Detokenizer::Detokenizer(std::shared_ptr<const Tokenizer> tokenizer, DecodeOptions options)
    : state_(std::make_unique<State>()) {
  state_->tokenizer = std::move(tokenizer);
  state_->options = options;
}
Detokenizer::~Detokenizer() = default;

std::string Detokenizer::push(TokenId id) {
  State& s = *state_;
  const auto& impl = s.tokenizer->impl();
  if (!impl.decoded_bytes.empty()) {
    if (id >= impl.decoded_bytes.size() || (s.options.skip_special_tokens && impl.special[id]))
      return {};
    s.pending += impl.decoded_bytes[id];
    const std::size_t complete = utf8::complete_prefix_length(s.pending);
    std::string out = utf8::to_valid_lossy(std::string_view(s.pending).substr(0, complete));
    s.pending.erase(0, complete);
    return out;
  }
  s.ids.push_back(id);
  const std::span<const TokenId> all(s.ids);
  const std::string before =
      s.tokenizer->decode(all.subspan(s.prefix_offset, s.read_offset - s.prefix_offset), s.options);
  const std::string now = s.tokenizer->decode(all.subspan(s.prefix_offset), s.options);
  if (now.size() <= before.size() || now.compare(0, before.size(), before) != 0 ||
      now.ends_with(utf8::kReplacement)) {
    return {};
  }
  s.prefix_offset = s.read_offset;
  s.read_offset = s.ids.size();
  return now.substr(before.size());
}

std::string Detokenizer::finish() {
  State& s = *state_;
  const auto& impl = s.tokenizer->impl();
  if (!impl.decoded_bytes.empty()) {
    std::string out = utf8::to_valid_lossy(s.pending);
    s.pending.clear();
    return out;
  }
  const std::span<const TokenId> all(s.ids);
  const std::string before =
      s.tokenizer->decode(all.subspan(s.prefix_offset, s.read_offset - s.prefix_offset), s.options);
  const std::string now = s.tokenizer->decode(all.subspan(s.prefix_offset), s.options);
  s.prefix_offset = s.read_offset = s.ids.size();
  return now.size() > before.size() ? now.substr(before.size()) : std::string();
}

}  // namespace omni::tokenizer
