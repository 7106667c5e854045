// The MLA decode kernel: one CTA per (part of the split plan, 64-row query tile).
//
// Roles: warpgroup 2 (warps 8..11) is the producer: one lane of warp 8 issues TMA loads of the
// Q tile and of 64-key KV pages into a two-stage ring guarded by mbarriers, and the warpgroup
// gives its registers to the consumers (setmaxnreg). Warps 0..7 (warpgroups 0, 1) consume. Consumer
// warp w owns query rows 16*(w%4) .. +15; its half h = w/4 computes S for keys 32h .. 32h+31 of the
// block and the output columns 256h .. 256h+255. The two warps sharing rows (a "pair") trade
// their partial row maxima and their P halves through shared memory, synchronised by a named
// barrier per pair.
//
// Shared memory tiles are stored exactly as TMA writes them with 128-byte swizzling: nine
// boxes of 64 rows x 64 columns (128 bytes), the 16-byte chunk c of row r at chunk c ^ (r % 8),
// which makes every ldmatrix below conflict-free.
#pragma once

#include <cuda.h>
#include <cstdint>

#include "omni/amla/cuda.hpp"
#include "ptx.cuh"

namespace omni::amla::cuda::kernel {

constexpr int kTileRows = 64;   // query rows per CTA
constexpr int kBlockKeys = 64;  // keys per pipeline stage (one cache page)
constexpr int kHeadDim = 576;
constexpr int kDv = 512;
constexpr int kBoxCols = 64;  // bf16 columns per TMA box (128 bytes, the swizzle span)
constexpr int kBoxes = kHeadDim / kBoxCols;
constexpr int kBoxBytes = 64 * 128;
constexpr int kTileBytes = kBoxes * kBoxBytes;  // 73,728: one Q tile or one KV page
constexpr int kStages = 2;
constexpr int kConsumerWarps = 8;
constexpr int kThreads = (kConsumerWarps + 4) * 32;  // two consumer warpgroups + producer
// Register budget after reallocation: 256 * 240 + 128 * 24 <= 65,536.
constexpr int kConsumerRegisters = 240;
constexpr int kProducerRegisters = 24;
constexpr int kProducerWarp = kConsumerWarps;
constexpr int kConsumerBarrier = 5;
// Which instructions do the two matrix products (the kMma template argument).
constexpr int kMmaSync = 0;   // both products on mma.sync, blocks one after the other
constexpr int kWgmmaS = 1;    // S on wgmma, issued one block ahead (preload); P.V on mma.sync
constexpr int kWgmmaAll = 2;  // S and P.V on wgmma, with the preload  // named barrier of the 256
                              // consumer threads; pairs use 1..4

// Byte offsets inside the (1024-aligned) dynamic shared memory.
constexpr int kSmemQ = 0;
constexpr int kSmemKv = kSmemQ + kTileBytes;
constexpr int kSmemP = kSmemKv + kStages * kTileBytes;        // P tile: 64 rows x 64 keys bf16
constexpr int kSmemRowMax = kSmemP + kTileRows * 128;         // float [2 halves][64 rows]
constexpr int kSmemRowSum = kSmemRowMax + 2 * kTileRows * 4;  // float [2 parities][2][64]
constexpr int kSmemBarriers = kSmemRowSum + 2 * 2 * kTileRows * 4;
constexpr int kNumBarriers = 2 + 2 * kStages;  // q_full, q_empty, kv_full[], kv_empty[]
constexpr int kSmemUsed = kSmemBarriers + kNumBarriers * 8;
constexpr int kSmemBytes = kSmemUsed + 1024;  // slack to align the base to 1024 bytes
static_assert(kSmemBytes <= 227 * 1024, "shared memory budget of one sm_90 CTA");
static_assert(kSmemP % 1024 == 0 && kSmemKv % 1024 == 0, "swizzled tiles need 1024 alignment");

struct Params {
  const std::int32_t* block_table = nullptr;
  const std::int32_t* seqlens_k = nullptr;
  float* out = nullptr;
  float* lse = nullptr;
  float* partial_out = nullptr;  // [num_partials, rows, 512]
  float* partial_lse = nullptr;  // [num_partials, rows]
  const WorkItem* items = nullptr;
  const std::int32_t* part_offsets = nullptr;
  int seqlen_q = 1;
  int heads_q = 128;
  int max_pages_per_seq = 0;
  float scale_log2 = 0.0f;  // softmax_scale * log2(e): scores live in the log2 domain
  bool causal = true;
};

// Byte offset of (row, col) in a swizzled tile; col is a multiple of 8 for ldmatrix.
__device__ __forceinline__ std::uint32_t tile_offset(int row, int col) {
  const int box = col / kBoxCols;
  const int chunk = (col / 8) % 8;
  return static_cast<std::uint32_t>(box * kBoxBytes + row * 128 + ((chunk ^ (row % 8)) * 16) +
                                    (col % 8) * 2);
}

__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// x * 2^delta for delta <= 0 by adding delta to the exponent field, AMLA's rescale. Results
// that would leave the normal range flush to a signed zero; inf and NaN stay as they are.
__device__ __forceinline__ float scale_by_pow2(float x, int delta) {
  const std::uint32_t bits = __float_as_uint(x);
  const int exponent = static_cast<int>((bits >> 23) & 0xffU);
  if (exponent == 0xff) {
    return x;
  }
  if (exponent + delta <= 0) {
    return __uint_as_float(bits & 0x80000000U);
  }
  return __uint_as_float(bits + (static_cast<std::uint32_t>(delta) << 23));
}

// Per-thread softmax state of the two rows (g and g + 8 of the warp's 16) a thread holds.
struct RowState {
  float base[2];  // running max in the log2 domain (an integer for AMLA), -inf before any key
  float sum[2];   // this thread's share of the row sum, scaled by 2^-base
};

struct Lane {
  int warp, lane, group, quad;  // group = lane / 4 (fragment row), quad = lane % 4
  int row_group, half;          // rows 16*row_group.., keys/cols half
  // Swizzled byte offset, inside a 128-byte row, of chunk pair j (columns 16j .. 16j+15 of a
  // box) for the half this lane addresses in ldmatrix: chunk 2j + lane/16 ("hi", A operands
  // and transposed V) or 2j + (lane/8)%2 ("mid", K). Every row a lane addresses is == lane
  // (mod 8), so the XOR pattern is fixed per lane and the rest of each address is an
  // immediate: this keeps the unrolled loops from hoisting a register per address.
  std::uint32_t swz_hi[4];
  std::uint32_t swz_mid[4];
};

// S[16 rows x 32 keys] = Q[rows] . K[keys of this half]^T over all 576 columns.
__device__ __forceinline__ void compute_scores(float (&s)[4][4], std::uint32_t q_base,
                                               std::uint32_t kv_base, const Lane& l) {
#pragma unroll
  for (int n = 0; n < 4; ++n) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      s[n][i] = 0.0f;
    }
  }
  const int a_row = 16 * l.row_group + (l.lane % 8) + ((l.lane / 8) % 2) * 8;
  const int b_key = 32 * l.half + (l.lane % 8) + (l.lane / 16) * 8;
  const std::uint32_t a_base = q_base + static_cast<std::uint32_t>(a_row * 128);
  const std::uint32_t b_base = kv_base + static_cast<std::uint32_t>(b_key * 128);
