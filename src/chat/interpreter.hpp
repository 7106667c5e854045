// The tree-walking interpreter: executes a parsed template (ast.hpp) over a JSON context,
// with @huggingface/jinja's semantics (scoping, loop variables, operators, filters, tests,
// string and dict methods), bounded by RenderLimits: every node evaluated and every loop
// iteration is a step, bulk copies cost steps by size, strings are capped at
// max_output_bytes, evaluation nesting at max_depth.
#pragma once

#include <boost/json/object.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ast.hpp"
#include "omni/chat/template.hpp"
#include "omni/common/result.hpp"
#include "value.hpp"

namespace omni::chat::jinja {

// A variable scope. A for loop and a macro call open one; if blocks do not (as in Jinja).
class Scope {
 public:
  explicit Scope(Scope* parent) : parent_(parent) {}
  const Value* lookup(std::string_view name) const;
  void set(std::string_view name, Value value);

 private:
  Scope* parent_;
  std::vector<std::pair<std::string, Value>> vars_;
};

// Hard cap on evaluation nesting whatever RenderLimits says, to keep the native stack safe.
inline constexpr std::size_t kMaxEvalDepth = 1000;
// Containers nested deeper than this cannot be built (their printing and freeing recurse).
inline constexpr std::uint32_t kMaxValueDepth = 200;

class Interpreter {
 public:
  Interpreter(const RenderLimits& limits, std::optional<std::int64_t> now_unix_seconds);

  Result<std::string> run(const std::vector<NodePtr>& program, const boost::json::object& context);

  // --- used by the builtins ---
  Status charge(std::size_t steps);
  Status check_size(std::size_t bytes) const;
  std::size_t budget() const { return limits_.max_output_bytes; }
  Result<Value> make_array(std::vector<Value> items);
  Result<Value> call(const Value& fn, CallArgs& args, Scope& scope);

  enum class Flow { kNormal, kBreak, kContinue };

 private:
  Result<Flow> exec_block(const std::vector<NodePtr>& body, Scope& scope, std::string& out);
  Result<Flow> exec(const Node& node, Scope& scope, std::string& out);
  Result<Flow> exec_for(const Node& node, Scope& scope, std::string& out);
  Status exec_set(const Node& node, Scope& scope);
  Status exec_call_block(const Node& node, Scope& scope, std::string& out);
  Value define_macro(const Node& node);
  Status bind_parameters(const std::vector<NodePtr>& params, bool special_args, CallArgs& args,
                         Scope& scope, std::string_view name);
  Result<std::string> capture(const std::vector<NodePtr>& body, Scope& scope);
  Status append(std::string& out, std::string_view text);
  Status emit(std::string& out, const Value& v);

  Result<Value> eval(const Node& node, Scope& scope);
  Result<Value> eval_inner(const Node& node, Scope& scope);
  Result<Value> eval_binary(const Node& node, Scope& scope);
  Result<Value> eval_unary(const Node& node, Scope& scope);
  Result<Value> eval_member(const Node& node, Scope& scope);
  Result<Value> eval_slice(const Value& object, const Node& slice, Scope& scope);
  Result<Value> eval_call(const Node& node, Scope& scope);
  Result<Value> eval_filter(const Value& operand, const Node& filter, Scope& scope);
  Result<Value> eval_object_literal(const Node& node, Scope& scope);
  Status eval_arguments(const std::vector<NodePtr>& args, Scope& scope, CallArgs& out);

  Error located(Error error, std::uint32_t line) const;

  RenderLimits limits_;
  std::optional<std::int64_t> now_;
  std::size_t steps_ = 0;
  std::size_t depth_ = 0;
};

}  // namespace omni::chat::jinja
