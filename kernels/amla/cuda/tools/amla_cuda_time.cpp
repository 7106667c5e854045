// amla-cuda-time: times the CUDA MLA decode kernels (flash, amla, and their wgmma forms) at
// FlashMLA's benchmark shapes; one line per kernel and shape, then a summary table (check.sh).
//   amla-cuda-time [iters]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "omni/amla/cuda.hpp"

namespace {

struct Row {
  std::string kernel;
  int seqlen_q = 1;
  int seqlen_k = 0;
  double time_ms = 0.0;
  double tflops = 0.0;
  double gbps = 0.0;
};

// FlashMLA's convention: FLOPs = 2 b s_q h_q mean(s_k) (576 + 512); bytes = bf16 KV rows read
// + bf16 Q + the output (fp32 here).
Row measure(const std::string& kernel, int batch, int seqlen_q, int seqlen_k, int iters, bool& ok) {
  omni::amla::DecodeShape shape;
  shape.batch = batch;
  shape.seqlen_q = seqlen_q;
  shape.heads_q = 128;
  const std::vector<std::int32_t> seqlens(static_cast<std::size_t>(batch), seqlen_k);
  Row row{kernel, seqlen_q, seqlen_k, 0.0, 0.0, 0.0};
  auto timing = omni::amla::cuda::bench_decode(shape, seqlens, kernel, iters);
  if (!timing.ok()) {
    std::fprintf(stderr, "%s s_q=%d s_k=%d: %s\n", kernel.c_str(), seqlen_q, seqlen_k,
                 timing.error().to_string().c_str());
    ok = false;
    return row;
  }
  const double rows = static_cast<double>(batch) * seqlen_q * shape.heads_q;
  const double flops = 2.0 * rows * seqlen_k * (576 + 512);
  const double bytes =
      2.0 * batch * static_cast<double>(seqlen_k) * 576 + rows * 576 * 2 + rows * 512 * 4;
  row.time_ms = timing->time_ms;
  row.tflops = flops / (row.time_ms * 1e-3) / 1e12;
  row.gbps = bytes / (row.time_ms * 1e-3) / 1e9;
  std::printf("%-14s b=%d h_q=128 s_q=%d s_k=%-6d %9.3f ms %8.1f TFLOPS %8.1f GB/s\n",
              kernel.c_str(), batch, seqlen_q, seqlen_k, row.time_ms, row.tflops, row.gbps);
  std::fflush(stdout);
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::max(1, std::atoi(argv[1])) : 20;
  if (!omni::amla::cuda::device_available()) {
    std::printf("no CUDA device\n");
    return 2;
  }
  bool ok = true;
  const std::vector<std::string> kernels = {"flash",      "amla",           "flash-wgmma",
                                            "amla-wgmma", "flash-wgmma-pv", "amla-wgmma-pv"};
  std::vector<std::vector<Row>> table;  // one entry per shape, one Row per kernel
  for (int seqlen_q : {1, 2}) {
    for (int seqlen_k : {4096, 8192, 16384, 32768}) {
      std::vector<Row> rows;
      for (const std::string& kernel : kernels) {
        rows.push_back(measure(kernel, 128, seqlen_q, seqlen_k, iters, ok));
      }
      table.push_back(rows);
    }
  }
  std::printf("\n| s_q | s_k |");
  for (const std::string& kernel : kernels) {
    std::printf(" %s ms | %s TFLOPS |", kernel.c_str(), kernel.c_str());
  }
  std::printf(" amla/flash | amla/flash (wgmma) | amla/flash (wgmma-pv) | best GB/s |\n|---|---|");
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    std::printf("---|---|");
  }
  std::printf("---|---|---|---|\n");
  for (const auto& rows : table) {
    std::printf("| %d | %d |", rows[0].seqlen_q, rows[0].seqlen_k);
    double best_gbps = 0.0;
    for (const Row& row : rows) {
      std::printf(" %.3f | %.1f |", row.time_ms, row.tflops);
      best_gbps = std::max(best_gbps, row.gbps);
    }
    auto speedup = [](const Row& base, const Row& other) {
      return other.time_ms > 0.0 ? base.time_ms / other.time_ms : 0.0;
    };
    std::printf(" %.3f | %.3f | %.3f | %.1f |\n", speedup(rows[0], rows[1]),
                speedup(rows[2], rows[3]), speedup(rows[4], rows[5]), best_gbps);
  }
  return ok ? 0 : 1;
}
