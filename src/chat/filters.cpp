// Filters, dict methods and globals of the template language (see builtins.hpp).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <optional>

#include "builtins.hpp"
#include "format.hpp"
#include "text.hpp"
#include "try.hpp"

namespace omni::chat::jinja {
namespace {

Error invalid(std::string message) {
  return make_error(ErrorCode::kInvalidArgument, std::move(message));
}

Error unknown_filter(std::string_view name, const Value& operand) {
  return invalid("unsupported filter '" + std::string(name) + "' on a " +
                 std::string(operand.type_name()));
}

const Value* argument(const CallArgs* args, std::size_t index, std::string_view keyword) {
  if (args == nullptr) return nullptr;
  if (index < args->positional.size()) return &args->positional[index];
  return args->keyword(keyword);
}

// JS parseInt(s, 10): leading whitespace, a sign, the longest run of digits.
std::optional<std::int64_t> parse_int_prefix(std::string_view s) {
  s = js_trim_start(s);
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  std::size_t n = 0;
  while (n < s.size() && s[n] >= '0' && s[n] <= '9') ++n;
  if (n == 0) return std::nullopt;
  std::int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + n, v);
  if (ec != std::errc()) v = INT64_MAX;
  return negative ? -v : v;
}

// JS parseFloat: leading whitespace, the longest decimal prefix (or Infinity).
std::optional<double> parse_float_prefix(std::string_view s) {
  s = js_trim_start(s);
  bool negative = false;
  std::string_view body = s;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
    negative = body[0] == '-';
    body.remove_prefix(1);
  }
  if (body.substr(0, 8) == "Infinity") return negative ? -INFINITY : INFINITY;
  const bool starts_number =
      !body.empty() && ((body[0] >= '0' && body[0] <= '9') ||
                        (body[0] == '.' && body.size() > 1 && body[1] >= '0' && body[1] <= '9'));
  if (!starts_number) return std::nullopt;
  double d = 0;
  std::from_chars(body.data(), body.data() + body.size(), d);
  return negative ? -d : d;
}

// Element spelling for `join` (JS Array.prototype.join on the raw values).
Result<std::string> join_values(Interpreter& in, const std::vector<Value>& items,
                                const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += sep;
    const Value& v = items[i];
    if (v.is_none() || v.is_undefined()) continue;
    if (v.is_object() || v.is(Value::Kind::kNamespace) || v.is_array() ||
        v.is(Value::Kind::kFunction)) {
      return invalid("join: cannot join a " + std::string(v.type_name()) + " element");
    }
    OMNI_CHAT_TRY(text, to_concat_string(v, in.budget()));
    out += text;
    OMNI_CHAT_CHECK(in.check_size(out.size()));
  }
  return out;
}

// compareRuntimeValues of the reference: numbers (and booleans) numerically, strings
// (case-insensitively unless asked), none with none; anything else is an error.
Result<int> compare_values(const Value& a, const Value& b, bool case_sensitive) {
  if (a.is_none() && b.is_none()) return 0;
  if (a.is_undefined() && b.is_undefined()) return 0;
  auto numeric_like = [](const Value& v) { return v.is_number() || v.is(Value::Kind::kBool); };
  auto numeric = [](const Value& v) {
    return v.is(Value::Kind::kBool) ? (v.as_bool() ? 1.0 : 0.0) : v.as_number();
  };
  if (numeric_like(a) && numeric_like(b)) {
    const double x = numeric(a);
    const double y = numeric(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) {
    const std::string x = case_sensitive ? a.as_string() : unicode_lower(a.as_string());
    const std::string y = case_sensitive ? b.as_string() : unicode_lower(b.as_string());
    return x < y ? -1 : x > y ? 1 : 0;
  }
  return invalid("cannot compare a " + std::string(a.type_name()) + " with a " +
                 std::string(b.type_name()));
}

Result<Value> sort_values(Interpreter& in, std::vector<Value> items, bool reverse,
                          bool case_sensitive, const std::function<Value(const Value&)>& key) {
  OMNI_CHAT_CHECK(in.charge(items.size() * 4));
  std::optional<Error> failure;
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    if (failure) return false;
    auto c = compare_values(key(x), key(y), case_sensitive);
    if (!c.ok()) {
      failure = c.error();
      return false;
    }
    return reverse ? *c > 0 : *c < 0;
  });
  if (failure) return *failure;
  return Value::array(std::move(items));
}

