// The per-row online-softmax bookkeeping shared by every ISA's kernels (plain C++, no
// intrinsics, so it can be included in any per-ISA translation unit).
//
// Scores are kept in log2 units (t = q.k * scale * log2(e)) so that exp becomes exp2.
// flash: running max m; a new max rescales acc and l by exp2(m_old - m_new) (a multiply).
// amla:  running max rounded up to an integer n = ceil(max t); P = exp2(t - n) <= 1 carries
//        the fractional part; a new n rescales by 2^(n_old - n_new), an exact power of two,
//        applied to acc as an integer add to the float32 exponent bits, and skipped when n did
//        not move (most blocks once the max has settled).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernel.hpp"
#include "omni/amla/reference.hpp"

namespace omni::amla::detail_kernel {

inline constexpr float kLog2e = 1.4426950408889634f;
inline constexpr float kLn2 = 0.6931471805599453f;
inline constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// exp2 on [-0.5, 0.5] (Cephes' exp2f polynomial, relative error ~1e-7): the SIMD kernels
// compute 2^x = 2^round(x) * poly(x - round(x)).
inline constexpr float kExp2Poly[6] = {1.535336188319500e-4f, 1.339887440266574e-3f,
                                       9.618437357674640e-3f, 5.550332471162809e-2f,
                                       2.402264791363012e-1f, 6.931472028550421e-1f};

struct RowUpdate {
  float new_max = kNegInf;
  bool rescale = false;  // acc and l need rescaling (the max moved and acc is not empty)
  float factor = 1.0f;   // flash: the multiplier; amla: 2^shift
  int shift = 0;         // amla: n_old - n_new (<= 0)
};

template <bool kAmla>
inline RowUpdate update_row(float old_max, float block_max) {
  RowUpdate u;
  const float candidate = kAmla ? std::ceil(block_max) : block_max;  // ceil(-inf) = -inf
  u.new_max = std::max(old_max, candidate);
  if (u.new_max == old_max || old_max == kNegInf) return u;  // nothing accumulated or no move
  u.rescale = true;
  if constexpr (kAmla) {
    // Both are integers; the difference can be below INT_MIN only when old is finite and
    // new is huge, which finite bf16 inputs cannot produce; clamp to stay defined.
    u.shift = static_cast<int>(std::max(old_max - u.new_max, -1000.0f));
    u.factor = std::ldexp(1.0f, std::max(u.shift, -150));
  } else {
    u.factor = std::exp2(old_max - u.new_max);
  }
  return u;
}

// Scalar form of AMLA's exponent add: x * 2^shift for shift <= 0, computed on the bits. Exact
// while the result stays a normal float; a result below the smallest normal (2^-126) is
// flushed to a signed zero (the true value is under 2^-126 while l >= 1 bounds the row, so
// the lost part is below float32's resolution of the final output). Zeros stay zeros.
inline std::uint32_t exponent_add(std::uint32_t bits, int shift) {
  const auto exponent = static_cast<int>((bits >> 23) & 0xffU);
  if (exponent + shift < 1) return bits & 0x80000000U;
  return bits + (static_cast<std::uint32_t>(shift) << 23);  // two's complement: subtracts
}

// Sets the scores of keys a row may not see to -inf: keys [n_valid, n_total) of the block
// (padding) and, with causal masking, keys at or past visible_keys(token). scores is
// [n_total][Mpad] with rows m = token * heads_q + head.
inline void mask_block(float* scores, int mpad, int n_valid, int n_total, int key_base,
                       int seqlen_k, const DecodeShape& s, bool causal) {
  for (int j = n_valid; j < n_total; ++j) std::fill_n(scores + j * mpad, mpad, kNegInf);
  if (!causal || s.seqlen_q == 1) return;
  for (int token = 0; token < s.seqlen_q; ++token) {
    const int visible = visible_keys(seqlen_k, s.seqlen_q, token, causal);
    for (int j = std::max(visible - key_base, 0); j < n_valid; ++j) {
      std::fill_n(scores + j * mpad + token * s.heads_q, s.heads_q, kNegInf);
    }
  }
}

// out = acc / l and lse = (max + log2 l_lse) * ln 2; a row with l == 0 (it saw no key) gets
// out = 0 and lse = -inf. l is the sum of P as it entered P.V (bf16-rounded in the BF16
// kernels, so numerator and denominator match); l_lse is the sum of the unrounded P.
inline void finalize_rows(const float* acc, const float* row_max, const float* row_sum,
                          const float* row_sum_lse, int rows, int dv, const ItemOutput& out) {
  for (int m = 0; m < rows; ++m) {
    float* dst = out.out_rows + static_cast<std::size_t>(m) * static_cast<std::size_t>(dv);
    const float* src = acc + static_cast<std::size_t>(m) * static_cast<std::size_t>(dv);
    const float l = row_sum[m];
    if (!(l > 0.0f)) {
      std::fill_n(dst, dv, 0.0f);
      out.lse_rows[m] = kNegInf;
      continue;
    }
    const float inv = 1.0f / l;
    for (int d = 0; d < dv; ++d) dst[d] = src[d] * inv;
    out.lse_rows[m] = (row_max[m] + std::log2(row_sum_lse[m])) * kLn2;
  }
}

}  // namespace omni::amla::detail_kernel
