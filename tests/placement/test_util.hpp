// Helpers shared by the placement tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "omni/common/random.hpp"
#include "omni/placement/model.hpp"
#include "omni/placement/synthetic.hpp"

namespace omni::placement::testing {

// A skewed random load matrix (Zipf over a random expert order) from a seed.
inline LoadMatrix skewed_loads(std::size_t layers, std::size_t experts, std::uint64_t seed,
                               double zipf_s = 1.0) {
  SeededRandom random(seed);
  SyntheticOptions o;
  o.layers = layers;
  o.experts = experts;
  o.zipf_s = zipf_s;
  o.tokens_per_layer = 10000.0;
  return synthetic_loads(o, random);
}

// Uniform random integer loads in [0, max], some zeros.
inline LoadMatrix random_loads(std::size_t layers, std::size_t experts, Random& random,
                               std::int64_t max = 1000) {
  std::vector<double> v(layers * experts);
  for (double& x : v) x = static_cast<double>(random.uniform_int(0, max));
  return LoadMatrix::make(layers, experts, std::move(v)).value();
}

}  // namespace omni::placement::testing
