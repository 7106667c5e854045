// Vector maths the serving layer needs over whole vocabularies, on the engine's per-ISA kernels
// (the best ISA this CPU has, or OMNI_FORCE_ISA).
#pragma once

#include <span>

namespace omni::model {

// out[i] = e^(x[i] - shift) (0 for -inf), returns the sum; out.size() >= x.size().
double exp_sum(std::span<const float> x, float shift, std::span<float> out);

}  // namespace omni::model
