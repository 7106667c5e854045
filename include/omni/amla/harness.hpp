// Test harness for MLA decode kernels, in the style of FlashMLA's tests: fresh seeded random
// inputs that are never zero, a block table that is a random permutation of the pages, every
// cache row no query may see (unused pages and the tail of each last page) filled with NaN so
// that an over-read poisons the output, outputs poisoned before each run, and a comparison by
// absolute, relative and cosine tolerances that also requires NaN/inf positions to match.
// Shared by the CPU kernels' tests and benchmarks and by the CUDA kernel's tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "omni/amla/problem.hpp"
#include "omni/common/random.hpp"

namespace omni::amla {

// What to generate. seqlens_k has one entry per sequence (0 allowed); batch = its size.
struct CaseSpec {
  std::vector<std::int32_t> seqlens_k;
  int seqlen_q = 1;
  int heads_q = 128;
  int head_dim = 576;
  int dv = 512;
  int page_size = 64;
  int extra_pages = 2;         // NaN pages no sequence owns (at least one is always added)
  float softmax_scale = 0.0f;  // 0: 1/sqrt(192), DeepSeek-V3's
  bool causal = true;
};

// Sequence lengths for a batch: all `mean` when !variable; otherwise FlashMLA's benchmark
// recipe, normal(mean, mean/2) clamped to [1, 2*mean] (0 is tested separately).
std::vector<std::int32_t> make_seqlens(int batch, int mean, bool variable, Random& random);

// One generated problem that owns its arrays; inputs() views them.
struct TestCase {
  DecodeShape shape;
  float softmax_scale = 0.0f;
  bool causal = true;
  std::vector<bf16_bits> q;
  std::vector<bf16_bits> kv_cache;
  std::vector<std::int32_t> block_table;
  std::vector<std::int32_t> seqlens_k;

  DecodeInputs inputs() const;
};

TestCase make_test_case(const CaseSpec& spec, Random& random);

// Fills outputs with NaN so that any element a kernel forgets to write fails the comparison.
void poison(std::span<float> values) noexcept;

// Defaults fit bf16 kernels against the float64 reference: P enters P.V as bf16 (8
// significant bits), so an output element may be off by about 2^-9 * sum|p v| / l, a few 1e-3
// for unit-variance V; the cosine test is the tight one.
struct Tolerance {
  double abs = 8e-3;  // per element: |actual - expected| <= abs + rel * |expected|
  double rel = 2e-2;
  double cos_diff = 1e-5;  // 1 - 2<x,y>/(|x|^2+|y|^2) over the finite elements
};

struct Comparison {
  bool passed = false;
  std::size_t elements = 0;
  std::size_t out_of_tolerance = 0;    // finite elements outside abs/rel
  std::size_t nonfinite_mismatch = 0;  // NaN/inf where the other is not (or the other sign)
  double max_abs_error = 0.0;
  double max_rel_error = 0.0;  // |a-e| / max(|e|, abs tolerance)
  double cos_diff = 0.0;
  std::size_t worst_index =
      0;  // element with the largest |a-e| - tolerance (or first non-finite mismatch)
  std::string describe() const;  // one line for a failed assertion
};

Comparison compare(std::span<const float> actual, std::span<const double> expected,
                   const Tolerance& tolerance);

}  // namespace omni::amla
