#include "builtins.hpp"

#include <charconv>
#include <cmath>

#include "format.hpp"
#include "text.hpp"
#include "try.hpp"

namespace omni::chat::jinja {
namespace {

Error invalid(std::string message) {
  return make_error(ErrorCode::kInvalidArgument, std::move(message));
}

// Number(string) in JS: whitespace-trimmed decimal (or Infinity); "" is 0; anything else NaN.
double js_to_number(std::string_view s) {
  s = js_trim(s);
  if (s.empty()) return 0;
  bool negative = false;
  std::string_view body = s;
  if (body[0] == '+' || body[0] == '-') {
    negative = body[0] == '-';
    body.remove_prefix(1);
  }
  if (body == "Infinity") return negative ? -INFINITY : INFINITY;
  if (body.empty() || body[0] == '+' || body[0] == '-' ||
      body.find_first_of("iInN") != std::string_view::npos) {
    return NAN;
  }
  double d = 0;
  auto [ptr, ec] = std::from_chars(body.data(), body.data() + body.size(), d);
  if (ec != std::errc() || ptr != body.data() + body.size()) return NAN;
  return negative ? -d : d;
}

bool is_object_builtin(std::string_view name) {
  return name == "get" || name == "items" || name == "keys" || name == "values" ||
         name == "dictsort";
}

bool is_string_method(std::string_view name) {
  return name == "upper" || name == "lower" || name == "strip" || name == "title" ||
         name == "capitalize" || name == "rstrip" || name == "lstrip" || name == "startswith" ||
         name == "endswith" || name == "split" || name == "replace";
}

}  // namespace

bool strict_equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return a.as_number() == b.as_number();
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone: return true;
    case Value::Kind::kBool: return a.as_bool() == b.as_bool();
    case Value::Kind::kString: return a.as_string() == b.as_string();
    default: return a.identity() == b.identity();
  }
}

bool loose_equal(const Value& a, const Value& b) {
  const bool a_nullish = a.is_none() || a.is_undefined();
  const bool b_nullish = b.is_none() || b.is_undefined();
  if (a_nullish || b_nullish) return a_nullish && b_nullish;
  auto numeric_like = [](const Value& v) { return v.is_number() || v.is(Value::Kind::kBool); };
  auto numeric = [](const Value& v) {
    return v.is(Value::Kind::kBool) ? (v.as_bool() ? 1.0 : 0.0) : v.as_number();
  };
  if (numeric_like(a) && numeric_like(b)) return numeric(a) == numeric(b);
  if (a.is_string() && numeric_like(b)) return js_to_number(a.as_string()) == numeric(b);
  if (b.is_string() && numeric_like(a)) return js_to_number(b.as_string()) == numeric(a);
  return strict_equal(a, b);
}

Result<bool> apply_test(const Value& v, std::string_view name) {
  using K = Value::Kind;
  if (name == "boolean") return v.is(K::kBool);
  if (name == "callable") return v.is(K::kFunction);
  if (name == "odd" || name == "even") {
    if (!v.is(K::kInt))
      return invalid("cannot test '" + std::string(name) + "' on a " + std::string(v.type_name()));
    return (v.as_int() % 2 != 0) == (name == "odd");
  }
  if (name == "false") return v.is(K::kBool) && !v.as_bool();
  if (name == "true") return v.is(K::kBool) && v.as_bool();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.is(K::kInt);
  if (name == "iterable") return (v.is_array() && !v.is_tuple()) || v.is_string();
  if (name == "mapping") return v.is_object();
  if (name == "sequence") return v.is_array() || v.is_object() || v.is_string();
  if (name == "lower") return v.is_string() && v.as_string() == unicode_lower(v.as_string());
  if (name == "upper") return v.is_string() && v.as_string() == unicode_upper(v.as_string());
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "equalto" || name == "eq")
    return invalid("unsupported: test '" + std::string(name) + "' needs an argument");
  return invalid("unknown test '" + std::string(name) + "'");
}

