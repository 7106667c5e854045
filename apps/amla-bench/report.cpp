// Output: a table with side-by-side ratios, or one JSON array (the schema of issue 9).
#include <boost/json.hpp>
#include <cstdio>
#include <iostream>
#include <map>

#include "bench.hpp"

namespace omni::amla::bench {
namespace {

std::string shape_key(const Row& r) {
  return std::to_string(r.shape.batch) + "/" + std::to_string(r.shape.seqlen_q) + "/" +
         std::to_string(r.shape.seqlen_k) + "/" + std::to_string(r.shape.heads);
}

}  // namespace

void print_text(const Report& report) {
  if (report.has_peak) {
    const PeakFlops& p = report.peak;
    std::printf(
        "peak (%s, measured, best sample): per core-second of CPU time fp32 FMA %.1f GFLOP/s, "
        "bf16 dot %.1f GFLOP/s; wall time on %d threads fp32 %.1f, bf16 %.1f\n",
        std::string(isa_name(p.isa)).c_str(), p.fp32_fma_gflops_1core, p.bf16_dot_gflops_1core,
        p.threads, p.fp32_fma_gflops_all, p.bf16_dot_gflops_all);
  }
  std::printf("%-6s %-6s %-7s %5s %4s %6s %5s %10s %8s %8s %6s %9s %9s %10s %7s\n", "kernel",
              "device", "isa", "batch", "s_q", "s_k", "heads", "time_ms", "TFLOPS", "GB/s", "peak%",
              "vs_gemm", "vs_flash", "GF/core-s", "wall_pk%");
  std::map<std::string, std::map<std::string, double>> times;
  for (const Row& r : report.rows) times[shape_key(r)][r.kernel] = r.time_ms;
  for (const Row& r : report.rows) {
    const auto& t = times[shape_key(r)];
    auto ratio = [&](const char* base) {
      const auto it = t.find(base);
      return it == t.end() || r.kernel == base
                 ? std::string("-")
                 : std::to_string(it->second / r.time_ms).substr(0, 5) + "x";
    };
    std::printf(
        "%-6s %-6s %-7s %5d %4d %6d %5d %10.3f %8.4f %8.1f %5.1f%% %9s %9s %10.1f %6.1f%%\n",
        r.kernel.c_str(), r.device.c_str(), r.isa.c_str(), r.shape.batch, r.shape.seqlen_q,
        r.shape.seqlen_k, r.shape.heads, r.time_ms, r.tflops, r.gbps, 100.0 * r.peak_fraction,
        ratio("gemm").c_str(), ratio("flash").c_str(), r.gflops_per_core,
        100.0 * r.peak_fraction_wall);
  }
}

void print_json(const Report& report) {
  boost::json::array out;
  for (const Row& r : report.rows) {
    boost::json::object o;
    o["kernel"] = r.kernel;
    o["device"] = r.device;
    o["batch"] = r.shape.batch;
    o["seqlen_q"] = r.shape.seqlen_q;
    o["seqlen_k"] = r.shape.seqlen_k;
    o["heads"] = r.shape.heads;
    o["time_ms"] = r.time_ms;
    o["tflops"] = r.tflops;
    o["gbps"] = r.gbps;
    o["peak_fraction"] = r.peak_fraction;
    o["mean_seqlen_k"] = r.mean_seqlen_k;
    o["isa"] = r.isa;
    o["threads"] = r.threads;
    o["peak_gflops"] = r.peak_gflops;
    o["cpu_ms"] = r.cpu_ms;
    o["gflops_per_core_second"] = r.gflops_per_core;
    o["peak_fraction_wall"] = r.peak_fraction_wall;
    o["peak_kind"] = r.peak_kind;
    if (report.has_peak) {
      o["peak_fp32_fma_gflops_1core"] = report.peak.fp32_fma_gflops_1core;
      o["peak_bf16_dot_gflops_1core"] = report.peak.bf16_dot_gflops_1core;
      o["peak_fp32_fma_gflops_all"] = report.peak.fp32_fma_gflops_all;
      o["peak_bf16_dot_gflops_all"] = report.peak.bf16_dot_gflops_all;
    }
    out.push_back(std::move(o));
  }
  std::cout << boost::json::serialize(out) << "\n";
}

}  // namespace omni::amla::bench