// getAttributeValue of the reference: "a.b.0" walks objects by key and arrays by index.
Value attribute_path(const Value& item, const std::string& path) {
  Value v = item;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = path.find('.', start);
    const std::string part =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (v.is_object() || v.is(Value::Kind::kNamespace)) {
      const Value* next = v.as_object().find(part);
      v = next != nullptr ? *next : Value();
    } else if (v.is_array()) {
      auto index = parse_int_prefix(part);
      if (!index || *index < 0 || static_cast<std::size_t>(*index) >= v.items().size())
        return Value();
      v = v.items()[static_cast<std::size_t>(*index)];
    } else {
      return Value();
    }
    if (dot == std::string::npos) return v;
    start = dot + 1;
  }
}

Result<Value> tojson_filter(Interpreter& in, const Value& operand, const CallArgs* args) {
  JsonFormat format;
  if (args != nullptr) {
    if (const Value* indent = args->keyword("indent"); indent && !indent->is_none()) {
      if (!indent->is(Value::Kind::kInt)) return invalid("tojson: indent must be an integer");
      format.indent = indent->as_int();
    }
    if (const Value* ascii = args->keyword("ensure_ascii")) {
      if (!ascii->is(Value::Kind::kBool)) return invalid("tojson: ensure_ascii must be a boolean");
      format.ensure_ascii = ascii->as_bool();
    }
    if (const Value* sort = args->keyword("sort_keys")) {
      if (!sort->is(Value::Kind::kBool)) return invalid("tojson: sort_keys must be a boolean");
      format.sort_keys = sort->as_bool();
    }
    if (const Value* seps = args->keyword("separators"); seps && !seps->is_none()) {
      if (!seps->is_array() || seps->items().size() != 2 || !seps->items()[0].is_string() ||
          !seps->items()[1].is_string()) {
        return invalid("tojson: separators must be a tuple of two strings");
      }
      format.separators =
          std::make_pair(seps->items()[0].as_string(), seps->items()[1].as_string());
    }
  }
  OMNI_CHAT_TRY(text, to_json(operand, format, in.budget()));
  return Value::string(std::move(text));
}

Result<Value> select_filter(Interpreter& in, const Value& operand, std::string_view name,
                            const CallArgs& args) {
  const bool select = name == "selectattr";
  for (const Value& item : operand.items()) {
    if (!item.is_object() && !item.is(Value::Kind::kNamespace)) {
      return invalid(std::string(name) + " can only be applied to a list of objects");
    }
  }
  if (args.positional.empty() || !args.keywords.empty())
    return invalid(std::string(name) + " needs string arguments");
  for (const Value& a : args.positional) {
    if (!a.is_string())
      return invalid("the arguments of " + std::string(name) + " must be strings");
  }
  OMNI_CHAT_CHECK(in.charge(operand.items().size()));
  const std::string& attr = args.positional[0].as_string();
  const Value* test = args.positional.size() > 1 ? &args.positional[1] : nullptr;
  const Value* other = args.positional.size() > 2 ? &args.positional[2] : nullptr;
  std::vector<Value> kept;
  for (const Value& item : operand.items()) {
    const Value* a = item.as_object().find(attr);
    bool result = false;
    if (a != nullptr) {
      if (test != nullptr) {
        OMNI_CHAT_TRY(r, apply_test_with(*a, test->as_string(), other));
        result = r;
      } else {
        result = a->truthy();
      }
    }
    if (result == select) kept.push_back(item);
  }
  return Value::array(std::move(kept));
}

Result<Value> map_filter(Interpreter& in, const Value& operand, const CallArgs& args) {
  const Value* attr = args.keyword("attribute");
  if (attr == nullptr) return invalid("unsupported: map without attribute=");
  if (!attr->is_string()) return invalid("map: attribute must be a string");
  const Value* fallback = args.keyword("default");
  OMNI_CHAT_CHECK(in.charge(operand.items().size()));
  std::vector<Value> out;
  for (const Value& item : operand.items()) {
    if (!item.is_object() && !item.is(Value::Kind::kNamespace))
      return invalid("map: items must be objects");
    Value v = attribute_path(item, attr->as_string());
    out.push_back(v.is_undefined() && fallback != nullptr ? *fallback : std::move(v));
  }
  return Value::array(std::move(out));
}

