// Internal interface between the decoder (planning, combine) and the per-ISA kernels.
//
// A work item is one sequence and one range of its keys, all heads and query tokens at once.
// Its rows are m = token * heads_q + head (M = seqlen_q * heads_q of them), padded to a multiple
// of 16 (kRowPad) so that SIMD code needs no row tails; padded rows are computed and ignored.
// The kernel walks the range in blocks of kBlockKeys keys:
//
//   S^T[key][m]  = K[key] . Q[m]              (scores, keys x rows, vectors run over rows)
//   online softmax per row m (flash: running max; amla: integer running max)
//   acc[m][0..dv) += P[m][key] * V[key]        (vectors run over dv)
//
// and finally writes out_rows[m][0..dv) = acc / l and lse_rows[m] (natural log).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "omni/amla/cpu.hpp"
#include "omni/amla/problem.hpp"

namespace omni::amla::detail_kernel {

inline constexpr int kBlockKeys = 64;
inline constexpr int kRowPad = 16;

inline int padded_rows(int rows) { return (rows + kRowPad - 1) / kRowPad * kRowPad; }

struct WorkItem {
  int batch = 0;
  int key_begin = 0;  // [key_begin, key_end) of the sequence's keys
  int key_end = 0;
  int partial_slot = -1;  // -1: the item covers the whole sequence and writes the output
};

// A 64-byte aligned array that only grows (contents are not preserved across growth).
template <class T>
class AlignedArray {
 public:
  T* get(std::size_t count) {
    if (count > capacity_) {
      const std::size_t bytes = (count * sizeof(T) + 63) / 64 * 64;
      data_.reset(static_cast<T*>(std::aligned_alloc(64, bytes)));
      capacity_ = count;
    }
    return data_.get();
  }

 private:
  struct Free {
    void operator()(T* p) const noexcept { std::free(p); }
  };
  std::unique_ptr<T, Free> data_;
  std::size_t capacity_ = 0;
};

// Per-worker scratch, reused across items and runs.
struct KernelScratch {
  AlignedArray<std::uint32_t> q_packed;  // per ISA: bf16 pairs or floats, [head_dim(/2)][Mpad]
  AlignedArray<float> scores;            // [kBlockKeys][Mpad]
  AlignedArray<std::uint32_t> probs;     // [kBlockKeys/2][Mpad] bf16 pairs (avx512)
  AlignedArray<std::uint32_t> values;    // packed V block
  AlignedArray<float> keys_f32;          // converted K rows (avx2)
  AlignedArray<float> acc;               // [Mpad][dv]
  AlignedArray<float> row_max;           // [Mpad] log2 units (amla: an integer)
  AlignedArray<float> row_sum;           // [Mpad] sum of P as used in P.V
  AlignedArray<float> row_sum_lse;       // [Mpad] sum of unrounded P (for lse)
  AlignedArray<float> block_max;         // [Mpad]
};

// Where an item's results go: out_rows[m * dv + d], lse_rows[m] for m < M.
struct ItemOutput {
  float* out_rows = nullptr;
  float* lse_rows = nullptr;
};

// Cache row of key `key` of sequence `batch` (no bounds checks: validate() ran).
inline const bf16_bits* cache_row(const DecodeInputs& in, int batch, int key) {
  const DecodeShape& s = in.shape;
  const auto page =
      in.block_table[static_cast<std::size_t>(batch * s.max_pages_per_seq + key / s.page_size)];
  const auto row = static_cast<std::size_t>(page) * static_cast<std::size_t>(s.page_size) +
                   static_cast<std::size_t>(key % s.page_size);
  return in.kv_cache.data() + row * static_cast<std::size_t>(s.head_dim);
}

inline const float* cache_row_f32(const DecodeInputs& in, int batch, int key) {
  const DecodeShape& s = in.shape;
  const auto page =
      in.block_table[static_cast<std::size_t>(batch * s.max_pages_per_seq + key / s.page_size)];
  const auto row = static_cast<std::size_t>(page) * static_cast<std::size_t>(s.page_size) +
                   static_cast<std::size_t>(key % s.page_size);
  return in.kv_cache_f32.data() + row * static_cast<std::size_t>(s.head_dim);
}

// A row of zeros standing in for keys past the end of a block (never a NaN page).
const bf16_bits* zero_row();  // 8192 zeros: validate() caps head_dim there
const float* zero_row_f32();  // 8192 zeros

// x[i] <- exp2(x[i] - max x) for i < n (-inf entries give 0); returns the max (log2 units)
// and the sum of the new x. All -inf: max -inf, sum 0, x all 0. The GEMM baseline's softmax.
struct RowSoftmax {
  float max = 0.0f;
  float sum = 0.0f;
};
RowSoftmax softmax_row_scalar(float* x, int n);
RowSoftmax softmax_row_avx2(float* x, int n);
RowSoftmax softmax_row_avx512(float* x, int n);

void run_item_scalar(const DecodeInputs& in, const WorkItem& item, KernelKind kind,
                     KernelScratch& scratch, const ItemOutput& out);
void run_item_avx2(const DecodeInputs& in, const WorkItem& item, KernelKind kind,
                   KernelScratch& scratch, const ItemOutput& out);
void run_item_avx512(const DecodeInputs& in, const WorkItem& item, KernelKind kind,
                     KernelScratch& scratch, const ItemOutput& out);

}  // namespace omni::amla::detail_kernel
