#include "omni/amla/gemm_baseline.hpp"

#include <cblas.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "../kernel.hpp"
#include "omni/amla/bf16.hpp"
#include "omni/amla/reference.hpp"

namespace omni::amla {
namespace {

std::size_t sz(int v) { return static_cast<std::size_t>(v); }
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

detail_kernel::RowSoftmax softmax_row(Isa isa, float* x, int n) {
  switch (isa) {
    case Isa::kAvx512: return detail_kernel::softmax_row_avx512(x, n);
    case Isa::kAvx2: return detail_kernel::softmax_row_avx2(x, n);
    case Isa::kScalar: break;
  }
  return detail_kernel::softmax_row_scalar(x, n);
}

// cblas_sbgemm / cblas_sbstobf16 are declared by every OpenBLAS header but exported only by
// builds with BUILD_BFLOAT16 (Debian 12's 0.3.21 lacks them), so they are looked up at run
// time; without them the baseline runs sgemm on widened operands.
using SbgemmFn = decltype(&cblas_sbgemm);
using SbstoBf16Fn = decltype(&cblas_sbstobf16);

struct Bf16Blas {
  SbgemmFn sbgemm = nullptr;
  SbstoBf16Fn to_bf16 = nullptr;
};

const Bf16Blas& bf16_blas() {
  static const Bf16Blas blas = [] {
    Bf16Blas b;
    b.sbgemm = reinterpret_cast<SbgemmFn>(dlsym(RTLD_DEFAULT, "cblas_sbgemm"));
    b.to_bf16 = reinterpret_cast<SbstoBf16Fn>(dlsym(RTLD_DEFAULT, "cblas_sbstobf16"));
    if (!b.sbgemm || !b.to_bf16) b = Bf16Blas{};
    return b;
  }();
  return blas;
}

}  // namespace

bool blas_has_sbgemm() { return bf16_blas().sbgemm != nullptr; }

void set_blas_threads(int threads) { openblas_set_num_threads(std::max(1, threads)); }

struct GemmBaseline::State {
  GemmPrecision precision;
  Isa isa;
  std::vector<bf16_bits> keys;         // gathered [len][head_dim]
  std::vector<float> keys_f32, q_f32;  // sgemm operands
  std::vector<float> scores;           // [rows][len], P in place
  std::vector<bf16_bits> probs;        // P as bf16
  std::vector<detail_kernel::RowSoftmax> stats;

  void gather(const DecodeInputs& in, int batch, int len);
  void scores_gemm(const DecodeInputs& in, int batch, int rows, int len);
  void softmax(const DecodeInputs& in, int rows, int len, Executor& executor);
  void values_gemm(const DecodeInputs& in, int rows, int len, float* out);
};

void GemmBaseline::State::gather(const DecodeInputs& in, int batch, int len) {
  const int d = in.shape.head_dim;
  keys.resize(sz(len) * sz(d));
  for (int k = 0; k < len; ++k) {
    std::memcpy(keys.data() + sz(k) * sz(d), detail_kernel::cache_row(in, batch, k),
                sz(d) * sizeof(bf16_bits));
  }
}

void GemmBaseline::State::scores_gemm(const DecodeInputs& in, int batch, int rows, int len) {
  const int d = in.shape.head_dim;
  const bf16_bits* q = in.q.data() + sz(batch) * sz(rows) * sz(d);
  scores.resize(sz(rows) * sz(len));
  const float alpha = in.softmax_scale * kLog2e;  // log2 units: the softmax uses exp2
  if (precision == GemmPrecision::kBf16) {
    bf16_blas().sbgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, len, d, alpha, q, d,
                       keys.data(), d, 0.0f, scores.data(), len);
    return;
  }
  q_f32.resize(sz(rows) * sz(d));
  keys_f32.resize(keys.size());
  for (std::size_t i = 0; i < q_f32.size(); ++i) q_f32[i] = bf16_to_float(q[i]);
  for (std::size_t i = 0; i < keys.size(); ++i) keys_f32[i] = bf16_to_float(keys[i]);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, len, d, alpha, q_f32.data(), d,
              keys_f32.data(), d, 0.0f, scores.data(), len);
}

