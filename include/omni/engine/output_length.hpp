// The output-length model of a model profile: how many tokens a generation produces before the
// model emits EOS, when no limit, stop string or stop token ends it first. Real engines learn
// this from the weights; the engine model draws it from the profile's distribution, keyed by
// the caller (omni-sim: its --seed, the request id and the choice index), so that the same
// request stops at the same length on every instance and in every run. Pure.
#pragma once

#include <cstdint>

#include "omni/engine/cost_model.hpp"

namespace omni::engine {

// The number of output tokens, EOS included, after which a generation keyed by `key` ends:
// lognormal with the profile's output_length_mean and output_length_sd (of the length itself),
// rounded, at least output_length_min and at most 2^30.
std::uint32_t sample_output_length(const ModelProfile& model, std::uint64_t key);

}  // namespace omni::engine
