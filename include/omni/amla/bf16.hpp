// bfloat16 <-> float conversions shared by the reference, the harness and the kernels.
// A bf16 is the top half of an IEEE-754 float32, so widening is a 16-bit shift and narrowing
// rounds to nearest, ties to even (NaN stays NaN: its payload is kept quiet).
#pragma once

#include <bit>
#include <cstdint>

#include "omni/amla/problem.hpp"

namespace omni::amla {

inline float bf16_to_float(bf16_bits value) noexcept {
  return std::bit_cast<float>(static_cast<std::uint32_t>(value) << 16);
}

inline bf16_bits float_to_bf16(float value) noexcept {
  const auto bits = std::bit_cast<std::uint32_t>(value);
  if ((bits & 0x7fffffffU) > 0x7f800000U) {  // NaN: keep the sign, force a quiet payload
    return static_cast<bf16_bits>((bits >> 16) | 0x0040U);
  }
  const std::uint32_t rounding = 0x7fffU + ((bits >> 16) & 1U);
  return static_cast<bf16_bits>((bits + rounding) >> 16);
}

// The float nearest to `value` that a bf16 can hold.
inline float round_to_bf16(float value) noexcept { return bf16_to_float(float_to_bf16(value)); }

}  // namespace omni::amla
