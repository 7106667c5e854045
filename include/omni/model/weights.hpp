// Where weights come from (WeightSource: a memory-mapped HF directory, a memory-mapped GGUF
// file, or tensors held in memory) and the model's weights bound by role (ModelWeights), so
// the reference and the engine never look tensors up by name.
//
//   HF directory:  config.json, model.safetensors.index.json -> shards (or *.safetensors),
//                  tokenizer.json, tokenizer_config.json
//   GGUF file:     deepseek2 metadata + tokenizer.ggml.* + tensors as llama.cpp names them
//                  (attn_k_b / attn_v_b split from kv_b_proj, experts stacked per layer)
//
// Threading: immutable after load; any number of threads may read.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "omni/common/result.hpp"
#include "omni/model/config.hpp"
#include "omni/model/formats.hpp"
#include "omni/model/tensor.hpp"

namespace omni::model {

class WeightSource {
 public:
  virtual ~WeightSource() = default;
  virtual const TensorView* find(std::string_view name) const = 0;
  virtual std::vector<std::string> names() const = 0;
  // "dir/ (3 safetensors shards)" or "model.gguf", for messages.
  virtual std::string describe() const = 0;
  // GGUF sources expose their metadata; others return nullptr.
  virtual const GgufHeader* gguf() const { return nullptr; }
};

// Safetensors files of an HF directory, each memory-mapped read-only. Errors name the file.
Result<std::unique_ptr<WeightSource>> open_safetensors_dir(const std::filesystem::path& dir);
Result<std::unique_ptr<WeightSource>> open_gguf(const std::filesystem::path& file);

// Tensors that own their bytes (make-model, tests).
class MemorySource final : public WeightSource {
 public:
  // Adds a tensor (bytes copied). The shape's element count must match the bytes.
  void add(std::string name, DType dtype, std::vector<std::int64_t> shape,
           std::span<const std::byte> bytes);
  const TensorView* find(std::string_view name) const override;
  std::vector<std::string> names() const override;
  std::string describe() const override { return "in-memory weights"; }

 private:
  struct Owned {
    TensorView view;
    std::vector<std::byte> bytes;
  };
  std::vector<std::unique_ptr<Owned>> tensors_;
};

struct MlpWeights {
  Matrix gate, up, down;
  bool empty() const noexcept { return gate.empty(); }
};

struct MoeWeights {
  Matrix router;            // [n_routed_experts][hidden]
  std::vector<float> bias;  // e_score_correction_bias (noaux_tc), else empty
  std::vector<MlpWeights> experts;
  MlpWeights shared;  // n_shared_experts * moe_intermediate_size wide; empty without
};

struct AttentionWeights {
  Matrix q;  // no q LoRA: [heads * qk_head_dim][hidden]
  Matrix q_a;
  std::vector<float> q_a_norm;
  Matrix q_b;   // [heads * qk_head_dim][q_lora_rank]
  Matrix kv_a;  // [kv_lora_rank + rope][hidden]
  std::vector<float> kv_a_norm;
  // Per head h: W_UK[h] [nope][kv_lora] and W_UV[h] [v][kv_lora] as the source stores them:
  // HF's kv_b_proj rows (uk_transposed = false: uk[h] is [nope][kv_lora]) or GGUF's attn_k_b
  // (uk_transposed = true: uk[h] is [kv_lora][nope]).
  std::vector<Matrix> uk, uv;
  bool uk_transposed = false;
  Matrix o;  // [hidden][heads * v]
};

struct LayerWeights {
  std::vector<float> attn_norm, ffn_norm;
  AttentionWeights attn;
  bool is_moe = false;
  MlpWeights dense;
  MoeWeights moe;
};

struct MtpWeights {
  std::vector<float> enorm, hnorm, head_norm;
  Matrix eh_proj;  // [hidden][2 * hidden]: input [enorm(embed); hnorm(hidden)]
  Matrix embed, head;
  LayerWeights layer;
};

struct ModelWeights {
  Matrix embed;  // [vocab][hidden]
  std::vector<LayerWeights> layers;
  std::vector<float> final_norm;
  Matrix lm_head;  // [vocab][hidden]
  std::optional<MtpWeights> mtp;
};

// Binds every tensor the config needs, checking shapes and dtypes. A missing tensor, a wrong
// shape or a tensor of an unsupported dtype is an error naming the file and the tensor. With
// `check_finite`, every weight is scanned once for NaN/inf (an error names the tensor).
Result<ModelWeights> bind_weights(const ModelConfig& config, const WeightSource& source,
                                  bool check_finite);

// A loaded model: its config, its weights' source (kept alive: the weights point into it)
// and where its tokenizer files are ("" when the source has none on disk).
struct LoadedModel {
  ModelConfig config;
  std::unique_ptr<WeightSource> source;
  ModelWeights weights;
  std::string name;            // directory or file stem
  std::string tokenizer_path;  // a tokenizer.json, or empty
};

// `path`: an HF directory or a .gguf file.
Result<std::unique_ptr<LoadedModel>> load_model(const std::filesystem::path& path,
                                                bool check_finite = true);
// The config a GGUF file's deepseek2 metadata describes.
Result<ModelConfig> config_from_gguf(const GgufHeader& header, std::string_view file);

}  // namespace omni::model
