// The element-wise operators of a forward pass, each fused and unfused. The fused form is one
// pass over the data (or the fewest passes the maths allows); the unfused form is the plain
// sequence of separate operators a framework would run, kept for the A/B benchmark and as the
// test's second opinion. Both are checked against the float64 reference.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "omni/model/config.hpp"

namespace omni::model::ops {

// h += delta (when delta != nullptr); out = rmsnorm(h) * weight. Rows of width n.
void add_rmsnorm(float* h, const float* delta, const float* weight, int n, float eps, float* out);
void add_rmsnorm_unfused(float* h, const float* delta, const float* weight, int n, float eps,
                         float* out);
void rmsnorm(const float* x, const float* weight, int n, float eps, float* out);

// cos/sin per (position, pair), computed in float64 once (YaRN frequencies, attention factor).
class RopeTable {
 public:
  explicit RopeTable(const ModelConfig& c);
  // Grows the table to cover positions < end (amortised: doubles).
  void reserve(int end);
  const float* cos(int pos) const { return cos_.data() + static_cast<std::size_t>(pos) * half_; }
  const float* sin(int pos) const { return sin_.data() + static_cast<std::size_t>(pos) * half_; }
  int half() const { return static_cast<int>(half_); }
  bool interleave() const { return interleave_; }

 private:
  std::vector<double> inv_freq_;
  double factor_;
  std::size_t half_;
  bool interleave_;
  int size_ = 0;
  std::vector<float> cos_, sin_;
};

// Rotates one rope vector in place (the checkpoint's pair layout: (2i, 2i+1) when
// interleaved, (i, i + d/2) otherwise).
void rope(const RopeTable& t, int pos, float* x);

// The latent cache row of one token from kv_a's output [kv_lora + rope]: rmsnorm of the latent
// part (kv_a_layernorm), RoPE of the key part, written to `dst` (bf16 or f32).
void latent_row(const RopeTable& t, const float* kv, const float* norm, int lora, float eps,
                int pos, std::uint16_t* dst_bf16, float* dst_f32);
void latent_row_unfused(const RopeTable& t, const float* kv, const float* norm, int lora, float eps,
                        int pos, std::uint16_t* dst_bf16, float* dst_f32, float* scratch);

// The MoE router on one token's logits: expert ids and weights (top_k of each), as
// transformers' DeepseekV3TopkRouter / DeepseekV2MoEGate compute them.
struct RouterScratch {
  std::vector<float> scores, choice, group;
  std::vector<int> order;
};
void route(const ModelConfig& c, const float* logits, const float* bias, int* experts,
           float* weights);
void route_unfused(const ModelConfig& c, const float* logits, const float* bias, int* experts,
                   float* weights, RouterScratch& scratch);

}  // namespace omni::model::ops
