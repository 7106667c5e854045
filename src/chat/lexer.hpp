// The template lexer: the whitespace preprocessing that transformers applies
// (trim_blocks + lstrip_blocks, one trailing newline dropped, the `{% generation %}` tag
// removed), then tokens, each with the 1-based source line it came from.
//
// It follows @huggingface/jinja's lexer exactly, since rendering must be byte-identical:
// `{%-`/`{{-`/`{#-` trim the preceding text with JS whitespace rules, `-%}`/`-}}`/`-#}` skip
// the following whitespace, and `-`/`+` after an operator lex as a signed number or a unary sign.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "omni/common/result.hpp"

namespace omni::chat::jinja {

enum class TokenType : std::uint8_t {
  kText,
  kNumber,
  kString,
  kIdentifier,
  kEquals,
  kOpenParen,
  kCloseParen,
  kOpenStatement,
  kCloseStatement,
  kOpenExpression,
  kCloseExpression,
  kOpenBracket,
  kCloseBracket,
  kOpenBrace,
  kCloseBrace,
  kComma,
  kDot,
  kColon,
  kPipe,
  kAdditive,        // + - ~
  kMultiplicative,  // * / // %
  kPower,           // **
  kComparison,      // < > <= >= == !=
  kUnary,           // a sign not followed by a number
  kComment,
};

struct Token {
  TokenType type;
  std::string value;
  std::uint32_t line;
};

// A readable name for a token type, used in parse errors ("'%}'", "text").
std::string_view token_type_name(TokenType type);

// kInvalidArgument "line N: ..." on an unterminated comment/string, a bad escape, or an
// unexpected character.
Result<std::vector<Token>> tokenize(std::string_view source);

}  // namespace omni::chat::jinja
