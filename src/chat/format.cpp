#include "format.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include <boost/json.hpp>

#include "text.hpp"
#include "try.hpp"

namespace omni::chat::jinja {
namespace {

Error too_large(std::size_t budget) {
  return make_error(ErrorCode::kTooLarge,
                    "string longer than the limit of " + std::to_string(budget) + " bytes");
}

class JsonWriter {
 public:
  JsonWriter(const JsonFormat& f, std::size_t budget) : f_(f), budget_(budget) {
    if (f.separators) {
      item_sep_ = f.separators->first;
      key_sep_ = f.separators->second;
    } else {
      item_sep_ = f.indent && *f.indent != 0 ? "," : ", ";
      key_sep_ = ": ";
    }
    // JS: `indent ? " ".repeat(indent) : ""`: 0 or negative means no pretty-printing.
    if (f.indent && *f.indent > 0)
      indent_.assign(static_cast<std::size_t>(std::min<std::int64_t>(*f.indent, 64)), ' ');
  }

  Status write(const Value& v, std::size_t depth) {
    if (out.size() > budget_) return too_large(budget_);
    switch (v.kind()) {
      case Value::Kind::kNone: out += "null"; return {};
      case Value::Kind::kUndefined: out += f_.undefined_as_null ? "null" : "undefined"; return {};
      case Value::Kind::kBool: out += v.as_bool() ? "true" : "false"; return {};
      case Value::Kind::kInt: out += std::to_string(v.as_int()); return {};
      case Value::Kind::kFloat: {
        const double d = v.as_float();
        out += std::isfinite(d) ? js_number(d) : "null";
        return {};
      }
      case Value::Kind::kString: json_quote(out, v.as_string(), f_.ensure_ascii); return {};
      case Value::Kind::kArray: return write_array(v.items(), depth);
      case Value::Kind::kObject:
      case Value::Kind::kNamespace: return write_object(v.as_object(), depth);
      case Value::Kind::kFunction:
        return make_error(ErrorCode::kInvalidArgument, "cannot convert a function to JSON");
    }
    return {};
  }

  std::string out;

 private:
  std::string padding(std::size_t depth) const {
    std::string p = "\n";
    for (std::size_t i = 0; i < depth; ++i) p += indent_;
    return p;
  }

  Status write_array(const std::vector<Value>& items, std::size_t depth) {
    const bool pretty = !indent_.empty() && !items.empty();
    out += '[';
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (i > 0) out += item_sep_;
      if (pretty) out += padding(depth + 1);
      OMNI_CHAT_CHECK(write(items[i], depth + 1));
    }
    if (pretty) out += padding(depth);
    out += ']';
    return {};
  }

  Status write_object(const ObjectMap& map, std::size_t depth) {
    std::vector<const std::pair<std::string, Value>*> entries;
    entries.reserve(map.size());
    for (const auto& e : map.entries()) entries.push_back(&e);
    if (f_.sort_keys) {
      std::stable_sort(entries.begin(), entries.end(),
                       [](auto* a, auto* b) { return a->first < b->first; });
    }
    const bool pretty = !indent_.empty() && !entries.empty();
    out += '{';
    for (std::size_t i = 0; i < entries.size(); ++i) {
      if (i > 0) out += item_sep_;
      if (pretty) out += padding(depth + 1);
      json_quote(out, entries[i]->first, f_.ensure_ascii);
      out += key_sep_;
      OMNI_CHAT_CHECK(write(entries[i]->second, depth + 1));
    }
    if (pretty) out += padding(depth);
    out += '}';
    return {};
  }

