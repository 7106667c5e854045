// The engine's matrix kernels, one table per instruction set (each ISA in its own translation
// unit with its flags, chosen once at start-up from omni::amla::runtime_isa(), i.e. the best
// this CPU has or OMNI_FORCE_ISA). Every kernel reads the weights in their stored dtype and
// dequantizes in registers: f32, f16, bf16, FP8 e4m3 with 128x128 block scales, q8_0.
//
//   gemv        y[i][r] = W[r] . x[i]           rows [r0, r1), i < m <= kMaxRows (decode)
//   gate_up     y[i][r] = silu(G[r].x[i]) * (U[r].x[i])  (SiLU-mul on the output tile)
//   gemv_t      y[c]    = sum_r x[r] W[r][c]    (W_UK^T q for HF's kv_b layout)
//   dequant     rows [r0, r1) of W as f32       (a GEMM panel; never the whole matrix)
//   exp_sum     out = e^(x - shift), returns the sum (sampling's softmax)
#pragma once

#include "omni/amla/cpu.hpp"
#include "omni/model/tensor.hpp"

namespace omni::model::kernels {

inline constexpr int kMaxRows = 4;  // activations per weight pass of gemv

struct KernelTable {
  omni::amla::Isa isa;
  void (*gemv)(const Matrix& w, int r0, int r1, const float* x, int ldx, int m, float* y, int ldy);
  void (*gate_up)(const Matrix& gate, const Matrix& up, int r0, int r1, const float* x, int ldx,
                  int m, float* y, int ldy);
  void (*gemv_t)(const Matrix& w, const float* x, float* y);
  void (*dequant)(const Matrix& w, int r0, int r1, float* out);
  double (*exp_sum)(const float* x, int n, float shift, float* out);
};

const KernelTable& table(omni::amla::Isa isa);
const KernelTable& table_scalar();
const KernelTable& table_avx2();
const KernelTable& table_avx512();

}  // namespace omni::model::kernels
