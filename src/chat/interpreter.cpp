#include "interpreter.hpp"

#include <algorithm>

#include "builtins.hpp"
#include "format.hpp"
#include "try.hpp"

namespace omni::chat::jinja {
namespace {

// Context JSON deeper than this is refused (messages and tools are a few levels deep).
constexpr std::size_t kMaxContextDepth = 64;

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

Error invalid(std::string message) {
  return make_error(ErrorCode::kInvalidArgument, std::move(message));
}

// Whether a macro body (or its parameter defaults) reads `varargs` or `kwargs`.
bool uses_special_arguments(const Node& node) {
  if (node.kind == NodeKind::kIdentifier && (node.text == "varargs" || node.text == "kwargs"))
    return true;
  for (const NodePtr* child : {&node.a, &node.b, &node.c}) {
    if (*child && uses_special_arguments(**child)) return true;
  }
  for (const auto* list : {&node.args, &node.body, &node.alternate}) {
    for (const auto& child : *list) {
      if (uses_special_arguments(*child)) return true;
    }
  }
  return false;
}

// RAII nesting counter.
class DepthGuard {
 public:
  explicit DepthGuard(std::size_t& depth) : depth_(depth) { ++depth_; }
  ~DepthGuard() { --depth_; }
  DepthGuard(const DepthGuard&) = delete;
  DepthGuard& operator=(const DepthGuard&) = delete;

