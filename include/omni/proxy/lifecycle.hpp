// Lifecycle: the stages one proxied request moves through, with a monotonic timestamp each,
// and the TTFT / TPOT the proxy observes. Pure data; the I/O layer marks stages as they pass.
//
//   received → tokenized → prefix_matched → waiting_prefill → prefill_scheduled → prefilling
//            → waiting_decode → decode_scheduled → decoding → done
//
// Stages a mode skips (aggregated has no prefill leg) keep no timestamp. Until the tokenizer
// and the prefix index exist, tokenized and prefix_matched are marked as passed instantly.
//
// Threading: one request's Lifecycle is written by its own coroutine only; stage() may be
// read from another thread (the admin listing), so the current stage is atomic.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "omni/common/clock.hpp"

namespace omni::proxy {

enum class Stage : std::uint8_t {
  kReceived,
  kTokenized,
  kPrefixMatched,
  kWaitingPrefill,
  kPrefillScheduled,
  kPrefilling,
  kWaitingDecode,
  kDecodeScheduled,
  kDecoding,
  kDone,
};
inline constexpr std::size_t kStageCount = 10;
std::string_view stage_name(Stage stage) noexcept;

class Lifecycle {
 public:
  void mark(Stage stage, TimePoint at) noexcept;
  std::optional<TimePoint> at(Stage stage) const noexcept;
  Stage stage() const noexcept { return current_.load(std::memory_order_relaxed); }

  // One streamed event carrying output (or the whole answer when not streaming).
  void output_event(TimePoint at, std::uint64_t tokens = 1) noexcept;
  std::uint64_t output_tokens() const noexcept { return output_tokens_; }
  // Received → first output event.
  std::optional<Duration> ttft() const noexcept;
  // (last output − first output) / (tokens − 1); nullopt with fewer than two tokens.
  std::optional<Duration> tpot() const noexcept;
  // Time spent in `stage`: from its mark to the next marked stage (nullopt if either is absent).
  std::optional<Duration> time_in(Stage stage) const noexcept;

 private:
  std::array<std::optional<TimePoint>, kStageCount> marks_{};
  std::atomic<Stage> current_{Stage::kReceived};
  std::optional<TimePoint> first_output_;
  std::optional<TimePoint> last_output_;
  std::uint64_t output_tokens_ = 0;
};

}  // namespace omni::proxy
