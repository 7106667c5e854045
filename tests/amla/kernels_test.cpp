// Every kernel (flash, amla) on every ISA this CPU has, against the float64 reference, on
// shapes that cover the edge cases: s_q 1 and 2 (causal), 128 heads and small head counts
// that leave SIMD tails, variable and zero lengths, rows that see no key, forced KV splits,
// small pages, and score ranges wide enough to underflow AMLA's exponent add. Outputs are
// poisoned before each run; the harness fills every row no query may see with NaN.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "omni/amla/cpu.hpp"
#include "omni/amla/harness.hpp"
#include "omni/amla/reference.hpp"
#include "omni/amla/thread_pool.hpp"

namespace omni::amla {
namespace {

struct KernelCase {
  std::string name;
  CaseSpec spec;
  int fixed_split_keys = 0;
};

CaseSpec spec_of(std::vector<std::int32_t> lens, int seqlen_q, int heads) {
  CaseSpec s;
  s.seqlens_k = std::move(lens);
  s.seqlen_q = seqlen_q;
  s.heads_q = heads;
  return s;
}

std::vector<KernelCase> cases() {
  std::vector<KernelCase> out;
  out.push_back({"decode_h128", spec_of({70, 1}, 1, 128)});
  out.push_back({"mtp_h128_causal", spec_of({66, 2}, 2, 128)});
  out.push_back({"small_heads_variable_and_zero", spec_of({0, 1, 63, 65, 200}, 1, 3)});
  out.push_back({"mtp_rows_that_see_no_key", spec_of({0, 1, 2, 77}, 2, 20)});
  KernelCase non_causal{"mtp_non_causal", spec_of({90, 3}, 2, 5)};
  non_causal.spec.causal = false;
  out.push_back(non_causal);
  out.push_back({"forced_splits", spec_of({300, 0, 64, 65, 1}, 2, 17), 64});
  KernelCase pages{"page_size_16", spec_of({50, 33, 16}, 1, 8)};
  pages.spec.page_size = 16;
  out.push_back(pages);
  // softmax_scale 3: score spread of hundreds in log2 units, so AMLA's running max jumps by
  // more than 126 and earlier contributions underflow (flushed, as the reference's are tiny).
  KernelCase peaky{"peaky_scores_underflow", spec_of({260}, 2, 16), 64};
  peaky.spec.softmax_scale = 3.0f;
  out.push_back(peaky);
  return out;
}

struct Expected {
  std::vector<double> out, lse;
};

Expected reference_of(const TestCase& tc) {
  Expected e{std::vector<double>(out_elements(tc.shape)),
             std::vector<double>(lse_elements(tc.shape))};
  reference_decode(tc.inputs(), e.out, e.lse);
  return e;
}

void check_kernel(Isa isa, KernelKind kind, const KernelCase& kc, const TestCase& tc,
                  const Expected& want, Executor& executor) {
  SCOPED_TRACE(std::string(isa_name(isa)) + "/" + std::string(kernel_name(kind)) + "/" + kc.name);
  DecoderOptions opts;
  opts.isa = isa;
  opts.kernel = kind;
  opts.fixed_split_keys = kc.fixed_split_keys;
  CpuDecoder decoder(opts);
  std::vector<float> out(out_elements(tc.shape)), lse(lse_elements(tc.shape));
  for (int run = 0; run < 2; ++run) {  // the second run reuses the decoder's scratch
    poison(out);
    poison(lse);
    ASSERT_TRUE(decoder.run(tc.inputs(), DecodeOutputs{out, lse}, executor).ok());
    const Comparison c_out = compare(out, want.out, Tolerance{});
    EXPECT_TRUE(c_out.passed) << "out " << c_out.describe();
    const Comparison c_lse = compare(lse, want.lse, Tolerance{1e-3, 1e-4, 1e-7});
    EXPECT_TRUE(c_lse.passed) << "lse " << c_lse.describe();
  }
}

TEST(AmlaKernels, EveryKernelOnEveryIsaMatchesTheReference) {
  SeededRandom random(2509);
  ThreadPoolExecutor pool(2);
  for (const KernelCase& kc : cases()) {
    const TestCase tc = make_test_case(kc.spec, random);  // fresh inputs per case
    const Expected want = reference_of(tc);
    for (const Isa isa : supported_isas()) {
      for (const KernelKind kind : {KernelKind::kFlash, KernelKind::kAmla}) {
        check_kernel(isa, kind, kc, tc, want, pool);
      }
    }
  }
}

TEST(AmlaKernels, SplitsAndThreadsDoNotChangeTheAnswerBeyondRounding) {
  SeededRandom random(5);
  const TestCase tc = make_test_case(spec_of({300, 130}, 2, 16), random);
  const Expected want = reference_of(tc);
  InlineExecutor inline_executor;
  ThreadPoolExecutor pool(3);
  for (const Isa isa : supported_isas()) {
    for (const int split : {64, 192}) {
      KernelCase kc{"split_" + std::to_string(split), {}, split};
      check_kernel(isa, KernelKind::kAmla, kc, tc, want, inline_executor);
      check_kernel(isa, KernelKind::kAmla, kc, tc, want, pool);
    }
  }
}

}  // namespace
}  // namespace omni::amla
