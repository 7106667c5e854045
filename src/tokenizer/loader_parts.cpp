#include "loader_parts.hpp"

#include <boost/json.hpp>

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

const json::object* as_component(const json::value* v, std::string_view what, Status& status) {
  if (v == nullptr || v->is_null()) return nullptr;
  if (!v->is_object()) {
    status = invalid(std::string(what) + " is not an object");
    return nullptr;
  }
  return &v->get_object();
}

// A Split/Replace pattern: {"Regex": "..."} or {"String": "..."}.
bool read_pattern(const json::object& o, std::string& pattern, bool& literal) {
  const auto* p = o.if_contains("pattern");
  if (p == nullptr || !p->is_object()) return false;
  if (const auto* r = p->get_object().if_contains("Regex"); r && r->is_string()) {
    pattern = std::string(r->get_string());
    literal = false;
    return true;
  }
  if (const auto* s = p->get_object().if_contains("String"); s && s->is_string()) {
    pattern = std::string(s->get_string());
    literal = true;
    return true;
  }
  return false;
}

Result<std::unique_ptr<Normalizer>> normalizer_from(const json::object& o);

Result<std::unique_ptr<Normalizer>> normalizer_sequence(const json::object& o) {
  std::vector<std::unique_ptr<Normalizer>> parts;
  const auto* list = o.if_contains("normalizers");
  if (list == nullptr || !list->is_array())
    return invalid("Sequence normalizer without 'normalizers'");
  for (const auto& item : list->get_array()) {
    if (!item.is_object()) return invalid("a normalizer is not an object");
    auto part = normalizer_from(item.get_object());
    if (!part.ok()) return std::move(part).error();
    parts.push_back(std::move(*part));
  }
  return make_sequence_normalizer(std::move(parts));
}

Result<std::unique_ptr<Normalizer>> normalizer_from(const json::object& o) {
  const auto type = string_field(o, "type", "");
  if (type == "NFC") return make_unicode_normalizer(UnicodeForm::kNfc);
  if (type == "NFD") return make_unicode_normalizer(UnicodeForm::kNfd);
  if (type == "NFKC") return make_unicode_normalizer(UnicodeForm::kNfkc);
  if (type == "NFKD") return make_unicode_normalizer(UnicodeForm::kNfkd);
  if (type == "Lowercase") return make_lowercase_normalizer();
  if (type == "Prepend") return make_prepend_normalizer(string_field(o, "prepend", ""));
  if (type == "Sequence") return normalizer_sequence(o);
  if (type == "Replace") {
    std::string pattern;
    bool literal = false;
    if (!read_pattern(o, pattern, literal) || !literal) {
      return make_error(
          ErrorCode::kUnsupported,
          "normalizer 'Replace' with a Regex pattern is not supported by omni_tokenizer");
    }
    return make_replace_normalizer(pattern, string_field(o, "content", ""));
  }
  return unsupported("normalizer", type);
}

Result<SplitBehavior> behavior_from(std::string_view name) {
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  return unsupported("Split behavior", name);
}

Result<std::unique_ptr<PreTokenizer>> pre_tokenizer_from(const json::object& o) {
  const auto type = string_field(o, "type", "");
  if (type == "Split") {
    std::string pattern;
    bool literal = false;
    if (!read_pattern(o, pattern, literal))
      return invalid("Split without a Regex or String pattern");
    auto behavior = behavior_from(string_field(o, "behavior", "Isolated"));
    if (!behavior.ok()) return std::move(behavior).error();
    return make_split(pattern, literal, *behavior, bool_field(o, "invert", false));
  }
  if (type == "ByteLevel")
    return make_byte_level_pre_tokenizer(bool_field(o, "add_prefix_space", true),
                                         bool_field(o, "use_regex", true));
  if (type == "Digits") return make_digits(bool_field(o, "individual_digits", false));
  if (type == "Whitespace") return make_whitespace(false);
  if (type == "WhitespaceSplit") return make_whitespace(true);
  if (type == "Sequence") {
    const auto* list = o.if_contains("pretokenizers");
    if (list == nullptr || !list->is_array())
      return invalid("Sequence pre-tokenizer without 'pretokenizers'");
    std::vector<std::unique_ptr<PreTokenizer>> parts;
    for (const auto& item : list->get_array()) {
      if (!item.is_object()) return invalid("a pre-tokenizer is not an object");
      auto part = pre_tokenizer_from(item.get_object());
      if (!part.ok()) return std::move(part).error();
      if ((*part)->prefix_space() && !parts.empty()) {
        return make_error(ErrorCode::kUnsupported,
                          "ByteLevel add_prefix_space after another pre-tokenizer is not supported "
                          "by omni_tokenizer");
      }
      parts.push_back(std::move(*part));
    }
    return make_sequence_pre_tokenizer(std::move(parts));
  }
  return unsupported("pre-tokenizer", type);
}

