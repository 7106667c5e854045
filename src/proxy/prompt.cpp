#include "prompt.hpp"

#include "json_scan.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <cstdlib>
#include <limits>
#include <random>

namespace omni::proxy {
namespace json = boost::json;
namespace {

kvcache::BlockHash random_root() {
  std::random_device rd;
  std::vector<std::uint8_t> bytes(32);
  for (auto& b : bytes) b = static_cast<std::uint8_t>(rd());
  return *kvcache::BlockHash::from_bytes(bytes);
}

// NONE_HASH exactly as the engines derive it (vLLM, omni-sim): from PYTHONHASHSEED.
kvcache::BlockHash root_of(kvcache::HashAlgo algo, const std::optional<std::string>& seed) {
  if (seed) return kvcache::none_hash(algo, *seed);
  if (const char* env = std::getenv("PYTHONHASHSEED")) return kvcache::none_hash(algo, env);
  return random_root();
}

std::optional<json::value> parse_value(std::string_view raw) {
  boost::system::error_code ec;
  json::value v = json::parse(raw, ec);
  if (ec) return std::nullopt;
  return v;
}

// Token ids of a JSON array of non-negative 32-bit integers; nullopt for anything else.
std::optional<std::vector<std::uint32_t>> ids_of(const json::array& items) {
  std::vector<std::uint32_t> ids;
  ids.reserve(items.size());
  for (const json::value& item : items) {
    if (!item.is_int64() || item.get_int64() < 0 ||
        item.get_int64() > std::numeric_limits<std::uint32_t>::max()) {
      return std::nullopt;
    }
    ids.push_back(static_cast<std::uint32_t>(item.get_int64()));
  }
  return ids;
}

// The chat messages' text, for a token count only (see the header: no hashes for chat).
std::string chat_text(const json::array& messages) {
  std::string out;
  for (const json::value& m : messages) {
    const json::object* msg = m.if_object();
    if (!msg) continue;
    if (auto role = msg->find("role"); role != msg->end() && role->value().is_string()) {
      out += "<|";
      out += role->value().get_string();
      out += "|>\n";
    }
    auto content = msg->find("content");
    if (content == msg->end()) continue;
    if (content->value().is_string()) out += content->value().get_string();
    if (const json::array* parts = content->value().if_array()) {
      for (const json::value& part : *parts) {
        const json::object* p = part.if_object();
        auto text = p ? p->find("text") : json::object::const_iterator{};
        if (p && text != p->end() && text->value().is_string()) out += text->value().get_string();
      }
    }
    out += "\n";
  }
  return out + "<|assistant|>\n";
}

// One Encoder per I/O thread: its word cache makes repeated prompts cheap.
struct ThreadEncoder {
  const tokenizer::Tokenizer* owner = nullptr;
  std::unique_ptr<tokenizer::Encoder> encoder;
};
thread_local ThreadEncoder t_encoder;

}  // namespace

Result<std::unique_ptr<PromptReader>> PromptReader::create(const PromptOptions& options) {
  if (options.block_size == 0)
    return make_error(ErrorCode::kInvalidArgument, "block_size must be > 0");
  auto algo = kvcache::parse_hash_algo(options.hash_algo);
  if (!algo) return std::move(algo).error();
  std::shared_ptr<const tokenizer::Tokenizer> tok;
  if (options.tokenizer) {
    auto loaded = tokenizer::Tokenizer::load(*options.tokenizer);
    if (!loaded) {
      return make_error(ErrorCode::kInvalidArgument,
                        "tokenizer " + *options.tokenizer + ": " + loaded.error().message);
    }
    tok = std::move(*loaded);
  }
  return std::unique_ptr<PromptReader>(new PromptReader(std::move(tok), options.block_size, *algo,
                                                        root_of(*algo, options.hash_seed)));
}

PromptReader::PromptReader(std::shared_ptr<const tokenizer::Tokenizer> tokenizer,
                           std::uint32_t block_size, kvcache::HashAlgo algo,
                           kvcache::BlockHash root)
    : tokenizer_(std::move(tokenizer)), block_size_(block_size), algo_(algo), root_(root) {}

std::optional<std::vector<std::uint32_t>> PromptReader::encode(std::string_view text) const {
  if (!tokenizer_) return std::nullopt;
  if (t_encoder.owner != tokenizer_.get()) {
    t_encoder.encoder = std::make_unique<tokenizer::Encoder>(tokenizer_);
    t_encoder.owner = tokenizer_.get();
  }
  tokenizer::EncodeOptions options;
  options.add_special_tokens = false;  // as omni-sim's engine side encodes prompts
  auto ids = t_encoder.encoder->encode(text, options);
  if (!ids) return std::nullopt;
  return std::vector<std::uint32_t>(ids->begin(), ids->end());
}

std::vector<std::uint64_t> PromptReader::hashes(const std::vector<std::uint32_t>& ids,
                                                std::optional<std::string> cache_salt) const {
  kvcache::BlockHasher hasher(algo_, block_size_, root_);
  kvcache::RequestExtraInputs extra;
  extra.cache_salt = std::move(cache_salt);
  std::vector<std::uint64_t> out;
  for (const kvcache::BlockHash& h : hasher.hash_all(ids, extra))
    out.push_back(kvcache::event_int(h));
  return out;
}

PromptInfo PromptReader::read(std::string_view body, Api api) const {
  auto members = scan_object(body);
  if (!members) return {};
  return read_members(*members, api);
}

PromptInfo PromptReader::read_valid(std::string_view object, Api api) const {
  // Without a tokenizer only token-id prompts can be known (a chat body, or a text prompt,
  // would need encoding): the rest is settled without looking at the body at all.
  if (!tokenizer_ && api == Api::kChatCompletions) return {};
  return read_members(detail::scan_valid_object(object), api);
}

PromptInfo PromptReader::read_members(const std::vector<JsonMember>& members, Api api) const {
  PromptInfo info;
  std::optional<json::value> prompt;
  std::optional<std::string> salt;
  for (const JsonMember& m : members) {
    const bool wanted = m.key == (api == Api::kCompletions ? "prompt" : "messages");
    // A text prompt without a tokenizer stays unknown: no need to decode it.
    const bool hopeless = !tokenizer_ && !m.value.empty() && m.value.front() == '"';
    if (wanted && hopeless) return info;
    if (wanted && !prompt) prompt = parse_value(m.value);
    if (m.key == "cache_salt" && !salt) {
      auto v = parse_value(m.value);
      if (v && v->is_string()) salt = std::string(v->get_string());
    }
  }
  if (!prompt) return info;
  if (api == Api::kChatCompletions) {
    if (!prompt->is_array()) return info;
    if (auto ids = encode(chat_text(prompt->get_array()))) info.tokens = ids->size();
    return info;
  }
  // A batch of one is that one prompt (as the engine reads it).
  if (prompt->is_array() && prompt->get_array().size() == 1 && !prompt->get_array()[0].is_int64()) {
    json::value single = prompt->get_array()[0];
    prompt = std::move(single);
  }
  const bool text = prompt->is_string();
  std::optional<std::vector<std::uint32_t>> ids;
  if (text) {
    ids = encode(prompt->get_string());
  } else if (prompt->is_array()) {
    ids = ids_of(prompt->get_array());
  }
  if (!ids) return info;
  info.tokens = ids->size();
  info.block_hashes = hashes(*ids, std::move(salt));
  if (text) info.text_ids = std::move(*ids);
  return info;
}

}  // namespace omni::proxy