#pragma unroll 1
  for (int box = 0; box < kBoxes; ++box) {
    const std::uint32_t box_offset = static_cast<std::uint32_t>(box * kBoxBytes);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      std::uint32_t a[4];
      ptx::ldmatrix_x4(a, a_base + box_offset + l.swz_hi[j]);
#pragma unroll
      for (int np = 0; np < 2; ++np) {
        std::uint32_t b[4];
        ptx::ldmatrix_x4(b, b_base + box_offset + l.swz_mid[j] + np * 16 * 128);
        ptx::mma_bf16_16816(s[2 * np], a, b[0], b[1]);
        ptx::mma_bf16_16816(s[2 * np + 1], a, b[2], b[3]);
      }
    }
  }
}

// The same S with warpgroup MMAs: warpgroup h computes all 64 rows x the 32 keys of half h,
// and each warp receives exactly the rows and keys compute_scores gives it. Operands come
// straight from the TMA-written tiles: Q rows and K rows are both K-major. Issues the 36
// MMAs and commits them as one group; the caller waits (wgmma_wait_all + fence_operands)
// before it reads s.
__device__ __forceinline__ void issue_scores_wgmma(float (&s)[4][4], std::uint32_t q_base,
                                                   std::uint32_t kv_base, const Lane& l) {
  const std::uint32_t k_rows = kv_base + static_cast<std::uint32_t>(32 * l.half * 128);
  ptx::wgmma_fence();
#pragma unroll 1
  for (int box = 0; box < kBoxes; ++box) {
    const std::uint32_t box_offset = static_cast<std::uint32_t>(box * kBoxBytes);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      // 16 columns = 32 bytes along the swizzled row; the hardware applies the XOR.
      const std::uint32_t k_offset = box_offset + static_cast<std::uint32_t>(j * 32);
      ptx::wgmma_m64n32k16(s, ptx::sw128_kmajor_desc(q_base + k_offset),
                           ptx::sw128_kmajor_desc(k_rows + k_offset), box > 0 || j > 0);
    }
  }
  ptx::wgmma_commit();
}

