// Split-KV planning on the host: spreads the 64-key blocks of all requests evenly over a
// persistent grid, the way FlashMLA's get_mla_metadata does, so that a batch of long and short
// requests keeps every multiprocessor busy until the end.
#include <algorithm>
#include <string>

#include "omni/amla/cuda.hpp"

namespace omni::amla::cuda {
namespace {

constexpr int kBlockKeys = 64;
constexpr int kTileRows = 64;
// What starting a work item costs (loading its Q tile, writing its output), in blocks.
constexpr int kItemOverheadBlocks = 2;

int blocks_of(std::int32_t seqlen_k) { return (seqlen_k + kBlockKeys - 1) / kBlockKeys; }

// Gives every request cut into several items its run of workspace slots.
void assign_partials(SplitPlan& plan) {
  std::vector<int> items_per_batch(plan.batch_splits.size(), 0);
  for (const WorkItem& item : plan.items) {
    ++items_per_batch[static_cast<std::size_t>(item.batch)];
  }
  int next_slot = 0;
  for (std::size_t b = 0; b < items_per_batch.size(); ++b) {
    plan.batch_splits[b].num_splits = items_per_batch[b];
    plan.batch_splits[b].first_partial = next_slot;
    if (items_per_batch[b] > 1) {
      next_slot += items_per_batch[b];
    }
  }
  std::vector<int> seen(items_per_batch.size(), 0);
  for (WorkItem& item : plan.items) {
    const auto b = static_cast<std::size_t>(item.batch);
    item.partial = items_per_batch[b] > 1 ? plan.batch_splits[b].first_partial + seen[b] : -1;
    ++seen[b];
  }
  plan.num_partials = next_slot;
}

}  // namespace

Result<SplitPlan> plan_splits(const DecodeShape& shape, const std::vector<std::int32_t>& seqlens_k,
                              int num_sms) {
  if (shape.batch < 1 || static_cast<std::size_t>(shape.batch) != seqlens_k.size()) {
    return make_error(ErrorCode::kInvalidArgument, "plan_splits: need one seqlen per request");
  }
  if (num_sms < 1 || shape.seqlen_q < 1 || shape.heads_q < 1) {
    return make_error(ErrorCode::kInvalidArgument, "plan_splits: empty shape or no SMs");
  }
  SplitPlan plan;
  plan.head_tiles = (shape.seqlen_q * shape.heads_q + kTileRows - 1) / kTileRows;
  plan.num_parts = std::max(1, num_sms / plan.head_tiles);
  plan.batch_splits.assign(static_cast<std::size_t>(shape.batch), BatchSplit{});

  // Each request costs its blocks plus one item's overhead; each part may cut one request,
  // which adds one more item.
  long long total_cost = static_cast<long long>(plan.num_parts) * kItemOverheadBlocks;
  for (std::int32_t seqlen : seqlens_k) {
    if (seqlen < 0) {
      return make_error(ErrorCode::kInvalidArgument, "plan_splits: negative seqlen_k");
    }
    total_cost += blocks_of(seqlen) + kItemOverheadBlocks;
  }
  const long long per_part =
      std::max<long long>(1, (total_cost + plan.num_parts - 1) / plan.num_parts);

  int part = 0;
  long long budget = per_part;
  plan.part_offsets.assign(static_cast<std::size_t>(plan.num_parts) + 1, 0);
  for (int b = 0; b < shape.batch; ++b) {
    const int blocks = blocks_of(seqlens_k[static_cast<std::size_t>(b)]);
    int start = 0;
    do {
      // Take what fits in this part's budget, at least one block (zero for an empty request);
      // the last part takes whatever is left.
      const bool last_part = part + 1 == plan.num_parts;
      const long long room =
          last_part ? blocks - start : std::max<long long>(1, budget - kItemOverheadBlocks);
      const int take = static_cast<int>(std::min<long long>(blocks - start, room));
      plan.items.push_back(WorkItem{b, start, start + take, -1});
      ++plan.part_offsets[static_cast<std::size_t>(part) + 1];
      budget -= take + kItemOverheadBlocks;
      start += take;
      if (budget <= 0 && part + 1 < plan.num_parts) {
        ++part;
        budget = per_part;
      }
    } while (start < blocks);
  }
  for (std::size_t p = 1; p < plan.part_offsets.size(); ++p) {
    plan.part_offsets[p] += plan.part_offsets[p - 1];
  }
  assign_partials(plan);
  return plan;
}

std::size_t workspace_bytes(const DecodeShape& shape, const SplitPlan& plan) {
  const auto rows =
      static_cast<std::size_t>(shape.seqlen_q) * static_cast<std::size_t>(shape.heads_q);
  const auto slots = static_cast<std::size_t>(plan.num_partials);
  const std::size_t out_bytes = slots * rows * static_cast<std::size_t>(shape.dv) * sizeof(float);
  const std::size_t lse_bytes = slots * rows * sizeof(float);
  return out_bytes + lse_bytes;
}

Result<Variant> parse_variant(std::string_view name) {
  if (name == "flash") {
    return Variant::kFlash;
  }
  if (name == "amla") {
    return Variant::kAmla;
  }
  if (name == "flash-wgmma") {
    return Variant::kFlashWgmma;
  }
  if (name == "amla-wgmma") {
    return Variant::kAmlaWgmma;
  }
  if (name == "flash-wgmma-pv") {
    return Variant::kFlashWgmmaPv;
  }
  if (name == "amla-wgmma-pv") {
    return Variant::kAmlaWgmmaPv;
  }
  return make_error(
      ErrorCode::kInvalidArgument,
      "unknown CUDA kernel '" + std::string(name) +
          "' (flash | amla | flash-wgmma | amla-wgmma | flash-wgmma-pv | amla-wgmma-pv)");
}

Status check_supported(const DecodeShape& shape) {
  if (shape.head_dim != 576 || shape.dv != 512 || shape.page_size != 64) {
    return make_error(ErrorCode::kUnsupported,
                      "CUDA MLA decode supports head_dim 576, dv 512, page_size 64 only");
  }
  if (shape.batch < 1 || shape.seqlen_q < 1 || shape.heads_q < 1 || shape.num_pages < 1 ||
      shape.max_pages_per_seq < 0) {
    return make_error(ErrorCode::kInvalidArgument, "CUDA MLA decode: empty or negative shape");
  }
  return ok_status();
}

}  // namespace omni::amla::cuda
