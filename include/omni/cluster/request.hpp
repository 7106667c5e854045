// What the cluster simulator serves: a request as a trace describes it (arrival, lengths and,
// for Mooncake-style traces, the ids of its 512-token prompt blocks), read lazily from a source
// so that memory follows in-flight work, not the trace length.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "omni/common/result.hpp"

namespace omni::cluster {

inline constexpr std::uint32_t kTraceBlockTokens = 512;  // Mooncake's hash-id granularity

struct ClusterRequest {
  std::uint64_t id = 0;
  double arrival_s = 0.0;
  std::uint32_t prompt_tokens = 0;
  std::uint32_t output_tokens = 1;
  // One id per 512-token block of the prompt; equal leading ids mean a shared prefix. Empty when
  // the trace has no prefix information (every prompt is then unique).
  std::vector<std::uint64_t> hash_ids;
};

// Requests in arrival order. next() returns nullopt at the end.
class RequestSource {
 public:
  virtual ~RequestSource() = default;
  virtual std::optional<ClusterRequest> next() = 0;
};

// A source over requests held in memory (tests, small traces).
class VectorSource final : public RequestSource {
 public:
  explicit VectorSource(std::vector<ClusterRequest> requests) : requests_(std::move(requests)) {}
  std::optional<ClusterRequest> next() override {
    if (next_ >= requests_.size()) return std::nullopt;
    return requests_[next_++];
  }

 private:
  std::vector<ClusterRequest> requests_;
  std::size_t next_ = 0;
};

// The engine-level block hashes of a prompt: one per full engine block, chained like vLLM's
// (each depends on every block before it), so that prompts share exactly the blocks their
// trace ids share. trace_block_tokens must be a multiple of block_size. Without hash ids the
// hashes are unique to the request.
Result<std::vector<std::uint64_t>> engine_block_hashes(const ClusterRequest& request,
                                                       std::uint32_t block_size);

}  // namespace omni::cluster
