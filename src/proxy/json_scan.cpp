#include "json_scan.hpp"

#include <array>
#include <boost/json/array.hpp>
#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/error.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/string.hpp>
#include <boost/json/value.hpp>

namespace omni::proxy::detail {
namespace {

namespace json = boost::json;
using json::error_code;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::size_t skip_space(std::string_view s, std::size_t i) {
  while (i < s.size() && is_space(s[i])) ++i;
  return i;
}

// `i` is at the opening quote; returns the index after the closing one.
std::size_t skip_string(std::string_view s, std::size_t i) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == '"') {
      return i + 1;
    }
  }
  return s.size();
}

std::size_t skip_value(std::string_view s, std::size_t i) {
  if (i >= s.size()) return i;
  if (s[i] == '"') return skip_string(s, i);
  if (s[i] == '{' || s[i] == '[') {
    int depth = 0;
    while (i < s.size()) {
      const char c = s[i];
      if (c == '"') {
        i = skip_string(s, i);
        continue;
      }
      if (c == '{' || c == '[') ++depth;
      if (c == '}' || c == ']') --depth;
      ++i;
      if (depth == 0) return i;
    }
    return i;
  }
  while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']' && !is_space(s[i])) ++i;
  return i;
}

// A key as written (quotes included) to its text; escapes are rare, so only they pay for a parse.
std::string decode_key(std::string_view raw) {
  if (raw.find('\\') == std::string_view::npos) return std::string(raw.substr(1, raw.size() - 2));
  boost::system::error_code ec;
  const boost::json::value value = boost::json::parse(raw, ec);
  return !ec && value.is_string() ? std::string(value.get_string()) : std::string();
}

}  // namespace

std::vector<JsonMember> scan_valid_object(std::string_view s) {
  std::vector<JsonMember> members;
  members.reserve(8);  // a request has a handful of members: one allocation, no regrowth
  std::size_t i = skip_space(s, 0);
  if (i >= s.size() || s[i] != '{') return members;
  i = skip_space(s, i + 1);
  while (i < s.size() && s[i] == '"') {
    const std::size_t key_end = skip_string(s, i);
    std::string key = decode_key(s.substr(i, key_end - i));
    i = skip_space(s, key_end);
    if (i < s.size() && s[i] == ':') ++i;
    i = skip_space(s, i);
    const std::size_t value_end = skip_value(s, i);
    members.push_back({std::move(key), s.substr(i, value_end - i)});
    i = skip_space(s, value_end);
    if (i < s.size() && s[i] == ',') i = skip_space(s, i + 1);
  }
  return members;
}

}  // namespace omni::proxy::detail

// ---- validation with Boost.JSON's tokenizer --------------------------------------------------

namespace omni::proxy::detail {
namespace {

// Every basic_parser callback, accepting everything: the parser alone decides validity. The
// size limits are those of the DOM parser's handler, so the verdicts match boost::json::parse.
template <class Derived>
struct AcceptAll {
  static constexpr std::size_t max_object_size = json::object::max_size();
  static constexpr std::size_t max_array_size = json::array::max_size();
  static constexpr std::size_t max_key_size = json::string::max_size();
  static constexpr std::size_t max_string_size = json::string::max_size();

  Derived& self() { return static_cast<Derived&>(*this); }
  bool on_document_begin(error_code&) { return true; }
  bool on_document_end(error_code&) { return true; }
  bool on_object_begin(error_code&) { return self().begin(Kind::kObject), true; }
  bool on_object_end(std::size_t, error_code&) { return self().end(), true; }
  bool on_array_begin(error_code&) { return self().begin(Kind::kArray), true; }
  bool on_array_end(std::size_t, error_code&) { return self().end(), true; }
  bool on_key_part(json::string_view s, std::size_t, error_code&) {
    return self().key_part(s), true;
  }
  bool on_key(json::string_view s, std::size_t, error_code&) { return self().key(s), true; }
  bool on_string_part(json::string_view s, std::size_t n, error_code&) {
    return self().string_part(s, n), true;
  }
  bool on_string(json::string_view s, std::size_t n, error_code&) {
    return self().string(s, n), true;
  }
  bool on_number_part(json::string_view, error_code&) { return true; }
  bool on_int64(std::int64_t v, json::string_view, error_code&) {
    return self().integer(v >= 0, static_cast<std::uint64_t>(v)), true;
  }
  bool on_uint64(std::uint64_t v, json::string_view, error_code&) {
    return self().integer(true, v), true;
  }
  bool on_double(double, json::string_view, error_code&) {
    return self().scalar(Kind::kDouble), true;
  }
  bool on_bool(bool b, error_code&) { return self().boolean(b), true; }
  bool on_null(error_code&) { return self().scalar(Kind::kNull), true; }
  bool on_comment_part(json::string_view, error_code&) { return true; }
  bool on_comment(json::string_view, error_code&) { return true; }

