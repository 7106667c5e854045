#include <immintrin.h>

#include "peak_loops.hpp"

namespace omni::amla::detail_peak {

double fma_loop_avx2(std::int64_t iterations) {
  constexpr int kChains = 12;
  __m256 acc[kChains];
#pragma GCC unroll 32
  for (int k = 0; k < kChains; ++k) acc[k] = _mm256_set1_ps(static_cast<float>(k));
  const __m256 b = _mm256_set1_ps(0.999f), c = _mm256_set1_ps(0.001f);
  for (std::int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 32
    for (auto& a : acc) a = _mm256_fmadd_ps(a, b, c);
  }
  __m256 sum = acc[0];
  for (int k = 1; k < kChains; ++k) sum = _mm256_add_ps(sum, acc[k]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, sum);
  volatile float sink = lanes[0];
  (void)sink;
  return static_cast<double>(iterations) * kChains * 8 * 2;
}

}  // namespace omni::amla::detail_peak
