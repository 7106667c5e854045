// Validation, ISA choice and planning of the CPU decoder.
#include <gtest/gtest.h>

#include <vector>

#include "omni/amla/cpu.hpp"
#include "omni/amla/harness.hpp"
#include "omni/amla/reference.hpp"

namespace omni::amla {
namespace {

TEST(AmlaIsa, ScalarIsAlwaysSupportedAndChosenOnRequest) {
  const auto isas = supported_isas();
  ASSERT_FALSE(isas.empty());
  EXPECT_EQ(isas.front(), Isa::kScalar);
  EXPECT_EQ(choose_isa(std::nullopt).value(), isas.back());
  EXPECT_EQ(choose_isa("scalar").value(), Isa::kScalar);
  EXPECT_EQ(choose_isa("sse9").error().code, ErrorCode::kInvalidArgument);
  for (const Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
    const auto chosen = choose_isa(isa_name(isa));
    EXPECT_EQ(chosen.ok(), isa_supported(isa));
    if (!chosen.ok()) {
      EXPECT_EQ(chosen.error().code, ErrorCode::kUnsupported);
    }
  }
  EXPECT_EQ(parse_kernel("amla"), KernelKind::kAmla);
  EXPECT_EQ(parse_kernel("gemm"), std::nullopt);
}

struct Fixture {
  TestCase tc;
  std::vector<float> out, lse;
  Fixture() {
    SeededRandom random(1);
    CaseSpec spec;
    spec.seqlens_k = {100, 10};
    spec.heads_q = 4;
    tc = make_test_case(spec, random);
    out.resize(out_elements(tc.shape));
    lse.resize(lse_elements(tc.shape));
  }
  Status run(const DecodeInputs& in) {
    CpuDecoder decoder(DecoderOptions{});
    InlineExecutor executor;
    return decoder.run(in, DecodeOutputs{out, lse}, executor);
  }
};

TEST(AmlaDecoder, RejectsInconsistentProblems) {
  Fixture f;
  EXPECT_TRUE(f.run(f.tc.inputs()).ok());
  DecodeInputs in = f.tc.inputs();
  in.shape.dv = 100;
  EXPECT_EQ(f.run(in).error().code, ErrorCode::kInvalidArgument);
  in = f.tc.inputs();
  in.q = in.q.subspan(1);
  EXPECT_EQ(f.run(in).error().code, ErrorCode::kInvalidArgument);
  std::vector<std::int32_t> lens{100, 1000};  // longer than the block table allows
  in = f.tc.inputs();
  in.seqlens_k = lens;
  EXPECT_EQ(f.run(in).error().code, ErrorCode::kInvalidArgument);
  std::vector<std::int32_t> table = f.tc.block_table;
  table[0] = f.tc.shape.num_pages;  // a page that does not exist
  in = f.tc.inputs();
  in.block_table = table;
  EXPECT_EQ(f.run(in).error().code, ErrorCode::kInvalidArgument);
  lens = {-1, 10};
  in = f.tc.inputs();
  in.seqlens_k = lens;
  EXPECT_EQ(f.run(in).error().code, ErrorCode::kInvalidArgument);
}

TEST(AmlaDecoder, SplitsLongSequencesIntoItems) {
  Fixture f;
  DecoderOptions opts;
  opts.fixed_split_keys = 64;
  CpuDecoder decoder(opts);
  InlineExecutor executor;
  ASSERT_TRUE(decoder.run(f.tc.inputs(), DecodeOutputs{f.out, f.lse}, executor).ok());
  EXPECT_EQ(decoder.last_items(), 2 + 1);  // 100 keys -> 2 ranges, 10 keys -> 1
  opts.fixed_split_keys = 0;
  CpuDecoder automatic(opts);
  ASSERT_TRUE(automatic.run(f.tc.inputs(), DecodeOutputs{f.out, f.lse}, executor).ok());
  EXPECT_EQ(automatic.last_items(), 2);  // 110 keys in all: under min_split_keys, no split
}

}  // namespace
}  // namespace omni::amla
