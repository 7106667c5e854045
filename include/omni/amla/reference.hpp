// The float64 reference for MLA decode attention: the slow, obviously right answer every
// kernel (CPU and CUDA) is compared against. Reads only the cache rows a query may see, so
// NaN-filled unused pages never reach it.
#pragma once

#include <cstddef>
#include <span>

#include "omni/amla/problem.hpp"

namespace omni::amla {

// Sizes of the output arrays of a shape.
std::size_t out_elements(const DecodeShape& shape) noexcept;  // batch*seqlen_q*heads_q*dv
std::size_t lse_elements(const DecodeShape& shape) noexcept;  // batch*heads_q*seqlen_q

// Number of keys query token `token` (0-based, < seqlen_q) of a sequence of `seqlen_k` keys
// may attend to: all of them without causal masking; seqlen_k - seqlen_q + token + 1 with it,
// clamped at 0 (a row that sees no key).
int visible_keys(int seqlen_k, int seqlen_q, int token, bool causal) noexcept;

// out [batch, seqlen_q, heads_q, dv] and lse [batch, heads_q, seqlen_q] in float64, the layouts
// of problem.hpp. Inputs are widened from bf16 exactly; scores, softmax and P·V are float64.
// A row that sees no key gets out = 0 and lse = -inf. Requires out/lse of the sizes above.
void reference_decode(const DecodeInputs& inputs, std::span<double> out, std::span<double> lse);

}  // namespace omni::amla
