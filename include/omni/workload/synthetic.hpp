// Synthetic workloads: Poisson or gamma arrivals, length distributions, multi-turn sessions.
//
// Grammar of a --synthetic SPEC (comma-separated key=value, every key optional):
//
//   spec    := item ("," item)*
//   item    := "n=" INT            requests in total (default 1000)
//            | "rate=" NUMBER      new sessions per second (default 10; single-turn: requests/s)
//            | "arrival=" ("poisson" | "gamma")                     (default poisson)
//            | "cv=" NUMBER        gamma: coefficient of variation of the gaps (default 1;
//                                  > 1 is burstier than Poisson, < 1 smoother)
//            | "input=" DIST       prompt tokens of a session's first turn (default 512)
//            | "output=" DIST      output tokens of every turn (default 128)
//            | "turns=" DIST       turns per session (default 1)
//            | "user=" DIST        new user tokens each later turn adds (default 64)
//            | "think=" DURATION   gap between a session's consecutive turns (default 5s)
//            | "system=" INT       shared system-prompt tokens before every session (default 0;
//                                  rounded down to whole 512-token blocks)
//   DIST    := NUMBER | "const:" N | "uniform:" LO ":" HI | "normal:" MEAN ":" SD
//            | "lognormal:" MEAN ":" SD | "exp:" MEAN
//
// Lengths are rounded and clamped to [1, 2^30]. lognormal takes the mean and standard
// deviation of the length itself (not of its logarithm). Example:
//   n=500,rate=4,arrival=gamma,cv=2,input=lognormal:2000:1500,output=uniform:50:300,turns=uniform:1:4
//
// Sessions: turn k+1's prompt is turn k's prompt, then turn k's output (as output_tokens
// deterministic tokens: the live answer is not fed back), then `user` new tokens. Turns are
// open loop: turn k+1 arrives `think` after turn k arrived, whether or not k has finished.
// Each session has its own block ids, so consecutive turns share their whole common prefix.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "omni/common/random.hpp"
#include "omni/common/result.hpp"
#include "omni/workload/request_spec.hpp"

namespace omni::workload {

// The largest length a spec may ask for.
inline constexpr std::uint32_t kMaxSpecTokens = 1u << 30;

struct LengthDist {
  enum class Kind { kConst, kUniform, kNormal, kLogNormal, kExponential };
  Kind kind = Kind::kConst;
  double a = 0.0;  // const value, uniform lo, mean
  double b = 0.0;  // uniform hi, standard deviation
  // One draw, rounded and clamped to [1, 2^30].
  std::uint32_t sample(Random& rng) const;
};
Result<LengthDist> parse_length_dist(std::string_view text);

struct SyntheticSpec {
  enum class Arrival { kPoisson, kGamma };
  std::uint64_t requests = 1000;
  double rate = 10.0;
  Arrival arrival = Arrival::kPoisson;
  double cv = 1.0;
  LengthDist input{LengthDist::Kind::kConst, 512, 0};
  LengthDist output{LengthDist::Kind::kConst, 128, 0};
  LengthDist turns{LengthDist::Kind::kConst, 1, 0};
  LengthDist user{LengthDist::Kind::kConst, 64, 0};
  double think_s = 5.0;
  std::uint32_t system_tokens = 0;
};
// Every problem in the spec is reported with the offending item.
Result<SyntheticSpec> parse_synthetic_spec(std::string_view text);

// A gap drawn from a gamma distribution with mean 1/rate and the given coefficient of
// variation (cv = 1 is exponential). Marsaglia-Tsang, on the injected Random.
double gamma_gap(Random& rng, double rate, double cv);

// The workload of `spec`, every draw from SeededRandom(seed).
std::unique_ptr<Workload> make_synthetic_workload(const SyntheticSpec& spec, std::uint64_t seed);

}  // namespace omni::workload