Result<std::unique_ptr<Decoder>> decoder_from(const json::object& o) {
  const auto type = string_field(o, "type", "");
  if (type == "ByteLevel") return make_byte_level_decoder();
  if (type == "ByteFallback") return make_byte_fallback_decoder();
  if (type == "Fuse") return make_fuse_decoder();
  if (type == "Strip") {
    const auto* start = o.if_contains("start");
    const auto* stop = o.if_contains("stop");
    return make_strip_decoder(string_field(o, "content", " "),
                              start ? static_cast<std::size_t>(number(*start)) : 0,
                              stop ? static_cast<std::size_t>(number(*stop)) : 0);
  }
  if (type == "Replace") {
    std::string pattern;
    bool literal = false;
    if (!read_pattern(o, pattern, literal) || !literal) {
      return make_error(
          ErrorCode::kUnsupported,
          "decoder 'Replace' with a Regex pattern is not supported by omni_tokenizer");
    }
    return make_replace_decoder(pattern, string_field(o, "content", ""));
  }
  if (type == "Metaspace") {
    const bool strip =
        string_field(o, "prepend_scheme",
                     bool_field(o, "add_prefix_space", true) ? "always" : "never") != "never";
    return make_metaspace_decoder(string_field(o, "replacement", "\xE2\x96\x81"), strip);
  }
  if (type == "Sequence") {
    const auto* list = o.if_contains("decoders");
    if (list == nullptr || !list->is_array()) return invalid("Sequence decoder without 'decoders'");
    std::vector<std::unique_ptr<Decoder>> parts;
    for (const auto& item : list->get_array()) {
      if (!item.is_object()) return invalid("a decoder is not an object");
      auto part = decoder_from(item.get_object());
      if (!part.ok()) return std::move(part).error();
      parts.push_back(std::move(*part));
    }
    return make_sequence_decoder(std::move(parts));
  }
  return unsupported("decoder", type);
}

// TemplateProcessing's "single" template: ids before and after $A.
Status template_single(const json::object& o, PostProcessing& post) {
  const auto* single = o.if_contains("single");
  const auto* specials = o.if_contains("special_tokens");
  if (single == nullptr || !single->is_array())
    return invalid("TemplateProcessing without 'single'");
  bool seen_sequence = false;
  for (const auto& piece : single->get_array()) {
    if (!piece.is_object()) return invalid("TemplateProcessing piece is not an object");
    if (piece.get_object().contains("Sequence")) {
      seen_sequence = true;
      continue;
    }
    const auto* special = piece.get_object().if_contains("SpecialToken");
    if (special == nullptr || !special->is_object())
      return invalid("TemplateProcessing piece is neither Sequence nor SpecialToken");
    const auto name = string_field(special->get_object(), "id", "");
    const json::value* entry =
        specials && specials->is_object() ? specials->get_object().if_contains(name) : nullptr;
    const json::value* ids =
        entry && entry->is_object() ? entry->get_object().if_contains("ids") : nullptr;
    if (ids == nullptr || !ids->is_array())
      return invalid("TemplateProcessing special token '" + name + "' has no ids");
    for (const auto& id : ids->get_array()) {
      auto t = token_id(id);
      if (!t) return invalid("TemplateProcessing special token '" + name + "' has a bad id");
      (seen_sequence ? post.suffix : post.prefix).push_back(*t);
    }
  }
  return {};
}