  // Defaults for a handler that only wants the root's kind.
  void begin(Kind kind) { self().scalar(kind); }
  void end() {}
  void key_part(json::string_view) {}
  void key(json::string_view) {}
  void string_part(json::string_view, std::size_t) {}
  void string(json::string_view, std::size_t) { self().scalar(Kind::kString); }
  void integer(bool, std::uint64_t) { self().scalar(Kind::kInt); }
  void boolean(bool) { self().scalar(Kind::kBool); }
};

struct RootKind : AcceptAll<RootKind> {
  Kind root = Kind::kAbsent;
  void scalar(Kind kind) {
    if (root == Kind::kAbsent) root = kind;
  }
};

// Runs Boost.JSON's tokenizer over the whole text, as boost::json::parse does.
template <class Handler>
Status run_parser(json::basic_parser<Handler>& parser, std::string_view text) {
  error_code ec;
  const std::size_t used = parser.write_some(false, text.data(), text.size(), ec);
  if (!ec && used < text.size()) ec = json::error::extra_data;
  if (ec) return make_error(ErrorCode::kInvalidArgument, "invalid JSON: " + ec.message());
  return {};
}

json::parse_options options_with_depth(std::size_t max_depth) {
  json::parse_options options;
  options.max_depth = max_depth;
  return options;
}

// Picks RequestFields out of the event stream. A stack of the containers that matter (the
// root object, stream_options, the prompt list, messages, one message, its content parts, one
// part); anything else is skipped by counting its depth.
class RequestScan : public AcceptAll<RequestScan> {
 public:
  RequestFields fields;

  void begin(Kind kind) {
    if (skipped_ > 0) {
      ++skipped_;
      return;
    }
    const Target target = target_of_value();
    const Frame frame = open(target, kind);
    if (frame == Frame::kSkipped) {
      skipped_ = 1;
    } else if (frame != Frame::kNone) {
      frames_[depth_++] = frame;
    }
  }

  void end() {
    if (skipped_ > 0) {
      --skipped_;
      return;
    }
    if (depth_ == 0) return;
    if (frames_[depth_ - 1] == Frame::kPrompt && prompt_nesting_ > 0) {
      --prompt_nesting_;
      return;
    }
    switch (frames_[--depth_]) {
      case Frame::kStreamOptions: fields.include_usage = usage_; break;
      case Frame::kMessage: fields.message_tokens += content_tokens_; break;
      case Frame::kPart: content_tokens_ += part_tokens_; break;
      default: break;
    }
  }

  void key_part(json::string_view s) {
    if (skipped_ == 0) key_buffer_.append(s.data(), s.size());
  }
  void key(json::string_view s) {
    if (skipped_ > 0) return;
    std::string_view whole(s.data(), s.size());
    if (!key_buffer_.empty()) {
      key_buffer_.append(s.data(), s.size());
      whole = key_buffer_;
    }
    key_ = member_of(whole);
    if (depth_ == 1 && key_ == Target::kNone) note_owned(whole);
    key_buffer_.clear();
  }

