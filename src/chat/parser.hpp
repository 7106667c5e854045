// The template parser: tokens (lexer.hpp) to an AST (ast.hpp), following the grammar and
// operator precedence of @huggingface/jinja:
//   ternary < or < and < not < comparison/in < + - ~ < * / // % < ** < is-test < |filter
//   < unary sign < call/member < primary.
// Nesting is bounded (kMaxParseDepth) so that a hostile template cannot overflow the stack.
#pragma once

#include <cstddef>
#include <vector>

#include "ast.hpp"
#include "lexer.hpp"
#include "omni/common/result.hpp"

namespace omni::chat::jinja {

inline constexpr std::size_t kMaxParseDepth = 200;

// The template body; kInvalidArgument "line N: ..." naming the construct on a syntax error or
// an unsupported statement (extends, block, include, import, with, raw, ...).
Result<std::vector<NodePtr>> parse(std::vector<Token> tokens);

}  // namespace omni::chat::jinja