Status post_processor_from(const json::object& o, PostProcessing& post) {
  const auto type = string_field(o, "type", "");
  if (type == "ByteLevel") return {};
  if (type == "TemplateProcessing") {
    PostProcessing inner;
    if (auto st = template_single(o, inner); !st.ok()) return st;
    post.prefix.insert(post.prefix.begin(), inner.prefix.begin(), inner.prefix.end());
    post.suffix.insert(post.suffix.end(), inner.suffix.begin(), inner.suffix.end());
    post.from_tokenizer_json = true;
    return {};
  }
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    const auto* cls = o.if_contains("cls");
    const auto* sep = o.if_contains("sep");
    if (!cls || !sep || !cls->is_array() || !sep->is_array() || cls->get_array().size() != 2 ||
        sep->get_array().size() != 2) {
      return invalid(type + " without cls/sep");
    }
    auto c = token_id(cls->get_array()[1]);
    auto s = token_id(sep->get_array()[1]);
    if (!c || !s) return invalid(type + " has bad ids");
    post.prefix.insert(post.prefix.begin(), *c);
    post.suffix.push_back(*s);
    post.from_tokenizer_json = true;
    return {};
  }
  if (type == "Sequence") {
    const auto* list = o.if_contains("processors");
    if (list == nullptr || !list->is_array())
      return invalid("Sequence post-processor without 'processors'");
    for (const auto& item : list->get_array()) {
      if (!item.is_object()) return invalid("a post-processor is not an object");
      if (auto st = post_processor_from(item.get_object(), post); !st.ok()) return st;
    }
    return {};
  }
  return unsupported("post-processor", type);
}

}  // namespace

std::string string_field(const json::object& o, std::string_view key, std::string_view fallback) {
  const auto* v = o.if_contains(key);
  if (v == nullptr || !v->is_string()) return std::string(fallback);
  return std::string(v->get_string());
}

bool bool_field(const json::object& o, std::string_view key, bool fallback) {
  const auto* v = o.if_contains(key);
  return v != nullptr && v->is_bool() ? v->get_bool() : fallback;
}

double number(const json::value& v) {
  if (v.is_int64()) return static_cast<double>(v.get_int64());
  if (v.is_uint64()) return static_cast<double>(v.get_uint64());
  if (v.is_double()) return v.get_double();
  return 0.0;
}

std::optional<TokenId> token_id(const json::value& v) {
  constexpr std::int64_t kMaxId = 1 << 26;  // far above any vocabulary; bounds memory on bad input
  if (v.is_int64() && v.get_int64() >= 0 && v.get_int64() < kMaxId)
    return static_cast<TokenId>(v.get_int64());
  if (v.is_uint64() && v.get_uint64() < static_cast<std::uint64_t>(kMaxId))
    return static_cast<TokenId>(v.get_uint64());
  return std::nullopt;
}

Status read_normalizer(const json::value* v, Tokenizer::Impl& impl) {
  Status status;
  const auto* o = as_component(v, "normalizer", status);
  if (o == nullptr) return status;
  auto n = normalizer_from(*o);
  if (!n.ok()) return std::move(n).error();
  impl.normalizer = std::move(*n);
  return {};
}

Status read_pre_tokenizer(const json::value* v, Tokenizer::Impl& impl) {
  Status status;
  const auto* o = as_component(v, "pre_tokenizer", status);
  if (o == nullptr) return status;
  auto p = pre_tokenizer_from(*o);
  if (!p.ok()) return std::move(p).error();
  impl.pre_tokenizer = std::move(*p);
  return {};
}

Status read_decoder(const json::value* v, Tokenizer::Impl& impl) {
  Status status;
  const auto* o = as_component(v, "decoder", status);
  if (o == nullptr) return status;
  auto d = decoder_from(*o);
  if (!d.ok()) return std::move(d).error();
  impl.decoder = std::move(*d);
  return {};
}

Status read_post_processor(const json::value* v, Tokenizer::Impl& impl) {
  Status status;
  const auto* o = as_component(v, "post_processor", status);
  if (o == nullptr) return status;
  return post_processor_from(*o, impl.post);
}

}  // namespace omni::tokenizer
