// Device-memory conveniences over launch_decode: one-shot decode of host inputs (the tests)
// and timing on generated inputs (the benchmark).
#include <cuda_runtime.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>

#include "device_buffer.cuh"
#include "omni/amla/cuda.hpp"

namespace omni::amla::cuda {
namespace {

using detail_cuda::check;
using detail_cuda::DeviceBuffer;

// The plan's arrays on the device.
struct UploadedPlan {
  DeviceBuffer items, part_offsets, batch_splits;
  DevicePlan view;
};

Status upload_plan(const SplitPlan& plan, UploadedPlan& up) {
  for (auto status : {up.items.upload(plan.items), up.part_offsets.upload(plan.part_offsets),
                      up.batch_splits.upload(plan.batch_splits)}) {
    if (!status) {
      return status;
    }
  }
  up.view.items = up.items.as<const WorkItem>();
  up.view.part_offsets = up.part_offsets.as<const std::int32_t>();
  up.view.batch_splits = up.batch_splits.as<const BatchSplit>();
  up.view.num_parts = plan.num_parts;
  up.view.head_tiles = plan.head_tiles;
  up.view.num_partials = plan.num_partials;
  return ok_status();
}

Result<int> sm_count() {
  int device = 0;
  int sms = 0;
  if (auto status = check(cudaGetDevice(&device), "cudaGetDevice"); !status) {
    return std::move(status).error();
  }
  if (auto status = check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
                          "cudaDeviceGetAttribute");
      !status) {
    return std::move(status).error();
  }
  return sms;
}

// Every page a request reads must exist: the kernel trusts the block table.
Status check_inputs(const DecodeInputs& in, const DecodeOutputs& out) {
  const DecodeShape& s = in.shape;
  const auto rows = static_cast<std::size_t>(s.batch) * static_cast<std::size_t>(s.seqlen_q) *
                    static_cast<std::size_t>(s.heads_q);
  if (in.q.size() != rows * static_cast<std::size_t>(s.head_dim) ||
      in.kv_cache.size() != static_cast<std::size_t>(s.num_pages) * s.page_size * s.head_dim ||
      in.block_table.size() != static_cast<std::size_t>(s.batch) * s.max_pages_per_seq ||
      in.seqlens_k.size() != static_cast<std::size_t>(s.batch) ||
      out.out.size() != rows * static_cast<std::size_t>(s.dv) || out.lse.size() != rows) {
    return make_error(ErrorCode::kInvalidArgument, "decode_on_device: array sizes do not match");
  }
  for (int b = 0; b < s.batch; ++b) {
    const std::int32_t seqlen = in.seqlens_k[static_cast<std::size_t>(b)];
    const int pages = (seqlen + s.page_size - 1) / s.page_size;
    if (seqlen < 0 || pages > s.max_pages_per_seq) {
      return make_error(ErrorCode::kInvalidArgument, "decode_on_device: seqlen out of range");
    }
    for (int j = 0; j < pages; ++j) {
      const std::int32_t page =
          in.block_table[static_cast<std::size_t>(b) * s.max_pages_per_seq + j];
      if (page < 0 || page >= s.num_pages) {
        return make_error(ErrorCode::kInvalidArgument, "decode_on_device: bad block table");
      }
    }
  }
  return ok_status();
}

__global__ void fill_random_bf16(std::uint16_t* data, std::size_t count, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    std::uint32_t h = static_cast<std::uint32_t>(i) * 2654435761U ^ seed;
    h ^= h >> 15;
    h *= 2246822519U;
    h ^= h >> 13;
    const float value = static_cast<float>(h & 0xffffU) / 32768.0f - 1.0f;  // [-1, 1)
    data[i] = static_cast<std::uint16_t>(__float_as_uint(value) >> 16);
  }
}

// Runs the planned kernel; the workspace is sized and allocated here.
struct PreparedRun {
  DeviceDecodeArgs args;
  UploadedPlan plan;
  DeviceBuffer workspace;
};

Status prepare(const DecodeShape& shape, const std::vector<std::int32_t>& seqlens,
               PreparedRun& run) {
  auto sms = sm_count();
  if (!sms) {
    return std::move(sms).error();
  }
  auto plan = plan_splits(shape, seqlens, *sms);
  if (!plan) {
    return std::move(plan).error();
  }
  if (auto status = upload_plan(*plan, run.plan); !status) {
    return status;
  }
  if (auto status = run.workspace.allocate(workspace_bytes(shape, *plan)); !status) {
    return status;
  }
  run.args.workspace = run.workspace.as<void>();
  return ok_status();
}

}  // namespace