Result<bool> apply_test_with(const Value& v, std::string_view name, const Value* other) {
  if (name == "equalto" || name == "eq") {
    if (other == nullptr)
      return invalid("test '" + std::string(name) + "' needs a value to compare with");
    return strict_equal(v, *other);
  }
  return apply_test(v, name);
}

Result<Value> get_member(const Value& object, const Value& key) {
  if (object.is_object() || object.is(Value::Kind::kNamespace)) {
    if (!key.is_string())
      return invalid("cannot index a " + std::string(object.type_name()) + " with a " +
                     std::string(key.type_name()));
    if (const Value* v = object.as_object().find(key.as_string())) return *v;
    if (object.is_object() && is_object_builtin(key.as_string())) {
      const std::string name = key.as_string();
      return Value::function([object, name](Interpreter&, CallArgs& args, Scope&) {
        return call_object_builtin(object, name, args);
      });
    }
    return Value();
  }
  if (object.is_array() || object.is_string()) {
    if (key.is(Value::Kind::kInt)) {
      const std::int64_t i = key.as_int();
      if (object.is_array()) {
        const auto n = static_cast<std::int64_t>(object.items().size());
        const std::int64_t at = i < 0 ? n + i : i;
        return at >= 0 && at < n ? object.items()[static_cast<std::size_t>(at)] : Value();
      }
      const auto cps = code_points(object.as_string());
      const auto n = static_cast<std::int64_t>(cps.size());
      const std::int64_t at = i < 0 ? n + i : i;
      return at >= 0 && at < n ? Value::string(std::string(cps[static_cast<std::size_t>(at)]))
                               : Value();
    }
    if (!key.is_string())
      return invalid("cannot index a " + std::string(object.type_name()) + " with a " +
                     std::string(key.type_name()));
    if (key.as_string() == "length") {
      return Value::integer(static_cast<std::int64_t>(
          object.is_array() ? object.items().size() : utf16_length(object.as_string())));
    }
    if (object.is_string() && is_string_method(key.as_string())) {
      const std::string name = key.as_string();
      return Value::function([object, name](Interpreter&, CallArgs& args, Scope&) {
        return call_string_method(object.as_string(), name, args);
      });
    }
    return Value();
  }
  if (!key.is_string()) {
    return invalid("cannot index a " + std::string(object.type_name()) + " with a " +
                   std::string(key.type_name()));
  }
  return Value();  // e.g. an attribute of none or undefined: undefined, as in the reference
}

