#include "omni/amla/cost.hpp"

namespace omni::amla {
namespace {

double total_keys(std::span<const std::int32_t> seqlens_k) {
  double total = 0.0;
  for (const auto len : seqlens_k) total += len;
  return total;
}

}  // namespace

double decode_flops(const DecodeShape& s, std::span<const std::int32_t> seqlens_k) noexcept {
  // b * mean(s_k) = sum(s_k)
  return 2.0 * s.seqlen_q * s.heads_q * total_keys(seqlens_k) * (s.head_dim + s.dv);
}

double decode_bytes(const DecodeShape& s, std::span<const std::int32_t> seqlens_k) noexcept {
  const double q_and_out =
      static_cast<double>(s.batch) * s.seqlen_q * s.heads_q * (s.head_dim + s.dv);
  return 2.0 * (total_keys(seqlens_k) * s.head_dim + q_and_out);
}

}  // namespace omni::amla