// Keeps the compiler from reading (or moving reads of) wgmma accumulators before the wait.
__device__ __forceinline__ void fence_operands(float (&s)[4][4]) {
#pragma unroll
  for (int n = 0; n < 4; ++n) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      asm volatile("" : "+f"(s[n][i])::"memory");
    }
  }
}

// O[16 rows x 256 cols of this half] += P[16 x 64 keys] . V[64 keys x those cols].
__device__ __forceinline__ void accumulate_pv(float (&o)[32][4], std::uint32_t p_base,
                                              std::uint32_t kv_base, const Lane& l) {
  const int a_row = 16 * l.row_group + (l.lane % 8) + ((l.lane / 8) % 2) * 8;
  const int b_key = (l.lane % 8) + ((l.lane / 8) % 2) * 8;
  const std::uint32_t a_base = p_base + static_cast<std::uint32_t>(a_row * 128);
  // Columns 256h + 16np + 8*(lane/16): box 4h + np/4, chunk pair np % 4.
  const std::uint32_t b_base =
      kv_base + static_cast<std::uint32_t>(b_key * 128 + 4 * l.half * kBoxBytes);
#pragma unroll
  for (int k = 0; k < kBlockKeys / 16; ++k) {
    std::uint32_t a[4];
    ptx::ldmatrix_x4(a, a_base + l.swz_hi[k]);
#pragma unroll
    for (int np = 0; np < 16; ++np) {
      std::uint32_t b[4];
      ptx::ldmatrix_x4_trans(b,
                             b_base + l.swz_hi[np % 4] +
                                 static_cast<std::uint32_t>((np / 4) * kBoxBytes + k * 16 * 128));
      ptx::mma_bf16_16816(o[2 * np], a, b[0], b[1]);
      ptx::mma_bf16_16816(o[2 * np + 1], a, b[2], b[3]);
    }
  }
}

// The same O += P.V with warpgroup MMAs: warpgroup h accumulates all 64 rows x the 256
// value columns of half h (boxes 4h .. 4h+3 of the page) in four m64n256k16 steps; P comes
// from the shared P tile into registers (each warp its 16 rows). Issues and commits only.
__device__ __forceinline__ void issue_pv_wgmma(float (&o)[32][4], std::uint32_t p_base,
                                               std::uint32_t kv_base, const Lane& l) {
  const int a_row = 16 * l.row_group + (l.lane % 8) + ((l.lane / 8) % 2) * 8;
  const std::uint32_t a_base = p_base + static_cast<std::uint32_t>(a_row * 128);
  const std::uint32_t v_base = kv_base + static_cast<std::uint32_t>(4 * l.half * kBoxBytes);
  std::uint32_t a[4][4];
#pragma unroll
  for (int k = 0; k < kBlockKeys / 16; ++k) {
    ptx::ldmatrix_x4(a[k], a_base + l.swz_hi[k]);
  }
  ptx::wgmma_fence();
#pragma unroll
  for (int k = 0; k < kBlockKeys / 16; ++k) {
    // Keys 16k .. 16k+15 are rows 16k.. of every box: two 8-row groups, 1024-byte aligned.
    const std::uint32_t rows = v_base + static_cast<std::uint32_t>(k * 16 * 128);
    ptx::wgmma_m64n256k16_rs(o, a[k], ptx::sw128_mnmajor_desc(rows, kBoxBytes));
  }
  ptx::wgmma_commit();
}

