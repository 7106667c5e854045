// The split-KV planner: every block of every request is covered exactly once, in order, by
// items of consecutive parts; requests cut into several items get distinct workspace slots.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "omni/amla/cuda.hpp"

namespace omni::amla::cuda {
namespace {

DecodeShape shape_for(int batch, int seqlen_q, int heads) {
  DecodeShape shape;
  shape.batch = batch;
  shape.seqlen_q = seqlen_q;
  shape.heads_q = heads;
  return shape;
}

int blocks_of(int seqlen) { return (seqlen + 63) / 64; }

// Checks the invariants the kernel and the combine kernel rely on.
void expect_valid(const SplitPlan& plan, const std::vector<std::int32_t>& seqlens) {
  ASSERT_EQ(plan.part_offsets.size(), static_cast<std::size_t>(plan.num_parts) + 1);
  EXPECT_EQ(plan.part_offsets.front(), 0);
  EXPECT_EQ(plan.part_offsets.back(), static_cast<int>(plan.items.size()));
  for (std::size_t p = 1; p < plan.part_offsets.size(); ++p) {
    EXPECT_LE(plan.part_offsets[p - 1], plan.part_offsets[p]);
  }
  std::vector<int> covered(seqlens.size(), 0);
  std::vector<int> items_of(seqlens.size(), 0);
  std::vector<int> slot_uses(static_cast<std::size_t>(plan.num_partials), 0);
  for (const WorkItem& item : plan.items) {
    ASSERT_GE(item.batch, 0);
    ASSERT_LT(item.batch, static_cast<int>(seqlens.size()));
    const auto b = static_cast<std::size_t>(item.batch);
    EXPECT_EQ(item.block_begin, covered[b]) << "items of a request must be contiguous";
    EXPECT_LE(item.block_begin, item.block_end);
    covered[b] = item.block_end;
    ++items_of[b];
    if (item.partial >= 0) {
      ASSERT_LT(item.partial, plan.num_partials);
      ++slot_uses[static_cast<std::size_t>(item.partial)];
    }
  }
  for (std::size_t b = 0; b < seqlens.size(); ++b) {
    EXPECT_EQ(covered[b], blocks_of(seqlens[b])) << "request " << b;
    EXPECT_GE(items_of[b], 1) << "even an empty request needs an item to write its output";
    EXPECT_EQ(plan.batch_splits[b].num_splits, items_of[b]);
  }
  for (int uses : slot_uses) {
    EXPECT_EQ(uses, 1);
  }
}

TEST(AmlaCudaPlan, BalancedBatchUsesOneItemPerRequestWhenItFits) {
  const std::vector<std::int32_t> seqlens(128, 8192);
  auto plan = plan_splits(shape_for(128, 2, 128), seqlens, 132);
  ASSERT_TRUE(plan.ok()) << plan.error().to_string();
  EXPECT_EQ(plan->head_tiles, 4);
  EXPECT_EQ(plan->num_parts, 33);
  expect_valid(*plan, seqlens);
  // 128 requests over 33 parts: ~4 per part, so most requests are cut at most once.
  EXPECT_LE(plan->items.size(), seqlens.size() + static_cast<std::size_t>(plan->num_parts));
}

TEST(AmlaCudaPlan, SingleLongRequestIsSplitOverAllParts) {
  const std::vector<std::int32_t> seqlens = {64 * 1000};
  auto plan = plan_splits(shape_for(1, 1, 128), seqlens, 132);
  ASSERT_TRUE(plan.ok());
  expect_valid(*plan, seqlens);
  EXPECT_EQ(plan->num_parts, 66);
  EXPECT_GE(plan->batch_splits[0].num_splits, 60);
  EXPECT_EQ(plan->num_partials, plan->batch_splits[0].num_splits);
  // Balanced: no part gets more than twice the mean share of blocks.
  const int mean = 1000 / plan->num_parts + 1;
  for (const WorkItem& item : plan->items) {
    EXPECT_LE(item.block_end - item.block_begin, 2 * mean);
  }
}

TEST(AmlaCudaPlan, ZeroLengthAndTinyRequestsGetItems) {
  const std::vector<std::int32_t> seqlens = {0, 1, 63, 64, 65, 0, 4096};
  auto plan = plan_splits(shape_for(7, 2, 16), seqlens, 8);
  ASSERT_TRUE(plan.ok());
  expect_valid(*plan, seqlens);
  EXPECT_EQ(plan->head_tiles, 1);
  EXPECT_EQ(plan->items.front().block_end, 0);
}

TEST(AmlaCudaPlan, RejectsBadInput) {
  EXPECT_FALSE(plan_splits(shape_for(2, 1, 128), {64}, 132).ok());
  EXPECT_FALSE(plan_splits(shape_for(1, 1, 128), {-1}, 132).ok());
  EXPECT_FALSE(plan_splits(shape_for(1, 1, 128), {64}, 0).ok());
}

TEST(AmlaCudaPlan, WorkspaceHoldsEveryPartial) {
  const std::vector<std::int32_t> seqlens = {64 * 500, 64 * 500};
  const DecodeShape shape = shape_for(2, 2, 128);
  auto plan = plan_splits(shape, seqlens, 132);
  ASSERT_TRUE(plan.ok());
  ASSERT_GT(plan->num_partials, 0);
  const std::size_t rows = 2 * 128;
  EXPECT_EQ(workspace_bytes(shape, *plan),
            static_cast<std::size_t>(plan->num_partials) * rows * (512 + 1) * sizeof(float));
}

TEST(AmlaCudaApi, ParsesKernelNamesAndChecksShapes) {
  EXPECT_EQ(parse_variant("amla").value(), Variant::kAmla);
  EXPECT_EQ(parse_variant("flash").value(), Variant::kFlash);
  EXPECT_EQ(parse_variant("amla-wgmma").value(), Variant::kAmlaWgmma);
  EXPECT_EQ(parse_variant("flash-wgmma").value(), Variant::kFlashWgmma);
  EXPECT_EQ(parse_variant("amla-wgmma-pv").value(), Variant::kAmlaWgmmaPv);
  EXPECT_EQ(parse_variant("flash-wgmma-pv").value(), Variant::kFlashWgmmaPv);
  EXPECT_FALSE(parse_variant("gemm").ok());
  DecodeShape shape = shape_for(1, 1, 128);
  shape.num_pages = 1;
  EXPECT_TRUE(check_supported(shape).ok());
  shape.head_dim = 128;
  EXPECT_FALSE(check_supported(shape).ok());
}

}  // namespace
}  // namespace omni::amla::cuda
