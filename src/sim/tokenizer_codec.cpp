#include "sim/tokenizer_codec.hpp"

#include <algorithm>

#include "omni/tokenizer/tokenizer.hpp"
#include "sim/chat_codec.hpp"

namespace omni::sim {
namespace {

constexpr std::string_view kWords =
    " the of and to in a is that for it as was with be by on not he this are or his from at"
    " which but have an had they you were their one all we can her has there been if more when"
    " will would who so no model token cache block prefix decode prefill batch engine expert"
    " layer time step river stone light world house water green quiet swift north city road";

class TokenizerCodec final : public TextCodec {
 public:
  explicit TokenizerCodec(std::shared_ptr<const tokenizer::Tokenizer> tok) : tok_(std::move(tok)) {
    tokenizer::EncodeOptions options;
    options.add_special_tokens = false;
    if (auto ids = tok_->encode(kWords, options)) {
      for (auto id : *ids) {
        if (!tok_->is_special(id)) generatable_.push_back(id);
      }
    }
    std::sort(generatable_.begin(), generatable_.end());
    generatable_.erase(std::unique(generatable_.begin(), generatable_.end()), generatable_.end());
  }

  std::vector<std::uint32_t> encode(std::string_view text) const override {
    tokenizer::EncodeOptions options;
    options.add_special_tokens = false;
    auto ids = tok_->encode(text, options);
    if (!ids)
      return {};  // refused text encodes to nothing: the request gets "Prompt cannot be empty"
    return std::vector<std::uint32_t>(ids->begin(), ids->end());
  }
  std::vector<std::uint32_t> encode_with_special_tokens(std::string_view text) const override {
    tokenizer::EncodeOptions options;
    options.add_special_tokens = true;
    auto ids = tok_->encode(text, options);
    if (!ids) return {};
    return std::vector<std::uint32_t>(ids->begin(), ids->end());
  }
  std::string decode(std::span<const std::uint32_t> tokens) const override {
    return tok_->decode(tokens);
  }
  std::string token_text(std::uint32_t token) const override {
    const std::uint32_t one[] = {token};
    return tok_->decode(one);
  }
  std::uint32_t vocab_size() const override {
    return static_cast<std::uint32_t>(tok_->vocab_size());
  }
  std::span<const std::uint32_t> generatable() const override { return generatable_; }

 private:
  std::shared_ptr<const tokenizer::Tokenizer> tok_;
  std::vector<std::uint32_t> generatable_;
};

}  // namespace

Result<std::unique_ptr<TextCodec>> load_tokenizer_codec(const std::string& path) {
  auto tok = tokenizer::Tokenizer::load(path);
  if (!tok) return std::move(tok).error();
  // Chat requests render with the model's chat template when tokenizer_config.json has one.
  const std::string config = (*tok)->config_json();
  return with_chat_templates(std::make_unique<TokenizerCodec>(std::move(*tok)), config);
}

}  // namespace omni::sim
