// The --synthetic SPEC grammar (omni/workload/synthetic.hpp) and the draws it names.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "omni/config/codec.hpp"
#include "omni/workload/synthetic.hpp"

namespace omni::workload {
namespace {

Error spec_error(std::string_view item, std::string_view why) {
  return make_error(ErrorCode::kInvalidArgument,
                    "synthetic spec item '" + std::string(item) + "': " + std::string(why));
}

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const auto pos = text.find(sep, start);
    parts.push_back(text.substr(start, pos == std::string_view::npos ? pos : pos - start));
    if (pos == std::string_view::npos) return parts;
    start = pos + 1;
  }
}

Result<double> non_negative(std::string_view text) {
  auto v = config::parse_double(text);
  if (!v) return v.error();
  if (*v < 0) return make_error(ErrorCode::kInvalidArgument, "must be >= 0");
  return *v;
}

// Applies one key=value item to `spec`.
Status apply_item(std::string_view item, SyntheticSpec& spec) {
  const auto eq = item.find('=');
  if (eq == std::string_view::npos) return spec_error(item, "expected key=value");
  const std::string_view key = item.substr(0, eq);
  const std::string_view value = item.substr(eq + 1);
  auto fail = [&](const Error& e) -> Status { return spec_error(item, e.message); };
  if (key == "n") {
    auto n = config::parse_uint64(value);
    if (!n || *n == 0) return spec_error(item, "expected a positive integer");
    spec.requests = *n;
  } else if (key == "rate" || key == "cv") {
    auto v = non_negative(value);
    if (!v) return fail(v.error());
    if (*v <= 0) return spec_error(item, "must be > 0");
    (key == "rate" ? spec.rate : spec.cv) = *v;
  } else if (key == "arrival") {
    if (value == "poisson") {
      spec.arrival = SyntheticSpec::Arrival::kPoisson;
    } else if (value == "gamma") {
      spec.arrival = SyntheticSpec::Arrival::kGamma;
    } else {
      return spec_error(item, "expected poisson or gamma");
    }
  } else if (key == "input" || key == "output" || key == "turns" || key == "user") {
    auto dist = parse_length_dist(value);
    if (!dist) return fail(dist.error());
    LengthDist& target = key == "input"    ? spec.input
                         : key == "output" ? spec.output
                         : key == "turns"  ? spec.turns
                                           : spec.user;
    target = *dist;
  } else if (key == "think") {
    auto d = config::parse_duration(value);
    if (!d) return fail(d.error());
    if (d->count() < 0) return spec_error(item, "must be >= 0");
    spec.think_s = to_seconds(*d);
  } else if (key == "system") {
    auto n = config::parse_uint64(value);
    if (!n || *n > kMaxSpecTokens) return spec_error(item, "expected an integer in 0..2^30");
    spec.system_tokens = static_cast<std::uint32_t>(*n);
  } else {
    return spec_error(
        item, "unknown key (n, rate, arrival, cv, input, output, turns, user, think, system)");
  }
  return ok_status();
}

}  // namespace

Result<LengthDist> parse_length_dist(std::string_view text) {
  const auto parts = split(text, ':');
  std::vector<double> args;
  const bool bare = parts.size() == 1;
  for (std::size_t i = bare ? 0 : 1; i < parts.size(); ++i) {
    auto v = non_negative(parts[i]);
    if (!v)
      return make_error(ErrorCode::kInvalidArgument,
                        "'" + std::string(parts[i]) + "': " + v.error().message);
    args.push_back(*v);
  }
  auto need = [&](std::size_t n, LengthDist::Kind kind) -> Result<LengthDist> {
    if (args.size() != n) {
      return make_error(ErrorCode::kInvalidArgument, "'" + std::string(parts[0]) + "' takes " +
                                                         std::to_string(n) + " number(s)");
    }
    return LengthDist{kind, args[0], n > 1 ? args[1] : 0.0};
  };
  if (bare) return need(1, LengthDist::Kind::kConst);
  const std::string_view kind = parts[0];
  if (kind == "const") return need(1, LengthDist::Kind::kConst);
  if (kind == "exp") return need(1, LengthDist::Kind::kExponential);
  if (kind == "normal") return need(2, LengthDist::Kind::kNormal);
  if (kind == "lognormal") {
    auto d = need(2, LengthDist::Kind::kLogNormal);
    if (d && d->a <= 0)
      return make_error(ErrorCode::kInvalidArgument, "lognormal: the mean must be > 0");
    return d;
  }
  if (kind == "uniform") {
    auto d = need(2, LengthDist::Kind::kUniform);
    if (d && d->a > d->b)
      return make_error(ErrorCode::kInvalidArgument, "uniform: LO must be <= HI");
    return d;
  }
  return make_error(ErrorCode::kInvalidArgument, "unknown distribution '" + std::string(kind) +
                                                     "' (const, uniform, normal, lognormal, exp)");
}

std::uint32_t LengthDist::sample(Random& rng) const {
  double x = a;
  switch (kind) {
    case Kind::kConst: break;
    case Kind::kUniform: x = a + (b - a) * rng.uniform(); break;
    case Kind::kNormal: x = rng.normal(a, b); break;
    case Kind::kLogNormal: {
      // Mean a and deviation b of the length itself: sigma^2 = ln(1 + b^2/a^2).
      const double sigma2 = std::log1p((b * b) / (a * a));
      x = std::exp(rng.normal(std::log(a) - sigma2 / 2, std::sqrt(sigma2)));
      break;
    }
    case Kind::kExponential: x = a > 0 ? rng.exponential(1.0 / a) : 0.0; break;
  }
  const double clamped = std::clamp(std::round(x), 1.0, static_cast<double>(kMaxSpecTokens));
  return static_cast<std::uint32_t>(clamped);
}

Result<SyntheticSpec> parse_synthetic_spec(std::string_view text) {
  SyntheticSpec spec;
  if (text.empty()) return spec;
  for (std::string_view item : split(text, ',')) {
    auto status = apply_item(item, spec);
    if (!status) return std::move(status).error();
  }
  return spec;
}

double gamma_gap(Random& rng, double rate, double cv) {
  if (cv == 1.0) return rng.exponential(rate);
  // Shape k = 1/cv^2, scale = 1/(rate k): mean 1/rate, coefficient of variation cv.
  const double shape = 1.0 / (cv * cv);
  const double scale = 1.0 / (rate * shape);
  // Marsaglia-Tsang needs shape >= 1; for smaller shapes use Gamma(k) = Gamma(k+1) U^(1/k).
  const double k = shape < 1.0 ? shape + 1.0 : shape;
  const double d = k - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  double draw = 0.0;
  while (true) {
    const double z = rng.normal(0.0, 1.0);
    const double v0 = 1.0 + c * z;
    if (v0 <= 0) continue;
    const double v = v0 * v0 * v0;
    const double u = rng.uniform();
    if (u > 0 && std::log(u) < 0.5 * z * z + d - d * v + d * std::log(v)) {
      draw = d * v;
      break;
    }
  }
  if (shape < 1.0) {
    double u = rng.uniform();
    while (u <= 0) u = rng.uniform();
    draw *= std::pow(u, 1.0 / shape);
  }
  return draw * scale;
}

}  // namespace omni::workload
