// AVX2 + FMA kernels: fp32 arithmetic on bf16 inputs widened once per block (AVX2 has no
// bf16 dot product). Same structure as the AVX-512 kernels:
//   scores: S^T[key][m] = sum_d K[key][d] * Q[d][m]    (K broadcast, Q packed as [d][m] floats)
//   values: acc[m][d]  += sum_key P[key][m] * V[key][d] (P broadcast, V widened to floats)
// Compiled with -mavx2 -mfma; called only when isa_supported(kAvx2).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "kernel.hpp"
#include "omni/amla/bf16.hpp"
#include "online_softmax.hpp"

namespace omni::amla::detail_kernel {
namespace {

std::size_t sz(int v) { return static_cast<std::size_t>(v); }

constexpr int kKeysPerTile = 4;
constexpr int kPvRows = 4;
constexpr int kPvVecs = 2;

__m256 exp2_ps(__m256 x) {
  x = _mm256_max_ps(_mm256_set1_ps(-127.0f), x);  // keeps NaN; 2^-127 and below give 0
  const __m256 xi = _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 f = _mm256_sub_ps(x, xi);
  __m256 p = _mm256_set1_ps(kExp2Poly[0]);
  for (int i = 1; i < 6; ++i) p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(kExp2Poly[i]));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f));
  const __m256i bits =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(xi), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
}

// 8 bf16 -> 8 floats.
__m256 load_bf16x8(const bf16_bits* p) {
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(raw), 16));
}

void widen_row(const bf16_bits* src, int n, float* dst) {
  int i = 0;
  for (; i + 8 <= n; i += 8) _mm256_store_ps(dst + i, load_bf16x8(src + i));
  for (; i < n; ++i) dst[i] = bf16_to_float(src[i]);
}

void widen_row(const float* src, int n, float* dst) { std::copy_n(src, n, dst); }

inline float widen(bf16_bits v) { return bf16_to_float(v); }
inline float widen(float v) { return v; }

// Q[d][m] as floats, rows >= `rows` zero.
template <class T>
void pack_q(const T* q, int rows, int mpad, int head_dim, float* qf) {
  for (int m = 0; m < mpad; ++m) {
    for (int d = 0; d < head_dim; ++d) {
      qf[sz(d) * sz(mpad) + sz(m)] = m < rows ? widen(q[sz(m) * sz(head_dim) + sz(d)]) : 0.0f;
    }
  }
}

// scores[j][m..m+16) for the kKeysPerTile keys widened in kf ([j][head_dim]).
void score_tile(const float* qf, int mpad, int head_dim, const float* kf, float* scores,
                float scale) {
  __m256 acc[kKeysPerTile][2];
#pragma GCC unroll 32
  for (auto& row : acc) row[0] = row[1] = _mm256_setzero_ps();
  for (int d = 0; d < head_dim; ++d) {
    const __m256 q0 = _mm256_load_ps(qf + sz(d) * sz(mpad));
    const __m256 q1 = _mm256_load_ps(qf + sz(d) * sz(mpad) + 8);
#pragma GCC unroll 32
    for (int j = 0; j < kKeysPerTile; ++j) {
      const __m256 k = _mm256_broadcast_ss(kf + sz(j) * sz(head_dim) + sz(d));
      acc[j][0] = _mm256_fmadd_ps(k, q0, acc[j][0]);
      acc[j][1] = _mm256_fmadd_ps(k, q1, acc[j][1]);
    }
  }
  const __m256 s = _mm256_set1_ps(scale);
#pragma GCC unroll 32
  for (int j = 0; j < kKeysPerTile; ++j) {
    _mm256_store_ps(scores + sz(j) * sz(mpad), _mm256_mul_ps(acc[j][0], s));
    _mm256_store_ps(scores + sz(j) * sz(mpad) + 8, _mm256_mul_ps(acc[j][1], s));
  }
}

template <bool kAmla>
void rescale_row(float* row, int dv, const RowUpdate& u) {
  if constexpr (kAmla) {
    const __m256i add =
        _mm256_set1_epi32(static_cast<std::int32_t>(static_cast<std::uint32_t>(u.shift) << 23));
    const __m256i limit = _mm256_set1_epi32(-u.shift);
    const __m256i sign = _mm256_set1_epi32(static_cast<std::int32_t>(0x80000000U));
    const __m256i exp_mask = _mm256_set1_epi32(0xff);
    for (int d = 0; d < dv; d += 8) {
      const __m256i bits = _mm256_load_si256(reinterpret_cast<const __m256i*>(row + d));
      const __m256i keep =
          _mm256_cmpgt_epi32(_mm256_and_si256(_mm256_srli_epi32(bits, 23), exp_mask), limit);
      const __m256i result =
          _mm256_blendv_epi8(_mm256_and_si256(bits, sign), _mm256_add_epi32(bits, add), keep);
      _mm256_store_si256(reinterpret_cast<__m256i*>(row + d), result);
    }
  } else {
    const __m256 f = _mm256_set1_ps(u.factor);
    for (int d = 0; d < dv; d += 8)
      _mm256_store_ps(row + d, _mm256_mul_ps(_mm256_load_ps(row + d), f));
  }
}

