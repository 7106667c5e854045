// The CUDA MLA decode kernels against the float64 reference, on inputs from the shared harness
// (NaN-filled unused pages and page tails, poisoned outputs). Skips where no GPU is present.
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "omni/amla/cuda.hpp"
#include "omni/amla/harness.hpp"
#include "omni/amla/reference.hpp"
#include "omni/common/random.hpp"

namespace omni::amla::cuda {
namespace {

struct GpuCase {
  std::string name;
  std::vector<std::int32_t> seqlens;
  int seqlen_q = 1;
  int heads_q = 128;
  bool causal = true;
};

constexpr Variant kAllVariants[] = {Variant::kFlash,        Variant::kAmla,
                                    Variant::kFlashWgmma,   Variant::kAmlaWgmma,
                                    Variant::kFlashWgmmaPv, Variant::kAmlaWgmmaPv};

const char* variant_name(Variant variant) {
  switch (variant) {
    case Variant::kFlash: return "flash";
    case Variant::kAmla: return "amla";
    case Variant::kFlashWgmma: return "flash_wgmma";
    case Variant::kAmlaWgmma: return "amla_wgmma";
    case Variant::kFlashWgmmaPv: return "flash_wgmma_pv";
    case Variant::kAmlaWgmmaPv: return "amla_wgmma_pv";
  }
  return "unknown";
}

// Readable parameter names in test output instead of a byte dump.
void PrintTo(const GpuCase& c, std::ostream* os) { *os << c.name; }

class AmlaCudaDecode : public testing::TestWithParam<GpuCase> {
 protected:
  void SetUp() override {
    if (!device_available()) {
      GTEST_SKIP() << "no CUDA device (cudaGetDeviceCount failed or returned 0)";
    }
  }
};

// Runs one case on the GPU with every kernel variant and compares out and lse with the
// float64 reference (computed once: it dominates the test's time).
void run_case(const GpuCase& c, std::uint64_t seed) {
  SeededRandom random(seed);
  CaseSpec spec;
  spec.seqlens_k = c.seqlens;
  spec.seqlen_q = c.seqlen_q;
  spec.heads_q = c.heads_q;
  spec.causal = c.causal;
  const TestCase test = make_test_case(spec, random);
  const DecodeInputs inputs = test.inputs();

  std::vector<double> want_out(out_elements(test.shape));
  std::vector<double> want_lse(lse_elements(test.shape));
  reference_decode(inputs, want_out, want_lse);

  for (Variant variant : kAllVariants) {
    SCOPED_TRACE(variant_name(variant));
    std::vector<float> out(want_out.size());
    std::vector<float> lse(want_lse.size());
    poison(out);
    poison(lse);
    const Status status = decode_on_device(inputs, DecodeOutputs{out, lse}, variant);
    ASSERT_TRUE(status.ok()) << status.error().to_string();
    // bf16 P and fp32 accumulation over up to tens of thousands of keys: the harness's
    // default (FlashMLA-style) tolerances for out; lse is a log, so tighter.
    const Comparison out_cmp = compare(out, want_out, Tolerance{});
    EXPECT_TRUE(out_cmp.passed) << "out: " << out_cmp.describe();
    const Comparison lse_cmp = compare(lse, want_lse, Tolerance{1e-3, 1e-4, 1e-6});
    EXPECT_TRUE(lse_cmp.passed) << "lse: " << lse_cmp.describe();
  }
}

TEST_P(AmlaCudaDecode, MatchesReference) {
  const GpuCase& c = GetParam();
  run_case(c, 0x5eed0000U + c.seqlens.size() * 131U + static_cast<unsigned>(c.seqlen_q));
}

const GpuCase kCases[] = {
    {"one_key", {1}, 1, 128, true},
    {"one_page", {64}, 1, 128, true},
    {"page_tails", {63, 65, 127, 129}, 1, 128, true},
    {"mtp_causal", {1, 2, 64, 65, 200}, 2, 128, true},
    {"mtp_not_causal", {2, 65, 200}, 2, 128, false},
    {"zero_length", {0, 100, 0}, 2, 128, true},
    {"few_heads", {300, 77}, 1, 16, true},
    {"odd_rows", {300, 77}, 2, 40, true},
    {"long_split", {20000}, 1, 128, true},
    {"long_split_mtp", {9000, 1, 4097}, 2, 128, true},
    {"variable_batch", {1500, 33, 4096, 700, 64, 2500, 128, 999}, 2, 128, true},
};

std::string case_name(const testing::TestParamInfo<GpuCase>& param_info) {
  return param_info.param.name;
}

INSTANTIATE_TEST_SUITE_P(Shapes, AmlaCudaDecode, testing::ValuesIn(kCases), case_name);

// A large softmax scale spreads the scores over tens of units in the log2 domain, so the
// running max moves by many integers and the exponent-add rescale (and its flush to zero of
// tiny values) runs often. Both kernels must still match the reference.
TEST(AmlaCudaRescale, LargeScoresRescaleOften) {
  if (!device_available()) {
    GTEST_SKIP() << "no CUDA device";
  }
  SeededRandom random(77);
  CaseSpec spec;
  spec.seqlens_k = {2048, 1000};
  spec.seqlen_q = 2;
  spec.softmax_scale = 0.5f;  // large scores: the running max moves by many integers
  TestCase test = make_test_case(spec, random);
  const DecodeInputs inputs = test.inputs();
  std::vector<double> want_out(out_elements(test.shape));
  std::vector<double> want_lse(lse_elements(test.shape));
  reference_decode(inputs, want_out, want_lse);
  for (Variant variant : kAllVariants) {
    SCOPED_TRACE(variant_name(variant));
    std::vector<float> out(want_out.size());
    std::vector<float> lse(want_lse.size());
    poison(out);
    poison(lse);
    ASSERT_TRUE(decode_on_device(inputs, DecodeOutputs{out, lse}, variant).ok());
    const Comparison out_cmp = compare(out, want_out, Tolerance{});
    EXPECT_TRUE(out_cmp.passed) << out_cmp.describe();
    const Comparison lse_cmp = compare(lse, want_lse, Tolerance{1e-3, 1e-4, 1e-6});
    EXPECT_TRUE(lse_cmp.passed) << lse_cmp.describe();
  }
}

TEST(AmlaCudaDecodeApi, RejectsUnsupportedShapes) {
  if (!device_available()) {
    GTEST_SKIP() << "no CUDA device";
  }
  SeededRandom random(5);
  CaseSpec spec;
  spec.seqlens_k = {64};
  spec.head_dim = 192;
  spec.dv = 128;
  const TestCase test = make_test_case(spec, random);
  std::vector<float> out(out_elements(test.shape));
  std::vector<float> lse(lse_elements(test.shape));
  const Status status = decode_on_device(test.inputs(), DecodeOutputs{out, lse}, Variant::kAmla);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code, ErrorCode::kUnsupported);
}

}  // namespace
}  // namespace omni::amla::cuda
