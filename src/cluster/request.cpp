#include "omni/cluster/request.hpp"

#include <string>

namespace omni::cluster {
namespace {

// splitmix64's finaliser: a cheap, well-mixed 64-bit hash step.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint64_t chain(std::uint64_t parent, std::uint64_t a, std::uint64_t b) {
  return mix(parent ^ mix(a ^ mix(b)));
}

}  // namespace

Result<std::vector<std::uint64_t>> engine_block_hashes(const ClusterRequest& request,
                                                       std::uint32_t block_size) {
  if (block_size == 0 || kTraceBlockTokens % block_size != 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "block size " + std::to_string(block_size) + " must divide " +
                          std::to_string(kTraceBlockTokens) + " (the trace's block tokens)");
  }
  const std::uint32_t full_blocks = request.prompt_tokens / block_size;
  const std::uint32_t per_trace_block = kTraceBlockTokens / block_size;
  std::vector<std::uint64_t> hashes;
  hashes.reserve(full_blocks);
  std::uint64_t parent = 0x6f6d6e69ULL;  // a fixed root, like vLLM's NONE_HASH
  for (std::uint32_t j = 0; j < full_blocks; ++j) {
    const std::uint32_t trace_block = j / per_trace_block;
    const std::uint64_t sub = j % per_trace_block;
    // Past the listed ids (or without any), the block is private to the request.
    const bool shared = trace_block < request.hash_ids.size();
    const std::uint64_t owner = shared ? request.hash_ids[trace_block] : ~request.id;
    const std::uint64_t salt = shared ? sub : (std::uint64_t{1} << 63) | j;
    parent = chain(parent, owner, salt);
    hashes.push_back(parent);
  }
  return hashes;
}

}  // namespace omni::cluster
