#include "traffic_rules.hpp"

#include <algorithm>
#include <charconv>
#include <climits>

#include "secrets.hpp"

namespace omni::proxy {

Result<TrafficRules> TrafficRules::load(const TrafficConfig& config) {
  TrafficRules rules;
  rules.config_ = config;
  for (std::size_t t = 0; t < config.tenants.size(); ++t) {
    const TenantConfig& tenant = config.tenants[t];
    if (!tenant.api_keys_file) continue;  // refused by the configuration's checks
    auto keys = read_key_file(*tenant.api_keys_file);
    if (!keys) {
      return make_error(keys.error().code, "tenant '" + tenant.name + "': " + keys.error().message);
    }
    for (std::string& key : *keys) {
      if (std::find(rules.keys_.begin(), rules.keys_.end(), key) != rules.keys_.end()) {
        return make_error(ErrorCode::kInvalidArgument,
                          "tenant '" + tenant.name + "': a key in " + *tenant.api_keys_file +
                              " is listed twice (each key names one tenant)");
      }
      rules.keys_.push_back(std::move(key));
      rules.key_tenant_.push_back(static_cast<std::uint32_t>(t + 1));
    }
  }
  rules.credentials_ = Credentials(rules.keys_);
  return rules;
}

std::uint32_t TrafficRules::tenant_of(std::string_view key) const {
  const auto index = credentials_.match(key);
  return index ? key_tenant_[*index] : 0;
}

std::string_view TrafficRules::tenant_name(std::uint32_t tenant) const {
  if (tenant == 0 || tenant > config_.tenants.size()) return "";
  return config_.tenants[tenant - 1].name;
}

std::string_view TrafficRules::band_name(std::uint8_t band) const {
  return omni::proxy::band_name(config_.bands, band);
}

std::vector<TenantLimit> TrafficRules::limits() const {
  std::vector<TenantLimit> limits;
  for (const TenantConfig& tenant : config_.tenants) {
    limits.push_back({tenant.max_concurrency, tenant.tokens_per_second, tenant.burst_tokens});
  }
  return limits;
}

namespace {

Result<std::optional<std::int64_t>> header_priority(const http::Headers& headers,
                                                    std::string_view name) {
  auto value = headers.get(name);
  if (!value) return std::optional<std::int64_t>();
  std::string_view text = *value;
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  std::int64_t priority = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), priority);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() ||
      priority < INT32_MIN || priority > INT32_MAX) {
    return make_error(ErrorCode::kInvalidArgument,
                      std::string(name) + " must be an integer in -2147483648..2147483647");
  }
  return std::optional<std::int64_t>(priority);
}

}  // namespace

Result<RequestClass> TrafficRules::classify(const http::Headers& headers,
                                            std::optional<std::int64_t> body_priority) const {
  RequestClass result;
  if (!keys_.empty()) {
    if (auto token = bearer_token(headers)) result.tenant = tenant_of(*token);
  }
  if (result.tenant == 0 && config_.tenant_header) {
    if (auto name = headers.get(*config_.tenant_header)) {
      const auto& tenants = config_.tenants;
      auto it = std::find_if(tenants.begin(), tenants.end(),
                             [&](const TenantConfig& t) { return t.name == *name; });
      if (it == tenants.end()) {
        return make_error(ErrorCode::kInvalidArgument,
                          *config_.tenant_header + " names no configured tenant");
      }
      result.tenant = static_cast<std::uint32_t>(it - tenants.begin() + 1);
    }
  }
  std::int64_t default_priority = config_.default_priority;
  std::int64_t min_priority = config_.min_priority;
  if (result.tenant != 0) {
    const TenantConfig& tenant = config_.tenants[result.tenant - 1];
    result.weight = tenant.weight;
    result.node_share = tenant.node_share;
    default_priority = tenant.default_priority;
    min_priority = tenant.min_priority;
  }
  auto from_header = header_priority(headers, config_.priority_header);
  if (!from_header) return std::move(from_header).error();
  result.priority = from_header->value_or(body_priority.value_or(default_priority));
  if (result.priority < min_priority) {
    result.priority = min_priority;
    result.clamped = true;
  }
  result.band = band_of_priority(config_.bands, result.priority);
  return result;
}

}  // namespace omni::proxy
