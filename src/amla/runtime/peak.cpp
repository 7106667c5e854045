#include "omni/amla/peak.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>
#include <vector>

#include <time.h>

#include "peak_loops.hpp"

namespace omni::amla {
namespace detail_peak {

double fma_loop_scalar(std::int64_t iterations) {
  float acc[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  for (std::int64_t i = 0; i < iterations; ++i) {
    for (float& a : acc) a = a * 0.999f + 0.001f;  // a multiply and an add: 2 FLOPs
  }
  volatile float sink = acc[0] + acc[7];
  (void)sink;
  return static_cast<double>(iterations) * 8 * 2;
}

}  // namespace detail_peak
namespace {

using Loop = double (*)(std::int64_t);
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// GFLOP/s per second of this thread's CPU time: the core's rate, whatever else shares it.
double run_cpu_time(Loop loop, std::int64_t iterations) {
  const double start = thread_cpu_seconds();
  const double flops = loop(iterations);
  return flops / (thread_cpu_seconds() - start) / 1e9;
}

// Iterations that take about `seconds` on one core.
std::int64_t calibrate(Loop loop, double seconds) {
  std::int64_t iterations = 1 << 14;
  for (;;) {
    const auto start = Clock::now();
    loop(iterations);
    const double took = seconds_since(start);
    if (took > 0.02 || iterations > (std::int64_t{1} << 40)) {
      return std::max<std::int64_t>(
          1, static_cast<std::int64_t>(static_cast<double>(iterations) * seconds / took));
    }
    iterations *= 4;
  }
}

// GFLOP/s of `threads` copies of the loop started together.
double run_parallel(Loop loop, std::int64_t iterations, int threads) {
  std::vector<double> flops(static_cast<std::size_t>(threads));
  const auto start = Clock::now();
  {
    std::vector<std::jthread> workers;
    for (int t = 1; t < threads; ++t) {
      workers.emplace_back(
          [&flops, loop, iterations, t] { flops[static_cast<std::size_t>(t)] = loop(iterations); });
    }
    flops[0] = loop(iterations);
  }
  const double took = seconds_since(start);
  double total = 0.0;
  for (const double f : flops) total += f;
  return total / took / 1e9;
}

}  // namespace

PeakFlops measure_peak(Isa isa, int threads, double seconds) {
  PeakFlops peak;
  peak.isa = isa;
  peak.threads = std::max(1, threads);
  const Loop fma = isa == Isa::kAvx512 ? detail_peak::fma_loop_avx512
                   : isa == Isa::kAvx2 ? detail_peak::fma_loop_avx2
                                       : detail_peak::fma_loop_scalar;
  const std::int64_t fma_iters = calibrate(fma, seconds);
  peak.fp32_fma_gflops_1core = run_cpu_time(fma, fma_iters);
  peak.fp32_fma_gflops_all = run_parallel(fma, fma_iters, peak.threads);
  if (isa == Isa::kAvx512) {
    const std::int64_t bf16_iters = calibrate(detail_peak::bf16_loop_avx512, seconds);
    peak.bf16_dot_gflops_1core = run_cpu_time(detail_peak::bf16_loop_avx512, bf16_iters);
    peak.bf16_dot_gflops_all =
        run_parallel(detail_peak::bf16_loop_avx512, bf16_iters, peak.threads);
  }
  return peak;
}

}  // namespace omni::amla