Status decode_on_device(const DecodeInputs& inputs, const DecodeOutputs& outputs, Variant variant) {
  if (auto status = check_supported(inputs.shape); !status) {
    return status;
  }
  if (auto status = check_inputs(inputs, outputs); !status) {
    return status;
  }
  const std::vector<std::uint16_t> q(inputs.q.begin(), inputs.q.end());
  const std::vector<std::uint16_t> kv(inputs.kv_cache.begin(), inputs.kv_cache.end());
  const std::vector<std::int32_t> table(inputs.block_table.begin(), inputs.block_table.end());
  const std::vector<std::int32_t> seqlens(inputs.seqlens_k.begin(), inputs.seqlens_k.end());
  DeviceBuffer d_q, d_kv, d_table, d_seqlens, d_out, d_lse;
  for (auto status :
       {d_q.upload(q), d_kv.upload(kv), d_table.upload(table), d_seqlens.upload(seqlens),
        d_out.allocate(outputs.out.size() * 4), d_lse.allocate(outputs.lse.size() * 4)}) {
    if (!status) {
      return status;
    }
  }
  PreparedRun run;
  if (auto status = prepare(inputs.shape, seqlens, run); !status) {
    return status;
  }
  run.args.shape = inputs.shape;
  run.args.softmax_scale = inputs.softmax_scale;
  run.args.causal = inputs.causal;
  run.args.q = d_q.as<const std::uint16_t>();
  run.args.kv_cache = d_kv.as<const std::uint16_t>();
  run.args.block_table = d_table.as<const std::int32_t>();
  run.args.seqlens_k = d_seqlens.as<const std::int32_t>();
  run.args.out = d_out.as<float>();
  run.args.lse = d_lse.as<float>();
  if (auto status = launch_decode(run.args, run.plan.view, variant, nullptr); !status) {
    return status;
  }
  if (auto status = check(cudaDeviceSynchronize(), "decode kernel"); !status) {
    return status;
  }
  if (auto status = d_out.download(outputs.out.data(), outputs.out.size()); !status) {
    return status;
  }
  return d_lse.download(outputs.lse.data(), outputs.lse.size());
}

Result<Timing> bench_decode(const DecodeShape& shape_in, const std::vector<std::int32_t>& seqlens,
                            std::string_view kernel_name, int iters) {
  auto variant = parse_variant(kernel_name);
  if (!variant) {
    return std::move(variant).error();
  }
  if (iters < 1 || seqlens.size() != static_cast<std::size_t>(shape_in.batch)) {
    return make_error(ErrorCode::kInvalidArgument, "bench_decode: bad iters or seqlens");
  }
  DecodeShape shape = shape_in;
  int max_pages = 0;
  long long total_pages = 0;
  for (std::int32_t s : seqlens) {
    const int pages = (std::max(s, 0) + shape.page_size - 1) / shape.page_size;
    max_pages = std::max(max_pages, pages);
    total_pages += pages;
  }
  if (shape.max_pages_per_seq == 0) {
    shape.max_pages_per_seq = std::max(max_pages, 1);
  }
  if (shape.num_pages == 0) {
    shape.num_pages = static_cast<int>(std::max<long long>(total_pages, 1));
  }
  if (auto status = check_supported(shape); !status) {
    return std::move(status).error();
  }
  // Each request's pages, scattered over the cache in a fixed random order.
  std::vector<std::int32_t> page_ids(static_cast<std::size_t>(shape.num_pages));
  std::iota(page_ids.begin(), page_ids.end(), 0);
  std::mt19937 rng(20250930U);
  std::shuffle(page_ids.begin(), page_ids.end(), rng);
  std::vector<std::int32_t> table(
      static_cast<std::size_t>(shape.batch) * static_cast<std::size_t>(shape.max_pages_per_seq), 0);
  std::size_t next = 0;
  for (int b = 0; b < shape.batch; ++b) {
    const int pages = (std::max(seqlens[static_cast<std::size_t>(b)], 0) + 63) / 64;
    for (int j = 0; j < pages; ++j) {
      table[static_cast<std::size_t>(b) * shape.max_pages_per_seq + j] =
          page_ids[next++ % page_ids.size()];
    }
  }
  const auto rows = static_cast<std::size_t>(shape.batch) * shape.seqlen_q * shape.heads_q;
  const std::size_t q_count = rows * 576;
  const std::size_t kv_count = static_cast<std::size_t>(shape.num_pages) * 64 * 576;
  DeviceBuffer d_q, d_kv, d_table, d_seqlens, d_out, d_lse;
  for (auto status :
       {d_q.allocate(q_count * 2), d_kv.allocate(kv_count * 2), d_table.upload(table),
        d_seqlens.upload(seqlens), d_out.allocate(rows * 512 * 4), d_lse.allocate(rows * 4)}) {
    if (!status) {
      return std::move(status).error();
    }
  }
  fill_random_bf16<<<1024, 256>>>(d_q.as<std::uint16_t>(), q_count, 1U);
  fill_random_bf16<<<4096, 256>>>(d_kv.as<std::uint16_t>(), kv_count, 2U);
  PreparedRun run;
  if (auto status = prepare(shape, seqlens, run); !status) {
    return std::move(status).error();
  }
  run.args.shape = shape;
  run.args.softmax_scale = 1.0f / std::sqrt(192.0f);
  run.args.causal = true;
  run.args.q = d_q.as<const std::uint16_t>();
  run.args.kv_cache = d_kv.as<const std::uint16_t>();
  run.args.block_table = d_table.as<const std::int32_t>();
  run.args.seqlens_k = d_seqlens.as<const std::int32_t>();
  run.args.out = d_out.as<float>();
  run.args.lse = d_lse.as<float>();
  for (int i = 0; i < 3; ++i) {  // warm-up: attribute set-up, L2, clocks
    if (auto status = launch_decode(run.args, run.plan.view, *variant, nullptr); !status) {
      return std::move(status).error();
    }
  }
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaEventRecord(start);
  int launched = 0;
  for (; launched < iters; ++launched) {
    if (!launch_decode(run.args, run.plan.view, *variant, nullptr).ok()) {
      break;
    }
  }
  cudaEventRecord(stop);
  const Status synced = check(cudaEventSynchronize(stop), "benchmark kernels");
  float elapsed_ms = 0.0f;
  cudaEventElapsedTime(&elapsed_ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (launched < iters) {
    return make_error(ErrorCode::kInternal, "bench_decode: a launch failed");
  }
  if (!synced) {
    return Error(synced.error());
  }
  return Timing{static_cast<double>(elapsed_ms) / iters};
}

}  // namespace omni::amla::cuda
