// The parsed form behind omni::chat::Template.
#pragma once

#include <vector>

#include "ast.hpp"
#include "omni/chat/template.hpp"

namespace omni::chat::detail {

struct ChatTemplateProgram {
  std::vector<jinja::NodePtr> body;
};

}  // namespace omni::chat::detail
