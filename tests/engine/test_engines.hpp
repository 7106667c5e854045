// Helpers for the engine tests: small engines on the built-in profiles, request builders and a
// driver loop.
#pragma once

#include <cstdint>
#include <vector>

#include "omni/engine/engine.hpp"

namespace omni::engine::testing {

CostModel deepseek_h800(ParallelLayout layout = {1, 8, true}, MtpConfig mtp = {});
EngineConfig small_config(std::uint64_t blocks, std::uint32_t block_size = 16);
Engine small_engine(EngineConfig config, MtpConfig mtp = {}, std::uint64_t seed = 1);

// A request whose prompt has `prompt` tokens and full-block hashes base, base+1, ...
SeqSpec request(SeqId id, std::uint32_t prompt, std::uint32_t max_output,
                std::uint64_t hash_base = 0, std::uint32_t block_size = 16);

// Steps the engine until it has no work (or `max_steps`); returns every output in order.
std::vector<SeqOutput> run_to_completion(Engine& engine, std::uint32_t max_steps = 100000);

}  // namespace omni::engine::testing