  void string_part(json::string_view s, std::size_t total) {
    if (skipped_ == 0 && target_of_value() == Target::kModel) append_model(s, total);
  }
  void string(json::string_view s, std::size_t total) {
    if (skipped_ > 0) return;
    const Target target = target_of_value();
    if (target == Target::kModel) append_model(s, total);
    set(target, Kind::kString, text_tokens(total));
  }
  void integer(bool non_negative, std::uint64_t value) {
    if (skipped_ > 0) return;
    const Target target = target_of_value();
    if ((target == Target::kMaxTokens || target == Target::kMaxCompletionTokens) && non_negative) {
      (target == Target::kMaxTokens ? fields.max_tokens : fields.max_completion_tokens) = value;
      set_kind(target, Kind::kInt);
      return;
    }
    if (target == Target::kPriority) {
      // Negative values arrive as their two's complement; above int64's range is out of range.
      const auto signed_value = static_cast<std::int64_t>(value);
      fields.priority_in_range = non_negative ? signed_value >= 0 : signed_value < 0;
      fields.priority_value = signed_value;
      set_kind(target, Kind::kInt);
      return;
    }
    set(target, Kind::kInt, 1);
  }
  void boolean(bool value) {
    if (skipped_ > 0) return;
    const Target target = target_of_value();
    set(target, Kind::kBool, 0);
    if (target == Target::kStream) fields.stream_value = value;
    if (target == Target::kIncludeUsage) usage_ = value;
  }
  void scalar(Kind kind) {
    if (skipped_ == 0) set(target_of_value(), kind, 0);
  }

 private:
  // What a value is, by its place: a member of a container that matters, or nothing.
  enum class Target : std::uint8_t {
    kRoot,
    kNone,
    kStream,
    kStreamOptions,
    kModel,
    kPrompt,
    kMessages,
    kMaxTokens,
    kMaxCompletionTokens,
    kIncludeUsage,
    kPriority,
    kPromptItem,
    kMessage,
    kContent,
    kPart,
    kText,
  };
  enum class Frame : std::uint8_t {
    kNone,
    kSkipped,
    kTop,
    kStreamOptions,
    kPrompt,
    kMessages,
    kMessage,
    kParts,
    kPart,
  };

  // The member a key names in the current object (only the few that matter).
  Target member_of(std::string_view key) const {
    switch (depth_ == 0 ? Frame::kNone : frames_[depth_ - 1]) {
      case Frame::kTop:
        if (key == "stream") return Target::kStream;
        if (key == "stream_options") return Target::kStreamOptions;
        if (key == "model") return Target::kModel;
        if (key == "prompt") return Target::kPrompt;
        if (key == "messages") return Target::kMessages;
        if (key == "max_tokens") return Target::kMaxTokens;
        if (key == "max_completion_tokens") return Target::kMaxCompletionTokens;
        if (key == "priority") return Target::kPriority;
        return Target::kNone;
      case Frame::kStreamOptions:
        return key == "include_usage" ? Target::kIncludeUsage : Target::kNone;
      case Frame::kMessage: return key == "content" ? Target::kContent : Target::kNone;
      case Frame::kPart: return key == "text" ? Target::kText : Target::kNone;
      default: return Target::kNone;
    }
  }

  Target target_of_value() const {
    if (depth_ == 0) return root_seen_ ? Target::kNone : Target::kRoot;
    switch (frames_[depth_ - 1]) {
      case Frame::kPrompt: return Target::kPromptItem;
      case Frame::kMessages: return Target::kMessage;
      case Frame::kParts: return Target::kPart;
      default: return key_;  // an object: the member named by the last key
    }
  }

  // A container starts at `target`: which frame it opens (kSkipped: one not looked into).
  Frame open(Target target, Kind kind) {
    const bool object = kind == Kind::kObject;
    set(target, kind, 0);
    switch (target) {
      case Target::kRoot: return object ? Frame::kTop : Frame::kSkipped;
      case Target::kStreamOptions: return object ? Frame::kStreamOptions : Frame::kSkipped;
      case Target::kPrompt: prompt_nesting_ = 0; return object ? Frame::kSkipped : Frame::kPrompt;
      case Target::kPromptItem:
        if (object) return Frame::kSkipped;
        ++prompt_nesting_;  // nested lists add up into the same prompt
        return Frame::kNone;
      case Target::kMessages: return object ? Frame::kSkipped : Frame::kMessages;
      case Target::kMessage: return object ? Frame::kMessage : Frame::kSkipped;
      case Target::kContent: return object ? Frame::kSkipped : Frame::kParts;
      case Target::kPart: return object ? Frame::kPart : Frame::kSkipped;
      default: return Frame::kSkipped;
    }
  }