__device__ __forceinline__ float quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffU, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffU, v, 2));
}

__device__ __forceinline__ float quad_sum(float v) {
  v += __shfl_xor_sync(0xffffffffU, v, 1);
  return v + __shfl_xor_sync(0xffffffffU, v, 2);
}

// Masks and scales the scores into the log2 domain, trades partial row maxima with the pair
// warp, turns the scores into P (kept in s), rescales the accumulator when the running max
// moved, and publishes this half of P (bf16) for the pair.
template <bool kAmla>
__device__ __forceinline__ void softmax_step(float (&s)[4][4], float (&o)[32][4], RowState& st,
                                             const int (&visible)[2], int block_key0,
                                             float scale_log2, char* smem, const Lane& l) {
  auto* row_max = reinterpret_cast<float*>(smem + kSmemRowMax);
  float local_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int n = 0; n < 4; ++n) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int r = i / 2;
      const int key = block_key0 + 32 * l.half + 8 * n + 2 * l.quad + (i % 2);
      s[n][i] = key < visible[r] ? s[n][i] * scale_log2 : -INFINITY;
      local_max[r] = fmaxf(local_max[r], s[n][i]);
    }
  }
  const int rows[2] = {16 * l.row_group + l.group, 16 * l.row_group + l.group + 8};
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    local_max[r] = quad_max(local_max[r]);
    if (l.quad == 0) {
      row_max[l.half * kTileRows + rows[r]] = local_max[r];
    }
  }
  ptx::named_barrier_sync(1 + l.row_group, 64);

  float new_base[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float block_max = fmaxf(local_max[r], row_max[(1 - l.half) * kTileRows + rows[r]]);
    if constexpr (kAmla) {
      // The max rounded to an integer: every rescale becomes an exact power of two, and the
      // fractional part stays in P (P <= 2^0.5).
      const float rounded = block_max == -INFINITY ? -INFINITY : rintf(block_max);
      new_base[r] = fmaxf(st.base[r], rounded);
      if (st.base[r] != -INFINITY && new_base[r] != st.base[r]) {
        // Clamped in float first: below -256 every element flushes to zero anyway.
        const int delta = static_cast<int>(fmaxf(st.base[r] - new_base[r], -256.0f));
#pragma unroll
        for (int j = 0; j < 32; ++j) {
          o[j][2 * r] = scale_by_pow2(o[j][2 * r], delta);
          o[j][2 * r + 1] = scale_by_pow2(o[j][2 * r + 1], delta);
        }
        st.sum[r] = ldexpf(st.sum[r], delta);
      }
    } else {
      new_base[r] = fmaxf(st.base[r], block_max);
      const float alpha = new_base[r] == -INFINITY ? 1.0f : fast_exp2(st.base[r] - new_base[r]);
#pragma unroll
      for (int j = 0; j < 32; ++j) {
        o[j][2 * r] *= alpha;
        o[j][2 * r + 1] *= alpha;
      }
      st.sum[r] *= alpha;
    }
    st.base[r] = new_base[r];
  }

  char* p_tile = smem + kSmemP;