Result<Value> sort_filter(Interpreter& in, const Value& operand, const CallArgs* args) {
  const Value* reverse = argument(args, 0, "reverse");
  const Value* case_sensitive = argument(args, 1, "case_sensitive");
  const Value* attribute = argument(args, 2, "attribute");
  if (reverse && !reverse->is(Value::Kind::kBool))
    return invalid("sort: reverse must be a boolean");
  if (case_sensitive && !case_sensitive->is(Value::Kind::kBool))
    return invalid("sort: case_sensitive must be a boolean");
  std::optional<std::string> path;
  if (attribute && !attribute->is_none()) {
    if (attribute->is_string()) {
      path = attribute->as_string();
    } else if (attribute->is(Value::Kind::kInt)) {
      path = std::to_string(attribute->as_int());
    } else {
      return invalid("sort: attribute must be a string, an integer or none");
    }
  }
  auto key = [&path](const Value& v) { return path ? attribute_path(v, *path) : v; };
  return sort_values(in, operand.items(), reverse && reverse->as_bool(),
                     case_sensitive && case_sensitive->as_bool(), key);
}

Result<Value> indent_filter(const std::string& s, const CallArgs* args) {
  const Value* width = argument(args, 0, "width");
  const Value* first = argument(args, 1, "first");
  const Value* blank = argument(args, 2, "blank");
  if (width && !width->is(Value::Kind::kInt)) return invalid("indent: width must be an integer");
  const std::int64_t w = width ? std::clamp<std::int64_t>(width->as_int(), 0, 1024) : 4;
  const std::string pad(static_cast<std::size_t>(w), ' ');
  const bool indent_first = first && first->truthy();
  const bool indent_blank = blank && blank->truthy();
  std::string out;
  std::size_t start = 0;
  for (std::size_t line = 0;; ++line) {
    const std::size_t nl = s.find('\n', start);
    const std::string_view text =
        std::string_view(s).substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    if (line > 0) out += '\n';
    if (!((line == 0 && !indent_first) || (text.empty() && !indent_blank))) out += pad;
    out += text;
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return Value::string(std::move(out));
}

Result<Value> array_filter(Interpreter& in, const Value& operand, std::string_view name,
                           const CallArgs* args) {
  const auto& items = operand.items();
  if (name == "list") return operand;
  if (name == "first") return items.empty() ? Value() : items.front();
  if (name == "last") return items.empty() ? Value() : items.back();
  if (name == "length") return Value::integer(static_cast<std::int64_t>(items.size()));
  if (name == "reverse") return Value::array(std::vector<Value>(items.rbegin(), items.rend()));
  if (name == "sort") return sort_filter(in, operand, args);
  if (name == "join") {
    OMNI_CHAT_TRY(joined, join_values(in, items, std::string()));
    return Value::string(std::move(joined));
  }
  if (name == "string") {
    JsonFormat format;
    format.undefined_as_null = false;
    OMNI_CHAT_TRY(text, to_json(operand, format, in.budget()));
    return Value::string(std::move(text));
  }
  if (name == "unique") {
    OMNI_CHAT_CHECK(in.charge(items.size() * items.size() / 16 + items.size()));
    std::vector<Value> out;
    for (const Value& item : items) {
      if (std::none_of(out.begin(), out.end(),
                       [&](const Value& seen) { return strict_equal(seen, item); })) {
        out.push_back(item);
      }
    }
    return Value::array(std::move(out));
  }
  if (args != nullptr && (name == "selectattr" || name == "rejectattr"))
    return select_filter(in, operand, name, *args);
  if (args != nullptr && name == "map") return map_filter(in, operand, *args);
  return unknown_filter(name, operand);
}

Result<Value> string_filter(Interpreter& in, const Value& operand, std::string_view name,
                            const CallArgs* args) {
  const std::string& s = operand.as_string();
  if (args == nullptr) {
    if (name == "length") return Value::integer(static_cast<std::int64_t>(utf16_length(s)));
    if (name == "upper") return Value::string(unicode_upper(s));
    if (name == "lower") return Value::string(unicode_lower(s));
    if (name == "title") return Value::string(title_case(s));
    if (name == "capitalize") return Value::string(capitalize(s));
    if (name == "trim") return Value::string(std::string(js_trim(s)));
    if (name == "string" || name == "join") return operand;
    if (name == "int") return Value::integer(parse_int_prefix(s).value_or(0));
    if (name == "float") return Value::floating(parse_float_prefix(s).value_or(0.0));
    if (name == "indent") return indent_filter(s, nullptr);
  } else {
    if (name == "indent") return indent_filter(s, args);
    if (name == "replace") return call_string_method(s, "replace", *args);
  }
  (void)in;
  return unknown_filter(name, operand);
}

Result<Value> number_filter(const Value& operand, std::string_view name) {
  const bool is_int = operand.is(Value::Kind::kInt);
  if (name == "abs") {
    if (is_int) {
      if (operand.as_int() == INT64_MIN) return invalid("integer overflow");
      return Value::integer(operand.as_int() < 0 ? -operand.as_int() : operand.as_int());
    }
    return Value::floating(std::fabs(operand.as_float()));
  }
  if (name == "int") {
    if (is_int) return operand;
    const double f = std::floor(operand.as_float());
    if (!std::isfinite(f) || std::fabs(f) >= 9.2e18) return invalid("int: value out of range");
    return Value::integer(static_cast<std::int64_t>(f));
  }
  if (name == "float") return Value::floating(operand.as_number());
  if (name == "string") {
    return Value::string(is_int ? std::to_string(operand.as_int())
                                : float_to_output(operand.as_float()));
  }
  return unknown_filter(name, operand);
}

Result<Value> bool_filter(const Value& operand, std::string_view name) {
  const bool b = operand.as_bool();
  if (name == "bool") return operand;
  if (name == "int") return Value::integer(b ? 1 : 0);
  if (name == "float") return Value::floating(b ? 1.0 : 0.0);
  if (name == "string") return Value::string(b ? "true" : "false");
  return unknown_filter(name, operand);
}

// The filters taking arguments that apply to several types (join, int, float, default).
std::optional<Result<Value>> generic_call_filter(Interpreter& in, const Value& operand,
                                                 std::string_view name, const CallArgs& args) {
  if (name == "join") {
    const Value* sep = argument(&args, 0, "separator");
    if (sep && !sep->is_string())
      return Result<Value>(invalid("join: the separator must be a string"));
    const std::string separator = sep ? sep->as_string() : std::string();
    std::vector<Value> items;
    if (operand.is_string()) {
      for (auto cp : code_points(operand.as_string()))
        items.push_back(Value::string(std::string(cp)));
    } else if (operand.is_array()) {
      items = operand.items();
    } else {
      return Result<Value>(unknown_filter(name, operand));
    }
    auto text = join_values(in, items, separator);
    if (!text.ok()) return Result<Value>(std::move(text).error());
    return Result<Value>(Value::string(std::move(text).value()));
  }
  if (name == "int" || name == "float") {
    const bool to_int = name == "int";
    const Value* fallback = argument(&args, 0, "default");
    const Value zero = to_int ? Value::integer(0) : Value::floating(0.0);
    if (operand.is_string()) {
      if (to_int) {
        auto v = parse_int_prefix(operand.as_string());
        return Result<Value>(v ? Value::integer(*v) : (fallback ? *fallback : zero));
      }
      auto v = parse_float_prefix(operand.as_string());
      return Result<Value>(v ? Value::floating(*v) : (fallback ? *fallback : zero));
    }
    if (operand.is_number()) return Result<Value>(operand);
    if (operand.is(Value::Kind::kBool)) {
      const bool b = operand.as_bool();
      return Result<Value>(to_int ? Value::integer(b ? 1 : 0) : Value::floating(b ? 1.0 : 0.0));
    }
    return Result<Value>(unknown_filter(name, operand));
  }
  if (name == "default") {
    const Value fallback = args.positional.empty() ? Value::string("") : args.positional[0];
    const Value* boolean = argument(&args, 1, "boolean");
    if (boolean && !boolean->is(Value::Kind::kBool))
      return Result<Value>(invalid("default: boolean must be a boolean"));
    const bool use = operand.is_undefined() || (boolean && boolean->as_bool() && !operand.truthy());
    return Result<Value>(use ? fallback : operand);
  }
  return std::nullopt;
}

}  // namespace

