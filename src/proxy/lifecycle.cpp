#include "omni/proxy/lifecycle.hpp"

namespace omni::proxy {

std::string_view stage_name(Stage stage) noexcept {
  static constexpr std::array<std::string_view, kStageCount> kNames = {
      "received",   "tokenized",      "prefix_matched",   "waiting_prefill", "prefill_scheduled",
      "prefilling", "waiting_decode", "decode_scheduled", "decoding",        "done"};
  const auto index = static_cast<std::size_t>(stage);
  return index < kNames.size() ? kNames[index] : "unknown";
}

void Lifecycle::mark(Stage stage, TimePoint at) noexcept {
  marks_[static_cast<std::size_t>(stage)] = at;
  current_.store(stage, std::memory_order_relaxed);
}

std::optional<TimePoint> Lifecycle::at(Stage stage) const noexcept {
  return marks_[static_cast<std::size_t>(stage)];
}

void Lifecycle::output_event(TimePoint at, std::uint64_t tokens) noexcept {
  if (!first_output_) first_output_ = at;
  last_output_ = at;
  output_tokens_ += tokens;
}

std::optional<Duration> Lifecycle::ttft() const noexcept {
  const auto received = at(Stage::kReceived);
  if (!received || !first_output_) return std::nullopt;
  return *first_output_ - *received;
}

std::optional<Duration> Lifecycle::tpot() const noexcept {
  if (!first_output_ || output_tokens_ < 2) return std::nullopt;
  return (*last_output_ - *first_output_) / static_cast<std::int64_t>(output_tokens_ - 1);
}

std::optional<Duration> Lifecycle::time_in(Stage stage) const noexcept {
  const auto start = at(stage);
  if (!start) return std::nullopt;
  for (auto next = static_cast<std::size_t>(stage) + 1; next < kStageCount; ++next) {
    if (marks_[next]) return *marks_[next] - *start;
  }
  return std::nullopt;
}

}  // namespace omni::proxy
