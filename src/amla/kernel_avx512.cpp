// AVX-512 kernels with AVX512-BF16 dot products (vdpbf16ps: 32 bf16 products summed in pairs
// into 16 fp32 lanes). Compiled with AVX-512 flags; called only when isa_supported(kAvx512).
//
//   scores: S^T[key][m] = sum_p Kpair[key][p] . Qpair[p][m]   (K pairs broadcast, Q packed)
//   values: acc[m][d]  += sum_jp Ppair[jp][m] . Vpair[jp][d]  (P pairs broadcast, V interleaved)
//
// A bf16 "pair" is two consecutive bf16 along the reduction dimension in one 32-bit word, the
// operand layout vdpbf16ps wants: Q and K pairs are two consecutive head dimensions (free in
// the natural row layout), P and V pairs are two consecutive keys (P is written paired; V is
// interleaved once per block, amortised over all rows).
//
// GCC 12 reports its own AVX-512 intrinsics' deliberately undefined temporaries (the
// `__Y = __Y` idiom of _mm512_undefined_*) as maybe-uninitialized once they are inlined; the
// warning points into the compiler's header, so it is silenced for this file only.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "kernel.hpp"
#include "online_softmax.hpp"

namespace omni::amla::detail_kernel {
namespace {

std::size_t sz(int v) { return static_cast<std::size_t>(v); }

constexpr int kKeysPerTile = 8;  // keys of one score micro-tile (broadcast operands)
constexpr int kRowVecs = 3;      // 16-row vectors of one score micro-tile
constexpr int kPvRows = 6;       // rows of one P.V micro-tile (fewer at the end of the rows)
constexpr int kPvVecs = 4;       // 16-column vectors of one P.V micro-tile (dv % 64 == 0)

__m512bh as_bh(__m512i v) { return std::bit_cast<__m512bh>(v); }

__m512 exp2_ps(__m512 x) {
  x = _mm512_max_ps(_mm512_set1_ps(-150.0f), x);  // keeps NaN; -inf and below -150 give 0
  const __m512 xi = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_sub_ps(x, xi);
  __m512 p = _mm512_set1_ps(kExp2Poly[0]);
  for (int i = 1; i < 6; ++i) p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(kExp2Poly[i]));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, xi);
}

// Qpair[p][m] for p < head_dim/2, rows >= `rows` zero.
void pack_q(const bf16_bits* q, int rows, int mpad, int head_dim, std::uint32_t* qp) {
  const int pairs = head_dim / 2;
  for (int m = 0; m < mpad; ++m) {
    const bf16_bits* row = q + sz(m) * sz(head_dim);
    for (int p = 0; p < pairs; ++p) {
      std::uint32_t word = 0;
      if (m < rows) std::memcpy(&word, row + 2 * p, sizeof(word));
      qp[sz(p) * sz(mpad) + sz(m)] = word;
    }
  }
}

// scores[j][m0 + 16 i] for j < kKeysPerTile, i < kVecs, times `scale`.
template <int kVecs>
void score_tile(const std::uint32_t* qp, int mpad, int pairs, const bf16_bits* const* keys,
                float* scores, float scale) {
  __m512 acc[kKeysPerTile][kVecs];
#pragma GCC unroll 32
  for (auto& row : acc) {
#pragma GCC unroll 32
    for (auto& v : row) v = _mm512_setzero_ps();
  }
  for (int p = 0; p < pairs; ++p) {
    __m512bh qv[kVecs];
#pragma GCC unroll 32
    for (int i = 0; i < kVecs; ++i)
      qv[i] = as_bh(_mm512_load_si512(qp + sz(p) * sz(mpad) + sz(16 * i)));
#pragma GCC unroll 32
    for (int j = 0; j < kKeysPerTile; ++j) {
      std::int32_t word;
      std::memcpy(&word, keys[j] + 2 * p, sizeof(word));
      const __m512bh kb = as_bh(_mm512_set1_epi32(word));
#pragma GCC unroll 32
      for (int i = 0; i < kVecs; ++i) acc[j][i] = _mm512_dpbf16_ps(acc[j][i], kb, qv[i]);
    }
  }
  const __m512 s = _mm512_set1_ps(scale);
#pragma GCC unroll 32
  for (int j = 0; j < kKeysPerTile; ++j) {
#pragma GCC unroll 32
    for (int i = 0; i < kVecs; ++i)
      _mm512_store_ps(scores + sz(j) * sz(mpad) + sz(16 * i), _mm512_mul_ps(acc[j][i], s));
  }
}