#pragma unroll
  for (int n = 0; n < 4; ++n) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float base = st.base[r] == -INFINITY ? 0.0f : st.base[r];
      const float p0 = fast_exp2(s[n][2 * r] - base);
      const float p1 = fast_exp2(s[n][2 * r + 1] - base);
      st.sum[r] += p0 + p1;
      const int key = 32 * l.half + 8 * n + 2 * l.quad;
      *reinterpret_cast<std::uint32_t*>(p_tile + tile_offset(rows[r], key)) =
          ptx::pack_bf16x2(p0, p1);
    }
  }
  ptx::named_barrier_sync(1 + l.row_group, 64);
}

// Writes one item's result: out = O / sum and lse = ln(2^base * sum), to the output when the
// item is the whole request, else to its workspace slot. Resets the state for the next item.
__device__ __forceinline__ void finish_item(float (&o)[32][4], RowState& st, const Params& p,
                                            const WorkItem& item, int tile, int parity, char* smem,
                                            const Lane& l) {
  auto* row_sum = reinterpret_cast<float*>(smem + kSmemRowSum) + parity * 2 * kTileRows;
  const int rows[2] = {16 * l.row_group + l.group, 16 * l.row_group + l.group + 8};
  float partial[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    partial[r] = quad_sum(st.sum[r]);
    if (l.quad == 0) {
      row_sum[l.half * kTileRows + rows[r]] = partial[r];
    }
  }
  ptx::named_barrier_sync(1 + l.row_group, 64);

  const int rows_total = p.seqlen_q * p.heads_q;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float total = partial[r] + row_sum[(1 - l.half) * kTileRows + rows[r]];
    const int row = tile * kTileRows + rows[r];
    if (row < rows_total) {
      const bool seen = total > 0.0f;
      const float inv = seen ? 1.0f / total : 0.0f;
      const float lse = seen ? (st.base[r] + log2f(total)) * 0.69314718055994531f : -INFINITY;
      float* dst;
      if (item.partial < 0) {
        dst = p.out + (static_cast<std::size_t>(item.batch) * rows_total + row) * kDv;
        if (l.half == 0 && l.quad == 0) {
          const int token = row / p.heads_q;
          const int head = row % p.heads_q;
          p.lse[(static_cast<std::size_t>(item.batch) * p.heads_q + head) * p.seqlen_q + token] =
              lse;
        }
      } else {
        dst = p.partial_out + (static_cast<std::size_t>(item.partial) * rows_total + row) * kDv;
        if (l.half == 0 && l.quad == 0) {
          p.partial_lse[static_cast<std::size_t>(item.partial) * rows_total + row] = lse;
        }
      }
      dst += 256 * l.half + 2 * l.quad;
#pragma unroll
      for (int j = 0; j < 32; ++j) {
        *reinterpret_cast<float2*>(dst + 8 * j) =
            make_float2(o[j][2 * r] * inv, o[j][2 * r + 1] * inv);
      }
    }
    st.base[r] = -INFINITY;
    st.sum[r] = 0.0f;
  }
#pragma unroll
  for (int j = 0; j < 32; ++j) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      o[j][i] = 0.0f;
    }
  }
}

// Zeroes the cache rows of a partial last page past the sequence end: they may hold anything
// (NaN included) and P = 0 times NaN would still poison O.
__device__ __forceinline__ void zero_tail_rows(char* kv_tile, int valid_rows) {
  const int tail = kBlockKeys - valid_rows;
  const int chunks = kBoxes * tail * 8;  // 16-byte chunks
  for (int c = static_cast<int>(threadIdx.x); c < chunks; c += kConsumerWarps * 32) {
    const int box = c / (tail * 8);
    const int rest = c % (tail * 8);
    const int row = valid_rows + rest / 8;
    *reinterpret_cast<uint4*>(kv_tile + box * kBoxBytes + row * 128 + (rest % 8) * 16) =
        make_uint4(0U, 0U, 0U, 0U);
  }
  ptx::fence_proxy_async_smem();  // the next TMA write into this stage comes after these
  ptx::named_barrier_sync(kConsumerBarrier, kConsumerWarps * 32);
}

