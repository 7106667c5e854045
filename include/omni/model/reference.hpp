// The float64 reference forward pass: plain loops written from transformers'
// modeling_deepseek_v3.py (and modeling_deepseek_v2.py's softmax router), not from the
// optimised engine. One sequence, positions 0..n-1, full causal attention in the expanded form
// (keys and values decompressed with kv_b for every head), no cache. Weights are read element
// by element through Matrix::at, so every dtype (FP8 with its block scales, q8_0) is
// dequantized exactly. The engine's tests compare against it.
#pragma once

#include <span>
#include <vector>

#include "omni/model/config.hpp"
#include "omni/model/weights.hpp"

namespace omni::model {

struct ReferenceOutput {
  int rows = 0;
  std::vector<double> logits;  // [rows][vocab]
  std::vector<double> hidden;  // [rows][hidden]: after the final norm (what MTP consumes)
};

ReferenceOutput reference_forward(const ModelConfig& config, const ModelWeights& weights,
                                  std::span<const int> tokens);

// The MTP module (vLLM's deepseek_mtp): row i takes the next token tokens_next[i] (the token
// at position i + 1), the main model's final hidden state at position i and position i; the
// embedding is zeroed at position 0; enorm, hnorm, eh_proj over [e; h], the MTP decoder layer
// (causal over the rows), shared_head.norm and head. Returns draft logits [rows][vocab] for the
// token at position i + 2.
std::vector<double> reference_mtp(const ModelConfig& config, const ModelWeights& weights,
                                  std::span<const int> tokens_next, std::span<const double> hidden);

// One decoder layer in place over h [n][hidden] at positions 0..n-1 (exposed for the tests of
// the fused operators' unfused paths).
void reference_layer(const ModelConfig& config, const LayerWeights& layer, std::vector<double>& h,
                     int n);

// The router for one token: (expert, weight) pairs, top_k of them, as transformers computes.
struct RoutedExpert {
  int expert = 0;
  double weight = 0.0;
};
std::vector<RoutedExpert> reference_route(const ModelConfig& config, const MoeWeights& moe,
                                          std::span<const double> x);

}  // namespace omni::model
