// The template AST: one node type with a kind, a source line and kind-specific fields.
// Built once by the parser (parser.hpp), immutable afterwards, walked by the interpreter.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace omni::chat::jinja {

enum class NodeKind : std::uint8_t {
  // Statements
  kText,         // text: literal output
  kOutput,       // {{ a }}
  kSet,          // a = target, b = value (or body when null)
  kIf,           // a = test, body, alternate
  kFor,          // a = loop target (identifier or tuple), b = iterable, c = filter test or null,
                 // body, alternate (the else block)
  kMacro,        // text = name, args = parameters (identifiers / keyword defaults), body
  kCallBlock,    // a = call expression, args = caller parameters, body
  kFilterBlock,  // a = filter (identifier or call), body
  kBreak,
  kContinue,
  kComment,
  // Expressions
  kInteger,        // int_value
  kFloat,          // float_value
  kString,         // text
  kArray,          // args
  kTuple,          // args
  kObject,         // args = key, value, key, value, ...
  kIdentifier,     // text
  kCall,           // a = callee, args
  kMember,         // a = object, b = property; flag = computed (a[b]) rather than a.b
  kSlice,          // a/b/c = start/stop/step, each may be null
  kUnary,          // text = operator (not, -, +), a = operand
  kBinary,         // text = operator, a, b
  kFilter,         // a = operand, b = filter (identifier or call)
  kTest,           // a = operand, text = test name, flag = negated
  kSelect,         // a = value, b = condition (`a if b` without else)
  kTernary,        // a = condition, b = true value, c = false value
  kKeyword,        // text = name, a = value (name=value in calls, defaults in macros)
  kSpread,         // *a in a call
  kKeywordSpread,  // **a in a call
};

struct Node;
using NodePtr = std::unique_ptr<Node>;

struct Node {
  NodeKind kind;
  std::uint32_t line = 0;
  std::string text;
  // `text` shared, for string literals and attribute names: evaluating them then allocates
  // nothing (set by the parser).
  std::shared_ptr<const std::string> shared_text;
  std::int64_t int_value = 0;
  double float_value = 0;
  bool flag = false;
  NodePtr a, b, c;
  std::vector<NodePtr> args;
  std::vector<NodePtr> body;
  std::vector<NodePtr> alternate;
};

}  // namespace omni::chat::jinja
