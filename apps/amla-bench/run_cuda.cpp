// The CUDA runner: present only when the build has omni_amla_cuda (nvcc found).
#include "bench.hpp"
#include "omni/amla/cost.hpp"

#ifdef OMNI_AMLA_HAVE_CUDA
#include "omni/amla/cuda.hpp"
#include "omni/amla/harness.hpp"
#endif

namespace omni::amla::bench {

#ifdef OMNI_AMLA_HAVE_CUDA
namespace {
// No portable way to measure a GPU's tensor-core peak in a second; the H200's dense bf16
// figure from its data sheet is the denominator (stated as such in every row).
constexpr double kH200Bf16PeakGflops = 989e3;
}  // namespace

Result<Report> run_cuda(const Config& config) {
  if (!cuda::device_available()) {
    return make_error(ErrorCode::kUnavailable,
                      "--device cuda: no CUDA device is available (driver or GPU missing)");
  }
  Report report;
  SeededRandom random(config.seed);
  for (const Shape& shape : config.shapes) {
    DecodeShape ds;
    ds.batch = shape.batch;
    ds.seqlen_q = shape.seqlen_q;
    ds.heads_q = shape.heads;
    const auto lens = make_seqlens(shape.batch, shape.seqlen_k, config.varlen, random);
    for (const auto& kernel : config.kernels) {
      if (kernel == "gemm")
        return make_error(ErrorCode::kUnsupported, "--device cuda: no gemm baseline on CUDA");
      auto timing = cuda::bench_decode(ds, lens, kernel, config.iters);
      if (!timing.ok()) return timing.error();
      const double flops = decode_flops(ds, lens), bytes = decode_bytes(ds, lens);
      Row row;
      row.kernel = kernel;
      row.device = "cuda";
      row.isa = "sm_90a";
      row.shape = shape;
      row.mean_seqlen_k = flops / (2.0 * shape.batch * shape.seqlen_q * shape.heads * (576 + 512));
      row.time_ms = timing->time_ms;
      row.tflops = flops / (row.time_ms * 1e-3) / 1e12;
      row.gbps = bytes / (row.time_ms * 1e-3) / 1e9;
      row.peak_gflops = kH200Bf16PeakGflops;
      row.peak_kind = "h200_bf16_datasheet";
      row.peak_fraction = row.tflops * 1e3 / kH200Bf16PeakGflops;
      row.peak_fraction_wall = row.peak_fraction;
      report.rows.push_back(row);
    }
  }
  return report;
}
#else
Result<Report> run_cuda(const Config&) {
  return make_error(ErrorCode::kUnsupported,
                    "--device cuda: this amla-bench was built without CUDA (nvcc was not found at "
                    "configure time)");
}
#endif

}  // namespace omni::amla::bench
