// The built-in policies, one file each; make_policy() (registry.cpp) maps names to them.
#pragma once

#include <memory>
#include <string_view>

#include "omni/proxy/policy.hpp"

namespace omni::proxy::policies {

std::unique_ptr<Policy> make_least_outstanding(PolicyOptions options);
// An omni::sched placement policy by its name (sched::make_placement_policy's names).
Result<std::unique_ptr<Policy>> make_sched_policy(std::string_view name, PolicyOptions options);

}  // namespace omni::proxy::policies
