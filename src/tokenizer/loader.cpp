// tokenizer.json -> Tokenizer::Impl. Every component type is checked against the list this
// library implements; anything else is an `unsupported` error that names it, so a model we cannot
// reproduce exactly fails at load instead of tokenizing wrongly.
#include <boost/json.hpp>

#include "decoder.hpp"
#include "loader_parts.hpp"
#include "tokenizer_impl.hpp"

namespace omni::tokenizer {
namespace json = boost::json;
namespace {

Error unsupported(std::string_view what, std::string_view type) {
  return make_error(ErrorCode::kUnsupported, std::string(what) + " type '" + std::string(type) +
                                                 "' is not supported by omni_tokenizer");
}
Error invalid(std::string message) {
  return make_error(ErrorCode::kInvalidArgument, "tokenizer.json: " + std::move(message));
}

// The model: BPE only.
Result<std::vector<std::pair<std::string, std::string>>> read_merges(const json::array& merges) {
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(merges.size());
  for (const auto& m : merges) {
    if (m.is_string()) {
      const std::string_view s = m.get_string();
      const auto space = s.find(' ', 1);  // a merge part is never empty
      if (space == std::string_view::npos)
        return invalid("merge '" + std::string(s) + "' has no space");
      out.emplace_back(std::string(s.substr(0, space)), std::string(s.substr(space + 1)));
    } else if (m.is_array() && m.get_array().size() == 2 && m.get_array()[0].is_string() &&
               m.get_array()[1].is_string()) {
      out.emplace_back(std::string(m.get_array()[0].get_string()),
                       std::string(m.get_array()[1].get_string()));
    } else {
      return invalid("a merge is neither \"a b\" nor [\"a\", \"b\"]");
    }
  }
  return out;
}

Status read_model(const json::object& model, bool byte_level, Tokenizer::Impl& impl) {
  const auto type = string_field(model, "type", "BPE");
  if (type != "BPE") return unsupported("model", type);
  if (const auto* d = model.if_contains("dropout");
      d != nullptr && !d->is_null() && number(*d) != 0.0) {
    return make_error(ErrorCode::kUnsupported, "BPE dropout is not supported by omni_tokenizer");
  }
  for (const char* affix : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (!string_field(model, affix, "").empty()) {
      return make_error(ErrorCode::kUnsupported,
                        std::string("BPE ") + affix + " is not supported by omni_tokenizer");
    }
  }
  const auto* vocab = model.if_contains("vocab");
  const auto* merges = model.if_contains("merges");
  if (vocab == nullptr || !vocab->is_object()) return invalid("model.vocab is missing");
  if (merges == nullptr || !merges->is_array()) return invalid("model.merges is missing");
  for (const auto& [token, id_value] : vocab->get_object()) {
    auto id = token_id(id_value);
    if (!id) return invalid("vocab id of '" + std::string(token) + "' is not a valid id");
    if (*id >= impl.spellings.size()) impl.spellings.resize(*id + 1);
    impl.spellings[*id] = std::string(token);
  }
  auto merge_list = read_merges(merges->get_array());
  if (!merge_list.ok()) return std::move(merge_list).error();
  BpeConfig config;
  config.byte_level = byte_level;
  config.byte_fallback = bool_field(model, "byte_fallback", false);
  config.ignore_merges = bool_field(model, "ignore_merges", false);
  config.fuse_unk = bool_field(model, "fuse_unk", false);
  const auto unk = string_field(model, "unk_token", "");
  if (!unk.empty()) {
    const auto* id = vocab->get_object().if_contains(unk);
    if (id == nullptr) return invalid("unk_token '" + unk + "' is not in the vocabulary");
    config.unk_id = token_id(*id);
  }
  if (auto bad = impl.model.build(config, impl.spellings, *merge_list)) {
    return invalid("merge '" + *bad + "' uses a token that is not in the vocabulary");
  }
  return {};
}

Status read_added_tokens(const json::value* list, Tokenizer::Impl& impl) {
  if (list == nullptr || list->is_null()) return {};
  if (!list->is_array()) return invalid("added_tokens is not an array");
  for (const auto& v : list->get_array()) {
    if (!v.is_object()) return invalid("an added token is not an object");
    const auto& o = v.get_object();
    AddedToken t;
    const auto* id_value = o.if_contains("id");
    auto id = id_value ? token_id(*id_value) : std::nullopt;
    if (!id) return invalid("an added token has no valid id");
    t.id = *id;
    t.content = string_field(o, "content", "");
    t.special = bool_field(o, "special", false);
    t.normalized = bool_field(o, "normalized", !t.special);
    t.lstrip = bool_field(o, "lstrip", false);
    t.rstrip = bool_field(o, "rstrip", false);
    t.single_word = bool_field(o, "single_word", false);
    if (t.id >= impl.spellings.size()) impl.spellings.resize(t.id + 1);
    impl.spellings[t.id] = t.content;
    if (t.id >= impl.special.size()) impl.special.resize(t.id + 1, false);
    impl.special[t.id] = t.special;
    (t.normalized ? impl.normalized_added : impl.raw_added).add(t);
  }
  return {};
}

Status check_unsupported_sections(const json::object& root) {
  for (const char* key : {"truncation", "padding"}) {
    if (const auto* v = root.if_contains(key); v != nullptr && !v->is_null()) {
      return make_error(ErrorCode::kUnsupported,
                        std::string("tokenizer.json '") + key +
                            "' is set; omni_tokenizer does not truncate or pad");
    }
  }
  return {};
}

void resolve_config(const json::object& config, Tokenizer::Impl& impl) {
  const auto token_named = [&](const char* key) -> std::optional<TokenId> {
    const auto* v = config.if_contains(key);
    if (v == nullptr) return std::nullopt;
    std::string content;
    if (v->is_string()) content = std::string(v->get_string());
    if (v->is_object()) content = string_field(v->get_object(), "content", "");
    if (content.empty()) return std::nullopt;
    if (const TokenId* id = impl.spelling_to_id.find(content)) return *id;
    return std::nullopt;
  };
  impl.bos = token_named("bos_token");
  impl.eos = token_named("eos_token");
  // Processors that add nothing (ByteLevel, none) leave BOS/EOS to the config, as transformers'
  // LlamaTokenizerFast does with add_bos_token / add_eos_token.
  if (!impl.post.from_tokenizer_json) {
    if (bool_field(config, "add_bos_token", false) && impl.bos)
      impl.post.prefix.push_back(*impl.bos);
    if (bool_field(config, "add_eos_token", false) && impl.eos)
      impl.post.suffix.push_back(*impl.eos);
  }
}

}  // namespace

Result<std::unique_ptr<Tokenizer::Impl>> load_impl(std::string_view tokenizer_json,
                                                   std::string_view config_json) {
  json::error_code ec;
  json::value root = json::parse(tokenizer_json, ec);
  if (ec || !root.is_object())
    return invalid("not a JSON object" + (ec ? ": " + ec.message() : std::string()));
  const auto& obj = root.get_object();
  if (auto st = check_unsupported_sections(obj); !st.ok()) return std::move(st).error();

  auto impl = std::make_unique<Tokenizer::Impl>();
  if (auto st = read_normalizer(obj.if_contains("normalizer"), *impl); !st.ok())
    return std::move(st).error();
  if (auto st = read_pre_tokenizer(obj.if_contains("pre_tokenizer"), *impl); !st.ok())
    return std::move(st).error();
  if (auto st = read_decoder(obj.if_contains("decoder"), *impl); !st.ok())
    return std::move(st).error();
  const auto* model = obj.if_contains("model");
  if (model == nullptr || !model->is_object()) return invalid("model is missing");
  const bool byte_level = (impl->pre_tokenizer && impl->pre_tokenizer->byte_level()) ||
                          (impl->decoder && impl->decoder->is_byte_level());
  if (auto st = read_model(model->get_object(), byte_level, *impl); !st.ok())
    return std::move(st).error();
  if (auto st = read_added_tokens(obj.if_contains("added_tokens"), *impl); !st.ok())
    return std::move(st).error();
  impl->special.resize(impl->spellings.size(), false);
  impl->spelling_to_id.reserve(impl->spellings.size());
  for (std::size_t id = 0; id < impl->spellings.size(); ++id) {
    if (!impl->spellings[id].empty())
      impl->spelling_to_id.insert(impl->spellings[id], static_cast<TokenId>(id));
  }
  if (auto st = read_post_processor(obj.if_contains("post_processor"), *impl); !st.ok())
    return std::move(st).error();

  if (!config_json.empty()) {
    json::value config = json::parse(config_json, ec);
    if (ec || !config.is_object())
      return make_error(ErrorCode::kInvalidArgument, "tokenizer_config.json: not a JSON object");
    resolve_config(config.get_object(), *impl);
    impl->config_json = std::string(config_json);
  }
  if (impl->decoder && impl->decoder->is_byte_level()) {
    impl->decoded_bytes.resize(impl->spellings.size());
    for (std::size_t id = 0; id < impl->spellings.size(); ++id) {
      impl->decoded_bytes[id] = byte_level_token_bytes(impl->spellings[id]);
    }
  }
  impl->prefix_cache_safe = !(impl->pre_tokenizer && impl->pre_tokenizer->prefix_space()) &&
                            !(impl->normalizer && impl->normalizer->depends_on_start()) &&
                            !impl->raw_added.any_strip() && !impl->normalized_added.any_strip();
  return impl;
}

}  // namespace omni::tokenizer
