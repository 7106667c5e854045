// The byte spans of a JSON object's top-level members. Internal to rewrite.cpp: it trusts its
// input to be one valid JSON object (rewrite.cpp validates with Boost.JSON first), so it only
// has to find boundaries, never to diagnose.
#pragma once

#include <string_view>
#include <vector>

#include "omni/proxy/rewrite.hpp"

namespace omni::proxy::detail {

std::vector<JsonMember> scan_valid_object(std::string_view json);

}  // namespace omni::proxy::detail
