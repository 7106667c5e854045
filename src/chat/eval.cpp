// Expression evaluation of the interpreter (statements are in interpreter.cpp).
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "builtins.hpp"
#include "format.hpp"
#include "interpreter.hpp"
#include "text.hpp"
#include "try.hpp"

namespace omni::chat::jinja {
namespace {

Error invalid(std::string message) {
  return make_error(ErrorCode::kInvalidArgument, std::move(message));
}

Error bad_operands(std::string_view op, const Value& a, const Value& b) {
  return invalid("unsupported operator '" + std::string(op) + "' between " +
                 std::string(a.type_name()) + " and " + std::string(b.type_name()));
}

bool numeric_like(const Value& v) { return v.is_number() || v.is(Value::Kind::kBool); }
double numeric(const Value& v) {
  return v.is(Value::Kind::kBool) ? (v.as_bool() ? 1.0 : 0.0) : v.as_number();
}

Result<Value> int_arithmetic(std::string_view op, std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  bool overflow = false;
  if (op == "+") {
    overflow = __builtin_add_overflow(a, b, &r);
  } else if (op == "-") {
    overflow = __builtin_sub_overflow(a, b, &r);
  } else if (op == "*") {
    overflow = __builtin_mul_overflow(a, b, &r);
  } else if (op == "/") {
    if (b == 0) return invalid("division by zero");
    return Value::floating(static_cast<double>(a) / static_cast<double>(b));
  } else if (op == "//" || op == "%") {
    if (b == 0) return invalid(op == "//" ? "division by zero" : "modulo by zero");
    if (a == std::numeric_limits<std::int64_t>::min() && b == -1)
      return invalid("integer overflow");
    if (op == "%") return Value::integer(a % b);  // JS remainder: the sign of the dividend
    r = a / b;
    if (a % b != 0 && ((a < 0) != (b < 0))) --r;  // floor, as Math.floor
  } else if (op == "<") {
    return Value::boolean(a < b);
  } else if (op == ">") {
    return Value::boolean(a > b);
  } else if (op == "<=") {
    return Value::boolean(a <= b);
  } else if (op == ">=") {
    return Value::boolean(a >= b);
  } else {
    return invalid("unsupported operator '" + std::string(op) + "' between integers");
  }
  if (overflow) return invalid("integer overflow");
  return Value::integer(r);
}

Result<Value> float_arithmetic(std::string_view op, double a, double b) {
  if (op == "+") return Value::floating(a + b);
  if (op == "-") return Value::floating(a - b);
  if (op == "*") return Value::floating(a * b);
  if (op == "/" || op == "//" || op == "%") {
    if (b == 0) return invalid(op == "%" ? "modulo by zero" : "division by zero");
    if (op == "/") return Value::floating(a / b);
    if (op == "//") return Value::floating(std::floor(a / b));
    return Value::floating(std::fmod(a, b));
  }
  if (op == "<") return Value::boolean(a < b);
  if (op == ">") return Value::boolean(a > b);
  if (op == "<=") return Value::boolean(a <= b);
  if (op == ">=") return Value::boolean(a >= b);
  return invalid("unsupported operator '" + std::string(op) + "' between numbers");
}

Result<Value> power(const Value& left, const Value& right) {
  const double a = numeric(left);
  const double b = numeric(right);
  if (a == 0 && b < 0) return invalid("0.0 cannot be raised to a negative power");
  const double r = std::pow(a, b);
  if (!std::isfinite(r)) return invalid("exponentiation result is not a finite real number");
  const bool is_float = left.is(Value::Kind::kFloat) || right.is(Value::Kind::kFloat) || b < 0;
  if (is_float) return Value::floating(r);
  if (std::fabs(r) >= 9.2e18) return invalid("integer overflow");
  return Value::integer(static_cast<std::int64_t>(r));
}

}  // namespace

Result<Value> Interpreter::eval(const Node& node, Scope& scope) {
  ++depth_;
  struct Leave {
    std::size_t& d;
    ~Leave() { --d; }
  } leave{depth_};
  const std::size_t max_depth = std::min(limits_.max_depth, kMaxEvalDepth);
  if (depth_ > max_depth) {
    return located(make_error(ErrorCode::kTooLarge, "template nesting deeper than the limit of " +
                                                        std::to_string(max_depth)),
                   node.line);
  }
  Status charged = charge(1);
  if (!charged.ok()) return located(std::move(charged).error(), node.line);
  auto result = eval_inner(node, scope);
  if (!result.ok()) return located(std::move(result).error(), node.line);
  return result;
}

Result<Value> Interpreter::eval_inner(const Node& node, Scope& scope) {
  switch (node.kind) {
    case NodeKind::kInteger: return Value::integer(node.int_value);
    case NodeKind::kFloat: return Value::floating(node.float_value);
    case NodeKind::kString: return Value::string(node.shared_text);
    case NodeKind::kArray:
    case NodeKind::kTuple: {
      std::vector<Value> items;
      items.reserve(node.args.size());
      for (const auto& arg : node.args) {
        OMNI_CHAT_TRY(item, eval(*arg, scope));
        items.push_back(std::move(item));
      }
      if (node.kind == NodeKind::kArray) return make_array(std::move(items));
      Value tuple = Value::array(std::move(items), true);
      if (tuple.depth() > kMaxValueDepth)
        return make_error(ErrorCode::kTooLarge, "tuples nested too deeply");
      return tuple;
    }
    case NodeKind::kObject: return eval_object_literal(node, scope);
    case NodeKind::kIdentifier: {
      const Value* v = scope.lookup(node.text);
      return v != nullptr ? *v : Value();
    }
    case NodeKind::kCall: return eval_call(node, scope);
    case NodeKind::kMember: return eval_member(node, scope);
    case NodeKind::kUnary: return eval_unary(node, scope);
    case NodeKind::kBinary: return eval_binary(node, scope);
    case NodeKind::kFilter: {
      OMNI_CHAT_TRY(operand, eval(*node.a, scope));
      return eval_filter(operand, *node.b, scope);
    }
    case NodeKind::kTest: {
      OMNI_CHAT_TRY(operand, eval(*node.a, scope));
      OMNI_CHAT_TRY(result, apply_test(operand, node.text));
      return Value::boolean(node.flag ? !result : result);
    }
    case NodeKind::kSelect: {
      OMNI_CHAT_TRY(test, eval(*node.b, scope));
      if (!test.truthy()) return Value();
      return eval(*node.a, scope);
    }
    case NodeKind::kTernary: {
      OMNI_CHAT_TRY(test, eval(*node.a, scope));
      return eval(test.truthy() ? *node.b : *node.c, scope);
    }
    case NodeKind::kSlice: return invalid("a slice is only valid inside '[...]'");
    case NodeKind::kKeyword: return invalid("keyword argument '" + node.text + "=' outside a call");
    case NodeKind::kSpread:
    case NodeKind::kKeywordSpread: return invalid("argument unpacking outside a call");
    default: return invalid("a statement cannot be used as an expression");
  }
}

Result<Value> Interpreter::eval_object_literal(const Node& node, Scope& scope) {
  ObjectMap map;
  for (std::size_t i = 0; i + 1 < node.args.size(); i += 2) {
    OMNI_CHAT_TRY(key, eval(*node.args[i], scope));
    if (!key.is_string())
      return invalid("dict keys must be strings, got " + std::string(key.type_name()));
    OMNI_CHAT_TRY(value, eval(*node.args[i + 1], scope));
    map.set(key.as_string(), std::move(value));
  }
  if (map.depth() > kMaxValueDepth)
    return make_error(ErrorCode::kTooLarge, "dicts nested too deeply");
  return Value::object(std::move(map));
}

Result<Value> Interpreter::eval_unary(const Node& node, Scope& scope) {
  OMNI_CHAT_TRY(operand, eval(*node.a, scope));
  if (node.text == "not") return Value::boolean(!operand.truthy());
  const bool negate = node.text == "-";
  if (operand.is(Value::Kind::kFloat))
    return Value::floating(negate ? -operand.as_float() : operand.as_float());
  if (operand.is(Value::Kind::kInt) || operand.is(Value::Kind::kBool)) {
    const std::int64_t v =
        operand.is(Value::Kind::kBool) ? (operand.as_bool() ? 1 : 0) : operand.as_int();
    if (negate && v == std::numeric_limits<std::int64_t>::min()) return invalid("integer overflow");
    return Value::integer(negate ? -v : v);
  }
  return invalid("unsupported operator '" + node.text + "' for " +
                 std::string(operand.type_name()));
}

Result<Value> Interpreter::eval_binary(const Node& node, Scope& scope) {
  const std::string& op = node.text;
  OMNI_CHAT_TRY(left, eval(*node.a, scope));
  if (op == "and") return left.truthy() ? eval(*node.b, scope) : Result<Value>(left);
  if (op == "or") return left.truthy() ? Result<Value>(left) : eval(*node.b, scope);
  OMNI_CHAT_TRY(right, eval(*node.b, scope));
  if (op == "==") return Value::boolean(loose_equal(left, right));
  if (op == "!=") return Value::boolean(!loose_equal(left, right));
  const bool membership = op == "in" || op == "not in";
  if (left.is_undefined() || right.is_undefined()) {
    if (right.is_undefined() && membership) return Value::boolean(op == "not in");
    return invalid("unsupported operator '" + op + "' on an undefined value");
  }
  if (left.is_none() || right.is_none())
    return invalid("unsupported operator '" + op + "' on none");
  if (op == "~") {
    OMNI_CHAT_TRY(a, to_concat_string(left, budget()));
    OMNI_CHAT_TRY(b, to_concat_string(right, budget()));
    OMNI_CHAT_CHECK(check_size(a.size() + b.size()));
    return Value::string(a + b);
  }
  if (op == "**" && numeric_like(left) && numeric_like(right)) return power(left, right);
  if (left.is_number() && right.is_number()) {
    if (left.is(Value::Kind::kInt) && right.is(Value::Kind::kInt))
      return int_arithmetic(op, left.as_int(), right.as_int());
    return float_arithmetic(op, left.as_number(), right.as_number());
  }
  if (left.is_array() && right.is_array() && op == "+") {
    std::vector<Value> items = left.items();
    items.insert(items.end(), right.items().begin(), right.items().end());
    return make_array(std::move(items));
  }
  if (right.is_array() && membership) {
    OMNI_CHAT_CHECK(charge(right.items().size()));
    bool found = false;
    for (const Value& item : right.items()) found = found || strict_equal(item, left);
    return Value::boolean(found == (op == "in"));
  }
  if ((left.is_string() || right.is_string()) && op == "+") {
    OMNI_CHAT_TRY(a, to_concat_string(left, budget()));
    OMNI_CHAT_TRY(b, to_concat_string(right, budget()));
    OMNI_CHAT_CHECK(check_size(a.size() + b.size()));
    return Value::string(a + b);
  }
  if (left.is_string() && right.is_string() && membership) {
    const bool found = right.as_string().find(left.as_string()) != std::string::npos;
    return Value::boolean(found == (op == "in"));
  }
  if (left.is_string() && right.is_object() && membership) {
    const bool found = right.as_object().find(left.as_string()) != nullptr;
    return Value::boolean(found == (op == "in"));
  }
  return bad_operands(op, left, right);
}

Status Interpreter::eval_arguments(const std::vector<NodePtr>& args, Scope& scope, CallArgs& out) {
  // Like Python, every positional argument is evaluated before any keyword argument.
  for (const auto& arg : args) {
    if (arg->kind == NodeKind::kSpread) {
      OMNI_CHAT_TRY(list, eval(*arg->a, scope));
      if (!list.is_array())
        return invalid("cannot unpack a " + std::string(list.type_name()) + " with '*'");
      OMNI_CHAT_CHECK(charge(list.items().size()));
      out.positional.insert(out.positional.end(), list.items().begin(), list.items().end());
    } else if (arg->kind != NodeKind::kKeyword && arg->kind != NodeKind::kKeywordSpread) {
      OMNI_CHAT_TRY(value, eval(*arg, scope));
      out.positional.push_back(std::move(value));
    }
  }
  auto add = [&](const std::string& key, Value value) -> Status {
    if (out.keyword(key) != nullptr)
      return invalid("got multiple values for keyword argument '" + key + "'");
    out.keywords.emplace_back(key, std::move(value));
    return {};
  };
  for (const auto& arg : args) {
    if (arg->kind == NodeKind::kKeyword) {
      OMNI_CHAT_TRY(value, eval(*arg->a, scope));
      OMNI_CHAT_CHECK(add(arg->text, std::move(value)));
    } else if (arg->kind == NodeKind::kKeywordSpread) {
      OMNI_CHAT_TRY(map, eval(*arg->a, scope));
      if (!map.is_object()) return invalid("the argument after '**' must be a mapping");
      for (const auto& [key, value] : map.as_object().entries()) OMNI_CHAT_CHECK(add(key, value));
    }
  }
  return {};
}

Result<Value> Interpreter::eval_call(const Node& node, Scope& scope) {
  CallArgs args;
  OMNI_CHAT_CHECK(eval_arguments(node.args, scope, args));
  OMNI_CHAT_TRY(fn, eval(*node.a, scope));
  if (!fn.is(Value::Kind::kFunction)) {
    std::string what =
        node.a->kind == NodeKind::kIdentifier ? "'" + node.a->text + "'"
        : node.a->kind == NodeKind::kMember && node.a->b->kind == NodeKind::kIdentifier
            ? "method '" + node.a->b->text + "'"
            : "expression";
    return invalid("cannot call " + what + ": it is " + std::string(fn.type_name()) +
                   (fn.is_undefined() ? " (unknown function or method)" : ""));
  }
  return call(fn, args, scope);
}

Result<Value> Interpreter::eval_member(const Node& node, Scope& scope) {
  OMNI_CHAT_TRY(object, eval(*node.a, scope));
  Value key;
  if (node.flag) {
    if (node.b->kind == NodeKind::kSlice) return eval_slice(object, *node.b, scope);
    OMNI_CHAT_TRY(k, eval(*node.b, scope));
    key = std::move(k);
  } else if (node.b->kind == NodeKind::kInteger) {
    key = Value::integer(node.b->int_value);
  } else {
    key = Value::string(node.b->shared_text);
  }
  return get_member(object, key);
}

namespace {

// Python-style slice indices (utils.slice of the reference).
std::vector<std::size_t> slice_indices(std::int64_t size, std::optional<std::int64_t> start,
                                       std::optional<std::int64_t> stop, std::int64_t step) {
  std::vector<std::size_t> out;
  std::int64_t from = 0;
  std::int64_t to = 0;
  if (step >= 0) {
    from = start ? (*start < 0 ? std::max<std::int64_t>(size + *start, 0) : std::min(*start, size))
                 : 0;
    to =
        stop ? (*stop < 0 ? std::max<std::int64_t>(size + *stop, 0) : std::min(*stop, size)) : size;
    if (step == 0) return out;
    for (std::int64_t i = from; i < to; i += step) out.push_back(static_cast<std::size_t>(i));
  } else {
    from = start ? (*start < 0 ? std::max<std::int64_t>(size + *start, -1)
                               : std::min(*start, size - 1))
                 : size - 1;
    to = stop ? (*stop < -1 ? std::max<std::int64_t>(size + *stop, -1) : std::min(*stop, size - 1))
              : -1;
    for (std::int64_t i = from; i > to; i += step) out.push_back(static_cast<std::size_t>(i));
  }
  return out;
}

}  // namespace

Result<Value> Interpreter::eval_slice(const Value& object, const Node& slice, Scope& scope) {
  if (!object.is_array() && !object.is_string()) {
    return invalid("cannot slice a " + std::string(object.type_name()));
  }
  std::optional<std::int64_t> parts[3];
  const NodePtr* nodes[3] = {&slice.a, &slice.b, &slice.c};
  for (int i = 0; i < 3; ++i) {
    if (!*nodes[i]) continue;
    OMNI_CHAT_TRY(v, eval(**nodes[i], scope));
    if (v.is_undefined()) continue;
    if (!v.is(Value::Kind::kInt)) return invalid("slice indices must be integers");
    parts[i] = v.as_int();
  }
  const std::int64_t step = parts[2].value_or(1);
  if (object.is_array()) {
    const auto indices =
        slice_indices(static_cast<std::int64_t>(object.items().size()), parts[0], parts[1], step);
    std::vector<Value> items;
    items.reserve(indices.size());
    for (std::size_t i : indices) items.push_back(object.items()[i]);
    return make_array(std::move(items));
  }
  const auto cps = code_points(object.as_string());
  OMNI_CHAT_CHECK(charge(cps.size() / 16));
  const auto indices =
      slice_indices(static_cast<std::int64_t>(cps.size()), parts[0], parts[1], step);
  std::string out;
  for (std::size_t i : indices) out.append(cps[i]);
  return Value::string(std::move(out));
}

Result<Value> Interpreter::eval_filter(const Value& operand, const Node& filter, Scope& scope) {
  if (filter.kind == NodeKind::kIdentifier)
    return apply_filter(*this, operand, filter.text, nullptr, scope);
  CallArgs args;
  OMNI_CHAT_CHECK(eval_arguments(filter.args, scope, args));
  return apply_filter(*this, operand, filter.a->text, &args, scope);
}

}  // namespace omni::chat::jinja
