// Register-only throughput loops, one set per ISA translation unit. Each returns the floating
// point operations it executed (an FMA is 2, a bf16 pair dot-product accumulate is 4 per lane).
#pragma once

#include <cstdint>

namespace omni::amla::detail_peak {

double fma_loop_avx512(std::int64_t iterations);
double bf16_loop_avx512(std::int64_t iterations);
double fma_loop_avx2(std::int64_t iterations);
double fma_loop_scalar(std::int64_t iterations);

}  // namespace omni::amla::detail_peak