// Block max, row updates, then P = exp2(S - max) in place of S, summed into row_sum.
template <bool kAmla>
void softmax_block(KernelScratch& sc, float* scores, int n_pad, int mpad, int dv, float* acc) {
  float* block_max = sc.block_max.get(sz(mpad));
  float* row_max = sc.row_max.get(sz(mpad));
  float* row_sum = sc.row_sum.get(sz(mpad));
  for (int m = 0; m < mpad; m += 8) {
    __m256 bm = _mm256_set1_ps(kNegInf);
    for (int j = 0; j < n_pad; ++j)
      bm = _mm256_max_ps(bm, _mm256_load_ps(scores + sz(j) * sz(mpad) + sz(m)));
    _mm256_store_ps(block_max + m, bm);
  }
  for (int m = 0; m < mpad; ++m) {
    const RowUpdate u = update_row<kAmla>(row_max[m], block_max[m]);
    if (u.rescale) {
      rescale_row<kAmla>(acc + sz(m) * sz(dv), dv, u);
      row_sum[m] *= u.factor;
    }
    row_max[m] = u.new_max;
    block_max[m] = u.new_max == kNegInf ? 0.0f : u.new_max;
  }
  for (int m = 0; m < mpad; m += 8) {
    const __m256 mx = _mm256_load_ps(block_max + m);
    __m256 sum = _mm256_setzero_ps();
    for (int j = 0; j < n_pad; ++j) {
      float* s = scores + sz(j) * sz(mpad) + sz(m);
      const __m256 p = exp2_ps(_mm256_sub_ps(_mm256_load_ps(s), mx));
      _mm256_store_ps(s, p);
      sum = _mm256_add_ps(sum, p);
    }
    _mm256_store_ps(row_sum + m, _mm256_add_ps(_mm256_load_ps(row_sum + m), sum));
  }
}

void pv_tile(const float* probs, int mpad, const float* vf, int dv, int keys, float* acc) {
  __m256 o[kPvRows][kPvVecs];
#pragma GCC unroll 32
  for (int r = 0; r < kPvRows; ++r) {
#pragma GCC unroll 32
    for (int c = 0; c < kPvVecs; ++c) o[r][c] = _mm256_load_ps(acc + sz(r) * sz(dv) + sz(8 * c));
  }
  for (int j = 0; j < keys; ++j) {
    __m256 v[kPvVecs];
#pragma GCC unroll 32
    for (int c = 0; c < kPvVecs; ++c) v[c] = _mm256_load_ps(vf + sz(j) * sz(dv) + sz(8 * c));
#pragma GCC unroll 32
    for (int r = 0; r < kPvRows; ++r) {
      const __m256 p = _mm256_broadcast_ss(probs + sz(j) * sz(mpad) + sz(r));
#pragma GCC unroll 32
      for (int c = 0; c < kPvVecs; ++c) o[r][c] = _mm256_fmadd_ps(p, v[c], o[r][c]);
    }
  }
#pragma GCC unroll 32
  for (int r = 0; r < kPvRows; ++r) {
#pragma GCC unroll 32
    for (int c = 0; c < kPvVecs; ++c) _mm256_store_ps(acc + sz(r) * sz(dv) + sz(8 * c), o[r][c]);
  }
}

