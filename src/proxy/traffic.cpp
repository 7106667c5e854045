#include "omni/proxy/traffic.hpp"

#include <string>

namespace omni::proxy {

std::string_view band_order_name(BandOrder order) noexcept {
  return order == BandOrder::kStrict ? "strict" : "weighted";
}

std::uint8_t band_of_priority(const std::vector<BandSpec>& bands, std::int64_t priority) noexcept {
  for (std::size_t i = 0; i < bands.size(); ++i) {
    if (priority <= bands[i].max_priority) return static_cast<std::uint8_t>(i);
  }
  return bands.empty() ? 0 : static_cast<std::uint8_t>(bands.size() - 1);
}

std::string_view band_name(const std::vector<BandSpec>& bands, std::uint8_t band) noexcept {
  if (band < bands.size()) return bands[band].name;
  return "default";
}

std::string_view wait_cause_name(WaitCause cause) noexcept {
  switch (cause) {
    case WaitCause::kNoCapacity: return "no_capacity";
    case WaitCause::kPolicyHold: return "policy_hold";
    case WaitCause::kPriority: return "priority";
    case WaitCause::kQueueOrder: return "queue_order";
  }
  return "unknown";
}

Status valid_bands(const std::vector<BandSpec>& bands) {
  if (bands.size() > kMaxBands) {
    return make_error(
        ErrorCode::kInvalidArgument,
        "at most " + std::to_string(kMaxBands) + " bands, got " + std::to_string(bands.size()));
  }
  for (std::size_t i = 0; i < bands.size(); ++i) {
    const BandSpec& band = bands[i];
    if (band.name.empty()) return make_error(ErrorCode::kInvalidArgument, "a band has no name");
    for (std::size_t j = 0; j < i; ++j) {
      if (bands[j].name == band.name) {
        return make_error(ErrorCode::kInvalidArgument, "two bands are named '" + band.name + "'");
      }
    }
    if (i > 0 && band.max_priority <= bands[i - 1].max_priority) {
      return make_error(ErrorCode::kInvalidArgument,
                        "max_priority must grow from band to band, most urgent first ('" +
                            band.name + "' after '" + bands[i - 1].name + "')");
    }
    if (!(band.weight > 0) || !(band.node_share > 0 && band.node_share <= 1)) {
      return make_error(ErrorCode::kInvalidArgument,
                        "band '" + band.name + "': weight must be > 0, node_share in (0, 1]");
    }
  }
  return {};
}

}  // namespace omni::proxy
