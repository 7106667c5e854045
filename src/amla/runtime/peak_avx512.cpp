// GCC 12 AVX-512 header idiom, see kernel_avx512.cpp
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <bit>

#include "peak_loops.hpp"

namespace omni::amla::detail_peak {

constexpr int kChains = 16;  // independent accumulators: more than latency x throughput

double fma_loop_avx512(std::int64_t iterations) {
  __m512 acc[kChains];
#pragma GCC unroll 32
  for (int k = 0; k < kChains; ++k) acc[k] = _mm512_set1_ps(static_cast<float>(k));
  const __m512 b = _mm512_set1_ps(0.999f), c = _mm512_set1_ps(0.001f);
  for (std::int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 32
    for (auto& a : acc) a = _mm512_fmadd_ps(a, b, c);
  }
  __m512 sum = acc[0];
  for (int k = 1; k < kChains; ++k) sum = _mm512_add_ps(sum, acc[k]);
  volatile float sink = _mm512_reduce_add_ps(sum);
  (void)sink;
  return static_cast<double>(iterations) * kChains * 16 * 2;
}

double bf16_loop_avx512(std::int64_t iterations) {
  __m512 acc[kChains];
#pragma GCC unroll 32
  for (int k = 0; k < kChains; ++k) acc[k] = _mm512_set1_ps(static_cast<float>(k));
  const __m512bh x = std::bit_cast<__m512bh>(_mm512_set1_epi32(0x3f803f80));  // (1, 1)
  const __m512bh y = std::bit_cast<__m512bh>(_mm512_set1_epi32(0x3a803a80));  // small
  for (std::int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 32
    for (auto& a : acc) a = _mm512_dpbf16_ps(a, x, y);
  }
  __m512 sum = acc[0];
  for (int k = 1; k < kChains; ++k) sum = _mm512_add_ps(sum, acc[k]);
  volatile float sink = _mm512_reduce_add_ps(sum);
  (void)sink;
  return static_cast<double>(iterations) * kChains * 16 * 4;
}

}  // namespace omni::amla::detail_peak
