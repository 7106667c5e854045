// The incremental hash chain and vLLM's per-block extra keys (spec §1.3, §1.4).
#include <cassert>

#include "omni/kvcache/block_hash.hpp"

namespace omni::kvcache {

ExtraKeys block_extra_keys(const RequestExtraInputs& inputs, std::size_t block_start,
                           std::size_t block_size) {
  ExtraKeys keys;
  if (inputs.empty()) return keys;
  const std::size_t block_end = block_start + block_size;
  if (inputs.lora_name) keys.items.emplace_back(*inputs.lora_name);
  for (const MmItem& item : inputs.mm_items) {
    const bool overlaps = item.offset < block_end && block_start < item.offset + item.length;
    if (!overlaps) continue;
    // Relative to the block start; negative when the item began in an earlier block.
    const auto offset =
        static_cast<std::int64_t>(item.offset) - static_cast<std::int64_t>(block_start);
    keys.items.emplace_back(MmExtraKey{item.identifier, offset});
  }
  if (inputs.cache_salt && block_start == 0) keys.items.emplace_back(*inputs.cache_salt);
  return keys;
}

BlockHasher::BlockHasher(HashAlgo algo, std::size_t block_size, BlockHash root)
    : algo_(algo), block_size_(block_size), root_(root) {
  assert(block_size_ > 0);
  assert(!root_.empty());
}

void BlockHasher::extend(std::span<const std::uint32_t> tokens, const RequestExtraInputs& extra,
                         std::vector<BlockHash>& hashes) {
  const std::size_t full_blocks = tokens.size() / block_size_;
  const ExtraKeys no_keys;
  ExtraKeys keys;
  for (std::size_t i = hashes.size(); i < full_blocks; ++i) {
    const std::size_t start = i * block_size_;
    const BlockHash& parent = i == 0 ? root_ : hashes[i - 1];
    if (!extra.empty()) keys = block_extra_keys(extra, start, block_size_);
    const ExtraKeys& block_keys = extra.empty() ? no_keys : keys;
    // hash_block returns before push_back can reallocate `hashes` (which `parent` points into).
    BlockHash hash =
        hash_block(algo_, parent, tokens.subspan(start, block_size_), block_keys, scratch_);
    hashes.push_back(hash);
  }
}

std::vector<BlockHash> BlockHasher::hash_all(std::span<const std::uint32_t> tokens,
                                             const RequestExtraInputs& extra) {
  std::vector<BlockHash> hashes;
  hashes.reserve(tokens.size() / block_size_);
  extend(tokens, extra, hashes);
  return hashes;
}

}  // namespace omni::kvcache
