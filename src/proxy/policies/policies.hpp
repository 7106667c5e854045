// The built-in policies, one file each; make_policy() (registry.cpp) maps names to them.
#pragma once

#include <memory>

#include "omni/proxy/policy.hpp"

namespace omni::proxy::policies {

std::unique_ptr<Policy> make_least_outstanding(PolicyOptions options);
std::unique_ptr<Policy> make_round_robin(PolicyOptions options);

}  // namespace omni::proxy::policies