 private:
  std::size_t& depth_;
};

}  // namespace

const Value* Scope::lookup(std::string_view name) const {
  for (const Scope* s = this; s != nullptr; s = s->parent_) {
    for (const auto& [key, value] : s->vars_) {
      if (key == name) return &value;
    }
  }
  return nullptr;
}

void Scope::set(std::string_view name, Value value) {
  for (auto& [key, existing] : vars_) {
    if (key == name) {
      existing = std::move(value);
      return;
    }
  }
  vars_.emplace_back(std::string(name), std::move(value));
}

Interpreter::Interpreter(const RenderLimits& limits, std::optional<std::int64_t> now_unix_seconds)
    : limits_(limits), now_(now_unix_seconds) {}

Status Interpreter::charge(std::size_t steps) {
  steps_ += steps;
  if (steps_ > limits_.max_steps) {
    return make_error(ErrorCode::kTooLarge, "template exceeded the limit of " +
                                                std::to_string(limits_.max_steps) +
                                                " evaluation steps");
  }
  return {};
}

Status Interpreter::check_size(std::size_t bytes) const {
  if (bytes > limits_.max_output_bytes) {
    return make_error(
        ErrorCode::kTooLarge,
        "output exceeded the limit of " + std::to_string(limits_.max_output_bytes) + " bytes");
  }
  return {};
}

Result<Value> Interpreter::make_array(std::vector<Value> items) {
  OMNI_CHAT_CHECK(charge(items.size()));
  Value v = Value::array(std::move(items));
  if (v.depth() > kMaxValueDepth) {
    return make_error(ErrorCode::kTooLarge,
                      "lists nested deeper than " + std::to_string(kMaxValueDepth));
  }
  return v;
}

Error Interpreter::located(Error error, std::uint32_t line) const {
  if (!starts_with(error.message, "line "))
    error.message = "line " + std::to_string(line) + ": " + error.message;
  return error;
}

Result<std::string> Interpreter::run(const std::vector<NodePtr>& program,
                                     const boost::json::object& context) {
  Scope globals(nullptr);
  install_globals(globals, now_);
  for (const auto& kv : context) {
    if (globals.lookup(kv.key()) != nullptr) {
      return invalid("context variable '" + std::string(kv.key()) + "' would replace a builtin");
    }
    OMNI_CHAT_TRY(value, from_json(kv.value(), kMaxContextDepth));
    globals.set(kv.key(), std::move(value));
  }
  std::string out;
  OMNI_CHAT_TRY(flow, exec_block(program, globals, out));
  if (flow != Flow::kNormal) return invalid("{% break %} or {% continue %} outside a loop");
  return out;
}

Status Interpreter::append(std::string& out, std::string_view text) {
  OMNI_CHAT_CHECK(check_size(out.size() + text.size()));
  out.append(text);
  return {};
}

Status Interpreter::emit(std::string& out, const Value& v) {
  if (v.is_none() || v.is_undefined()) return {};
  if (v.is_string()) return append(out, v.as_string());
  OMNI_CHAT_TRY(text, to_output(v, budget()));
  return append(out, text);
}

Result<std::string> Interpreter::capture(const std::vector<NodePtr>& body, Scope& scope) {
  std::string buffer;
  OMNI_CHAT_TRY(flow, exec_block(body, scope, buffer));
  if (flow != Flow::kNormal) return invalid("{% break %} or {% continue %} outside a loop");
  return buffer;
}

Result<Interpreter::Flow> Interpreter::exec_block(const std::vector<NodePtr>& body, Scope& scope,
                                                  std::string& out) {
  for (const auto& node : body) {
    OMNI_CHAT_TRY(flow, exec(*node, scope, out));
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

Result<Interpreter::Flow> Interpreter::exec(const Node& node, Scope& scope, std::string& out) {
  DepthGuard guard(depth_);
  if (depth_ > std::min(limits_.max_depth, kMaxEvalDepth)) {
    return located(make_error(ErrorCode::kTooLarge,
                              "template nesting deeper than the limit of " +
                                  std::to_string(std::min(limits_.max_depth, kMaxEvalDepth))),
                   node.line);
  }
  Status status = charge(1);
  switch (node.kind) {
    case NodeKind::kText:
      if (status.ok()) status = append(out, node.text);
      break;
    case NodeKind::kComment:
    case NodeKind::kBreak:
    case NodeKind::kContinue: break;
    case NodeKind::kOutput: {
      if (!status.ok()) break;
      auto value = eval(*node.a, scope);
      status = value.ok() ? emit(out, *value) : Status(std::move(value).error());
      break;
    }
    case NodeKind::kSet:
      if (status.ok()) status = exec_set(node, scope);
      break;
    case NodeKind::kIf: {
      if (!status.ok()) break;
      auto test = eval(*node.a, scope);
      if (!test.ok()) return located(std::move(test).error(), node.line);
      auto flow = exec_block(test->truthy() ? node.body : node.alternate, scope, out);
      if (!flow.ok()) return located(std::move(flow).error(), node.line);
      return flow;
    }
    case NodeKind::kFor: {
      if (!status.ok()) break;
      auto flow = exec_for(node, scope, out);
      if (!flow.ok()) return located(std::move(flow).error(), node.line);
      return flow;
    }
    case NodeKind::kMacro:
      if (status.ok()) scope.set(node.text, define_macro(node));
      break;
    case NodeKind::kCallBlock:
      if (status.ok()) status = exec_call_block(node, scope, out);
      break;
    case NodeKind::kFilterBlock: {
      if (!status.ok()) break;
      auto text = capture(node.body, scope);
      if (!text.ok()) return located(std::move(text).error(), node.line);
      auto filtered = eval_filter(Value::string(std::move(text).value()), *node.a, scope);
      status = filtered.ok() ? emit(out, *filtered) : Status(std::move(filtered).error());
      break;
    }
    default: status = invalid("unexpected expression in statement position");
  }
  if (!status.ok()) return located(std::move(status).error(), node.line);
  if (node.kind == NodeKind::kBreak) return Flow::kBreak;
  if (node.kind == NodeKind::kContinue) return Flow::kContinue;
  return Flow::kNormal;
}

Status Interpreter::exec_set(const Node& node, Scope& scope) {
  Value value;
  if (node.b) {
    OMNI_CHAT_TRY(v, eval(*node.b, scope));
    value = std::move(v);
  } else {
    OMNI_CHAT_TRY(text, capture(node.body, scope));
    value = Value::string(std::move(text));
  }
  const Node& target = *node.a;
  if (target.kind == NodeKind::kIdentifier) {
    scope.set(target.text, std::move(value));
    return {};
  }
  if (target.kind == NodeKind::kTuple) {
    if (!value.is_array())
      return invalid("cannot unpack a " + std::string(value.type_name()) + " in set");
    if (value.items().size() != target.args.size()) {
      return invalid(std::string("too ") +
                     (target.args.size() > value.items().size() ? "few" : "many") +
                     " items to unpack in set");
    }
    for (std::size_t i = 0; i < target.args.size(); ++i) {
      if (target.args[i]->kind != NodeKind::kIdentifier)
        return invalid("set can only unpack into names");
      scope.set(target.args[i]->text, value.items()[i]);
    }
    return {};
  }
  if (target.kind == NodeKind::kMember) {
    OMNI_CHAT_TRY(object, eval(*target.a, scope));
    if (!object.is(Value::Kind::kNamespace))
      return invalid("cannot assign an attribute of a non-namespace object");
    if (target.flag || target.b->kind != NodeKind::kIdentifier) {
      return invalid("namespace assignment needs a plain attribute name (ns.name = ...)");
    }
    if (value.has_namespace())
      return invalid("unsupported: storing a namespace inside a namespace");
    object.namespace_map().set(target.b->text, std::move(value));
    return {};
  }
  return invalid("invalid target of {% set %}");
}

Result<Interpreter::Flow> Interpreter::exec_for(const Node& node, Scope& scope, std::string& out) {
  Scope loop_scope(&scope);
  OMNI_CHAT_TRY(iterable, eval(*node.b, loop_scope));
  std::vector<Value> source;
  if (iterable.is_array()) {
    source = iterable.items();
  } else if (iterable.is_object()) {
    for (const auto& [key, value] : iterable.as_object().entries())
      source.push_back(Value::string(key));
  } else {
    return invalid("cannot loop over a " + std::string(iterable.type_name()));
  }
  OMNI_CHAT_CHECK(charge(source.size()));
  const Node& target = *node.a;
  auto bind = [&](Scope& s, const Value& item) -> Status {
    if (target.kind == NodeKind::kIdentifier) {
      s.set(target.text, item);
      return {};
    }
    if (!item.is_array())
      return invalid("cannot unpack a " + std::string(item.type_name()) + " in a for loop");
    if (item.items().size() != target.args.size()) {
      return invalid(std::string("too ") +
                     (target.args.size() > item.items().size() ? "few" : "many") +
                     " items to unpack in a for loop");
    }
    for (std::size_t j = 0; j < target.args.size(); ++j) {
      if (target.args[j]->kind != NodeKind::kIdentifier)
        return invalid("a for loop can only unpack into names");
      s.set(target.args[j]->text, item.items()[j]);
    }
    return {};
  };
  std::vector<Value> items;
  for (const Value& item : source) {
    if (node.c) {
      Scope test_scope(&loop_scope);
      OMNI_CHAT_CHECK(bind(test_scope, item));
      OMNI_CHAT_TRY(keep, eval(*node.c, test_scope));
      if (!keep.truthy()) continue;
    }
    items.push_back(item);
  }
  bool no_iteration = true;
  const auto n = static_cast<std::int64_t>(items.size());
  for (std::int64_t i = 0; i < n; ++i) {
    OMNI_CHAT_CHECK(charge(1));
    const auto at = static_cast<std::size_t>(i);
    ObjectMap loop;
    loop.set("index", Value::integer(i + 1));
    loop.set("index0", Value::integer(i));
    loop.set("revindex", Value::integer(n - i));
    loop.set("revindex0", Value::integer(n - i - 1));
    loop.set("first", Value::boolean(i == 0));
    loop.set("last", Value::boolean(i == n - 1));
    loop.set("length", Value::integer(n));
    loop.set("previtem", i > 0 ? items[at - 1] : Value());
    loop.set("nextitem", i < n - 1 ? items[at + 1] : Value());
    loop_scope.set("loop", Value::object(std::move(loop)));
    OMNI_CHAT_CHECK(bind(loop_scope, items[at]));
    // As in the reference, an iteration cut short by break/continue contributes no output.
    const std::size_t mark = out.size();
    OMNI_CHAT_TRY(flow, exec_block(node.body, loop_scope, out));
    if (flow == Flow::kContinue) {
      out.resize(mark);
      continue;
    }
    if (flow == Flow::kBreak) {
      out.resize(mark);
      break;
    }
    no_iteration = false;
  }
  if (no_iteration) return exec_block(node.alternate, loop_scope, out);
  return Flow::kNormal;
}

Status Interpreter::bind_parameters(const std::vector<NodePtr>& params, bool special_args,
                                    CallArgs& args, Scope& scope, std::string_view name) {
  std::vector<std::pair<std::string, Value>> keywords = std::move(args.keywords);
  std::vector<const Node*> pending_defaults;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Node& param = *params[i];
    Value value;
    bool bound = i < args.positional.size();
    if (bound) value = args.positional[i];
    if (!bound) {
      auto it = std::find_if(keywords.begin(), keywords.end(),
                             [&](auto& kv) { return kv.first == param.text; });
      if (it != keywords.end()) {
        value = std::move(it->second);
        keywords.erase(it);
        bound = true;
      }
    }
    if (!bound && param.kind == NodeKind::kKeyword) pending_defaults.push_back(&param);
    scope.set(param.text, std::move(value));
  }
  if (special_args) {
    ObjectMap kwargs;
    for (auto& [key, value] : keywords) kwargs.set(key, std::move(value));
    scope.set("kwargs", Value::object(std::move(kwargs)));
    std::vector<Value> rest;
    for (std::size_t i = params.size(); i < args.positional.size(); ++i)
      rest.push_back(args.positional[i]);
    scope.set("varargs", Value::array(std::move(rest)));
  } else if (!keywords.empty()) {
    return invalid("macro " + std::string(name) + " takes no keyword argument '" +
                   keywords.front().first + "'");
  } else if (args.positional.size() > params.size()) {
    return invalid("macro " + std::string(name) + " takes at most " +
                   std::to_string(params.size()) + " argument(s)");
  }
  for (const Node* param : pending_defaults) {
    OMNI_CHAT_TRY(value, eval(*param->a, scope));
    scope.set(param->text, std::move(value));
  }
  return {};
}

Value Interpreter::define_macro(const Node& node) {
  const bool special = uses_special_arguments(node);
  const Node* macro = &node;
  return Value::function(
      [macro, special](Interpreter& in, CallArgs& args, Scope& caller) -> Result<Value> {
        Scope macro_scope(&caller);
        OMNI_CHAT_CHECK(in.bind_parameters(macro->args, special, args, macro_scope, macro->text));
        OMNI_CHAT_TRY(text, in.capture(macro->body, macro_scope));
        return Value::string(std::move(text));
      });
}

Status Interpreter::exec_call_block(const Node& node, Scope& scope, std::string& out) {
  // `caller` refers to this statement's scope, so it must not be called once the statement
  // is over (it could be stored in a namespace); `alive` enforces that.
  auto alive = std::make_shared<bool>(true);
  const bool special = uses_special_arguments(node);
  Scope* env = &scope;
  const Node* block = &node;
  Value caller = Value::function(
      [alive, env, block, special](Interpreter& in, CallArgs& args, Scope&) -> Result<Value> {
        if (!*alive) return invalid("caller() used after its {% call %} block ended");
        Scope call_scope(env);
        OMNI_CHAT_CHECK(in.bind_parameters(block->args, special, args, call_scope, "caller"));
        OMNI_CHAT_TRY(text, in.capture(block->body, call_scope));
        return Value::string(std::move(text));
      });
  const Node& call = *node.a;
  CallArgs args;
  OMNI_CHAT_CHECK(eval_arguments(call.args, scope, args));
  OMNI_CHAT_TRY(fn, eval(*call.a, scope));
  Scope call_env(&scope);
  call_env.set("caller", std::move(caller));
  auto result = this->call(fn, args, call_env);
  *alive = false;
  if (!result.ok()) return std::move(result).error();
  return emit(out, *result);
}

Result<Value> Interpreter::call(const Value& fn, CallArgs& args, Scope& scope) {
  if (!fn.is(Value::Kind::kFunction))
    return invalid("cannot call a " + std::string(fn.type_name()));
  return fn.as_function()(*this, args, scope);
}

}  // namespace omni::chat::jinja
