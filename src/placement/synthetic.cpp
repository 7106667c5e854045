#include "omni/placement/synthetic.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numeric>
#include <utility>

namespace omni::placement {

namespace {

double clamp01(double v) { return std::clamp(v, 0.0, 1.0); }

// layers x experts standard normals, each layer correlated with the previous one by rho, so
// hot experts tend to stay hot in adjacent layers.
std::vector<double> layer_correlated_normals(std::size_t layers, std::size_t experts, double rho,
                                             Random& random) {
  std::vector<double> out(layers * experts);
  const double fresh = std::sqrt(1.0 - rho * rho);
  for (std::size_t l = 0; l < layers; ++l) {
    for (std::size_t e = 0; e < experts; ++e) {
      const double z = random.normal(0.0, 1.0);
      out[l * experts + e] = l == 0 ? z : rho * out[(l - 1) * experts + e] + fresh * z;
    }
  }
  return out;
}

}  // namespace

LoadGenerator::LoadGenerator(const SyntheticOptions& options, Random& random)
    : options_(options), random_(random) {
  assert(options.layers > 0 && options.experts > 0);
  options_.layer_correlation = clamp01(options.layer_correlation);
  options_.drift = clamp01(options.drift);
  options_.zipf_s = std::max(0.0, options.zipf_s);
  options_.noise_sigma = std::max(0.0, options.noise_sigma);
  if (!std::isfinite(options_.tokens_per_layer) || options_.tokens_per_layer < 0.0) {
    options_.tokens_per_layer = 0.0;
  }
  options_.zipf_s_spread = std::max(0.0, options.zipf_s_spread);
  heat_ = layer_correlated_normals(options_.layers, options_.experts, options_.layer_correlation,
                                   random_);
  zipf_.resize(options_.layers * options_.experts);
  for (std::size_t l = 0; l < options_.layers; ++l) {
    double s = options_.zipf_s;
    if (options_.zipf_s_spread > 0.0) {
      s = std::max(0.0, s + options_.zipf_s_spread * (2.0 * random_.uniform() - 1.0));
    }
    double* row = zipf_.data() + l * options_.experts;
    double total = 0.0;
    for (std::size_t r = 0; r < options_.experts; ++r) {
      row[r] = std::pow(static_cast<double>(r + 1), -s);
      total += row[r];
    }
    for (std::size_t r = 0; r < options_.experts; ++r) row[r] /= total;
  }
}

void LoadGenerator::drift_heat() {
  // The step noise is itself layer-correlated, so drift keeps adjacent layers alike.
  const std::vector<double> step = layer_correlated_normals(options_.layers, options_.experts,
                                                            options_.layer_correlation, random_);
  const double d = options_.drift;
  const double keep = std::sqrt(1.0 - d * d);
  for (std::size_t i = 0; i < heat_.size(); ++i) heat_[i] = keep * heat_[i] + d * step[i];
}

LoadMatrix LoadGenerator::loads_from_heat() {
  const std::size_t experts = options_.experts;
  std::vector<double> values(options_.layers * experts);
  std::vector<std::size_t> order(experts);
  const double sigma = options_.noise_sigma;
  for (std::size_t l = 0; l < options_.layers; ++l) {
    const double* heat = heat_.data() + l * experts;
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return heat[a] > heat[b]; });
    for (std::size_t rank = 0; rank < experts; ++rank) {
      // Mean-one lognormal noise: exp(N(-sigma^2 / 2, sigma)).
      const double noise = std::exp(random_.normal(-0.5 * sigma * sigma, sigma));
      values[l * experts + order[rank]] =
          options_.tokens_per_layer * zipf_[l * experts + rank] * noise;
    }
  }
  return LoadMatrix::make(options_.layers, experts, std::move(values)).value();
}

LoadMatrix LoadGenerator::next() {
  if (started_) drift_heat();
  started_ = true;
  return loads_from_heat();
}

LoadMatrix synthetic_loads(const SyntheticOptions& options, Random& random) {
  LoadGenerator generator(options, random);
  return generator.next();
}

std::vector<LoadMatrix> synthetic_windows(const SyntheticOptions& options, std::size_t count,
                                          Random& random) {
  LoadGenerator generator(options, random);
  std::vector<LoadMatrix> windows;
  windows.reserve(count);
  for (std::size_t i = 0; i < count; ++i) windows.push_back(generator.next());
  return windows;
}

}  // namespace omni::placement
