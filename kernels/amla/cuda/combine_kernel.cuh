// The split-KV combine: merges the partial outputs of a request cut into several work items,
// weighting each by exp(lse_i - lse_total). One warp per query row.
#pragma once

#include <cstdint>

#include "omni/amla/cuda.hpp"

namespace omni::amla::cuda::kernel {

constexpr int kCombineRowsPerCta = 8;

struct CombineParams {
  const float* partial_out = nullptr;  // [num_partials, rows, 512]
  const float* partial_lse = nullptr;  // [num_partials, rows]
  const BatchSplit* batch_splits = nullptr;
  float* out = nullptr;
  float* lse = nullptr;
  int seqlen_q = 1;
  int heads_q = 128;
};

__device__ __forceinline__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset /= 2) {
    v = fmaxf(v, __shfl_xor_sync(0xffffffffU, v, offset));
  }
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) {
    v += __shfl_xor_sync(0xffffffffU, v, offset);
  }
  return v;
}

__global__ void __launch_bounds__(kCombineRowsPerCta * 32)
    mla_combine_kernel(const CombineParams p) {
  const int batch = static_cast<int>(blockIdx.y);
  const BatchSplit split = p.batch_splits[batch];
  const int rows = p.seqlen_q * p.heads_q;
  const int row =
      static_cast<int>(blockIdx.x) * kCombineRowsPerCta + static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  if (split.num_splits <= 1 || row >= rows) {
    return;
  }
  auto partial_lse = [&](int i) {
    return p.partial_lse[static_cast<std::size_t>(split.first_partial + i) * rows + row];
  };
  float max_lse = -INFINITY;
  for (int i = lane; i < split.num_splits; i += 32) {
    max_lse = fmaxf(max_lse, partial_lse(i));
  }
  max_lse = warp_max(max_lse);
  float total_lse = -INFINITY;
  if (max_lse != -INFINITY) {
    float sum = 0.0f;
    for (int i = lane; i < split.num_splits; i += 32) {
      sum += expf(partial_lse(i) - max_lse);
    }
    total_lse = max_lse + logf(warp_sum(sum));
  }
  float* dst = p.out + (static_cast<std::size_t>(batch) * rows + row) * 512;
  for (int col = lane * 4; col < 512; col += 128) {
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (total_lse != -INFINITY) {
      for (int i = 0; i < split.num_splits; ++i) {
        const float weight = expf(partial_lse(i) - total_lse);  // 0 for an empty split
        const float4 v = *reinterpret_cast<const float4*>(
            p.partial_out + (static_cast<std::size_t>(split.first_partial + i) * rows + row) * 512 +
            col);
        acc.x += weight * v.x;
        acc.y += weight * v.y;
        acc.z += weight * v.z;
        acc.w += weight * v.w;
      }
    }
    *reinterpret_cast<float4*>(dst + col) = acc;
  }
  if (lane == 0) {
    const int token = row / p.heads_q;
    const int head = row % p.heads_q;
    p.lse[(static_cast<std::size_t>(batch) * p.heads_q + head) * p.seqlen_q + token] = total_lse;
  }
}

}  // namespace omni::amla::cuda::kernel