Result<Value> apply_filter(Interpreter& in, const Value& operand, std::string_view name,
                           CallArgs* args, Scope&) {
  if (name == "safe") return operand;
  if (name == "tojson") return tojson_filter(in, operand, args);
  if (args != nullptr) {
    if (auto result = generic_call_filter(in, operand, name, *args)) return std::move(*result);
  }
  if (operand.is_array()) return array_filter(in, operand, name, args);
  if (operand.is_string()) return string_filter(in, operand, name, args);
  if (args != nullptr) {
    if (operand.is_object() && name != "length") {
      OMNI_CHAT_CHECK(in.charge(operand.as_object().size()));
      return call_object_builtin(operand, name, *args);
    }
    return unknown_filter(name, operand);
  }
  if (operand.is_number()) return number_filter(operand, name);
  if (operand.is(Value::Kind::kBool)) return bool_filter(operand, name);
  if (operand.is_object()) {
    if (name == "length")
      return Value::integer(static_cast<std::int64_t>(operand.as_object().size()));
    OMNI_CHAT_CHECK(in.charge(operand.as_object().size()));
    return call_object_builtin(operand, name, CallArgs{});
  }
  return unknown_filter(name, operand);
}

namespace {

Result<Value> dictsort(const Value& object, const CallArgs& args) {
  const Value* case_sensitive = argument(&args, 0, "case_sensitive");
  const Value* by = argument(&args, 1, "by");
  const Value* reverse = argument(&args, 2, "reverse");
  if (case_sensitive && !case_sensitive->is(Value::Kind::kBool))
    return invalid("dictsort: case_sensitive must be a boolean");
  if (by && (!by->is_string() || (by->as_string() != "key" && by->as_string() != "value"))) {
    return invalid("dictsort: by must be 'key' or 'value'");
  }
  if (reverse && !reverse->is(Value::Kind::kBool))
    return invalid("dictsort: reverse must be a boolean");
  std::vector<Value> pairs;
  for (const auto& [key, value] : object.as_object().entries()) {
    pairs.push_back(Value::array({Value::string(key), value}));
  }
  const std::size_t index = by && by->as_string() == "value" ? 1 : 0;
  const bool cs = case_sensitive && case_sensitive->as_bool();
  const bool rev = reverse && reverse->as_bool();
  std::optional<Error> failure;
  std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& x, const Value& y) {
    if (failure) return false;
    auto c = compare_values(x.items()[index], y.items()[index], cs);
    if (!c.ok()) {
      failure = c.error();
      return false;
    }
    return rev ? *c > 0 : *c < 0;
  });
  if (failure) return *failure;
  return Value::array(std::move(pairs));
}

}  // namespace