// Issues the TMA loads of one 64-key page into the next ring stage.
__device__ __forceinline__ void produce_page(const CUtensorMap* kv_map, char* smem,
                                             std::uint64_t* bars, std::uint32_t kv_iter, int page) {
  std::uint64_t* kv_full = bars + 2;
  std::uint64_t* kv_empty = bars + 2 + kStages;
  const std::uint32_t stage = kv_iter % kStages;
  ptx::mbar_wait(kv_empty + stage, ((kv_iter / kStages) & 1U) ^ 1U);
  ptx::mbar_arrive_expect_tx(kv_full + stage, kTileBytes);
  char* dst = smem + kSmemKv + static_cast<int>(stage) * kTileBytes;
  for (int box = 0; box < kBoxes; ++box) {
    ptx::tma_load_2d(dst + box * kBoxBytes, kv_map, kv_full + stage, box * kBoxCols,
                     page * kBlockKeys);
  }
}

// The producer lane: for each item, the first pages (as many as the ring holds) go out before
// the Q tile, whose buffer frees only when the previous item's last S is done, so the ring
// does not drain at item boundaries; then the Q tile, then the remaining pages.
__device__ __forceinline__ void produce(const Params& p, const CUtensorMap* q_map,
                                        const CUtensorMap* kv_map, char* smem, std::uint64_t* bars,
                                        int first, int last, int tile) {
  std::uint64_t* q_full = bars;
  std::uint64_t* q_empty = bars + 1;
  const int rows_total = p.seqlen_q * p.heads_q;
  std::uint32_t q_round = 0;
  std::uint32_t kv_iter = 0;
  for (int i = first; i < last; ++i) {
    const WorkItem item = p.items[i];
    if (item.block_end == item.block_begin) {
      continue;
    }
    const std::int32_t* pages =
        p.block_table + static_cast<std::size_t>(item.batch) * p.max_pages_per_seq;
    const int early_end = min(item.block_end, item.block_begin + kStages);
    for (int block = item.block_begin; block < early_end; ++block, ++kv_iter) {
      produce_page(kv_map, smem, bars, kv_iter, pages[block]);
    }
    ptx::mbar_wait(q_empty, (q_round & 1U) ^ 1U);
    ptx::mbar_arrive_expect_tx(q_full, kTileBytes);
    const int q_row = item.batch * rows_total + tile * kTileRows;
    for (int box = 0; box < kBoxes; ++box) {
      ptx::tma_load_2d(smem + kSmemQ + box * kBoxBytes, q_map, q_full, box * kBoxCols, q_row);
    }
    ++q_round;
    for (int block = early_end; block < item.block_end; ++block, ++kv_iter) {
      produce_page(kv_map, smem, bars, kv_iter, pages[block]);
    }
  }
}

// Waits for the page of ring iteration `iter`, zeroes its rows past the sequence end when it
// is the partial last page, and returns its shared-memory address.
__device__ __forceinline__ std::uint32_t ready_page(char* smem, std::uint64_t* bars, int block,
                                                    std::uint32_t iter, int seqlen_k) {
  std::uint64_t* kv_full = bars + 2;
  const std::uint32_t stage = iter % kStages;
  ptx::mbar_wait(kv_full + stage, (iter / kStages) & 1U);
  char* kv_tile = smem + kSmemKv + static_cast<int>(stage) * kTileBytes;
  const int valid_rows = min(seqlen_k - block * kBlockKeys, kBlockKeys);
  if (valid_rows < kBlockKeys) {
    zero_tail_rows(kv_tile, valid_rows);
  }
  return ptx::smem_addr(kv_tile);
}

// Hands ring iteration `iter`'s stage back to the producer (one arrival per warp).
__device__ __forceinline__ void release_page(std::uint64_t* bars, std::uint32_t iter,
                                             const Lane& l) {
  __syncwarp();
  if (l.lane == 0) {
    ptx::mbar_arrive(bars + 2 + kStages + iter % kStages);
  }
}

