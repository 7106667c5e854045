// amla-bench internals: one measured row per (kernel, shape), and the runners that fill them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "omni/amla/peak.hpp"
#include "omni/common/result.hpp"

namespace omni::amla::bench {

struct Shape {
  int batch = 4;
  int seqlen_q = 1;
  int seqlen_k = 4096;  // nominal; the mean with --varlen
  int heads = 128;
};

struct Config {
  std::string device = "cpu";
  std::vector<std::string> kernels;
  std::vector<Shape> shapes;
  bool varlen = false;
  int threads = 0;  // 0: all CPUs
  int iters = 5;
  int warmup = 1;
  std::string isa;  // empty: runtime_isa()
  std::string gemm = "auto";
  double peak_seconds = 0.1;
  std::uint64_t seed = 1;
  bool json = false;
  bool accuracy = false;
};

struct Row {
  std::string kernel, device, isa;
  Shape shape;
  double mean_seqlen_k = 0.0;
  double flops = 0.0, bytes = 0.0;
  double time_ms = 0.0;  // median over iters
  double tflops = 0.0;
  double gbps = 0.0;
  // CPU: FLOPs per CPU-second / one core's measured peak; CUDA: TFLOPS / the data-sheet peak.
  double peak_fraction = 0.0;
  double peak_fraction_wall = 0.0;  // wall-time TFLOPS / peak_gflops
  double cpu_ms = 0.0;              // fastest process CPU time of a run, CPU runs only
  double gflops_per_core = 0.0;     // FLOPs per CPU-second
  double peak_gflops = 0.0;         // CPU: threads x one core's peak
  std::string peak_kind;
  int threads = 1;
};

struct Report {
  std::vector<Row> rows;
  PeakFlops peak;  // CPU runs
  bool has_peak = false;
};

Result<Report> run_cpu(const Config& config);
Result<Report> run_cuda(const Config& config);
Status run_accuracy(const Config& config);

void print_text(const Report& report);
void print_json(const Report& report);

}  // namespace omni::amla::bench
