// amla-bench: times MLA decode attention kernels and reports TFLOPS (FlashMLA's formula),
// GB/s and the fraction of the peak measured in the same run.
//
//   amla-bench [--device cpu|cuda] [--kernels gemm,flash,amla] [--batch 1,4,16]
//              [--seqlen-q 1,2] [--seqlen-k 1024,4096] [--heads 128] [--varlen] [--json]
//
// Lists give the cross product of shapes. Exit status: 0 success, 2 bad flags or a device
// that is not available (the message says why).
#include <CLI/CLI.hpp>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "bench.hpp"
#include "omni/config/cli.hpp"

namespace omni::amla::bench {
namespace {

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

Result<std::vector<int>> parse_ints(const std::string& flag, const std::string& text) {
  std::vector<int> out;
  for (const auto& item : split(text)) {
    std::size_t used = 0;
    int value = 0;
    try {
      value = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || value < 1) {
      return make_error(ErrorCode::kInvalidArgument,
                        flag + ": '" + item + "' is not a positive integer");
    }
    out.push_back(value);
  }
  if (out.empty()) return make_error(ErrorCode::kInvalidArgument, flag + ": empty list");
  return out;
}

struct RawFlags {
  std::string kernels, batch = "4", seqlen_q = "1", seqlen_k = "4096";
  int heads = 128;
};

Result<Config> finish(Config config, const RawFlags& raw) {
  if (raw.kernels.empty()) {
    config.kernels = config.device == "cuda" ? std::vector<std::string>{"flash", "amla"}
                                             : std::vector<std::string>{"gemm", "flash", "amla"};
  } else {
    config.kernels = split(raw.kernels);
  }
  for (const auto& k : config.kernels) {
    if (k != "gemm" && k != "flash" && k != "amla") {
      return make_error(ErrorCode::kInvalidArgument,
                        "--kernels: unknown kernel '" + k + "' (gemm, flash, amla)");
    }
  }
  auto batches = parse_ints("--batch", raw.batch);
  auto qs = parse_ints("--seqlen-q", raw.seqlen_q);
  auto ks = parse_ints("--seqlen-k", raw.seqlen_k);
  for (const auto* r : {&batches, &qs, &ks}) {
    if (!r->ok()) return r->error();
  }
  if (raw.heads < 1) return make_error(ErrorCode::kInvalidArgument, "--heads must be >= 1");
  for (const int q : *qs) {
    for (const int b : *batches) {
      for (const int k : *ks) config.shapes.push_back(Shape{b, q, k, raw.heads});
    }
  }
  return config;
}

int run(int argc, char** argv) {
  CLI::App app{"amla-bench: MLA decode attention kernels (gemm baseline, flash, amla)"};
  Config config;
  RawFlags raw;
  app.add_option("--device", config.device, "cpu or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  app.add_option("--kernels", raw.kernels,
                 "Comma list of gemm, flash, amla (default: all the device has)");
  app.add_option("--batch", raw.batch, "Batch sizes, comma list")->capture_default_str();
  app.add_option("--seqlen-q", raw.seqlen_q,
                 "Query tokens per request (1, or 2 with MTP), comma list")
      ->capture_default_str();
  app.add_option("--seqlen-k", raw.seqlen_k, "KV length (the mean with --varlen), comma list")
      ->capture_default_str();
  app.add_option("--heads", raw.heads, "Query heads")->capture_default_str();
  app.add_flag("--varlen", config.varlen,
               "Variable lengths: normal(s_k, s_k/2) clamped to [1, 2 s_k], FlashMLA's recipe");
  app.add_option("--threads", config.threads, "CPU threads (0: all)")->capture_default_str();
  app.add_option("--iters", config.iters, "Timed runs per kernel and shape (median reported)")
      ->capture_default_str();
  app.add_option("--warmup", config.warmup, "Untimed runs first")->capture_default_str();
  app.add_option("--isa", config.isa,
                 "CPU kernels' ISA: scalar, avx2, avx512 (default: OMNI_FORCE_ISA or the best)");
  app.add_option("--gemm", config.gemm,
                 "Baseline GEMM: sbgemm (bf16), sgemm (fp32) or auto (sbgemm when OpenBLAS has it)")
      ->check(CLI::IsMember({"auto", "sbgemm", "sgemm"}))
      ->capture_default_str();
  app.add_option("--peak-seconds", config.peak_seconds, "Seconds per peak measurement")
      ->capture_default_str();
  app.add_option("--seed", config.seed, "Input generator seed")->capture_default_str();
  app.add_flag("--json", config.json, "One JSON array on stdout instead of the table");
  app.add_flag("--accuracy", config.accuracy,
               "No timing: every kernel on every ISA against the float64 reference (error table)");
  if (auto status = omni::config::parse_or_exit(app, argc, argv)) return *status;
  auto full = finish(config, raw);
  if (!full.ok()) {
    std::cerr << "amla-bench: " << full.error().message << "\n";
    return 2;
  }
  if (full->iters < 1 || full->warmup < 0 || full->threads < 0) {
    std::cerr << "amla-bench: --iters >= 1, --warmup >= 0, --threads >= 0\n";
    return 2;
  }
  if (full->accuracy) {
    if (auto st = run_accuracy(*full); !st) {
      std::cerr << "amla-bench: " << st.error().to_string() << "\n";
      return 2;
    }
    return 0;
  }
  auto report = full->device == "cuda" ? run_cuda(*full) : run_cpu(*full);
  if (!report.ok()) {
    std::cerr << "amla-bench: " << report.error().to_string() << "\n";
    return 2;
  }
  if (full->json) {
    print_json(*report);
  } else {
    print_text(*report);
  }
  return 0;
}

}  // namespace
}  // namespace omni::amla::bench

int main(int argc, char** argv) { return omni::amla::bench::run(argc, argv); }