// The blocks of one item, one after the other: S (mma.sync), softmax, P.V.
template <bool kAmla>
__device__ __forceinline__ void run_blocks(float (&o)[32][4], RowState& st, const Params& p,
                                           char* smem, std::uint64_t* bars, const WorkItem& item,
                                           int seqlen_k, const int (&visible)[2],
                                           std::uint32_t& kv_iter, const Lane& l) {
  const std::uint32_t smem_base = ptx::smem_addr(smem);
  for (int block = item.block_begin; block < item.block_end; ++block, ++kv_iter) {
    const std::uint32_t kv_base = ready_page(smem, bars, block, kv_iter, seqlen_k);
    float s[4][4];
    compute_scores(s, smem_base + kSmemQ, kv_base, l);
    softmax_step<kAmla>(s, o, st, visible, block * kBlockKeys, p.scale_log2, smem, l);
    accumulate_pv(o, smem_base + kSmemP, kv_base, l);
    release_page(bars, kv_iter, l);
  }
}

// The preload pipeline (AMLA's): the S of block i+1 is issued to the tensor cores (wgmma,
// asynchronous) before the softmax and P.V of block i, and waited for only after them.
// P.V of one block, on mma.sync or (kWgmmaPv) on wgmma, finished when this returns.
template <bool kWgmmaPv>
__device__ __forceinline__ void block_pv(float (&o)[32][4], std::uint32_t p_base,
                                         std::uint32_t kv_base, const Lane& l) {
  if constexpr (kWgmmaPv) {
    ptx::fence_accumulators(o);
    issue_pv_wgmma(o, p_base, kv_base, l);
  } else {
    accumulate_pv(o, p_base, kv_base, l);
  }
}

template <bool kAmla, bool kWgmmaPv>
__device__ __forceinline__ void run_blocks_preload(float (&o)[32][4], RowState& st, const Params& p,
                                                   char* smem, std::uint64_t* bars,
                                                   const WorkItem& item, int seqlen_k,
                                                   const int (&visible)[2], std::uint32_t& kv_iter,
                                                   const Lane& l) {
  const std::uint32_t smem_base = ptx::smem_addr(smem);
  const std::uint32_t q_base = smem_base + kSmemQ;
  float s_cur[4][4] = {};
  float s_next[4][4] = {};
  std::uint32_t cur_base = ready_page(smem, bars, item.block_begin, kv_iter, seqlen_k);
  issue_scores_wgmma(s_cur, q_base, cur_base, l);
  ptx::wgmma_wait_all();
  fence_operands(s_cur);
  int block = item.block_begin;
  for (; block + 1 < item.block_end; ++block, ++kv_iter) {
    // Unconditional inside the loop (the last block is peeled off below): a wgmma under a
    // branch makes ptxas serialise all of them.
    const std::uint32_t next_base = ready_page(smem, bars, block + 1, kv_iter + 1, seqlen_k);
    issue_scores_wgmma(s_next, q_base, next_base, l);
    softmax_step<kAmla>(s_cur, o, st, visible, block * kBlockKeys, p.scale_log2, smem, l);
    block_pv<kWgmmaPv>(o, smem_base + kSmemP, cur_base, l);
    ptx::wgmma_wait_all();  // S of the next block and, with kWgmmaPv, this block's P.V
    fence_operands(s_next);
    if constexpr (kWgmmaPv) {
      ptx::fence_accumulators(o);
    }
    release_page(bars, kv_iter, l);
#pragma unroll
    for (int n = 0; n < 4; ++n) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        s_cur[n][i] = s_next[n][i];
      }
    }
    cur_base = next_base;
  }
  softmax_step<kAmla>(s_cur, o, st, visible, block * kBlockKeys, p.scale_log2, smem, l);
  block_pv<kWgmmaPv>(o, smem_base + kSmemP, cur_base, l);
  if constexpr (kWgmmaPv) {
    ptx::wgmma_wait_all();
    ptx::fence_accumulators(o);
  }
  release_page(bars, kv_iter, l);
  ++kv_iter;
}

