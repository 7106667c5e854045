// Tokenizer: loading from files and the public encode/decode entry points.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tokenizer_impl.hpp"
#include "utf8.hpp"

namespace omni::tokenizer {
namespace fs = std::filesystem;
namespace {

constexpr std::uintmax_t kMaxFileBytes = 512u << 20;

Result<std::string> read_file(const fs::path& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) return make_error(ErrorCode::kNotFound, path.string() + ": " + ec.message());
  if (size > kMaxFileBytes)
    return make_error(ErrorCode::kTooLarge, path.string() + ": larger than 512 MiB");
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::kIo, path.string() + ": cannot open");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

Result<std::shared_ptr<const Tokenizer>> Tokenizer::from_json(std::string_view tokenizer_json,
                                                              std::string_view config_json) {
  auto impl = load_impl(tokenizer_json, config_json);
  if (!impl.ok()) return std::move(impl).error();
  return std::shared_ptr<const Tokenizer>(std::make_shared<Tokenizer>(std::move(*impl)));
}

Result<std::shared_ptr<const Tokenizer>> Tokenizer::load(const std::string& path_text) {
  const fs::path path(path_text);
  std::error_code ec;
  fs::path tokenizer_file = path;
  if (fs::is_directory(path, ec)) {
    tokenizer_file = path / "tokenizer.json";
  } else if (path.filename() == "tokenizer_config.json") {
    tokenizer_file = path.parent_path() / "tokenizer.json";
  }
  auto tokenizer_json = read_file(tokenizer_file);
  if (!tokenizer_json.ok()) return std::move(tokenizer_json).error();
  const fs::path config_file = tokenizer_file.parent_path() / "tokenizer_config.json";
  std::string config_json;
  if (fs::exists(config_file, ec)) {
    auto config = read_file(config_file);
    if (!config.ok()) return std::move(config).error();
    config_json = std::move(*config);
  }
  auto loaded = from_json(*tokenizer_json, config_json);
  if (!loaded.ok()) {
    Error e = std::move(loaded).error();
    e.message = tokenizer_file.string() + ": " + e.message;
    return e;
  }
  return loaded;
}

Result<std::vector<TokenId>> Tokenizer::encode(std::string_view text,
                                               const EncodeOptions& options) const {
  // A non-owning pointer (aliasing an empty one): the Encoder lives only within this call.
  // A small word cache: it starts tiny and grows only if the text repeats words.
  Encoder encoder(std::shared_ptr<const Tokenizer>(std::shared_ptr<const Tokenizer>{}, this), 4096);
  return encoder.encode(text, options);
}

std::string Tokenizer::decode(std::span<const TokenId> ids, const DecodeOptions& options) const {
  const Impl& m = *impl_;
  const auto skipped = [&](TokenId id) {
    return id >= m.spellings.size() || (options.skip_special_tokens && m.special[id]);
  };
  if (!m.decoded_bytes.empty()) {
    std::string bytes;
    for (TokenId id : ids) {
      if (!skipped(id)) bytes += m.decoded_bytes[id];
    }
    return utf8::to_valid_lossy(bytes);
  }
  std::vector<std::string> tokens;
  for (TokenId id : ids) {
    if (!skipped(id)) tokens.push_back(m.spellings[id]);
  }
  std::string out;
  if (!m.decoder) {  // no decoder: Hugging Face joins the tokens with spaces
    for (std::size_t i = 0; i < tokens.size(); ++i) out += (i > 0 ? " " : "") + tokens[i];
    return out;
  }
  m.decoder->decode_chain(tokens);
  for (const auto& t : tokens) out += t;
  return out;
}

std::size_t Tokenizer::vocab_size() const noexcept { return impl_->spellings.size(); }

std::optional<TokenId> Tokenizer::token_to_id(std::string_view token) const {
  if (const TokenId* id = impl_->spelling_to_id.find(token)) return *id;
  return std::nullopt;
}

std::optional<std::string> Tokenizer::id_to_token(TokenId id) const {
  if (id >= impl_->spellings.size() || impl_->spellings[id].empty()) return std::nullopt;
  return impl_->spellings[id];
}

bool Tokenizer::is_special(TokenId id) const noexcept {
  return id < impl_->special.size() && impl_->special[id];
}
std::optional<TokenId> Tokenizer::bos_id() const noexcept { return impl_->bos; }
std::optional<TokenId> Tokenizer::eos_id() const noexcept { return impl_->eos; }
const std::string& Tokenizer::config_json() const noexcept { return impl_->config_json; }

}  // namespace omni::tokenizer
