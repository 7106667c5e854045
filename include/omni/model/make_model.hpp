// Random-weight checkpoints with the real architecture, so tests and benchmarks never need a
// download: `omni-serve make-model --arch deepseek_v3 --preset tiny --seed 1 OUT` writes
//
//   OUT/config.json  OUT/model.safetensors (+ OUT/tokenizer.json, tokenizer_config.json)
//   OUT/model-<dtype>.gguf for each GGUF dtype asked for (deepseek2, as llama.cpp converts)
//
// Weights are drawn once in f32 from a seeded generator (splitmix64 + Box-Muller, identical on
// every platform) and then written in each dtype. Scales keep activations O(1); the router's
// weights are scaled so that its logits spread by about +-1.5 and the correction bias is drawn
// in [0, 0.2), so different tokens pick different experts (non-degenerate routing).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "omni/common/result.hpp"
#include "omni/model/config.hpp"
#include "omni/model/weights.hpp"

namespace omni::model {

// "micro" (tests: vocab 512), "tiny", "small" (the real DeepSeek-V3 vocabulary of 129,280).
Result<ModelConfig> preset_config(Arch arch, std::string_view preset);

struct MasterTensor {
  std::vector<std::int64_t> shape;
  std::vector<float> values;
};
// HF-named f32 tensors for `config` (MTP layer included when num_nextn_predict_layers > 0).
std::map<std::string, MasterTensor> random_weights(const ModelConfig& config, std::uint64_t seed);

// The same tensors as a MemorySource in `dtype` (f32, bf16, f16 or f8_e4m3: the FP8 variant
// quantizes every projection matrix with 128x128 block scales and keeps embeddings, norms and
// the router in bf16, as DeepSeek's FP8 checkpoints do).
Result<std::unique_ptr<MemorySource>> to_source(const std::map<std::string, MasterTensor>& master,
                                                DType dtype);

struct TokenizerFiles {
  std::string tokenizer_json;         // contents
  std::string tokenizer_config_json;  // contents ("" when absent)
};

// Writes config.json, model.safetensors and the tokenizer files (when given) into `dir`.
Status write_hf_checkpoint(const std::filesystem::path& dir, const ModelConfig& config,
                           const std::map<std::string, MasterTensor>& master, DType dtype,
                           const TokenizerFiles* tokenizer);
// Writes a deepseek2 GGUF (f32, f16, bf16 or q8_0 projections; norms, router and bias f32),
// with tokenizer.ggml.* from `tokenizer` when given. The MTP layer is not written (llama.cpp's
// converter skips it too).
Status write_gguf_checkpoint(const std::filesystem::path& file, const ModelConfig& config,
                             const std::map<std::string, MasterTensor>& master, DType dtype,
                             const TokenizerFiles* tokenizer);

}  // namespace omni::model