template <bool kAmla, int kMma>
__device__ __forceinline__ void consume(const Params& p, char* smem, std::uint64_t* bars, int first,
                                        int last, int tile, const Lane& l) {
  std::uint64_t* q_full = bars;
  std::uint64_t* q_empty = bars + 1;
  float o[32][4];
#pragma unroll
  for (int j = 0; j < 32; ++j) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      o[j][i] = 0.0f;
    }
  }
  RowState st{{-INFINITY, -INFINITY}, {0.0f, 0.0f}};
  std::uint32_t q_round = 0;
  std::uint32_t kv_iter = 0;
  for (int i = first; i < last; ++i) {
    const WorkItem item = p.items[i];
    const int seqlen_k = p.seqlens_k[item.batch];
    // Keys each of this thread's two rows may see (causal: token t sees seqlen_k - s_q + t + 1).
    int visible[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = tile * kTileRows + 16 * l.row_group + l.group + 8 * r;
      const int token = row / p.heads_q;
      const int limit = p.causal ? seqlen_k - p.seqlen_q + token + 1 : seqlen_k;
      visible[r] = min(max(limit, 0), seqlen_k);
    }
    if (item.block_end > item.block_begin) {
      ptx::mbar_wait(q_full, q_round & 1U);
      if constexpr (kMma != kMmaSync) {
        run_blocks_preload<kAmla, kMma == kWgmmaAll>(o, st, p, smem, bars, item, seqlen_k, visible,
                                                     kv_iter, l);
      } else {
        run_blocks<kAmla>(o, st, p, smem, bars, item, seqlen_k, visible, kv_iter, l);
      }
      if (l.lane == 0) {
        ptx::mbar_arrive(q_empty);
      }
      ++q_round;
    }
    finish_item(o, st, p, item, tile, (i - first) & 1, smem, l);
  }
}

template <bool kAmla, int kMma>
__global__ void __launch_bounds__(kThreads, 1)
    mla_decode_kernel(const __grid_constant__ CUtensorMap q_map,
                      const __grid_constant__ CUtensorMap kv_map, const Params p) {
  extern __shared__ char raw_smem[];
  char* smem = reinterpret_cast<char*>((reinterpret_cast<std::uintptr_t>(raw_smem) + 1023U) &
                                       ~static_cast<std::uintptr_t>(1023U));
  auto* bars = reinterpret_cast<std::uint64_t*>(smem + kSmemBarriers);
  const int part = static_cast<int>(blockIdx.x);
  const int tile = static_cast<int>(blockIdx.y);
  const int first = p.part_offsets[part];
  const int last = p.part_offsets[part + 1];

  if (threadIdx.x == 0) {
    ptx::mbar_init(bars + 0, 1);               // q_full: the producer's expect_tx
    ptx::mbar_init(bars + 1, kConsumerWarps);  // q_empty: one arrival per consumer warp
    for (int s = 0; s < kStages; ++s) {
      ptx::mbar_init(bars + 2 + s, 1);
      ptx::mbar_init(bars + 2 + kStages + s, kConsumerWarps);
    }
    ptx::fence_barrier_init();
  }
  __syncthreads();
  if (first == last) {
    return;
  }

  Lane l{};
  l.warp = static_cast<int>(threadIdx.x) / 32;
  l.lane = static_cast<int>(threadIdx.x) % 32;
  l.group = l.lane / 4;
  l.quad = l.lane % 4;
  l.row_group = l.warp % 4;
  l.half = (l.warp / 4) % 2;
  for (int j = 0; j < 4; ++j) {
    l.swz_hi[j] = static_cast<std::uint32_t>(((2 * j + l.lane / 16) ^ (l.lane % 8)) * 16);
    l.swz_mid[j] = static_cast<std::uint32_t>(((2 * j + (l.lane / 8) % 2) ^ (l.lane % 8)) * 16);
  }
  if (l.warp >= kProducerWarp) {
    ptx::lower_registers<kProducerRegisters>();
    if (l.warp == kProducerWarp && l.lane == 0) {
      ptx::prefetch_tensor_map(&q_map);
      ptx::prefetch_tensor_map(&kv_map);
      produce(p, &q_map, &kv_map, smem, bars, first, last, tile);
    }
    return;
  }
  ptx::raise_registers<kConsumerRegisters>();
  consume<kAmla, kMma>(p, smem, bars, first, last, tile, l);
}

}  // namespace omni::amla::cuda::kernel
