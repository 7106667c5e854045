#include "omni/common/random.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace omni {
namespace {

std::uint64_t splitmix64(std::uint64_t& state) noexcept {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

constexpr std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }

}  // namespace

double Random::uniform() noexcept { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

std::int64_t Random::uniform_int(std::int64_t lo, std::int64_t hi) noexcept {
  if (lo >= hi) return lo;
  const std::uint64_t span = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo);
  if (span == max()) return static_cast<std::int64_t>(next_u64());
  const std::uint64_t range = span + 1;
  // Rejection sampling: values below 2^64 mod range would make the low results more likely.
  const std::uint64_t threshold = (0 - range) % range;
  std::uint64_t x = next_u64();
  while (x < threshold) x = next_u64();
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(lo) + x % range);
}

bool Random::bernoulli(double p) noexcept { return uniform() < std::clamp(p, 0.0, 1.0); }

double Random::exponential(double rate) noexcept {
  // 1 - uniform() is in (0, 1], so the log is finite.
  return -std::log(1.0 - uniform()) / rate;
}

double Random::normal(double mean, double stddev) noexcept {
  const double u1 = 1.0 - uniform();
  const double u2 = uniform();
  return mean + stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

SeededRandom::SeededRandom(std::uint64_t seed) noexcept {
  std::uint64_t state = seed;
  for (auto& word : s_) word = splitmix64(state);
}

std::uint64_t SeededRandom::next_u64() noexcept {
  const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

}  // namespace omni