  void note_owned(std::string_view key) {
    const auto keys = proxy_owned_keys();
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (key == keys[i]) fields.proxy_owned |= 1u << i;
    }
  }

  void set_kind(Target target, Kind kind) {
    switch (target) {
      case Target::kRoot:
        root_seen_ = true;
        fields.root_is_object = kind == Kind::kObject;
        break;
      case Target::kStream: fields.stream = kind; break;
      case Target::kModel: fields.model = kind; break;
      case Target::kPrompt: fields.prompt = kind; break;
      case Target::kMessages: fields.messages = kind; break;
      case Target::kMaxTokens: fields.max_tokens_kind = kind; break;
      case Target::kMaxCompletionTokens: fields.max_completion_tokens_kind = kind; break;
      case Target::kPriority: fields.priority = kind; break;
      default: break;
    }
  }

  // A value (scalar or container start) at `target`: the last occurrence of a member wins, so
  // every occurrence resets what an earlier one said. `tokens` counts toward the prompt.
  void set(Target target, Kind kind, std::uint64_t tokens) {
    set_kind(target, kind);
    switch (target) {
      case Target::kStream: fields.stream_value = false; break;
      case Target::kStreamOptions:
        usage_ = false;
        fields.include_usage = false;  // replaced at the object's end when it is one
        break;
      case Target::kModel:
        if (kind != Kind::kString) fields.model_value.clear();
        break;
      case Target::kPrompt: fields.prompt_tokens = tokens; break;
      case Target::kPromptItem: fields.prompt_tokens += tokens; break;
      case Target::kMessages: fields.message_tokens = 0; break;
      case Target::kMessage: content_tokens_ = 0; break;
      case Target::kContent: content_tokens_ = kind == Kind::kString ? tokens : 0; break;
      case Target::kPart: part_tokens_ = 0; break;
      case Target::kText: part_tokens_ = kind == Kind::kString ? tokens : 0; break;
      case Target::kIncludeUsage: usage_ = false; break;
      case Target::kMaxTokens: fields.max_tokens.reset(); break;
      case Target::kMaxCompletionTokens: fields.max_completion_tokens.reset(); break;
      case Target::kPriority: fields.priority_in_range = false; break;
      default: break;
    }
  }

  void append_model(json::string_view s, std::size_t total) {
    if (total == s.size()) fields.model_value.clear();  // the first piece of this string
    fields.model_value.append(s.data(), s.size());
  }

  std::array<Frame, 8> frames_{};  // at most top, messages, message, parts, part
  std::size_t depth_ = 0;
  std::size_t skipped_ = 0;         // depth inside a container not looked into
  std::size_t prompt_nesting_ = 0;  // lists inside the prompt list
  bool root_seen_ = false;
  Target key_ = Target::kNone;
  std::string key_buffer_;  // a key that arrives in pieces (escapes)
  bool usage_ = false;
  std::uint64_t content_tokens_ = 0;
  std::uint64_t part_tokens_ = 0;
};

}  // namespace

std::span<const std::string_view> proxy_owned_keys() noexcept {
  // vLLM's NixlConnector field, SGLang's bootstrap triple and its prefill DP-rank hint, and
  // the body-level request ids of vLLM (request_id) and SGLang (rid).
  static constexpr std::array<std::string_view, 7> kKeys = {"kv_transfer_params",
                                                            "bootstrap_host",
                                                            "bootstrap_port",
                                                            "bootstrap_room",
                                                            "disagg_prefill_dp_rank",
                                                            "request_id",
                                                            "rid"};
  return kKeys;
}

Result<bool> validate_json(std::string_view text, std::size_t max_depth) {
  json::basic_parser<RootKind> parser(options_with_depth(max_depth));
  if (Status status = run_parser(parser, text); !status) return std::move(status).error();
  return parser.handler().root == Kind::kObject;
}

Result<RequestFields> scan_request(std::string_view body, std::size_t max_depth) {
  json::basic_parser<RequestScan> parser(options_with_depth(max_depth));
  if (Status status = run_parser(parser, body); !status) return std::move(status).error();
  return std::move(parser.handler().fields);
}

}  // namespace omni::proxy::detail
