// Work and traffic of one MLA decode call, by FlashMLA's conventions (docs/amla.md):
//   FLOPs = 2 * b * s_q * h_q * mean(s_k) * (head_dim + dv)      (QK^T and PV, causal ignored)
//   bytes = 2 * (sum(s_k) * head_dim + b * s_q * h_q * (head_dim + dv))   for bf16
#pragma once

#include <cstdint>
#include <span>

#include "omni/amla/problem.hpp"

namespace omni::amla {

double decode_flops(const DecodeShape& shape, std::span<const std::int32_t> seqlens_k) noexcept;
double decode_bytes(const DecodeShape& shape, std::span<const std::int32_t> seqlens_k) noexcept;

}  // namespace omni::amla