Result<Value> call_object_builtin(const Value& object, std::string_view name,
                                  const CallArgs& args) {
  if (!object.is_object()) return unknown_filter(name, object);
  const ObjectMap& map = object.as_object();
  if (name == "get") {
    if (args.positional.empty() || !args.positional[0].is_string())
      return invalid("get: the key must be a string");
    if (const Value* v = map.find(args.positional[0].as_string())) return *v;
    return args.positional.size() > 1 ? args.positional[1] : Value::none();
  }
  if (name == "items") {
    std::vector<Value> out;
    for (const auto& [key, value] : map.entries())
      out.push_back(Value::array({Value::string(key), value}));
    return Value::array(std::move(out));
  }
  if (name == "keys") {
    std::vector<Value> out;
    for (const auto& [key, value] : map.entries()) out.push_back(Value::string(key));
    return Value::array(std::move(out));
  }
  if (name == "values") {
    std::vector<Value> out;
    for (const auto& [key, value] : map.entries()) out.push_back(value);
    return Value::array(std::move(out));
  }
  if (name == "dictsort") return dictsort(object, args);
  return unknown_filter(name, object);
}

namespace {

Result<Value> namespace_fn(Interpreter&, CallArgs& args, Scope&) {
  if (args.positional.size() > 1) return invalid("namespace() takes at most 1 positional argument");
  ObjectMap map;
  if (args.positional.size() == 1) {
    const Value& source = args.positional[0];
    if (source.is_object()) {
      for (const auto& [key, value] : source.as_object().entries()) map.set(key, value);
    } else if (source.is_array()) {
      for (const Value& pair : source.items()) {
        if (!pair.is_array() || pair.items().size() != 2 || !pair.items()[0].is_string()) {
          return invalid("namespace() expects a dict or a list of (name, value) pairs");
        }
        map.set(pair.items()[0].as_string(), pair.items()[1]);
      }
    } else {
      return invalid("namespace() expects a dict or a list of pairs, got a " +
                     std::string(source.type_name()));
    }
  }
  for (const auto& [key, value] : args.keywords) map.set(key, value);
  if (map.has_namespace()) return invalid("unsupported: a namespace inside a namespace");
  return Value::ns(std::move(map));
}

Result<Value> range_fn(Interpreter& in, CallArgs& args, Scope&) {
  if (!args.keywords.empty() || args.positional.empty() || args.positional.size() > 3) {
    return invalid("range() takes 1 to 3 integer arguments");
  }
  for (const Value& a : args.positional) {
    if (!a.is(Value::Kind::kInt)) return invalid("range() arguments must be integers");
  }
  std::int64_t start = 0;
  std::int64_t stop = args.positional[0].as_int();
  std::int64_t step = 1;
  if (args.positional.size() > 1) {
    start = stop;
    stop = args.positional[1].as_int();
  }
  if (args.positional.size() > 2) step = args.positional[2].as_int();
  if (step == 0) return invalid("range() step must not be zero");
  const long double span = static_cast<long double>(stop) - static_cast<long double>(start);
  const long double count_ld =
      std::max<long double>(0, std::ceil(span / static_cast<long double>(step)));
  const auto count = static_cast<std::size_t>(std::min<long double>(count_ld, 1e18L));
  OMNI_CHAT_CHECK(in.charge(count));
  std::vector<Value> out;
  out.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    out.push_back(Value::integer(start + static_cast<std::int64_t>(i) * step));
  }
  return Value::array(std::move(out));
}

