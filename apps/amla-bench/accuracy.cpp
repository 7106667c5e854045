// --accuracy: every kernel on every ISA against the float64 reference on the requested
// shapes; prints the error table of docs/amla.md (no timing).
#include <cmath>
#include <cstdio>
#include <limits>

#include "bench.hpp"
#include "omni/amla/cpu.hpp"
#include "omni/amla/gemm_baseline.hpp"
#include "omni/amla/harness.hpp"
#include "omni/amla/reference.hpp"
#include "omni/amla/thread_pool.hpp"

namespace omni::amla::bench {
namespace {

double max_lse_error(const std::vector<float>& got, const std::vector<double>& want) {
  double worst = 0.0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (std::isfinite(want[i]))
      worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]));
  }
  return worst;
}

void print_row(const char* kernel, const std::string& isa, const Shape& shape, const Comparison& c,
               double lse_err) {
  std::printf("%-6s %-7s %5d %4d %6d %5d %12.3e %12.3e %12.3e %12.3e\n", kernel, isa.c_str(),
              shape.batch, shape.seqlen_q, shape.seqlen_k, shape.heads, c.max_abs_error,
              c.max_rel_error, c.cos_diff, lse_err);
}

}  // namespace

Status run_accuracy(const Config& config) {
  ThreadPoolExecutor executor(config.threads > 0 ? config.threads : 2);
  SeededRandom random(config.seed);
  std::printf("%-6s %-7s %5s %4s %6s %5s %12s %12s %12s %12s\n", "kernel", "isa", "batch", "s_q",
              "s_k", "heads", "max_abs", "max_rel", "cos_diff", "lse_max_abs");
  for (const Shape& shape : config.shapes) {
    CaseSpec spec;
    spec.seqlens_k = make_seqlens(shape.batch, shape.seqlen_k, config.varlen, random);
    spec.seqlen_q = shape.seqlen_q;
    spec.heads_q = shape.heads;
    const TestCase tc = make_test_case(spec, random);
    std::vector<double> want_out(out_elements(tc.shape)), want_lse(lse_elements(tc.shape));
    reference_decode(tc.inputs(), want_out, want_lse);
    std::vector<float> out(want_out.size()), lse(want_lse.size());
    const DecodeOutputs outputs{out, lse};
    for (const auto& name : config.kernels) {
      for (const Isa isa : supported_isas()) {
        poison(out);
        poison(lse);
        std::string label(isa_name(isa));
        if (name == "gemm") {
          if (isa != supported_isas().back()) continue;  // the GEMMs are OpenBLAS's either way
          const bool bf16 = blas_has_sbgemm();
          GemmBaseline gemm(bf16 ? GemmPrecision::kBf16 : GemmPrecision::kFp32, isa);
          if (auto st = gemm.run(tc.inputs(), outputs, executor); !st) return st;
          label = bf16 ? "sbgemm" : "sgemm";
        } else {
          DecoderOptions opts;
          opts.isa = isa;
          opts.kernel = *parse_kernel(name);
          CpuDecoder decoder(opts);
          if (auto st = decoder.run(tc.inputs(), outputs, executor); !st) return st;
        }
        print_row(name.c_str(), label, shape, compare(out, want_out, Tolerance{}),
                  max_lse_error(lse, want_lse));
      }
    }
  }
  return ok_status();
}

}  // namespace omni::amla::bench