void compute_scores(const std::uint32_t* qp, int mpad, int head_dim, const bf16_bits* const* keys,
                    int n_pad, float* scores, float scale) {
  const int pairs = head_dim / 2;
  for (int j = 0; j < n_pad; j += kKeysPerTile) {
    for (int m = 0; m < mpad; m += 16 * kRowVecs) {
      const std::uint32_t* q = qp + m;
      float* s = scores + sz(j) * sz(mpad) + sz(m);
      switch (std::min(kRowVecs, (mpad - m) / 16)) {
        case 1: score_tile<1>(q, mpad, pairs, keys + j, s, scale); break;
        case 2: score_tile<2>(q, mpad, pairs, keys + j, s, scale); break;
        default: score_tile<3>(q, mpad, pairs, keys + j, s, scale); break;
      }
    }
  }
}

// Vpair[jp][d] = (V[2jp][d], V[2jp+1][d]) for the first dv columns of each key row.
void pack_values(const bf16_bits* const* keys, int n_pad, int dv, std::uint32_t* vp) {
  alignas(64) static constexpr std::uint16_t kLo[32] = {0,  32, 1,  33, 2,  34, 3,  35, 4,  36, 5,
                                                        37, 6,  38, 7,  39, 8,  40, 9,  41, 10, 42,
                                                        11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
  alignas(64) static constexpr std::uint16_t kHi[32] = {16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21,
                                                        53, 22, 54, 23, 55, 24, 56, 25, 57, 26, 58,
                                                        27, 59, 28, 60, 29, 61, 30, 62, 31, 63};
  const __m512i lo_idx = _mm512_load_si512(kLo);
  const __m512i hi_idx = _mm512_load_si512(kHi);
  for (int jp = 0; jp < n_pad / 2; ++jp) {
    const bf16_bits* a = keys[2 * jp];
    const bf16_bits* b = keys[2 * jp + 1];
    std::uint32_t* dst = vp + sz(jp) * sz(dv);
    for (int d = 0; d < dv; d += 32) {
      const __m512i va = _mm512_loadu_si512(a + d);
      const __m512i vb = _mm512_loadu_si512(b + d);
      _mm512_store_si512(dst + d, _mm512_permutex2var_epi16(va, lo_idx, vb));
      _mm512_store_si512(dst + d + 16, _mm512_permutex2var_epi16(va, hi_idx, vb));
    }
  }
}

template <bool kAmla>
void rescale_row(float* row, int dv, const RowUpdate& u) {
  if constexpr (kAmla) {
    // x * 2^shift as an integer add to the exponent field; results below 2^-126 flush to 0.
    const __m512i add =
        _mm512_set1_epi32(static_cast<std::int32_t>(static_cast<std::uint32_t>(u.shift) << 23));
    const __m512i limit = _mm512_set1_epi32(-u.shift);
    const __m512i sign = _mm512_set1_epi32(static_cast<std::int32_t>(0x80000000U));
    const __m512i exp_mask = _mm512_set1_epi32(0xff);
    for (int d = 0; d < dv; d += 16) {
      const __m512i bits = _mm512_load_si512(row + d);
      const __m512i exponent = _mm512_and_si512(_mm512_srli_epi32(bits, 23), exp_mask);
      const __mmask16 keep = _mm512_cmpgt_epi32_mask(exponent, limit);
      _mm512_store_si512(row + d,
                         _mm512_mask_add_epi32(_mm512_and_si512(bits, sign), keep, bits, add));
    }
  } else {
    const __m512 f = _mm512_set1_ps(u.factor);
    for (int d = 0; d < dv; d += 16)
      _mm512_store_ps(row + d, _mm512_mul_ps(_mm512_load_ps(row + d), f));
  }
}

// Online-softmax step for one block: block max, row updates (rescaling acc when the max
// moves), then P = exp2(S - max) written as bf16 pairs, summed (as rounded) into row_sum.
template <bool kAmla>
void softmax_block(KernelScratch& sc, float* scores, int n_pad, int mpad, int dv, float* acc) {
  float* block_max = sc.block_max.get(sz(mpad));
  float* row_max = sc.row_max.get(sz(mpad));
  float* row_sum = sc.row_sum.get(sz(mpad));
  float* row_sum_lse = sc.row_sum_lse.get(sz(mpad));
  std::uint32_t* probs = sc.probs.get(sz(kBlockKeys / 2) * sz(mpad));
  for (int m = 0; m < mpad; m += 16) {
    __m512 bm = _mm512_set1_ps(kNegInf);
    for (int j = 0; j < n_pad; ++j)
      bm = _mm512_max_ps(bm, _mm512_load_ps(scores + sz(j) * sz(mpad) + sz(m)));
    _mm512_store_ps(block_max + m, bm);
  }
  for (int m = 0; m < mpad; ++m) {
    const RowUpdate u = update_row<kAmla>(row_max[m], block_max[m]);
    if (u.rescale) {
      rescale_row<kAmla>(acc + sz(m) * sz(dv), dv, u);
      row_sum[m] *= u.factor;
      row_sum_lse[m] *= u.factor;
    }
    row_max[m] = u.new_max;
    block_max[m] =
        u.new_max == kNegInf ? 0.0f : u.new_max;  // what P subtracts; -inf rows give P = 0
  }
  alignas(64) static constexpr std::uint16_t kPairIdx[32] = {
      0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
      8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  const __m512i pair_idx = _mm512_load_si512(kPairIdx);
  const __m512i high_half = _mm512_set1_epi32(static_cast<std::int32_t>(0xffff0000U));
  for (int m = 0; m < mpad; m += 16) {
    const __m512 mx = _mm512_load_ps(block_max + m);
    __m512 sum = _mm512_setzero_ps();
    __m512 sum_exact = _mm512_setzero_ps();
    for (int jp = 0; jp < n_pad / 2; ++jp) {
      const __m512 p0 =
          exp2_ps(_mm512_sub_ps(_mm512_load_ps(scores + sz(2 * jp) * sz(mpad) + sz(m)), mx));
      const __m512 p1 =
          exp2_ps(_mm512_sub_ps(_mm512_load_ps(scores + sz(2 * jp + 1) * sz(mpad) + sz(m)), mx));
      sum_exact = _mm512_add_ps(sum_exact, _mm512_add_ps(p0, p1));
      const __m512i both =
          std::bit_cast<__m512i>(_mm512_cvtne2ps_pbh(p1, p0));          // p0 in 0..15, p1 in 16..31
      const __m512i paired = _mm512_permutexvar_epi16(pair_idx, both);  // (p0[i], p1[i]) per word
      _mm512_store_si512(probs + sz(jp) * sz(mpad) + sz(m), paired);
      sum = _mm512_add_ps(sum, _mm512_castsi512_ps(_mm512_slli_epi32(paired, 16)));
      sum = _mm512_add_ps(sum, _mm512_castsi512_ps(_mm512_and_si512(paired, high_half)));
    }
    _mm512_store_ps(row_sum + m, _mm512_add_ps(_mm512_load_ps(row_sum + m), sum));
    _mm512_store_ps(row_sum_lse + m, _mm512_add_ps(_mm512_load_ps(row_sum_lse + m), sum_exact));
  }
}

// acc[m0 + r][d0 + 16 c] += sum_jp Ppair[jp][m0 + r] . Vpair[jp][d0 + 16 c]
template <int kPvRows>
void pv_tile(const std::uint32_t* probs, int mpad, const std::uint32_t* vp, int dv, int pairs,
             float* acc) {
  __m512 o[kPvRows][kPvVecs];
#pragma GCC unroll 32
  for (int r = 0; r < kPvRows; ++r) {
#pragma GCC unroll 32
    for (int c = 0; c < kPvVecs; ++c) o[r][c] = _mm512_load_ps(acc + sz(r) * sz(dv) + sz(16 * c));
  }
  for (int jp = 0; jp < pairs; ++jp) {
    __m512bh v[kPvVecs];
#pragma GCC unroll 32
    for (int c = 0; c < kPvVecs; ++c)
      v[c] = as_bh(_mm512_load_si512(vp + sz(jp) * sz(dv) + sz(16 * c)));
#pragma GCC unroll 32
    for (int r = 0; r < kPvRows; ++r) {
      const __m512bh p =
          as_bh(_mm512_set1_epi32(static_cast<std::int32_t>(probs[sz(jp) * sz(mpad) + sz(r)])));
#pragma GCC unroll 32
      for (int c = 0; c < kPvVecs; ++c) o[r][c] = _mm512_dpbf16_ps(o[r][c], p, v[c]);
    }
  }
#pragma GCC unroll 32
  for (int r = 0; r < kPvRows; ++r) {
#pragma GCC unroll 32
    for (int c = 0; c < kPvVecs; ++c) _mm512_store_ps(acc + sz(r) * sz(dv) + sz(16 * c), o[r][c]);
  }
}

void accumulate_values(const std::uint32_t* probs, int mpad, const std::uint32_t* vp, int dv,
                       int pairs, float* acc) {
  for (int d = 0; d < dv; d += 16 * kPvVecs) {
    for (int m = 0; m < mpad; m += kPvRows) {
      const std::uint32_t* p = probs + m;
      float* o = acc + sz(m) * sz(dv) + sz(d);
      switch (std::min(kPvRows, mpad - m)) {  // mpad is a multiple of 16: tails of 4 or 2 rows
        case 2: pv_tile<2>(p, mpad, vp + d, dv, pairs, o); break;
        case 4: pv_tile<4>(p, mpad, vp + d, dv, pairs, o); break;
        default: pv_tile<kPvRows>(p, mpad, vp + d, dv, pairs, o); break;
      }
    }
  }
}

template <bool kAmla>
void run_item(const DecodeInputs& in, const WorkItem& item, KernelScratch& sc,
              const ItemOutput& out) {
  const DecodeShape& s = in.shape;
  const int rows = s.seqlen_q * s.heads_q;
  const int mpad = padded_rows(rows);
  const int dv = s.dv;
  const float scale = in.softmax_scale * kLog2e;
  const int seqlen_k = in.seqlens_k[sz(item.batch)];

  std::uint32_t* qp = sc.q_packed.get(sz(s.head_dim / 2) * sz(mpad));
  float* scores = sc.scores.get(sz(kBlockKeys) * sz(mpad));
  std::uint32_t* vp = sc.values.get(sz(kBlockKeys / 2) * sz(dv));
  float* acc = sc.acc.get(sz(mpad) * sz(dv));
  std::fill_n(acc, sz(mpad) * sz(dv), 0.0f);
  std::fill_n(sc.row_max.get(sz(mpad)), mpad, kNegInf);
  std::fill_n(sc.row_sum.get(sz(mpad)), mpad, 0.0f);
  std::fill_n(sc.row_sum_lse.get(sz(mpad)), mpad, 0.0f);
  pack_q(in.q.data() + sz(item.batch) * sz(rows) * sz(s.head_dim), rows, mpad, s.head_dim, qp);

  const bf16_bits* keys[kBlockKeys];
  for (int base = item.key_begin; base < item.key_end; base += kBlockKeys) {
    const int n = std::min(kBlockKeys, item.key_end - base);
    const int n_pad = (n + kKeysPerTile - 1) / kKeysPerTile * kKeysPerTile;
    for (int j = 0; j < n_pad; ++j)
      keys[j] = j < n ? cache_row(in, item.batch, base + j) : zero_row();
    compute_scores(qp, mpad, s.head_dim, keys, n_pad, scores, scale);
    mask_block(scores, mpad, n, n_pad, base, seqlen_k, s, in.causal);
    softmax_block<kAmla>(sc, scores, n_pad, mpad, dv, acc);
    pack_values(keys, n_pad, dv, vp);
    accumulate_values(sc.probs.get(0), mpad, vp, dv, n_pad / 2, acc);
  }
  finalize_rows(acc, sc.row_max.get(0), sc.row_sum.get(0), sc.row_sum_lse.get(0), rows, dv, out);
}

}  // namespace

RowSoftmax softmax_row_avx512(float* x, int n) {
  const int vec_end = n / 16 * 16;
  __m512 mx = _mm512_set1_ps(kNegInf);
  for (int i = 0; i < vec_end; i += 16) mx = _mm512_max_ps(mx, _mm512_loadu_ps(x + i));
  RowSoftmax r{_mm512_reduce_max_ps(mx), 0.0f};
  for (int i = vec_end; i < n; ++i) r.max = std::max(r.max, x[i]);
  const float shift = r.max == kNegInf ? 0.0f : r.max;
  const __m512 sv = _mm512_set1_ps(shift);
  __m512 sum = _mm512_setzero_ps();
  for (int i = 0; i < vec_end; i += 16) {
    const __m512 p = exp2_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i), sv));
    _mm512_storeu_ps(x + i, p);
    sum = _mm512_add_ps(sum, p);
  }
  r.sum = _mm512_reduce_add_ps(sum);
  for (int i = vec_end; i < n; ++i) {
    x[i] = std::exp2(x[i] - shift);
    r.sum += x[i];
  }
  return r;
}

void run_item_avx512(const DecodeInputs& in, const WorkItem& item, KernelKind kind,
                     KernelScratch& scratch, const ItemOutput& out) {
  if (kind == KernelKind::kAmla) {
    run_item<true>(in, item, scratch, out);
  } else {
    run_item<false>(in, item, scratch, out);
  }
}

}  // namespace omni::amla::detail_kernel
