// The CPU runner: inputs from the test harness, the kernels timed interleaved (gemm, flash,
// amla, gemm, ...) so that every ratio compares runs made side by side, median per kernel.
#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>

#include <time.h>

#include "bench.hpp"
#include "omni/amla/cost.hpp"
#include "omni/amla/cpu.hpp"
#include "omni/amla/gemm_baseline.hpp"
#include "omni/amla/harness.hpp"
#include "omni/amla/reference.hpp"
#include "omni/amla/thread_pool.hpp"

namespace omni::amla::bench {
namespace {

using Clock = std::chrono::steady_clock;

// One kernel behind a common call.
struct Runner {
  std::string name;
  std::string isa;  // what the row's isa column says
  std::unique_ptr<CpuDecoder> decoder;
  std::unique_ptr<GemmBaseline> gemm;
  Status run(const DecodeInputs& in, const DecodeOutputs& out, Executor& ex) {
    return gemm ? gemm->run(in, out, ex) : decoder->run(in, out, ex);
  }
};

Result<std::vector<Runner>> make_runners(const Config& config, Isa isa) {
  std::vector<Runner> out;
  for (const auto& name : config.kernels) {
    Runner r{name, std::string(isa_name(isa)), nullptr, nullptr};
    if (name == "gemm") {
      const bool bf16 = config.gemm == "sbgemm" || (config.gemm == "auto" && blas_has_sbgemm());
      if (bf16 && !blas_has_sbgemm()) {
        return make_error(ErrorCode::kUnsupported,
                          "--gemm sbgemm: this OpenBLAS exports no cblas_sbgemm");
      }
      r.gemm =
          std::make_unique<GemmBaseline>(bf16 ? GemmPrecision::kBf16 : GemmPrecision::kFp32, isa);
      r.isa = bf16 ? "sbgemm" : "sgemm";
    } else {
      DecoderOptions opts;
      opts.isa = isa;
      opts.kernel = *parse_kernel(name);
      r.decoder = std::make_unique<CpuDecoder>(opts);
    }
    out.push_back(std::move(r));
  }
  return out;
}

PeakFlops max_of(const PeakFlops& a, const PeakFlops& b) {
  PeakFlops m = b;
  m.fp32_fma_gflops_1core = std::max(a.fp32_fma_gflops_1core, b.fp32_fma_gflops_1core);
  m.bf16_dot_gflops_1core = std::max(a.bf16_dot_gflops_1core, b.bf16_dot_gflops_1core);
  m.fp32_fma_gflops_all = std::max(a.fp32_fma_gflops_all, b.fp32_fma_gflops_all);
  m.bf16_dot_gflops_all = std::max(a.bf16_dot_gflops_all, b.bf16_dot_gflops_all);
  return m;
}

double process_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return 1e3 * static_cast<double>(ts.tv_sec) + 1e-6 * static_cast<double>(ts.tv_nsec);
}

struct Timing {
  double wall_ms = 0.0;  // median
  double cpu_ms = 0.0;   // fastest process CPU time of a run (all threads): contention only adds
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

Result<std::vector<Timing>> time_shape(const Config& config, std::vector<Runner>& runners,
                                       const TestCase& tc, Executor& executor) {
  std::vector<float> out(out_elements(tc.shape)), lse(lse_elements(tc.shape));
  const DecodeOutputs outputs{out, lse};
  const DecodeInputs inputs = tc.inputs();
  std::vector<std::vector<double>> wall(runners.size()), cpu(runners.size());
  for (int it = 0; it < config.warmup + config.iters; ++it) {
    for (std::size_t k = 0; k < runners.size(); ++k) {
      const auto start = Clock::now();
      const double cpu_start = process_cpu_ms();
      if (auto st = runners[k].run(inputs, outputs, executor); !st) return st.error();
      const double cpu_ms = process_cpu_ms() - cpu_start;
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      if (it >= config.warmup) {
        wall[k].push_back(ms);
        cpu[k].push_back(cpu_ms);
      }
    }
  }
  std::vector<Timing> medians;
  for (std::size_t k = 0; k < runners.size(); ++k) {
    medians.push_back(Timing{median(wall[k]), *std::min_element(cpu[k].begin(), cpu[k].end())});
  }
  return medians;
}

}  // namespace

Result<Report> run_cpu(const Config& config) {
  const Result<Isa> isa = config.isa.empty() ? runtime_isa() : choose_isa(config.isa);
  if (!isa.ok()) return isa.error();
  const int threads = config.threads > 0
                          ? config.threads
                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  set_blas_threads(threads);
  auto runners = make_runners(config, *isa);
  if (!runners.ok()) return runners.error();
  ThreadPoolExecutor executor(threads);
  Report report;
  report.has_peak = true;
  SeededRandom random(config.seed);
  std::vector<Row> rows;
  for (const Shape& shape : config.shapes) {
    // A peak sample before every shape; the best sample is the peak (contention only lowers it).
    report.peak = max_of(report.peak, measure_peak(*isa, threads, config.peak_seconds));
    CaseSpec spec;
    spec.seqlens_k = make_seqlens(shape.batch, shape.seqlen_k, config.varlen, random);
    spec.seqlen_q = shape.seqlen_q;
    spec.heads_q = shape.heads;
    const TestCase tc = make_test_case(spec, random);
    auto medians = time_shape(config, *runners, tc, executor);
    if (!medians.ok()) return medians.error();
    const double flops = decode_flops(tc.shape, tc.seqlens_k),
                 bytes = decode_bytes(tc.shape, tc.seqlens_k);
    for (std::size_t k = 0; k < runners->size(); ++k) {
      Row row;
      row.flops = flops;
      row.bytes = bytes;
      row.kernel = (*runners)[k].name;
      row.device = "cpu";
      row.isa = (*runners)[k].isa;
      row.shape = shape;
      row.mean_seqlen_k = static_cast<double>(flops) /
                          (2.0 * shape.batch * shape.seqlen_q * shape.heads * (576 + 512));
      row.time_ms = (*medians)[k].wall_ms;
      row.cpu_ms = (*medians)[k].cpu_ms;
      row.tflops = flops / (row.time_ms * 1e-3) / 1e12;
      row.gbps = bytes / (row.time_ms * 1e-3) / 1e9;
      row.threads = threads;
      rows.push_back(row);
    }
  }
  // Fractions against the final (best) peak samples, in CPU time: FLOPs per second of CPU
  // time over one core's peak (also per CPU second). On the shared 2-vCPU build machines wall
  // time mostly measures the neighbours; CPU time measures the kernel. The wall-time fraction
  // (against threads x the one-core peak) is kept beside it.
  for (Row& row : rows) {
    const double core_peak = report.peak.bf16_kernel_peak_gflops_1core();
    row.peak_gflops = core_peak * row.threads;
    row.peak_kind =
        report.peak.bf16_dot_gflops_1core > 0 ? "bf16_dot_measured" : "fp32_fma_measured";
    row.gflops_per_core = row.flops / (row.cpu_ms * 1e-3) / 1e9;
    row.peak_fraction = row.gflops_per_core / core_peak;
    row.peak_fraction_wall = row.tflops * 1e3 / row.peak_gflops;
  }
  report.rows = std::move(rows);
  return report;
}

}  // namespace omni::amla::bench
