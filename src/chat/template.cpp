#include "omni/chat/template.hpp"

#include <utility>

#include "interpreter.hpp"
#include "lexer.hpp"
#include "parser.hpp"
#include "program.hpp"

namespace omni::chat {

Template::Template(std::shared_ptr<const detail::ChatTemplateProgram> program)
    : program_(std::move(program)) {}

Result<Template> Template::parse(std::string_view source) {
  auto tokens = jinja::tokenize(source);
  if (!tokens.ok()) return std::move(tokens).error();
  auto body = jinja::parse(std::move(tokens).value());
  if (!body.ok()) return std::move(body).error();
  auto program = std::make_shared<detail::ChatTemplateProgram>();
  program->body = std::move(body).value();
  return Template(std::move(program));
}

Result<std::string> Template::render(const boost::json::object& context,
                                     const RenderLimits& limits) const {
  return render(context, limits, std::nullopt);
}

Result<std::string> Template::render(const boost::json::object& context, const RenderLimits& limits,
                                     std::optional<std::int64_t> now_unix_seconds) const {
  jinja::Interpreter interpreter(limits, now_unix_seconds);
  return interpreter.run(program_->body, context);
}

}  // namespace omni::chat
