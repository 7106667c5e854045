// The kernels' bodies, written once over a vector-traits type V (scalar, AVX2, AVX-512) and
// instantiated in each ISA's translation unit. V provides: kLanes, F (a float vector),
// zero(), load(const float*), store, fma(a, b, acc), mul, set1, hsum, and the weight loaders
// from_bf16 / from_f16 / from_fp8 (returns value * 256, see below) / from_i8, and half (one
// f16 scale to float).
//
// FP8 e4m3 -> f16 by bits: (sign << 15) | ((x & 0x7f) << 7) is an f16 whose value is the e4m3
// value times 2^-8, subnormals included (both formats' subnormals line up), so the kernels
// convert with one shift and fold the 2^8 into the block scale. NaN codes are rejected at load.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels.hpp"

namespace omni::model::kernels::impl {

inline std::size_t uz(int v) { return static_cast<std::size_t>(v); }
inline float silu(float v) { return v / (1.0f + std::exp(-v)); }

// Dot products of one weight row with m activation rows, templated on the stored dtype.
template <class V, DType D>
struct Row {
  // Weights [c, c + kLanes) of `row` (row index r within w) as floats.
  [[gnu::always_inline]] static inline typename V::F load(const Matrix& w, const std::byte* row,
                                                          int r, int c) {
    if constexpr (D == DType::kF32) {
      return V::load(reinterpret_cast<const float*>(row) + c);
    } else if constexpr (D == DType::kBF16) {
      return V::from_bf16(reinterpret_cast<const std::uint16_t*>(row) + c);
    } else if constexpr (D == DType::kF16) {
      return V::from_f16(reinterpret_cast<const std::uint16_t*>(row) + c);
    } else if constexpr (D == DType::kF8E4M3) {
      const float s =
          w.scale_inv[uz((w.row_offset + r) / kFp8Block) * uz(w.scale_cols) + uz(c / kFp8Block)] *
          256.0f;
      return V::mul(V::from_fp8(reinterpret_cast<const std::uint8_t*>(row) + c), V::set1(s));
    } else {  // q8_0
      const std::byte* block = row + uz(c / kQ8Block) * uz(kQ8BlockBytes);
      std::uint16_t d;
      std::memcpy(&d, block, 2);
      const auto* q = reinterpret_cast<const std::int8_t*>(block + 2) + c % kQ8Block;
      return V::mul(V::from_i8(q), V::set1(V::half(d)));
    }
  }

  // Dots of row r of w (and, when u is given, of row r of u: gate and up in one pass over x)
  // with M activation rows; the accumulators stay in registers (M is a template parameter).
  template <int M, bool kPair>
  static void dots(const Matrix& w, const Matrix* u, int r, const float* x, int ldx, float* out,
                   float* out_u) {
    const std::byte* row = w.data + uz(r) * w.row_stride;
    const std::byte* urow = kPair ? u->data + uz(r) * u->row_stride : nullptr;
    typename V::F acc[M][2], accu[M][2];
    for (int i = 0; i < M; ++i) acc[i][0] = acc[i][1] = accu[i][0] = accu[i][1] = V::zero();
    const int vec_end = w.cols / V::kLanes * V::kLanes;
    int c = 0;
    for (; c + 2 * V::kLanes <= vec_end; c += 2 * V::kLanes) {
      const auto w0 = load(w, row, r, c);
      const auto w1 = load(w, row, r, c + V::kLanes);
      typename V::F u0 = V::zero(), u1 = V::zero();
      if constexpr (kPair) {
        u0 = load(*u, urow, r, c);
        u1 = load(*u, urow, r, c + V::kLanes);
      }
#pragma GCC unroll 4
      for (int i = 0; i < M; ++i) {
        const auto x0 = V::load(x + uz(i) * uz(ldx) + uz(c));
        const auto x1 = V::load(x + uz(i) * uz(ldx) + uz(c + V::kLanes));
        acc[i][0] = V::fma(w0, x0, acc[i][0]);
        acc[i][1] = V::fma(w1, x1, acc[i][1]);
        if constexpr (kPair) {
          accu[i][0] = V::fma(u0, x0, accu[i][0]);
          accu[i][1] = V::fma(u1, x1, accu[i][1]);
        }
      }
    }
    for (; c < vec_end; c += V::kLanes) {
      const auto w0 = load(w, row, r, c);
#pragma GCC unroll 4
      for (int i = 0; i < M; ++i) {
        const auto x0 = V::load(x + uz(i) * uz(ldx) + uz(c));
        acc[i][0] = V::fma(w0, x0, acc[i][0]);
        if constexpr (kPair) accu[i][0] = V::fma(load(*u, urow, r, c), x0, accu[i][0]);
      }
    }
    for (int i = 0; i < M; ++i) {
      float s = V::hsum(V::add(acc[i][0], acc[i][1]));
      float su = kPair ? V::hsum(V::add(accu[i][0], accu[i][1])) : 0.0f;
      for (int t = vec_end; t < w.cols; ++t) {
        const float xv = x[uz(i) * uz(ldx) + uz(t)];
        s += static_cast<float>(w.at(r, t)) * xv;
        if constexpr (kPair) su += static_cast<float>(u->at(r, t)) * xv;
      }
      out[i] = s;
      if constexpr (kPair) out_u[i] = su;
    }
  }

