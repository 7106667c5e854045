// The kernels' bodies, written once over a vector-traits type V (scalar, AVX2, AVX-512) and
// instantiated in each ISA's translation unit. V provides: kLanes, F (a float vector),
// zero(), load(const float*), store, fma(a, b, acc), mul, set1, hsum, and the weight loaders
// from_bf16 / from_f16 / from_fp8 (returns value * 256, see below) / from_i8.
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
  static typename V::F load(const Matrix& w, const std::byte* row, int r, int c) {
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
      return V::mul(V::from_i8(q), V::set1(f16_to_float(d)));
    }
  }

  static void dots(const Matrix& w, int r, const float* x, int ldx, int m, float* out) {
    const std::byte* row = w.data + uz(r) * w.row_stride;
    typename V::F acc[kMaxRows][2];
    for (int i = 0; i < kMaxRows; ++i) acc[i][0] = acc[i][1] = V::zero();
    const int vec_end = w.cols / V::kLanes * V::kLanes;
    int c = 0;
    for (; c + 2 * V::kLanes <= vec_end; c += 2 * V::kLanes) {
      const auto w0 = load(w, row, r, c);
      const auto w1 = load(w, row, r, c + V::kLanes);
      for (int i = 0; i < m; ++i) {
        acc[i][0] = V::fma(w0, V::load(x + uz(i) * uz(ldx) + uz(c)), acc[i][0]);
        acc[i][1] = V::fma(w1, V::load(x + uz(i) * uz(ldx) + uz(c + V::kLanes)), acc[i][1]);
      }
    }
    for (; c < vec_end; c += V::kLanes) {
      const auto w0 = load(w, row, r, c);
      for (int i = 0; i < m; ++i)
        acc[i][0] = V::fma(w0, V::load(x + uz(i) * uz(ldx) + uz(c)), acc[i][0]);
    }
    for (int i = 0; i < m; ++i) {
      float s = V::hsum(V::add(acc[i][0], acc[i][1]));
      for (int t = vec_end; t < w.cols; ++t)
        s += static_cast<float>(w.at(r, t)) * x[uz(i) * uz(ldx) + uz(t)];
      out[i] = s;
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

template <class V>
void gemv(const Matrix& w, int r0, int r1, const float* x, int ldx, int m, float* y, int ldy) {
  by_dtype<V>(w.dtype, [&](auto row) {
    float out[kMaxRows];
    for (int r = r0; r < r1; ++r) {
      row.dots(w, r, x, ldx, m, out);
      for (int i = 0; i < m; ++i) y[uz(i) * uz(ldy) + uz(r)] = out[i];
    }
  });
}

template <class V>
void gate_up(const Matrix& g, const Matrix& u, int r0, int r1, const float* x, int ldx, int m,
             float* y, int ldy) {
  by_dtype<V>(g.dtype, [&](auto row) {
    float go[kMaxRows], uo[kMaxRows];
    for (int r = r0; r < r1; ++r) {
      row.dots(g, r, x, ldx, m, go);
      row.dots(u, r, x, ldx, m, uo);
      for (int i = 0; i < m; ++i) y[uz(i) * uz(ldy) + uz(r)] = silu(go[i]) * uo[i];
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

template <class V>
KernelTable make_table(omni::amla::Isa isa) {
  return KernelTable{isa, &gemv<V>, &gate_up<V>, &gemv_t<V>, &dequant<V>};
}

}  // namespace omni::model::kernels::impl
