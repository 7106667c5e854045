// Generated tokens: a deterministic function of (--seed, request id, position), so a run can be
// replayed and two instances agree. The engine model only counts tokens; their values live here.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "sim/text_codec.hpp"

namespace omni::sim {

class TokenGenerator {
 public:
  TokenGenerator(std::uint64_t seed, std::string_view request_id, const TextCodec& codec);
  // Token at output position i (0-based). Same arguments, same token, on every platform.
  std::uint32_t at(std::uint32_t i) const noexcept;
  // Tokens [from, to).
  std::vector<std::uint32_t> range(std::uint32_t from, std::uint32_t to) const;

 private:
  std::uint64_t key_;
  const TextCodec& codec_;
};

}  // namespace omni::sim
