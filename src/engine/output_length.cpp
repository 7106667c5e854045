// The output-length model (omni/engine/output_length.hpp).
#include "omni/engine/output_length.hpp"

#include <algorithm>
#include <cmath>

#include "omni/common/random.hpp"

namespace omni::engine {

std::uint32_t sample_output_length(const ModelProfile& model, std::uint64_t key) {
  const double mean = std::max(1.0, model.output_length_mean);
  const double sd = std::max(0.0, model.output_length_sd);
  // A lognormal with mean m and standard deviation s: sigma^2 = ln(1 + s^2/m^2),
  // mu = ln(m) - sigma^2 / 2.
  const double sigma2 = std::log1p((sd * sd) / (mean * mean));
  const double mu = std::log(mean) - sigma2 / 2;
  SeededRandom random(key);
  const double length = std::round(std::exp(random.normal(mu, std::sqrt(sigma2))));
  const double lo = std::max<double>(1, model.output_length_min);
  return static_cast<std::uint32_t>(std::clamp(length, lo, double(1u << 30)));
}

}  // namespace omni::engine
