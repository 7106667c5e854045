// MLA decode attention on Hopper GPUs (sm_90a): the host API of the CUDA kernels.
//
// Two kernels share one structure (TMA page loads, mbarrier ring, tensor-core MMA, split-KV
// with a combine kernel): "flash" rescales the output accumulator multiplicatively, as
// FlashAttention does; "amla" keeps a power-of-two running max so the rescale is an integer
// add to the exponent bits of the fp32 accumulator (arXiv 2509.25224). Layouts are those of
// omni/amla/problem.hpp (FlashMLA's). This header needs no CUDA headers: the stream is passed
// as an opaque pointer (a cudaStream_t).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "omni/amla/problem.hpp"
#include "omni/common/result.hpp"

namespace omni::amla::cuda {

// Plain variants use mma.sync for both products. *Wgmma variants compute S = Q K^T with
// warpgroup MMAs (wgmma.mma_async), issued one block ahead (the preload pipeline), and P.V
// with mma.sync; *WgmmaPv variants do P.V with wgmma too.
enum class Variant { kFlash, kAmla, kFlashWgmma, kAmlaWgmma, kFlashWgmmaPv, kAmlaWgmmaPv };

// "flash", "amla", "flash-wgmma", "amla-wgmma", "flash-wgmma-pv" or "amla-wgmma-pv";
// anything else is invalid_argument.
Result<Variant> parse_variant(std::string_view name);

// True when the CUDA runtime sees at least one device.
bool device_available();

// ---- Split-KV planning (FlashMLA's get_mla_metadata, computed on the host) ----------------
//
// The kernel runs a persistent grid of `num_parts` x `head_tiles` CTAs. Each part walks a
// contiguous run of work items; an item is a range of 64-key blocks of one request. A request
// cut into several items writes partial results to a workspace that the combine kernel merges.
struct WorkItem {
  std::int32_t batch = 0;
  std::int32_t block_begin = 0;  // first 64-key block of the request this item covers
  std::int32_t block_end = 0;    // one past the last; == block_begin for a zero-length request
  std::int32_t partial = -1;     // workspace slot, or -1 when the item is the whole request
};

struct BatchSplit {
  std::int32_t first_partial = 0;  // workspace slot of the request's first item
  std::int32_t num_splits = 1;     // > 1 only for requests that need combining
};

struct SplitPlan {
  int num_parts = 0;                       // CTAs per head tile
  int head_tiles = 0;                      // ceil(seqlen_q * heads_q / 64)
  int num_partials = 0;                    // workspace slots
  std::vector<WorkItem> items;             // ordered by part
  std::vector<std::int32_t> part_offsets;  // num_parts + 1 offsets into items
  std::vector<BatchSplit> batch_splits;    // one per request
};

// Plans the work for `num_sms` multiprocessors. `seqlens_k` has shape.batch entries >= 0.
Result<SplitPlan> plan_splits(const DecodeShape& shape, const std::vector<std::int32_t>& seqlens_k,
                              int num_sms);

// Bytes of device workspace a plan needs (partial outputs and their lse).
std::size_t workspace_bytes(const DecodeShape& shape, const SplitPlan& plan);

// ---- Launch on device pointers ----------------------------------------------------------
//
// The plan's arrays, uploaded once (upload_plan) and reusable for every layer of a step.
struct DevicePlan {
  const WorkItem* items = nullptr;
  const std::int32_t* part_offsets = nullptr;
  const BatchSplit* batch_splits = nullptr;
  int num_parts = 0;
  int head_tiles = 0;
  int num_partials = 0;
};

struct DeviceDecodeArgs {
  DecodeShape shape;
  float softmax_scale = 0.0f;
  bool causal = true;
  const std::uint16_t* q = nullptr;           // bf16 [batch, seqlen_q, heads_q, head_dim]
  const std::uint16_t* kv_cache = nullptr;    // bf16 [num_pages, page_size, head_dim]
  const std::int32_t* block_table = nullptr;  // [batch, max_pages_per_seq]
  const std::int32_t* seqlens_k = nullptr;    // [batch]
  float* out = nullptr;                       // fp32 [batch, seqlen_q, heads_q, dv]
  float* lse = nullptr;                       // fp32 [batch, heads_q, seqlen_q]
  void* workspace = nullptr;                  // workspace_bytes(shape, plan), 16-byte aligned
};

// Checks the shape against what the kernel supports: head_dim 576, dv 512, page_size 64,
// 16-byte aligned q/kv_cache, a non-empty cache.
Status check_supported(const DecodeShape& shape);

// Enqueues the decode kernel and, when the plan splits a request, the combine kernel on
// `stream` (a cudaStream_t; nullptr for the default stream). Returns after enqueueing.
Status launch_decode(const DeviceDecodeArgs& args, const DevicePlan& plan, Variant variant,
                     void* stream);

// ---- Host conveniences (tests and benchmarks) ------------------------------------------

// Copies the inputs to the device, plans, runs the kernel, copies out and lse back.
Status decode_on_device(const DecodeInputs& inputs, const DecodeOutputs& outputs, Variant variant);

struct Timing {
  double time_ms = 0.0;  // mean over `iters` launches (decode + combine), after a warm-up
};

// Times one kernel on random inputs of `shape` with the given per-request key counts
// (shape.max_pages_per_seq / num_pages are derived when 0). kernel: a parse_variant name.
Result<Timing> bench_decode(const DecodeShape& shape, const std::vector<std::int32_t>& seqlens,
                            std::string_view kernel, int iters);

}  // namespace omni::amla::cuda