Result<Value> raise_exception_fn(Interpreter& in, CallArgs& args, Scope&) {
  std::string message;
  for (std::size_t i = 0; i < args.positional.size(); ++i) {
    if (i > 0) message += ',';
    auto text = to_concat_string(args.positional[i], in.budget());
    message += text.ok() ? *text : std::string("?");
  }
  return invalid("raise_exception: " + message);
}

}  // namespace

std::string format_time(std::int64_t unix_seconds, std::string_view format) {
  static constexpr const char* kShort[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                           "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  static constexpr const char* kLong[] = {"January",   "February", "March",    "April",
                                          "May",       "June",     "July",     "August",
                                          "September", "October",  "November", "December"};
  // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm): no libc clock calls.
  const std::int64_t days =
      unix_seconds >= 0 ? unix_seconds / 86400 : (unix_seconds - 86399) / 86400;
  const std::int64_t secs = unix_seconds - days * 86400;
  const std::int64_t z = days + 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const std::int64_t doe = z - era * 146097;
  const std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const std::int64_t mp = (5 * doy + 2) / 153;
  const std::int64_t day = doy - (153 * mp + 2) / 5 + 1;
  const std::int64_t month = mp < 10 ? mp + 3 : mp - 9;
  const std::int64_t year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  auto pad2 = [](std::int64_t v) { return (v < 10 ? "0" : "") + std::to_string(v); };
  std::string out;
  for (std::size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%' || i + 1 == format.size()) {
      out += format[i];
      continue;
    }
    const char c = format[++i];
    const auto m = static_cast<std::size_t>(month - 1);
    switch (c) {
      case 'Y': out += std::to_string(year); break;
      case 'm': out += pad2(month); break;
      case 'd': out += pad2(day); break;
      case 'b': out += kShort[m]; break;
      case 'B': out += kLong[m]; break;
      case 'H': out += pad2(secs / 3600); break;
      case 'M': out += pad2(secs % 3600 / 60); break;
      case '%': out += '%'; break;
      default: out += '%'; out += c;
    }
  }
  return out;
}

void install_globals(Scope& globals, std::optional<std::int64_t> now_unix_seconds) {
  if (now_unix_seconds) {
    const std::int64_t now = *now_unix_seconds;
    globals.set("strftime_now",
                Value::function([now](Interpreter& in, CallArgs& args, Scope&) -> Result<Value> {
                  if (args.positional.size() != 1 || !args.positional[0].is_string()) {
                    return invalid("strftime_now() takes one format string");
                  }
                  std::string text = format_time(now, args.positional[0].as_string());
                  OMNI_CHAT_CHECK(in.check_size(text.size()));
                  return Value::string(std::move(text));
                }));
  }
  globals.set("true", Value::boolean(true));
  globals.set("false", Value::boolean(false));
  globals.set("none", Value::none());
  globals.set("True", Value::boolean(true));
  globals.set("False", Value::boolean(false));
  globals.set("None", Value::none());
  globals.set("namespace", Value::function(namespace_fn));
  globals.set("range", Value::function(range_fn));
  globals.set("raise_exception", Value::function(raise_exception_fn));
}

}  // namespace omni::chat::jinja
