// Host side of the CUDA MLA decode: TMA descriptors, launches, and the device-memory
// conveniences used by the tests and the benchmark.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <cmath>
#include <string>

#include "combine_kernel.cuh"
#include "decode_kernel.cuh"
#include "device_buffer.cuh"
#include "omni/amla/cuda.hpp"

namespace omni::amla::cuda {
namespace {

Result<PFN_cuTensorMapEncodeTiled_v12000> tensor_map_encoder() {
  static PFN_cuTensorMapEncodeTiled_v12000 encoder = nullptr;
  if (encoder == nullptr) {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    const cudaError_t err = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000,
                                                             cudaEnableDefault, &found);
    if (err != cudaSuccess || found != cudaDriverEntryPointSuccess || fn == nullptr) {
      return make_error(ErrorCode::kUnavailable, "cuTensorMapEncodeTiled is not available");
    }
    encoder = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }
  return encoder;
}

// A 2-D view [rows, 576] of bf16 rows, read in 64 x 64 boxes with 128-byte swizzling.
Result<CUtensorMap> make_row_map(const std::uint16_t* base, std::uint64_t rows) {
  auto encoder = tensor_map_encoder();
  if (!encoder) {
    return std::move(encoder).error();
  }
  CUtensorMap map{};
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(kernel::kHeadDim), rows};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(kernel::kHeadDim) * 2};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(kernel::kBoxCols),
                             static_cast<cuuint32_t>(kernel::kTileRows)};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult res =
      (*encoder)(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2,
                 const_cast<void*>(static_cast<const void*>(base)), dims, strides, box,
                 element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                 CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (res != CUDA_SUCCESS) {
    return make_error(ErrorCode::kInvalidArgument, "cuTensorMapEncodeTiled failed (" +
                                                       std::to_string(static_cast<int>(res)) +
                                                       "): pointers must be 16-byte aligned");
  }
  return map;
}

template <bool kAmla, int kMma>
Status launch_variant(const CUtensorMap& q_map, const CUtensorMap& kv_map,
                      const kernel::Params& params, const DevicePlan& plan, cudaStream_t stream) {
  // Once per process and variant: the kernel needs more than the default 48 KiB.
  static const cudaError_t attr_err =
      cudaFuncSetAttribute(kernel::mla_decode_kernel<kAmla, kMma>,
                           cudaFuncAttributeMaxDynamicSharedMemorySize, kernel::kSmemBytes);
  if (attr_err != cudaSuccess) {
    return make_error(ErrorCode::kUnavailable,
                      std::string("cudaFuncSetAttribute: ") + cudaGetErrorString(attr_err));
  }
  const dim3 grid(static_cast<unsigned>(plan.num_parts), static_cast<unsigned>(plan.head_tiles));
  kernel::mla_decode_kernel<kAmla, kMma>
      <<<grid, kernel::kThreads, kernel::kSmemBytes, stream>>>(q_map, kv_map, params);
  return detail_cuda::check(cudaGetLastError(), "mla_decode_kernel launch");
}

Status launch_any(Variant variant, const CUtensorMap& q_map, const CUtensorMap& kv_map,
                  const kernel::Params& params, const DevicePlan& plan, cudaStream_t stream) {
  using kernel::kMmaSync;
  using kernel::kWgmmaAll;
  using kernel::kWgmmaS;
  switch (variant) {
    case Variant::kFlash:
      return launch_variant<false, kMmaSync>(q_map, kv_map, params, plan, stream);
    case Variant::kAmla: return launch_variant<true, kMmaSync>(q_map, kv_map, params, plan, stream);
    case Variant::kFlashWgmma:
      return launch_variant<false, kWgmmaS>(q_map, kv_map, params, plan, stream);
    case Variant::kAmlaWgmma:
      return launch_variant<true, kWgmmaS>(q_map, kv_map, params, plan, stream);
    case Variant::kFlashWgmmaPv:
      return launch_variant<false, kWgmmaAll>(q_map, kv_map, params, plan, stream);
    case Variant::kAmlaWgmmaPv:
      return launch_variant<true, kWgmmaAll>(q_map, kv_map, params, plan, stream);
  }
  return make_error(ErrorCode::kInvalidArgument, "launch_decode: unknown variant");
}

}  // namespace

bool device_available() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

Status launch_decode(const DeviceDecodeArgs& args, const DevicePlan& plan, Variant variant,
                     void* stream) {
  if (auto supported = check_supported(args.shape); !supported) {
    return supported;
  }
  if (plan.num_parts < 1 || plan.head_tiles < 1) {
    return make_error(ErrorCode::kInvalidArgument, "launch_decode: empty plan");
  }
  const DecodeShape& shape = args.shape;
  const auto q_rows = static_cast<std::uint64_t>(shape.batch) *
                      static_cast<std::uint64_t>(shape.seqlen_q * shape.heads_q);
  auto q_map = make_row_map(args.q, q_rows);
  auto kv_map = make_row_map(args.kv_cache, static_cast<std::uint64_t>(shape.num_pages) *
                                                static_cast<std::uint64_t>(shape.page_size));
  if (!q_map) {
    return std::move(q_map).error();
  }
  if (!kv_map) {
    return std::move(kv_map).error();
  }
  const std::size_t rows = static_cast<std::size_t>(shape.seqlen_q * shape.heads_q);
  auto* partial_out = static_cast<float*>(args.workspace);
  float* partial_lse =
      partial_out + static_cast<std::size_t>(plan.num_partials) * rows * kernel::kDv;

  kernel::Params params;
  params.block_table = args.block_table;
  params.seqlens_k = args.seqlens_k;
  params.out = args.out;
  params.lse = args.lse;
  params.partial_out = partial_out;
  params.partial_lse = partial_lse;
  params.items = plan.items;
  params.part_offsets = plan.part_offsets;
  params.seqlen_q = shape.seqlen_q;
  params.heads_q = shape.heads_q;
  params.max_pages_per_seq = shape.max_pages_per_seq;
  params.scale_log2 = args.softmax_scale * 1.4426950408889634f;
  params.causal = args.causal && shape.seqlen_q > 1;

  auto* cuda_stream = static_cast<cudaStream_t>(stream);
  Status launched = launch_any(variant, *q_map, *kv_map, params, plan, cuda_stream);
  if (!launched || plan.num_partials == 0) {
    return launched;
  }
  kernel::CombineParams combine;
  combine.partial_out = partial_out;
  combine.partial_lse = partial_lse;
  combine.batch_splits = plan.batch_splits;
  combine.out = args.out;
  combine.lse = args.lse;
  combine.seqlen_q = shape.seqlen_q;
  combine.heads_q = shape.heads_q;
  const dim3 grid(
      static_cast<unsigned>((rows + kernel::kCombineRowsPerCta - 1) / kernel::kCombineRowsPerCta),
      static_cast<unsigned>(shape.batch));
  kernel::mla_combine_kernel<<<grid, kernel::kCombineRowsPerCta * 32, 0, cuda_stream>>>(combine);
  return detail_cuda::check(cudaGetLastError(), "mla_combine_kernel launch");
}

}  // namespace omni::amla::cuda
