#include "sim/text_codec.hpp"

#include <array>
#include <unordered_map>

#include "sim/request.hpp"

namespace omni::sim {
namespace {

constexpr std::uint32_t kFirstWord = 256;

constexpr std::array<std::string_view, 96> kWords = {
    " the",   " of",     " and",      " to",      " in",     " a",        " is",     " that",
    " for",   " it",     " as",       " was",     " with",   " be",       " by",     " on",
    " not",   " he",     " this",     " are",     " or",     " his",      " from",   " at",
    " which", " but",    " have",     " an",      " had",    " they",     " you",    " were",
    " their", " one",    " all",      " we",      " can",    " her",      " has",    " there",
    " been",  " if",     " more",     " when",    " will",   " would",    " who",    " so",
    " no",    " model",  " token",    " cache",   " block",  " prefix",   " decode", " prefill",
    " batch", " engine", " expert",   " layer",   " time",   " step",     " river",  " stone",
    " light", " world",  " house",    " water",   " green",  " quiet",    " swift",  " north",
    " city",  " road",   " night",    " morning", " paper",  " garden",   " music",  " window",
    " ocean", " field",  " tree",     " bridge",  " market", " story",    " number", " signal",
    " cloud", " train",  " mountain", " letter",  " answer", " question", ".",       ",",
};

class BuiltinCodec final : public TextCodec {
 public:
  BuiltinCodec() {
    for (std::uint32_t i = 0; i < kWords.size(); ++i) {
      ids_.emplace(kWords[i], kFirstWord + i);
      generatable_.push_back(kFirstWord + i);
    }
  }

  std::vector<std::uint32_t> encode(std::string_view text) const override {
    std::vector<std::uint32_t> out;
    out.reserve(text.size() / 4 + 1);
    std::size_t start = 0;
    while (start < text.size()) {
      // A piece runs from here to the next space (a leading space belongs to the piece).
      std::size_t end = text.find(' ', start + 1);
      if (end == std::string_view::npos) end = text.size();
      append_piece(text.substr(start, end - start), out);
      start = end;
    }
    return out;
  }

  std::string decode(std::span<const std::uint32_t> tokens) const override {
    std::string out;
    for (std::uint32_t t : tokens) out += token_text(t);
    return out;
  }

  std::string token_text(std::uint32_t token) const override {
    if (token < kFirstWord) return std::string(1, static_cast<char>(token));
    const std::uint32_t word = token - kFirstWord;
    if (word < kWords.size()) return std::string(kWords[word]);
    return {};  // ids outside the vocabulary decode to nothing, like a special token
  }

  std::uint32_t vocab_size() const override {
    return kFirstWord + static_cast<std::uint32_t>(kWords.size());
  }
  std::span<const std::uint32_t> generatable() const override { return generatable_; }

 private:
  void append_piece(std::string_view piece, std::vector<std::uint32_t>& out) const {
    if (auto it = ids_.find(piece); it != ids_.end()) {
      out.push_back(it->second);
      return;
    }
    for (char c : piece) out.push_back(static_cast<unsigned char>(c));
  }

  std::unordered_map<std::string_view, std::uint32_t> ids_;
  std::vector<std::uint32_t> generatable_;
};

}  // namespace

Result<std::string> TextCodec::render_chat(const boost::json::object& request,
                                           const ChatRenderOptions& options) const {
  auto messages = request.find("messages");
  if (messages == request.end() || !messages->value().is_array()) {
    return make_error(ErrorCode::kInvalidArgument, "request: 'messages' must be an array");
  }
  return sim::render_chat(messages->value().get_array(), options.add_generation_prompt);
}

std::unique_ptr<TextCodec> make_builtin_codec() { return std::make_unique<BuiltinCodec>(); }

}  // namespace omni::sim
