// Synthetic expert loads with realistic skew, reproducible from a seed.
//
// Each expert has a latent "heat" score per layer; loads follow a Zipf law over the experts'
// rank by heat: the r-th hottest expert (r = 1, 2, ...) gets a share proportional to r^-s,
// times lognormal noise. Each layer draws its own s uniformly from zipf_s +- zipf_s_spread
// (once, at construction), since real models are more skewed in some layers than others. Heat is
// correlated across adjacent layers (an AR(1) chain over layers) and drifts from one window to the
// next (an AR(1) step per window):
//   heat[l][e] = rho * heat[l-1][e] + sqrt(1 - rho^2) * N(0, 1)     rho = layer_correlation
//   heat'[l][e] = sqrt(1 - d^2) * heat[l][e] + d * N(0, 1)           d = drift
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "omni/common/random.hpp"
#include "omni/placement/model.hpp"

namespace omni::placement {

struct SyntheticOptions {
  std::size_t layers = 58;
  std::size_t experts = 256;
  double zipf_s = 1.0;              // skew; 0 = uniform
  double zipf_s_spread = 0.0;       // per-layer skew varies in zipf_s +- this (clamped at 0)
  double tokens_per_layer = 65536;  // expected routed tokens per layer and window
  double layer_correlation = 0.8;   // rho in [0, 1]
  double drift = 0.1;               // d in [0, 1] per window
  double noise_sigma = 0.05;        // lognormal noise on each load
};

// A sequence of windows with drifting heat. Not thread-safe; deterministic for a given Random.
class LoadGenerator {
 public:
  // Draws the initial heat from `random`, which must outlive the generator.
  LoadGenerator(const SyntheticOptions& options, Random& random);

  // The loads of the next window (the first call gives the initial heat's loads).
  LoadMatrix next();
  const SyntheticOptions& options() const noexcept { return options_; }

 private:
  void drift_heat();
  LoadMatrix loads_from_heat();

  SyntheticOptions options_;
  Random& random_;
  std::vector<double> heat_;  // layers * experts
  bool started_ = false;
  std::vector<double> zipf_;  // layers x experts: share by rank, each row sums to 1
};

// One window of loads: LoadGenerator(options, random).next().
LoadMatrix synthetic_loads(const SyntheticOptions& options, Random& random);

// `count` consecutive windows.
std::vector<LoadMatrix> synthetic_windows(const SyntheticOptions& options, std::size_t count,
                                          Random& random);

}  // namespace omni::placement
