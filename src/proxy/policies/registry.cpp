#include <string>

#include "omni/sched/policy.hpp"
#include "policies.hpp"

namespace omni::proxy {
namespace {

constexpr std::string_view kLeastOutstanding = "least-outstanding";

std::string known_names() {
  std::string known;
  for (const std::string& name : policy_names()) known += (known.empty() ? "" : ", ") + name;
  return known;
}

}  // namespace

Result<std::unique_ptr<Policy>> make_policy(std::string_view name, PolicyOptions options) {
  if (name == kLeastOutstanding) return policies::make_least_outstanding(options);
  auto policy = policies::make_sched_policy(name, options);
  if (policy) return policy;
  // A known family with a bad tuning ("omni:cache=x") keeps the library's own reason.
  if (name.starts_with("omni:")) return std::move(policy).error();
  return make_error(ErrorCode::kNotFound,
                    "unknown policy '" + std::string(name) + "' (known: " + known_names() + ")");
}

std::vector<std::string> policy_names() {
  std::vector<std::string> names;
  for (const PolicySummary& policy : policy_summaries()) names.push_back(policy.name);
  return names;
}

std::vector<PolicySummary> policy_summaries() {
  std::vector<PolicySummary> out;
  for (const sched::PolicyInfo& info : sched::placement_policies())
    out.push_back({info.name, info.summary});
  out.push_back(
      {std::string(kLeastOutstanding),
       "least outstanding tokens, then fewest running; shortest prompt first with aging"});
  return out;
}

}  // namespace omni::proxy