template <bool kAmla, class T>
void run_item(const DecodeInputs& in, const WorkItem& item, KernelScratch& sc,
              const ItemOutput& out) {
  const DecodeShape& s = in.shape;
  const int rows = s.seqlen_q * s.heads_q;
  const int mpad = padded_rows(rows);
  const int dv = s.dv, head_dim = s.head_dim;
  const float scale = in.softmax_scale * kLog2e;
  const int seqlen_k = in.seqlens_k[sz(item.batch)];

  float* qf = reinterpret_cast<float*>(sc.q_packed.get(sz(head_dim) * sz(mpad)));
  float* scores = sc.scores.get(sz(kBlockKeys) * sz(mpad));
  float* kf = sc.keys_f32.get(sz(kKeysPerTile) * sz(head_dim) + sz(kBlockKeys) * sz(dv));
  float* vf = kf + sz(kKeysPerTile) * sz(head_dim);  // [kBlockKeys][dv]
  float* acc = sc.acc.get(sz(mpad) * sz(dv));
  std::fill_n(acc, sz(mpad) * sz(dv), 0.0f);
  std::fill_n(sc.row_max.get(sz(mpad)), mpad, kNegInf);
  std::fill_n(sc.row_sum.get(sz(mpad)), mpad, 0.0f);
  const T* q_base;
  if constexpr (std::is_same_v<T, float>) {
    q_base = in.q_f32.data();
  } else {
    q_base = in.q.data();
  }
  pack_q(q_base + sz(item.batch) * sz(rows) * sz(head_dim), rows, mpad, head_dim, qf);

  const T* keys[kBlockKeys];
  for (int base = item.key_begin; base < item.key_end; base += kBlockKeys) {
    const int n = std::min(kBlockKeys, item.key_end - base);
    const int n_pad = (n + kKeysPerTile - 1) / kKeysPerTile * kKeysPerTile;
    for (int j = 0; j < n_pad; ++j)
      if constexpr (std::is_same_v<T, float>) {
        keys[j] = j < n ? cache_row_f32(in, item.batch, base + j) : zero_row_f32();
      } else {
        keys[j] = j < n ? cache_row(in, item.batch, base + j) : zero_row();
      }
    for (int j = 0; j < n_pad; j += kKeysPerTile) {
#pragma GCC unroll 32
      for (int t = 0; t < kKeysPerTile; ++t)
        widen_row(keys[j + t], head_dim, kf + sz(t) * sz(head_dim));
      for (int m = 0; m < mpad; m += 16)
        score_tile(qf + m, mpad, head_dim, kf, scores + sz(j) * sz(mpad) + sz(m), scale);
    }
    mask_block(scores, mpad, n, n_pad, base, seqlen_k, s, in.causal);
    softmax_block<kAmla>(sc, scores, n_pad, mpad, dv, acc);
    for (int j = 0; j < n_pad; ++j) widen_row(keys[j], dv, vf + sz(j) * sz(dv));
    for (int d = 0; d < dv; d += 8 * kPvVecs) {
      for (int m = 0; m < mpad; m += kPvRows)
        pv_tile(scores + m, mpad, vf + d, dv, n_pad, acc + sz(m) * sz(dv) + sz(d));
    }
  }
  finalize_rows(acc, sc.row_max.get(0), sc.row_sum.get(0), sc.row_sum.get(0), rows, dv, out);
}

}  // namespace

RowSoftmax softmax_row_avx2(float* x, int n) {
  const int vec_end = n / 8 * 8;
  __m256 mx = _mm256_set1_ps(kNegInf);
  for (int i = 0; i < vec_end; i += 8) mx = _mm256_max_ps(mx, _mm256_loadu_ps(x + i));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, mx);
  RowSoftmax r{kNegInf, 0.0f};
  for (const float v : lanes) r.max = std::max(r.max, v);
  for (int i = vec_end; i < n; ++i) r.max = std::max(r.max, x[i]);
  const float shift = r.max == kNegInf ? 0.0f : r.max;
  const __m256 sv = _mm256_set1_ps(shift);
  __m256 sum = _mm256_setzero_ps();
  for (int i = 0; i < vec_end; i += 8) {
    const __m256 p = exp2_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), sv));
    _mm256_storeu_ps(x + i, p);
    sum = _mm256_add_ps(sum, p);
  }
  _mm256_store_ps(lanes, sum);
  for (const float v : lanes) r.sum += v;
  for (int i = vec_end; i < n; ++i) {
    x[i] = std::exp2(x[i] - shift);
    r.sum += x[i];
  }
  return r;
}

void run_item_avx2(const DecodeInputs& in, const WorkItem& item, KernelKind kind,
                   KernelScratch& scratch, const ItemOutput& out) {
  if (in.is_f32()) {
    if (kind == KernelKind::kAmla) {
      run_item<true, float>(in, item, scratch, out);
    } else {
      run_item<false, float>(in, item, scratch, out);
    }
  } else if (kind == KernelKind::kAmla) {
    run_item<true, bf16_bits>(in, item, scratch, out);
  } else {
    run_item<false, bf16_bits>(in, item, scratch, out);
  }
}

}  // namespace omni::amla::detail_kernel
