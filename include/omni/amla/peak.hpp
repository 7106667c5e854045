// The measured arithmetic peak of this CPU, the denominator of every peak_fraction the
// benchmarks report: fp32 FMA and (AVX512-BF16) bf16 dot-product throughput, on one core and
// on `threads` cores at once, from register-only loops with enough independent chains to hide
// latency. Measured in the same run as the kernels (clock speeds drift).
//
// The one-core figures divide by the thread's CPU time, so they are the core's rate even on a
// shared, busy machine; the all-core figures divide by wall time (what `threads` cores
// delivered together, lower when other processes compete for them).
#pragma once

#include "omni/amla/cpu.hpp"

namespace omni::amla {

struct PeakFlops {
  Isa isa = Isa::kScalar;  // the widest vectors used
  int threads = 1;
  double fp32_fma_gflops_1core = 0.0;
  double bf16_dot_gflops_1core = 0.0;  // 0 without AVX512-BF16
  double fp32_fma_gflops_all = 0.0;
  double bf16_dot_gflops_all = 0.0;
  // The peak a bf16 kernel is held against: bf16 dot when present, else fp32 FMA.
  double bf16_kernel_peak_gflops() const {
    return bf16_dot_gflops_all > 0 ? bf16_dot_gflops_all : fp32_fma_gflops_all;
  }
  double bf16_kernel_peak_gflops_1core() const {
    return bf16_dot_gflops_1core > 0 ? bf16_dot_gflops_1core : fp32_fma_gflops_1core;
  }
};

// About `seconds` per measurement (four of them).
PeakFlops measure_peak(Isa isa, int threads, double seconds);

}  // namespace omni::amla
