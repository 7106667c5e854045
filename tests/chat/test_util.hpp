// Helpers for the chat template tests: render a template source with a JSON context.
#pragma once

#include <string>
#include <string_view>

#include <boost/json.hpp>

#include "omni/chat/template.hpp"

namespace omni::chat::testing {

inline Result<std::string> render(std::string_view source, std::string_view context_json = "{}",
                                  const RenderLimits& limits = {}) {
  auto tmpl = Template::parse(source);
  if (!tmpl.ok()) return std::move(tmpl).error();
  boost::json::parse_options options;
  options.max_depth = 10000;  // deep contexts are for the interpreter to refuse, not the parser
  const auto context = boost::json::parse(context_json, {}, options).as_object();
  return tmpl->render(context, limits);
}

// The rendered text, or "ERROR: <message>" so that expectations read naturally.
inline std::string text(std::string_view source, std::string_view context_json = "{}") {
  auto out = render(source, context_json);
  return out.ok() ? *out : "ERROR: " + out.error().message;
}

}  // namespace omni::chat::testing
