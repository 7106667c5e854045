// Scalar kernels: the portable fallback and the plainest statement of both algorithms. fp32
// arithmetic throughout (P is not rounded to bf16 here).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernel.hpp"
#include "omni/amla/bf16.hpp"
#include "online_softmax.hpp"

namespace omni::amla::detail_kernel {
namespace {

std::size_t sz(int v) { return static_cast<std::size_t>(v); }

inline float widen(bf16_bits v) { return bf16_to_float(v); }
inline float widen(float v) { return v; }

template <class T>
float dot_rows(const T* a, const T* b, int n) {
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) sum += widen(a[i]) * widen(b[i]);
  return sum;
}

template <class T>
const T* row_of(const DecodeInputs& in, int batch, int key) {
  if constexpr (std::is_same_v<T, float>) {
    return cache_row_f32(in, batch, key);
  } else {
    return cache_row(in, batch, key);
  }
}

template <bool kAmla>
void rescale_acc_row(float* acc_row, int dv, const RowUpdate& u) {
  if constexpr (kAmla) {
    for (int d = 0; d < dv; ++d) {
      acc_row[d] =
          std::bit_cast<float>(exponent_add(std::bit_cast<std::uint32_t>(acc_row[d]), u.shift));
    }
  } else {
    for (int d = 0; d < dv; ++d) acc_row[d] *= u.factor;
  }
}

template <bool kAmla, class T>
void run_item(const DecodeInputs& in, const WorkItem& item, KernelScratch& sc,
              const ItemOutput& out) {
  const DecodeShape& s = in.shape;
  const int rows = s.seqlen_q * s.heads_q;
  const int mpad = padded_rows(rows);
  const int dv = s.dv;
  const float c = in.softmax_scale * kLog2e;
  const int seqlen_k = in.seqlens_k[sz(item.batch)];
  const T* q_base;
  if constexpr (std::is_same_v<T, float>) {
    q_base = in.q_f32.data();
  } else {
    q_base = in.q.data();
  }
  const T* q = q_base + sz(item.batch) * sz(rows) * sz(s.head_dim);

  float* acc = sc.acc.get(sz(mpad) * sz(dv));
  float* row_max = sc.row_max.get(sz(mpad));
  float* row_sum = sc.row_sum.get(sz(mpad));
  float* scores = sc.scores.get(sz(kBlockKeys) * sz(mpad));
  std::fill_n(acc, sz(rows) * sz(dv), 0.0f);
  std::fill_n(row_max, rows, kNegInf);
  std::fill_n(row_sum, rows, 0.0f);
  const T* keys[kBlockKeys];

  for (int base = item.key_begin; base < item.key_end; base += kBlockKeys) {
    const int n = std::min(kBlockKeys, item.key_end - base);
    for (int j = 0; j < n; ++j) {
      keys[j] = row_of<T>(in, item.batch, base + j);
      for (int m = 0; m < rows; ++m) {
        scores[j * mpad + m] = dot_rows(q + sz(m) * sz(s.head_dim), keys[j], s.head_dim) * c;
      }
    }
    mask_block(scores, mpad, n, n, base, seqlen_k, s, in.causal);
    for (int m = 0; m < rows; ++m) {
      float block_max = kNegInf;
      for (int j = 0; j < n; ++j) block_max = std::max(block_max, scores[j * mpad + m]);
      const RowUpdate u = update_row<kAmla>(row_max[m], block_max);
      float* acc_row = acc + sz(m) * sz(dv);
      if (u.rescale) {
        rescale_acc_row<kAmla>(acc_row, dv, u);
        row_sum[m] *= u.factor;
      }
      row_max[m] = u.new_max;
      if (u.new_max == kNegInf) continue;  // nothing visible yet
      for (int j = 0; j < n; ++j) {
        const float p = std::exp2(scores[j * mpad + m] - u.new_max);
        row_sum[m] += p;
        for (int d = 0; d < dv; ++d) acc_row[d] += p * widen(keys[j][d]);
      }
    }
  }
  finalize_rows(acc, row_max, row_sum, row_sum, rows, dv, out);
}

}  // namespace

const bf16_bits* zero_row() {
  static const std::vector<bf16_bits> zeros(8192, 0);
  return zeros.data();
}

const float* zero_row_f32() {
  static const std::vector<float> zeros(8192, 0.0f);
  return zeros.data();
}

RowSoftmax softmax_row_scalar(float* x, int n) {
  RowSoftmax r{kNegInf, 0.0f};
  for (int i = 0; i < n; ++i) r.max = std::max(r.max, x[i]);
  const float shift = r.max == kNegInf ? 0.0f : r.max;
  for (int i = 0; i < n; ++i) {
    x[i] = std::exp2(x[i] - shift);
    r.sum += x[i];
  }
  return r;
}

void run_item_scalar(const DecodeInputs& in, const WorkItem& item, KernelKind kind,
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
