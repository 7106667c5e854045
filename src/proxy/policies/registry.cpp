#include "policies.hpp"

#include <string>

namespace omni::proxy {
namespace {

struct Entry {
  std::string_view name;
  std::unique_ptr<Policy> (*make)(PolicyOptions);
};

constexpr Entry kPolicies[] = {
    {"least-outstanding", &policies::make_least_outstanding},
    {"round-robin", &policies::make_round_robin},
};

}  // namespace

Result<std::unique_ptr<Policy>> make_policy(std::string_view name, PolicyOptions options) {
  for (const Entry& entry : kPolicies) {
    if (entry.name == name) return entry.make(options);
  }
  return make_error(ErrorCode::kNotFound, "unknown policy '" + std::string(name) + "'");
}

std::vector<std::string> policy_names() {
  std::vector<std::string> names;
  for (const Entry& entry : kPolicies) names.emplace_back(entry.name);
  return names;
}

}  // namespace omni::proxy
