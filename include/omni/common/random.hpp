// Random: the only source of randomness for Omni's pure cores.
//
// Every component that draws random numbers is handed a Random; two runs with the same seed
// produce the same decisions. SeededRandom is xoshiro256** seeded through splitmix64: fast,
// statistically good, and its output is identical on every platform and standard library
// (unlike std::uniform_*_distribution), which is what reproducible simulations need.
#pragma once

#include <cstdint>
#include <limits>

namespace omni {

// Threading: not thread-safe; give each thread or each simulation its own instance.
// Satisfies UniformRandomBitGenerator, so it also works with <random> and std::shuffle.
class Random {
 public:
  using result_type = std::uint64_t;
  virtual ~Random() = default;

  virtual std::uint64_t next_u64() noexcept = 0;

  static constexpr result_type min() noexcept { return 0; }
  static constexpr result_type max() noexcept { return std::numeric_limits<result_type>::max(); }
  result_type operator()() noexcept { return next_u64(); }

  // Uniform in [0, 1), 53 bits of precision.
  double uniform() noexcept;
  // Uniform integer in [lo, hi] (inclusive), without modulo bias. Requires lo <= hi.
  std::int64_t uniform_int(std::int64_t lo, std::int64_t hi) noexcept;
  // True with probability p (clamped to [0, 1]).
  bool bernoulli(double p) noexcept;
  // Exponentially distributed with the given rate (> 0): Poisson inter-arrival times.
  double exponential(double rate) noexcept;
  // Normally distributed (Box-Muller; two uniforms per draw, no cached state).
  double normal(double mean, double stddev) noexcept;
};

class SeededRandom final : public Random {
 public:
  explicit SeededRandom(std::uint64_t seed) noexcept;
  std::uint64_t next_u64() noexcept override;
  // An independent stream derived from this one (for per-entity generators).
  SeededRandom fork() noexcept { return SeededRandom(next_u64()); }

 private:
  std::uint64_t s_[4];
};

}  // namespace omni
