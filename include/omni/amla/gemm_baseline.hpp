// The GEMM-based MLA decode a framework would run without a fused kernel, our honest
// baseline: per sequence, gather the paged KV rows, S = scale * Q K^T (OpenBLAS sbgemm on
// bf16, or sgemm on fp32), a row softmax (vectorised, causal mask applied), P to bf16, and
// O = P V with V the first dv columns of the gathered rows (another sbgemm / sgemm).
#pragma once

#include <memory>

#include "omni/amla/cpu.hpp"
#include "omni/amla/problem.hpp"
#include "omni/common/result.hpp"

namespace omni::amla {

enum class GemmPrecision { kBf16, kFp32 };

// Whether the OpenBLAS loaded at run time exports cblas_sbgemm (Debian 12's does not; then
// only kFp32 runs, and kBf16 is kUnsupported).
bool blas_has_sbgemm();

// OpenBLAS's own thread count (process-wide): the GEMMs run on it.
void set_blas_threads(int threads);

// Threading: one run() at a time per instance.
class GemmBaseline {
 public:
  GemmBaseline(GemmPrecision precision, Isa softmax_isa);
  ~GemmBaseline();
  GemmBaseline(GemmBaseline&&) noexcept;
  GemmBaseline& operator=(GemmBaseline&&) noexcept;

  // Same contract as CpuDecoder::run; the softmax rows run on `executor`.
  Status run(const DecodeInputs& inputs, const DecodeOutputs& outputs, Executor& executor);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace omni::amla