  const JsonFormat& f_;
  std::size_t budget_;
  std::string item_sep_;
  std::string key_sep_;
  std::string indent_;
};

// A JS array index ("0", "17", not "01" or "-1"): such keys iterate first, in numeric order.
bool is_array_index(std::string_view key, std::uint32_t& index) {
  if (key.empty() || key.size() > 10 || (key.size() > 1 && key[0] == '0')) return false;
  std::uint64_t v = 0;
  for (char c : key) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (v >= 0xFFFFFFFFull) return false;
  index = static_cast<std::uint32_t>(v);
  return true;
}

Result<Value> convert(const boost::json::value& json, std::size_t depth, std::size_t max_depth);

Result<Value> convert_object(const boost::json::object& obj, std::size_t depth,
                             std::size_t max_depth) {
  std::vector<std::pair<std::uint32_t, const boost::json::key_value_pair*>> indexed;
  std::vector<const boost::json::key_value_pair*> named;
  for (const auto& kv : obj) {
    std::uint32_t index = 0;
    if (is_array_index(kv.key(), index)) {
      indexed.emplace_back(index, &kv);
    } else {
      named.push_back(&kv);
    }
  }
  std::stable_sort(indexed.begin(), indexed.end(),
                   [](auto& a, auto& b) { return a.first < b.first; });
  ObjectMap map;
  auto add = [&](const boost::json::key_value_pair& kv) -> Status {
    OMNI_CHAT_TRY(v, convert(kv.value(), depth + 1, max_depth));
    map.set(std::string(kv.key()), std::move(v));
    return {};
  };
  for (auto& [index, kv] : indexed) OMNI_CHAT_CHECK(add(*kv));
  for (auto* kv : named) OMNI_CHAT_CHECK(add(*kv));
  return Value::object(std::move(map));
}

Value convert_double(double d) {
  // JS has one number type; @huggingface/jinja calls an integral number an integer.
  constexpr double kLimit = 9223372036854775807.0;
  if (std::isfinite(d) && d == std::trunc(d) && std::fabs(d) < kLimit) {
    return Value::integer(static_cast<std::int64_t>(d));
  }
  return Value::floating(d);
}

Result<Value> convert(const boost::json::value& json, std::size_t depth, std::size_t max_depth) {
  if (depth > max_depth) {
    return make_error(ErrorCode::kTooLarge,
                      "context JSON nested deeper than " + std::to_string(max_depth));
  }
  switch (json.kind()) {
    case boost::json::kind::null: return Value::none();
    case boost::json::kind::bool_: return Value::boolean(json.get_bool());
    case boost::json::kind::int64: return Value::integer(json.get_int64());
    case boost::json::kind::uint64: {
      const std::uint64_t u = json.get_uint64();
      if (u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        return Value::integer(static_cast<std::int64_t>(u));
      }
      return Value::floating(static_cast<double>(u));
    }
    case boost::json::kind::double_: return convert_double(json.get_double());
    case boost::json::kind::string: return Value::string(std::string(json.get_string()));
    case boost::json::kind::array: {
      std::vector<Value> items;
      items.reserve(json.get_array().size());
      for (const auto& item : json.get_array()) {
        OMNI_CHAT_TRY(v, convert(item, depth + 1, max_depth));
        items.push_back(std::move(v));
      }
      return Value::array(std::move(items));
    }
    case boost::json::kind::object: return convert_object(json.get_object(), depth, max_depth);
  }
  return Value::none();
}

}  // namespace

Result<std::string> to_json(const Value& v, const JsonFormat& format, std::size_t budget) {
  JsonWriter writer(format, budget);
  OMNI_CHAT_CHECK(writer.write(v, 0));
  if (writer.out.size() > budget) return too_large(budget);
  return std::move(writer.out);
}

std::string float_to_output(double d) {
  if (d == 0 && std::signbit(d)) return "-0.0";
  // JS `value % 1 === 0 ? value.toFixed(1) : value.toString()`; toFixed switches to the
  // exponent form from 1e21 on, like toString.
  if (std::isfinite(d) && d == std::trunc(d) && std::fabs(d) < 1e21) return js_number(d) + ".0";
  return js_number(d);
}

Result<std::string> to_output(const Value& v, std::size_t budget) {
  switch (v.kind()) {
    case Value::Kind::kNone: return std::string("null");
    case Value::Kind::kUndefined: return std::string("undefined");
    case Value::Kind::kBool: return std::string(v.as_bool() ? "true" : "false");
    case Value::Kind::kInt: return std::to_string(v.as_int());
    case Value::Kind::kFloat: return float_to_output(v.as_float());
    case Value::Kind::kString: return v.as_string();
    case Value::Kind::kArray:
    case Value::Kind::kObject:
    case Value::Kind::kNamespace: {
      JsonFormat format;
      format.undefined_as_null = false;
      return to_json(v, format, budget);
    }
    case Value::Kind::kFunction:
      return make_error(ErrorCode::kInvalidArgument, "cannot print a function");
  }
  return std::string();
}

Result<std::string> to_concat_string(const Value& v, std::size_t budget) {
  switch (v.kind()) {
    case Value::Kind::kInt: return js_number(static_cast<double>(v.as_int()));
    case Value::Kind::kFloat: return js_number(v.as_float());
    case Value::Kind::kArray: {
      // Array.prototype.toString: the elements' own spelling, joined with ",".
      std::string out;
      for (std::size_t i = 0; i < v.items().size(); ++i) {
        if (i > 0) out += ',';
        OMNI_CHAT_TRY(part, to_output(v.items()[i], budget));
        out += part;
        if (out.size() > budget) return too_large(budget);
      }
      return out;
    }
    case Value::Kind::kObject:
    case Value::Kind::kNamespace:
      return make_error(
          ErrorCode::kInvalidArgument,
          "cannot concatenate a " + std::string(v.type_name()) + " to a string (use tojson)");
    default: return to_output(v, budget);
  }
}

Result<Value> from_json(const boost::json::value& json, std::size_t max_depth) {
  return convert(json, 0, max_depth);
}

}  // namespace omni::chat::jinja