namespace {

Result<Value> string_split(const std::string& s, const CallArgs& args) {
  const Value sep = args.positional.size() > 0 ? args.positional[0] : Value::none();
  const Value maxsplit_v = args.positional.size() > 1 ? args.positional[1] : Value::integer(-1);
  if (!sep.is_string() && !sep.is_none())
    return invalid("split: the separator must be a string or none");
  if (!maxsplit_v.is(Value::Kind::kInt)) return invalid("split: maxsplit must be an integer");
  const std::int64_t maxsplit = maxsplit_v.as_int();
  std::vector<Value> parts;
  if (sep.is_none()) {
    std::string_view rest = js_trim_start(s);
    while (!rest.empty()) {
      if (maxsplit != -1 && static_cast<std::int64_t>(parts.size()) >= maxsplit) {
        parts.push_back(Value::string(std::string(rest)));
        break;
      }
      std::size_t end = 0;
      while (end < rest.size() && js_space_at(rest, end) == 0) ++end;
      parts.push_back(Value::string(std::string(rest.substr(0, end))));
      rest = js_trim_start(rest.substr(end));
    }
    return Value::array(std::move(parts));
  }
  const std::string& d = sep.as_string();
  if (d.empty()) return invalid("split: empty separator");
  std::size_t start = 0;
  while (true) {
    if (maxsplit != -1 && static_cast<std::int64_t>(parts.size()) >= maxsplit) break;
    const std::size_t hit = s.find(d, start);
    if (hit == std::string::npos) break;
    parts.push_back(Value::string(s.substr(start, hit - start)));
    start = hit + d.size();
  }
  parts.push_back(Value::string(s.substr(start)));
  return Value::array(std::move(parts));
}

Result<std::string> replace_all(const std::string& s, const std::string& from,
                                const std::string& to, std::int64_t count, std::size_t budget) {
  std::string out;
  std::int64_t remaining = count < 0 ? INT64_MAX : count;
  if (from.empty()) {
    // An empty pattern matches before every code point and at the end.
    for (std::string_view cp : code_points(s)) {
      if (remaining > 0) {
        out += to;
        --remaining;
      }
      out.append(cp);
      if (out.size() > budget) break;
    }
    if (remaining > 0) out += to;
  } else {
    std::size_t start = 0;
    while (remaining > 0) {
      const std::size_t hit = s.find(from, start);
      if (hit == std::string::npos) break;
      out.append(s, start, hit - start);
      out += to;
      start = hit + from.size();
      --remaining;
      if (out.size() > budget) break;
    }
    out.append(s, start);
  }
  if (out.size() > budget) {
    return make_error(ErrorCode::kTooLarge,
                      "replace result exceeded the limit of " + std::to_string(budget) + " bytes");
  }
  return out;
}

// The limit of a string built by a builtin; the interpreter checks the final output too.
constexpr std::size_t kBuiltinStringBudget = 64u << 20;

Result<Value> string_replace(const std::string& s, const CallArgs& args) {
  if (args.positional.size() < 2) return invalid("replace() needs two arguments");
  const Value& from = args.positional[0];
  const Value& to = args.positional[1];
  if (!from.is_string() || !to.is_string()) return invalid("replace() arguments must be strings");
  Value count = Value::none();
  if (args.positional.size() > 2) count = args.positional[2];
  if (const Value* kw = args.keyword("count")) count = *kw;
  if (!count.is(Value::Kind::kInt) && !count.is_none())
    return invalid("replace() count must be an integer or none");
  OMNI_CHAT_TRY(out, replace_all(s, from.as_string(), to.as_string(),
                                 count.is_none() ? -1 : count.as_int(), kBuiltinStringBudget));
  return Value::string(std::move(out));
}

Result<Value> string_affix(const std::string& s, const CallArgs& args, bool prefix) {
  const char* name = prefix ? "startswith" : "endswith";
  if (args.positional.empty()) return invalid(std::string(name) + "() needs an argument");
  auto matches = [&](const std::string& p) {
    return p.size() <= s.size() && (prefix ? s.compare(0, p.size(), p) == 0
                                           : s.compare(s.size() - p.size(), p.size(), p) == 0);
  };
  const Value& pattern = args.positional[0];
  if (pattern.is_string()) return Value::boolean(matches(pattern.as_string()));
  if (pattern.is_array()) {
    for (const Value& item : pattern.items()) {
      if (!item.is_string())
        return invalid(std::string(name) + "() tuple elements must be strings");
      if (matches(item.as_string())) return Value::boolean(true);
    }
    return Value::boolean(false);
  }
  return invalid(std::string(name) + "() argument must be a string or a tuple of strings");
}

}  // namespace

Result<Value> call_string_method(const std::string& s, std::string_view name,
                                 const CallArgs& args) {
  // As in the reference, strip/lstrip/rstrip ignore a `chars` argument and remove whitespace.
  if (name == "upper") return Value::string(unicode_upper(s));
  if (name == "lower") return Value::string(unicode_lower(s));
  if (name == "strip") return Value::string(std::string(js_trim(s)));
  if (name == "lstrip") return Value::string(std::string(js_trim_start(s)));
  if (name == "rstrip") return Value::string(std::string(js_trim_end(s)));
  if (name == "title") return Value::string(title_case(s));
  if (name == "capitalize") return Value::string(capitalize(s));
  if (name == "startswith") return string_affix(s, args, true);
  if (name == "endswith") return string_affix(s, args, false);
  if (name == "split") return string_split(s, args);
  if (name == "replace") return string_replace(s, args);
  return invalid("unknown string method '" + std::string(name) + "'");
}

}  // namespace omni::chat::jinja
