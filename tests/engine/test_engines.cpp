#include "test_engines.hpp"

#include <cstdlib>

namespace omni::engine::testing {

CostModel deepseek_h800(ParallelLayout layout, MtpConfig mtp) {
  auto model = builtin_model_profile("deepseek-v3");
  auto hw = builtin_hardware_profile("h800");
  if (!model || !hw) std::abort();
  return CostModel(model.value(), hw.value(), layout, mtp);
}

EngineConfig small_config(std::uint64_t blocks, std::uint32_t block_size) {
  EngineConfig c;
  c.block_size = block_size;
  c.num_gpu_blocks = blocks;
  c.max_num_seqs = 8;
  c.max_num_batched_tokens = 256;
  c.max_model_len = 4096;
  return c;
}

Engine small_engine(EngineConfig config, MtpConfig mtp, std::uint64_t seed) {
  return Engine(config, deepseek_h800({1, 8, true}, mtp), seed);
}

SeqSpec request(SeqId id, std::uint32_t prompt, std::uint32_t max_output, std::uint64_t hash_base,
                std::uint32_t block_size) {
  SeqSpec s;
  s.id = id;
  s.prompt_tokens = prompt;
  s.max_output_tokens = max_output;
  if (hash_base != 0) {
    for (std::uint32_t b = 0; b < prompt / block_size; ++b) s.block_hashes.push_back(hash_base + b);
  }
  return s;
}

std::vector<SeqOutput> run_to_completion(Engine& engine, std::uint32_t max_steps) {
  std::vector<SeqOutput> all;
  for (std::uint32_t k = 0; k < max_steps && engine.has_work(); ++k) {
    const StepPlan plan = engine.schedule();
    StepOutputs out = engine.complete(plan);
    all.insert(all.end(), out.outputs.begin(), out.outputs.end());
  }
  return all;
}

}  // namespace omni::engine::testing