  // y[c] += a * W[r][c] over the row.
  static void axpy(const Matrix& w, int r, float a, float* y) {
    const std::byte* row = w.data + uz(r) * w.row_stride;
    const auto av = V::set1(a);
    const int vec_end = w.cols / V::kLanes * V::kLanes;
    for (int c = 0; c < vec_end; c += V::kLanes) {
      V::store(y + c, V::fma(load(w, row, r, c), av, V::load(y + c)));
    }
    for (int c = vec_end; c < w.cols; ++c) y[c] += a * static_cast<float>(w.at(r, c));
  }

  static void dequant(const Matrix& w, int r0, int r1, float* out) {
    const int vec_end = w.cols / V::kLanes * V::kLanes;
    for (int r = r0; r < r1; ++r) {
      const std::byte* row = w.data + uz(r) * w.row_stride;
      float* o = out + uz(r - r0) * uz(w.cols);
      for (int c = 0; c < vec_end; c += V::kLanes) V::store(o + c, load(w, row, r, c));
      for (int c = vec_end; c < w.cols; ++c) o[c] = static_cast<float>(w.at(r, c));
    }
  }
};

template <class V, class Fn>
void by_dtype(DType d, Fn&& fn) {
  switch (d) {
    case DType::kF32: fn(Row<V, DType::kF32>{}); break;
    case DType::kBF16: fn(Row<V, DType::kBF16>{}); break;
    case DType::kF16: fn(Row<V, DType::kF16>{}); break;
    case DType::kF8E4M3: fn(Row<V, DType::kF8E4M3>{}); break;
    case DType::kQ8_0: fn(Row<V, DType::kQ8_0>{}); break;
    default: break;
  }
}

template <class V, class RowT, int M>
void gemv_m(const Matrix& w, int r0, int r1, const float* x, int ldx, float* y, int ldy) {
  float out[M];
  for (int r = r0; r < r1; ++r) {
    RowT::template dots<M, false>(w, nullptr, r, x, ldx, out, nullptr);
    for (int i = 0; i < M; ++i) y[uz(i) * uz(ldy) + uz(r)] = out[i];
  }
}

template <class V, class RowT, int M>
void gate_up_m(const Matrix& g, const Matrix& u, int r0, int r1, const float* x, int ldx, float* y,
               int ldy) {
  float go[M], uo[M];
  for (int r = r0; r < r1; ++r) {
    RowT::template dots<M, true>(g, &u, r, x, ldx, go, uo);
    for (int i = 0; i < M; ++i) y[uz(i) * uz(ldy) + uz(r)] = silu(go[i]) * uo[i];
  }
}

template <class V>
void gemv(const Matrix& w, int r0, int r1, const float* x, int ldx, int m, float* y, int ldy) {
  by_dtype<V>(w.dtype, [&](auto row) {
    using RowT = decltype(row);
    switch (m) {
      case 1: gemv_m<V, RowT, 1>(w, r0, r1, x, ldx, y, ldy); break;
      case 2: gemv_m<V, RowT, 2>(w, r0, r1, x, ldx, y, ldy); break;
      case 3: gemv_m<V, RowT, 3>(w, r0, r1, x, ldx, y, ldy); break;
      default: gemv_m<V, RowT, 4>(w, r0, r1, x, ldx, y, ldy); break;
    }
  });
}

// Gate and up must share a dtype (they do in every checkpoint); each row pair is one pass.
template <class V>
void gate_up(const Matrix& g, const Matrix& u, int r0, int r1, const float* x, int ldx, int m,
             float* y, int ldy) {
  by_dtype<V>(g.dtype, [&](auto row) {
    using RowT = decltype(row);
    switch (m) {
      case 1: gate_up_m<V, RowT, 1>(g, u, r0, r1, x, ldx, y, ldy); break;
      case 2: gate_up_m<V, RowT, 2>(g, u, r0, r1, x, ldx, y, ldy); break;
      case 3: gate_up_m<V, RowT, 3>(g, u, r0, r1, x, ldx, y, ldy); break;
      default: gate_up_m<V, RowT, 4>(g, u, r0, r1, x, ldx, y, ldy); break;
    }
  });
}

template <class V>
void gemv_t(const Matrix& w, const float* x, float* y) {
  std::fill_n(y, w.cols, 0.0f);
  by_dtype<V>(w.dtype, [&](auto row) {
    for (int r = 0; r < w.rows; ++r) row.axpy(w, r, x[r], y);
  });
}

template <class V>
void dequant(const Matrix& w, int r0, int r1, float* out) {
  by_dtype<V>(w.dtype, [&](auto row) { row.dequant(w, r0, r1, out); });
}

// out[i] = e^(x[i] - shift); returns the sum (float lanes, added up in double per block).
template <class V>
double exp_sum(const float* x, int n, float shift, float* out) {
  const auto neg = V::set1(-shift);
  double total = 0.0;
  int i = 0;
  constexpr int kBlock = 64 * V::kLanes;
  while (i + V::kLanes <= n) {
    auto acc = V::zero();
    const int end = std::min(n - n % V::kLanes, i + kBlock);
    for (; i < end; i += V::kLanes) {
      const auto e = V::exp(V::add(V::load(x + i), neg));
      V::store(out + i, e);
      acc = V::add(acc, e);
    }
    total += V::hsum(acc);
  }
  for (; i < n; ++i) {  // the lanes' rule: 0 below e^-87.3
    const float v = x[i] - shift;
    out[i] = v < -87.33654f ? 0.0f : std::exp(v);
    total += out[i];
  }
  return total;
}

template <class V>
KernelTable make_table(omni::amla::Isa isa) {
  return KernelTable{isa, &gemv<V>, &gate_up<V>, &gemv_t<V>, &dequant<V>, &exp_sum<V>};
}

}  // namespace omni::model::kernels::impl