void GemmBaseline::State::softmax(const DecodeInputs& in, int rows, int len, Executor& executor) {
  const DecodeShape& s = in.shape;
  stats.resize(sz(rows));
  constexpr int kRowsPerTask = 16;
  const int tasks = (rows + kRowsPerTask - 1) / kRowsPerTask;
  executor.run(tasks, [&](int task, int) {
    for (int m = task * kRowsPerTask; m < std::min(rows, (task + 1) * kRowsPerTask); ++m) {
      float* row = scores.data() + sz(m) * sz(len);
      const int visible = visible_keys(len, s.seqlen_q, m / s.heads_q, in.causal);
      std::fill(row + visible, row + len, -std::numeric_limits<float>::infinity());
      stats[sz(m)] = softmax_row(isa, row, len);
    }
  });
}

void GemmBaseline::State::values_gemm(const DecodeInputs& in, int rows, int len, float* out) {
  const int d = in.shape.head_dim, dv = in.shape.dv;
  if (precision == GemmPrecision::kBf16) {
    probs.resize(scores.size());
    bf16_blas().to_bf16(static_cast<blasint>(scores.size()), scores.data(), 1, probs.data(), 1);
    bf16_blas().sbgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, dv, len, 1.0f, probs.data(),
                       len, keys.data(), d, 0.0f, out, dv);
  } else {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, dv, len, 1.0f, scores.data(), len,
                keys_f32.data(), d, 0.0f, out, dv);
  }
}

GemmBaseline::GemmBaseline(GemmPrecision precision, Isa softmax_isa)
    : state_(std::make_unique<State>()) {
  state_->precision = precision;
  state_->isa = softmax_isa;
}
GemmBaseline::~GemmBaseline() = default;
GemmBaseline::GemmBaseline(GemmBaseline&&) noexcept = default;
GemmBaseline& GemmBaseline::operator=(GemmBaseline&&) noexcept = default;

Status GemmBaseline::run(const DecodeInputs& in, const DecodeOutputs& out, Executor& executor) {
  if (!isa_supported(state_->isa))
    return make_error(ErrorCode::kUnsupported, "softmax ISA not supported here");
  if (state_->precision == GemmPrecision::kBf16 && !blas_has_sbgemm()) {
    return make_error(ErrorCode::kUnsupported,
                      "this OpenBLAS exports no cblas_sbgemm (built without BUILD_BFLOAT16)");
  }
  if (auto st = validate(in, out); !st) return st;
  const DecodeShape& s = in.shape;
  const int rows = s.seqlen_q * s.heads_q;
  State& st = *state_;
  for (int b = 0; b < s.batch; ++b) {
    const int len = in.seqlens_k[sz(b)];
    float* out_b = out.out.data() + sz(b) * sz(rows) * sz(s.dv);
    if (len > 0) {
      st.gather(in, b, len);
      st.scores_gemm(in, b, rows, len);
      st.softmax(in, rows, len, executor);
      st.values_gemm(in, rows, len, out_b);
    }
    for (int m = 0; m < rows; ++m) {
      const detail_kernel::RowSoftmax r = len > 0 ? st.stats[sz(m)] : detail_kernel::RowSoftmax{};
      float* row = out_b + sz(m) * sz(s.dv);
      float& lse =
          out.lse[(sz(b) * sz(s.heads_q) + sz(m % s.heads_q)) * sz(s.seqlen_q) + sz(m / s.heads_q)];
      if (!(r.sum > 0.0f)) {
        std::fill_n(row, s.dv, 0.0f);
        lse = -std::numeric_limits<float>::infinity();
        continue;
      }
      const float inv = 1.0f / r.sum;
      for (int d = 0; d < s.dv; ++d) row[d] *= inv;
      lse = (r.max + std::log2(r.sum)) * kLn2;
    }
  }
  return ok_status();
}

}  // namespace omni::amla
