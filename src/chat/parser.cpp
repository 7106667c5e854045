#include "parser.hpp"

#include <charconv>
#include <initializer_list>
#include <string>
#include <utility>

#include "try.hpp"

namespace omni::chat::jinja {
namespace {

using NodesResult = Result<std::vector<NodePtr>>;

NodePtr make(NodeKind kind, std::uint32_t line) {
  auto node = std::make_unique<Node>();
  node->kind = kind;
  node->line = line;
  return node;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  NodesResult parse_program() {
    std::vector<NodePtr> body;
    while (!at_end()) {
      OMNI_CHAT_TRY(node, parse_any());
      body.push_back(std::move(node));
    }
    return body;
  }

 private:
  // --- token helpers ---
  bool at_end() const { return pos_ >= tokens_.size(); }
  bool is(TokenType type, std::size_t ahead = 0) const {
    return pos_ + ahead < tokens_.size() && tokens_[pos_ + ahead].type == type;
  }
  bool is_identifier(std::string_view name, std::size_t ahead = 0) const {
    return is(TokenType::kIdentifier, ahead) && tokens_[pos_ + ahead].value == name;
  }
  bool is_statement(std::initializer_list<std::string_view> names) const {
    if (!is(TokenType::kOpenStatement) || !is(TokenType::kIdentifier, 1)) return false;
    for (auto name : names) {
      if (tokens_[pos_ + 1].value == name) return true;
    }
    return false;
  }
  std::uint32_t line() const {
    if (tokens_.empty()) return 1;
    return tokens_[std::min(pos_, tokens_.size() - 1)].line;
  }
  Error error(const std::string& what) const {
    return make_error(ErrorCode::kInvalidArgument, "line " + std::to_string(line()) + ": " + what);
  }
  std::string describe_current() const {
    if (at_end()) return "end of template";
    const Token& t = tokens_[pos_];
    if (t.type == TokenType::kIdentifier || t.type == TokenType::kNumber)
      return "'" + t.value + "'";
    if (t.type == TokenType::kString) return "string '" + t.value.substr(0, 40) + "'";
    return std::string(token_type_name(t.type));
  }
  Status expect(TokenType type, std::string_view context) {
    if (!is(type)) {
      return error("expected " + std::string(token_type_name(type)) + " " + std::string(context) +
                   ", got " + describe_current());
    }
    ++pos_;
    return {};
  }
  Status expect_end_tag(std::string_view name, std::uint32_t opened_at) {
    if (!is(TokenType::kOpenStatement) || !is_identifier(name, 1)) {
      return error("expected {% " + std::string(name) + " %} for the block opened on line " +
                   std::to_string(opened_at) + ", got " + describe_current());
    }
    pos_ += 2;
    return expect(TokenType::kCloseStatement, "after " + std::string(name));
  }
  // Parses statements until one of `names` starts ({% name ...), or fails at the end.
  Status parse_until(std::vector<NodePtr>& out, std::initializer_list<std::string_view> names,
                     std::string_view block, std::uint32_t opened_at) {
    while (!is_statement(names)) {
      if (at_end()) {
        return error("{% " + std::string(block) + " %} opened on line " +
                     std::to_string(opened_at) + " is never closed");
      }
      OMNI_CHAT_TRY(node, parse_any());
      out.push_back(std::move(node));
    }
    return {};
  }

  // Depth guard for recursive descent.
  struct DepthGuard {
    explicit DepthGuard(std::size_t& d) : depth(d) { ++depth; }
    ~DepthGuard() { --depth; }
    DepthGuard(const DepthGuard&) = delete;
    DepthGuard& operator=(const DepthGuard&) = delete;
    std::size_t& depth;
  };
  Status check_depth() const {
    if (depth_ > kMaxParseDepth)
      return error("template nesting deeper than " + std::to_string(kMaxParseDepth));
    return {};
  }

  // --- statements ---
  Result<NodePtr> parse_any();
  Result<NodePtr> parse_statement();
  Result<NodePtr> parse_set(std::uint32_t at);
  Result<NodePtr> parse_if(std::uint32_t at);
  Result<NodePtr> parse_for(std::uint32_t at);
  Result<NodePtr> parse_macro(std::uint32_t at);
  Result<NodePtr> parse_call_block(std::uint32_t at);
  Result<NodePtr> parse_filter_block(std::uint32_t at);

  // --- expressions ---
  Result<NodePtr> parse_expression();
  Result<NodePtr> parse_sequence(bool primary_only);
  Result<NodePtr> parse_or();
  Result<NodePtr> parse_and();
  Result<NodePtr> parse_not();
  Result<NodePtr> parse_comparison();
  Result<NodePtr> parse_additive();
  Result<NodePtr> parse_multiplicative();
  Result<NodePtr> parse_power();
  Result<NodePtr> parse_test();
  Result<NodePtr> parse_filter();
  Result<NodePtr> parse_filter_callee();
  Result<NodePtr> parse_unary_sign();
  Result<NodePtr> parse_call_member();
  Result<NodePtr> parse_call(NodePtr callee);
  Result<NodePtr> parse_member(NodePtr object);
  Result<NodePtr> parse_subscript();
  Status parse_arguments(std::vector<NodePtr>& out, bool parameters);
  Result<NodePtr> parse_primary();
  Result<NodePtr> parse_number(const Token& token);

  std::vector<Token> tokens_;
  std::size_t pos_ = 0;
  std::size_t depth_ = 0;
};

Result<NodePtr> Parser::parse_any() {
  DepthGuard guard(depth_);
  OMNI_CHAT_CHECK(check_depth());
  const Token& t = tokens_[pos_];
  switch (t.type) {
    case TokenType::kComment: {
      auto node = make(NodeKind::kComment, t.line);
      ++pos_;
      return node;
    }
    case TokenType::kText: {
      auto node = make(NodeKind::kText, t.line);
      node->text = t.value;
      ++pos_;
      return node;
    }
    case TokenType::kOpenStatement: return parse_statement();
    case TokenType::kOpenExpression: {
      auto node = make(NodeKind::kOutput, t.line);
      ++pos_;
      OMNI_CHAT_TRY(expr, parse_expression());
      node->a = std::move(expr);
      OMNI_CHAT_CHECK(expect(TokenType::kCloseExpression, "to close the expression"));
      return node;
    }
    default: return error("unexpected " + describe_current());
  }
}

Result<NodePtr> Parser::parse_statement() {
  const std::uint32_t at = line();
  ++pos_;  // {%
  if (!is(TokenType::kIdentifier))
    return error("expected a statement name after '{%', got " + describe_current());
  const std::string name = tokens_[pos_].value;
  ++pos_;
  if (name == "set") return parse_set(at);
  if (name == "if") return parse_if(at);
  if (name == "for") return parse_for(at);
  if (name == "macro") return parse_macro(at);
  if (name == "call") return parse_call_block(at);
  if (name == "filter") return parse_filter_block(at);
  if (name == "break" || name == "continue") {
    auto node = make(name == "break" ? NodeKind::kBreak : NodeKind::kContinue, at);
    OMNI_CHAT_CHECK(expect(TokenType::kCloseStatement, "after " + name));
    return node;
  }
  --pos_;
  if (name.rfind("end", 0) == 0 || name == "elif" || name == "else") {
    return error("unexpected {% " + name + " %} without a matching opening statement");
  }
  return error("unsupported statement {% " + name + " %}");
}

Result<NodePtr> Parser::parse_set(std::uint32_t at) {
  auto node = make(NodeKind::kSet, at);
  OMNI_CHAT_TRY(target, parse_sequence(false));
  node->a = std::move(target);
  if (is(TokenType::kEquals)) {
    ++pos_;
    OMNI_CHAT_TRY(value, parse_sequence(false));
    node->b = std::move(value);
    OMNI_CHAT_CHECK(expect(TokenType::kCloseStatement, "to close {% set %}"));
    return node;
  }
  OMNI_CHAT_CHECK(expect(TokenType::kCloseStatement, "to close {% set %}"));
  OMNI_CHAT_CHECK(parse_until(node->body, {"endset"}, "set", at));
  OMNI_CHAT_CHECK(expect_end_tag("endset", at));
  return node;
}

Result<NodePtr> Parser::parse_if(std::uint32_t at) {
  auto node = make(NodeKind::kIf, at);
  OMNI_CHAT_TRY(test, parse_expression());
  node->a = std::move(test);
  OMNI_CHAT_CHECK(expect(TokenType::kCloseStatement, "to close {% if %}"));
  OMNI_CHAT_CHECK(parse_until(node->body, {"elif", "else", "endif"}, "if", at));
  if (is_statement({"elif"})) {
    const std::uint32_t elif_at = line();
    pos_ += 2;
    OMNI_CHAT_TRY(nested, parse_if(elif_at));  // consumes the shared {% endif %}
    node->alternate.push_back(std::move(nested));
    return node;
  }
  if (is_statement({"else"})) {
    pos_ += 2;
    OMNI_CHAT_CHECK(expect(TokenType::kCloseStatement, "after else"));
    OMNI_CHAT_CHECK(parse_until(node->alternate, {"endif"}, "if", at));
  }
  OMNI_CHAT_CHECK(expect_end_tag("endif", at));
  return node;
}

Result<NodePtr> Parser::parse_for(std::uint32_t at) {
  auto node = make(NodeKind::kFor, at);
  OMNI_CHAT_TRY(target, parse_sequence(true));
  if (target->kind != NodeKind::kIdentifier && target->kind != NodeKind::kTuple) {
    return error("the loop variable of {% for %} must be a name or a tuple of names");
  }
  node->a = std::move(target);
  if (!is_identifier("in"))
    return error("expected 'in' after the loop variable, got " + describe_current());
  ++pos_;
  OMNI_CHAT_TRY(iterable, parse_expression());
  if (iterable->kind == NodeKind::kSelect) {  // {% for x in xs if cond %}
    node->c = std::move(iterable->b);
    iterable = std::move(iterable->a);
  }
  node->b = std::move(iterable);
  if (is_identifier("recursive")) return error("unsupported: recursive loops");
  OMNI_CHAT_CHECK(expect(TokenType::kCloseStatement, "to close {% for %}"));
  OMNI_CHAT_CHECK(parse_until(node->body, {"endfor", "else"}, "for", at));
  if (is_statement({"else"})) {
    pos_ += 2;
    OMNI_CHAT_CHECK(expect(TokenType::kCloseStatement, "after else"));
    OMNI_CHAT_CHECK(parse_until(node->alternate, {"endfor"}, "for", at));
  }
  OMNI_CHAT_CHECK(expect_end_tag("endfor", at));
  return node;
}

Result<NodePtr> Parser::parse_macro(std::uint32_t at) {
  auto node = make(NodeKind::kMacro, at);
  if (!is(TokenType::kIdentifier))
    return error("expected the macro name, got " + describe_current());
  node->text = tokens_[pos_++].value;
  OMNI_CHAT_CHECK(expect(TokenType::kOpenParen, "after the macro name"));
  OMNI_CHAT_CHECK(parse_arguments(node->args, true));
  OMNI_CHAT_CHECK(expect(TokenType::kCloseStatement, "to close {% macro %}"));
  OMNI_CHAT_CHECK(parse_until(node->body, {"endmacro"}, "macro", at));
  OMNI_CHAT_CHECK(expect_end_tag("endmacro", at));
  return node;
}

Result<NodePtr> Parser::parse_call_block(std::uint32_t at) {
  auto node = make(NodeKind::kCallBlock, at);
  if (is(TokenType::kOpenParen)) {
    ++pos_;
    OMNI_CHAT_CHECK(parse_arguments(node->args, true));
  }
  if (!is(TokenType::kIdentifier)) return error("expected a macro name after {% call %}");
  auto callee = make(NodeKind::kIdentifier, line());
  callee->text = tokens_[pos_++].value;
  if (!is(TokenType::kOpenParen)) return error("expected '(' after the macro name in {% call %}");
  auto call = make(NodeKind::kCall, at);
  call->a = std::move(callee);
  ++pos_;
  OMNI_CHAT_CHECK(parse_arguments(call->args, false));
  node->a = std::move(call);
  OMNI_CHAT_CHECK(expect(TokenType::kCloseStatement, "to close {% call %}"));
  OMNI_CHAT_CHECK(parse_until(node->body, {"endcall"}, "call", at));
  OMNI_CHAT_CHECK(expect_end_tag("endcall", at));
  return node;
}

Result<NodePtr> Parser::parse_filter_block(std::uint32_t at) {
  auto node = make(NodeKind::kFilterBlock, at);
  OMNI_CHAT_TRY(filter, parse_filter_callee());
  node->a = std::move(filter);
  OMNI_CHAT_CHECK(expect(TokenType::kCloseStatement, "to close {% filter %}"));
  OMNI_CHAT_CHECK(parse_until(node->body, {"endfilter"}, "filter", at));
  OMNI_CHAT_CHECK(expect_end_tag("endfilter", at));
  return node;
}

// --- expressions ---

Result<NodePtr> Parser::parse_expression() {
  DepthGuard guard(depth_);
  OMNI_CHAT_CHECK(check_depth());
  OMNI_CHAT_TRY(value, parse_or());
  if (!is_identifier("if")) return value;
  const std::uint32_t at = line();
  ++pos_;
  OMNI_CHAT_TRY(test, parse_or());
  if (is_identifier("else")) {
    ++pos_;
    OMNI_CHAT_TRY(otherwise, parse_expression());
    auto node = make(NodeKind::kTernary, at);
    node->a = std::move(test);
    node->b = std::move(value);
    node->c = std::move(otherwise);
    return node;
  }
  auto node = make(NodeKind::kSelect, at);
  node->a = std::move(value);
  node->b = std::move(test);
  return node;
}

Result<NodePtr> Parser::parse_sequence(bool primary_only) {
  const std::uint32_t at = line();
  auto first = primary_only ? parse_primary() : parse_expression();
  if (!first.ok() || !is(TokenType::kComma)) return first;
  auto tuple = make(NodeKind::kTuple, at);
  tuple->args.push_back(std::move(first).value());
  while (is(TokenType::kComma)) {
    ++pos_;
    OMNI_CHAT_TRY(next, primary_only ? parse_primary() : parse_expression());
    tuple->args.push_back(std::move(next));
  }
  return tuple;
}

Result<NodePtr> Parser::parse_or() {
  OMNI_CHAT_TRY(left, parse_and());
  while (is_identifier("or")) {
    auto node = make(NodeKind::kBinary, line());
    ++pos_;
    node->text = "or";
    OMNI_CHAT_TRY(right, parse_and());
    node->a = std::move(left);
    node->b = std::move(right);
    left = std::move(node);
  }
  return left;
}

Result<NodePtr> Parser::parse_and() {
  OMNI_CHAT_TRY(left, parse_not());
  while (is_identifier("and")) {
    auto node = make(NodeKind::kBinary, line());
    ++pos_;
    node->text = "and";
    OMNI_CHAT_TRY(right, parse_not());
    node->a = std::move(left);
    node->b = std::move(right);
    left = std::move(node);
  }
  return left;
}

Result<NodePtr> Parser::parse_not() {
  if (!is_identifier("not")) return parse_comparison();
  DepthGuard guard(depth_);
  OMNI_CHAT_CHECK(check_depth());
  auto node = make(NodeKind::kUnary, line());
  ++pos_;
  node->text = "not";
  OMNI_CHAT_TRY(operand, parse_not());
  node->a = std::move(operand);
  return node;
}

Result<NodePtr> Parser::parse_comparison() {
  OMNI_CHAT_TRY(left, parse_additive());
  while (true) {
    std::string op;
    if (is_identifier("not") && is_identifier("in", 1)) {
      op = "not in";
      pos_ += 2;
    } else if (is_identifier("in")) {
      op = "in";
      ++pos_;
    } else if (is(TokenType::kComparison)) {
      op = tokens_[pos_++].value;
    } else {
      break;
    }
    auto node = make(NodeKind::kBinary, line());
    node->text = std::move(op);
    OMNI_CHAT_TRY(right, parse_additive());
    node->a = std::move(left);
    node->b = std::move(right);
    left = std::move(node);
  }
  return left;
}

Result<NodePtr> Parser::parse_additive() {
  OMNI_CHAT_TRY(left, parse_multiplicative());
  while (is(TokenType::kAdditive)) {
    auto node = make(NodeKind::kBinary, line());
    node->text = tokens_[pos_++].value;
    OMNI_CHAT_TRY(right, parse_multiplicative());
    node->a = std::move(left);
    node->b = std::move(right);
    left = std::move(node);
  }
  return left;
}

Result<NodePtr> Parser::parse_multiplicative() {
  OMNI_CHAT_TRY(left, parse_power());
  while (is(TokenType::kMultiplicative)) {
    auto node = make(NodeKind::kBinary, line());
    node->text = tokens_[pos_++].value;
    OMNI_CHAT_TRY(right, parse_power());
    node->a = std::move(left);
    node->b = std::move(right);
    left = std::move(node);
  }
  return left;
}

Result<NodePtr> Parser::parse_power() {
  OMNI_CHAT_TRY(left, parse_test());
  while (is(TokenType::kPower)) {
    auto node = make(NodeKind::kBinary, line());
    node->text = tokens_[pos_++].value;
    OMNI_CHAT_TRY(right, parse_test());
    node->a = std::move(left);
    node->b = std::move(right);
    left = std::move(node);
  }
  return left;
}

Result<NodePtr> Parser::parse_test() {
  OMNI_CHAT_TRY(operand, parse_filter());
  while (is_identifier("is")) {
    auto node = make(NodeKind::kTest, line());
    ++pos_;
    if (is_identifier("not")) {
      node->flag = true;
      ++pos_;
    }
    if (!is(TokenType::kIdentifier))
      return error("expected a test name after 'is', got " + describe_current());
    node->text = tokens_[pos_++].value;
    if (is(TokenType::kOpenParen))
      return error("unsupported: test with arguments ('is " + node->text + "(...)')");
    node->a = std::move(operand);
    operand = std::move(node);
  }
  return operand;
}

Result<NodePtr> Parser::parse_filter_callee() {
  if (!is(TokenType::kIdentifier))
    return error("expected a filter name, got " + describe_current());
  auto name = make(NodeKind::kIdentifier, line());
  name->text = tokens_[pos_++].value;
  if (!is(TokenType::kOpenParen)) return name;
  auto call = make(NodeKind::kCall, name->line);
  call->a = std::move(name);
  ++pos_;
  OMNI_CHAT_CHECK(parse_arguments(call->args, false));
  return call;
}

Result<NodePtr> Parser::parse_filter() {
  OMNI_CHAT_TRY(operand, parse_unary_sign());
  while (is(TokenType::kPipe)) {
    auto node = make(NodeKind::kFilter, line());
    ++pos_;
    OMNI_CHAT_TRY(filter, parse_filter_callee());
    node->a = std::move(operand);
    node->b = std::move(filter);
    operand = std::move(node);
  }
  return operand;
}

Result<NodePtr> Parser::parse_unary_sign() {
  if ((is(TokenType::kUnary) || is(TokenType::kAdditive)) &&
      (tokens_[pos_].value == "-" || tokens_[pos_].value == "+")) {
    DepthGuard guard(depth_);
    OMNI_CHAT_CHECK(check_depth());
    auto node = make(NodeKind::kUnary, line());
    node->text = tokens_[pos_++].value;
    OMNI_CHAT_TRY(operand, parse_unary_sign());
    node->a = std::move(operand);
    return node;
  }
  return parse_call_member();
}

Result<NodePtr> Parser::parse_call_member() {
  OMNI_CHAT_TRY(primary, parse_primary());
  OMNI_CHAT_TRY(member, parse_member(std::move(primary)));
  if (is(TokenType::kOpenParen)) return parse_call(std::move(member));
  return member;
}

Result<NodePtr> Parser::parse_call(NodePtr callee) {
  NodePtr expr = std::move(callee);
  while (is(TokenType::kOpenParen)) {
    auto call = make(NodeKind::kCall, line());
    ++pos_;
    OMNI_CHAT_CHECK(parse_arguments(call->args, false));
    call->a = std::move(expr);
    OMNI_CHAT_TRY(member, parse_member(std::move(call)));
    expr = std::move(member);
  }
  return expr;
}

// After '(' up to and including ')'.
Status Parser::parse_arguments(std::vector<NodePtr>& out, bool parameters) {
  bool saw_keyword = false;
  bool saw_spread = false;
  while (!is(TokenType::kCloseParen)) {
    if (at_end()) return error("unexpected end of template in an argument list");
    const bool keyword_spread = is(TokenType::kPower);
    const bool spread = is(TokenType::kMultiplicative) && tokens_[pos_].value == "*";
    if (parameters && (keyword_spread || spread))
      return error("argument unpacking in a macro's parameters");
    if (keyword_spread) {
      auto node = make(NodeKind::kKeywordSpread, line());
      ++pos_;
      OMNI_CHAT_TRY(value, parse_expression());
      node->a = std::move(value);
      out.push_back(std::move(node));
      if (is(TokenType::kComma)) ++pos_;
      if (!is(TokenType::kCloseParen)) return error("'**' must be applied to the final argument");
      break;
    }
    NodePtr arg;
    if (spread) {
      if (saw_spread) return error("only one '*' argument unpacking is allowed");
      saw_spread = true;
      arg = make(NodeKind::kSpread, line());
      ++pos_;
      OMNI_CHAT_TRY(value, parse_expression());
      arg->a = std::move(value);
    } else {
      OMNI_CHAT_TRY(value, parse_expression());
      arg = std::move(value);
      if (is(TokenType::kEquals)) {
        ++pos_;
        if (arg->kind != NodeKind::kIdentifier)
          return error("expected a name before '=' in an argument list");
        auto keyword = make(NodeKind::kKeyword, arg->line);
        keyword->text = arg->text;
        OMNI_CHAT_TRY(default_value, parse_expression());
        keyword->a = std::move(default_value);
        arg = std::move(keyword);
      }
      if (parameters && arg->kind != NodeKind::kIdentifier && arg->kind != NodeKind::kKeyword) {
        return error("expected a parameter name in the macro definition");
      }
      if (arg->kind == NodeKind::kKeyword) {
        saw_keyword = true;
      } else if (saw_keyword) {
        return error(parameters ? "non-default parameter follows a default parameter"
                                : "positional argument follows a keyword argument");
      } else if (saw_spread) {
        return error("positional argument follows '*' unpacking");
      }
    }
    out.push_back(std::move(arg));
    if (is(TokenType::kComma)) ++pos_;
  }
  ++pos_;  // ')'
  return {};
}

Result<NodePtr> Parser::parse_subscript() {
  const std::uint32_t at = line();
  NodePtr parts[3];
  std::size_t count = 0;
  bool is_slice = false;
  while (!is(TokenType::kCloseBracket)) {
    if (at_end()) return error("unexpected end of template in a subscript");
    if (count == 3) return error("a slice takes at most 3 parts");
    if (is(TokenType::kColon)) {
      ++count;
      ++pos_;
      is_slice = true;
      continue;
    }
    OMNI_CHAT_TRY(part, parse_expression());
    parts[count++] = std::move(part);
    if (is(TokenType::kColon)) {
      ++pos_;
      is_slice = true;
    }
  }
  ++pos_;  // ']'
  if (count == 0 && !is_slice) return error("empty subscript '[]'");
  if (!is_slice) return std::move(parts[0]);
  auto node = make(NodeKind::kSlice, at);
  node->a = std::move(parts[0]);
  node->b = std::move(parts[1]);
  node->c = std::move(parts[2]);
  return node;
}

Result<NodePtr> Parser::parse_member(NodePtr object) {
  while (is(TokenType::kDot) || is(TokenType::kOpenBracket)) {
    auto node = make(NodeKind::kMember, line());
    node->flag = is(TokenType::kOpenBracket);
    ++pos_;
    if (node->flag) {
      OMNI_CHAT_TRY(property, parse_subscript());
      node->b = std::move(property);
    } else {
      if (!is(TokenType::kIdentifier) && !is(TokenType::kNumber)) {
        return error("expected a name after '.', got " + describe_current());
      }
      OMNI_CHAT_TRY(property, parse_primary());
      if (property->kind != NodeKind::kIdentifier && property->kind != NodeKind::kInteger) {
        return error("expected a name or an integer after '.'");
      }
      if (property->kind == NodeKind::kIdentifier)
        property->shared_text = std::make_shared<const std::string>(property->text);
      node->b = std::move(property);
    }
    node->a = std::move(object);
    object = std::move(node);
  }
  return object;
}

Result<NodePtr> Parser::parse_number(const Token& token) {
  if (token.value.find('.') != std::string::npos) {
    auto node = make(NodeKind::kFloat, token.line);
    node->float_value = std::stod(token.value);
    return node;
  }
  auto node = make(NodeKind::kInteger, token.line);
  const char* begin = token.value.data();
  const char* end = begin + token.value.size();
  if (*begin == '+') ++begin;
  auto [ptr, ec] = std::from_chars(begin, end, node->int_value);
  if (ec != std::errc() || ptr != end) return error("integer literal out of range: " + token.value);
  return node;
}

Result<NodePtr> Parser::parse_primary() {
  if (at_end()) return error("unexpected end of template in an expression");
  DepthGuard guard(depth_);
  OMNI_CHAT_CHECK(check_depth());
  const Token& t = tokens_[pos_++];
  switch (t.type) {
    case TokenType::kNumber: return parse_number(t);
    case TokenType::kString: {
      auto node = make(NodeKind::kString, t.line);
      node->text = t.value;
      while (is(TokenType::kString)) node->text += tokens_[pos_++].value;  // implicit concatenation
      node->shared_text = std::make_shared<const std::string>(node->text);
      return node;
    }
    case TokenType::kIdentifier: {
      auto node = make(NodeKind::kIdentifier, t.line);
      node->text = t.value;
      return node;
    }
    case TokenType::kOpenParen: {
      OMNI_CHAT_TRY(inner, parse_sequence(false));
      OMNI_CHAT_CHECK(expect(TokenType::kCloseParen, "to close '('"));
      return inner;
    }
    case TokenType::kOpenBracket: {
      auto node = make(NodeKind::kArray, t.line);
      while (!is(TokenType::kCloseBracket)) {
        if (at_end()) return error("list literal is never closed with ']'");
        OMNI_CHAT_TRY(item, parse_expression());
        node->args.push_back(std::move(item));
        if (is(TokenType::kComma)) ++pos_;
      }
      ++pos_;
      return node;
    }
    case TokenType::kOpenBrace: {
      auto node = make(NodeKind::kObject, t.line);
      while (!is(TokenType::kCloseBrace)) {
        if (at_end()) return error("dict literal is never closed with '}'");
        OMNI_CHAT_TRY(key, parse_expression());
        OMNI_CHAT_CHECK(expect(TokenType::kColon, "between a key and its value"));
        OMNI_CHAT_TRY(value, parse_expression());
        node->args.push_back(std::move(key));
        node->args.push_back(std::move(value));
        if (is(TokenType::kComma)) ++pos_;
      }
      ++pos_;
      return node;
    }
    default: --pos_; return error("unexpected " + describe_current() + " in an expression");
  }
}

}  // namespace

Result<std::vector<NodePtr>> parse(std::vector<Token> tokens) {
  return Parser(std::move(tokens)).parse_program();
}

}  // namespace omni::chat::jinja
