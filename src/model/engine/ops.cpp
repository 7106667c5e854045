#include "ops.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "omni/amla/bf16.hpp"
#include "omni/model/tensor.hpp"

namespace omni::model::ops {
namespace {
std::size_t uz(int v) { return static_cast<std::size_t>(v); }
}  // namespace

void add_rmsnorm(float* h, const float* delta, const float* weight, int n, float eps, float* out) {
  float ss = 0.0f;
  if (delta) {
    for (int i = 0; i < n; ++i) {
      h[i] += delta[i];
      ss += h[i] * h[i];
    }
  } else {
    for (int i = 0; i < n; ++i) ss += h[i] * h[i];
  }
  const float inv = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
  for (int i = 0; i < n; ++i) out[i] = weight[i] * (h[i] * inv);
}

void add_rmsnorm_unfused(float* h, const float* delta, const float* weight, int n, float eps,
                         float* out) {
  if (delta) {
    for (int i = 0; i < n; ++i) h[i] += delta[i];
  }
  rmsnorm(h, weight, n, eps, out);
}

void rmsnorm(const float* x, const float* weight, int n, float eps, float* out) {
  float ss = 0.0f;
  for (int i = 0; i < n; ++i) ss += x[i] * x[i];
  const float inv = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
  for (int i = 0; i < n; ++i) out[i] = weight[i] * (x[i] * inv);
}

RopeTable::RopeTable(const ModelConfig& c)
    : inv_freq_(c.rope_inv_freq()),
      factor_(c.rope_attention_factor()),
      half_(uz(c.qk_rope_head_dim / 2)),
      interleave_(c.rope_interleave) {}

void RopeTable::reserve(int end) {
  if (end <= size_) return;
  const int grown = std::max(end, std::max(64, 2 * size_));
  cos_.resize(uz(grown) * half_);
  sin_.resize(uz(grown) * half_);
  for (int p = size_; p < grown; ++p) {
    for (std::size_t i = 0; i < half_; ++i) {
      const double angle = p * inv_freq_[i];
      cos_[uz(p) * half_ + i] = static_cast<float>(std::cos(angle) * factor_);
      sin_[uz(p) * half_ + i] = static_cast<float>(std::sin(angle) * factor_);
    }
  }
  size_ = grown;
}

void rope(const RopeTable& t, int pos, float* x) {
  const float* c = t.cos(pos);
  const float* s = t.sin(pos);
  const int half = t.half();
  if (t.interleave()) {
    for (int i = 0; i < half; ++i) {
      const float a = x[2 * i], b = x[2 * i + 1];
      x[2 * i] = a * c[i] - b * s[i];
      x[2 * i + 1] = b * c[i] + a * s[i];
    }
  } else {
    for (int i = 0; i < half; ++i) {
      const float a = x[i], b = x[i + half];
      x[i] = a * c[i] - b * s[i];
      x[i + half] = b * c[i] + a * s[i];
    }
  }
}

void latent_row(const RopeTable& t, const float* kv, const float* norm, int lora, float eps,
                int pos, std::uint16_t* dst_bf16, float* dst_f32) {
  float ss = 0.0f;
  for (int i = 0; i < lora; ++i) ss += kv[i] * kv[i];
  const float inv = 1.0f / std::sqrt(ss / static_cast<float>(lora) + eps);
  const float* c = t.cos(pos);
  const float* s = t.sin(pos);
  const int half = t.half();
  const float* k = kv + lora;
  // One pass per part, the rotation computed as the values are stored (no intermediate row).
  auto write = [&](auto put) {
    for (int i = 0; i < lora; ++i) put(i, norm[i] * (kv[i] * inv));
    if (t.interleave()) {
      for (int i = 0; i < half; ++i) {
        put(lora + 2 * i, k[2 * i] * c[i] - k[2 * i + 1] * s[i]);
        put(lora + 2 * i + 1, k[2 * i + 1] * c[i] + k[2 * i] * s[i]);
      }
    } else {
      for (int i = 0; i < half; ++i) {
        put(lora + i, k[i] * c[i] - k[i + half] * s[i]);
        put(lora + i + half, k[i + half] * c[i] + k[i] * s[i]);
      }
    }
  };
  if (dst_f32) {
    write([dst_f32](int i, float v) { dst_f32[i] = v; });
  } else {
    write([dst_bf16](int i, float v) { dst_bf16[i] = omni::amla::float_to_bf16(v); });
  }
}

void latent_row_unfused(const RopeTable& t, const float* kv, const float* norm, int lora, float eps,
                        int pos, std::uint16_t* dst_bf16, float* dst_f32, float* scratch) {
  const int width = lora + 2 * t.half();
  rmsnorm(kv, norm, lora, eps, scratch);
  std::copy(kv + lora, kv + width, scratch + lora);
  rope(t, pos, scratch + lora);
  for (int i = 0; i < width; ++i) {
    if (dst_f32) {
      dst_f32[i] = scratch[i];
    } else {
      dst_bf16[i] = float_to_bf16(scratch[i]);
    }
  }
}

namespace {

// Insert (value, id) into the descending top list of size k (ties: lower id first).
inline void push_top(float value, int id, int k, float* top_v, int* top_i, int& count) {
  if (count == k && !(value > top_v[k - 1])) return;
  int pos = count < k ? count++ : k - 1;
  while (pos > 0 && value > top_v[pos - 1]) {
    top_v[pos] = top_v[pos - 1];
    top_i[pos] = top_i[pos - 1];
    --pos;
  }
  top_v[pos] = value;
  top_i[pos] = id;
}

void finish(const ModelConfig& c, const float* scores, int* experts, float* weights) {
  double sum = 0.0;
  for (int k = 0; k < c.num_experts_per_tok; ++k) sum += weights[k] = scores[experts[k]];
  for (int k = 0; k < c.num_experts_per_tok; ++k) {
    double w = weights[k];
    if (c.norm_topk_prob) w /= sum + 1e-20;
    weights[k] = static_cast<float>(w * c.routed_scaling_factor);
  }
}

}  // namespace

void route(const ModelConfig& c, const float* logits, const float* bias, int* experts,
           float* weights) {
  constexpr int kMaxExperts = 1024, kMaxGroups = 64, kMaxTop = 64;
  const int E = c.n_routed_experts, G = c.n_group, per = E / G, K = c.num_experts_per_tok;
  float scores[kMaxExperts], choice[kMaxExperts], group_top1[kMaxGroups], group_top2[kMaxGroups];
  const bool sigmoid = c.scoring_func == ScoringFunc::kSigmoid;
  float mx = -INFINITY, sum = 0.0f;
  if (!sigmoid) {
    for (int e = 0; e < E; ++e) mx = std::max(mx, logits[e]);
  }
  for (int g = 0; g < G; ++g) group_top1[g] = group_top2[g] = -INFINITY;
  // One pass: scores, bias-corrected choice values, each group's best two.
  for (int e = 0; e < E; ++e) {
    const float s = sigmoid ? 1.0f / (1.0f + std::exp(-logits[e])) : std::exp(logits[e] - mx);
    scores[e] = s;
    sum += s;
    const float v = bias ? s + bias[e] : s;
    choice[e] = v;
    const int g = e / per;
    if (v > group_top1[g]) {
      group_top2[g] = group_top1[g];
      group_top1[g] = v;
    } else if (v > group_top2[g]) {
      group_top2[g] = v;
    }
  }
  if (!sigmoid) {
    const float inv = 1.0f / sum;
    for (int e = 0; e < E; ++e) scores[e] *= inv;
    for (int g = 0; g < G; ++g) group_top1[g] *= inv, group_top2[g] *= inv;
    for (int e = 0; e < E; ++e) choice[e] = scores[e];
  }
  bool allowed[kMaxGroups];
  const bool limited = c.topk_method != TopkMethod::kGreedy && G > 1;
  if (limited) {
    float gv[kMaxGroups];
    int gi[kMaxGroups], count = 0;
    for (int g = 0; g < G; ++g) {
      const float score =
          c.topk_method == TopkMethod::kNoauxTc ? group_top1[g] + group_top2[g] : group_top1[g];
      push_top(score, g, c.topk_group, gv, gi, count);
    }
    std::fill_n(allowed, G, false);
    for (int i = 0; i < count; ++i) allowed[gi[i]] = true;
  }
  float tv[kMaxTop];
  int count = 0;
  for (int e = 0; e < E; ++e) {
    const float v = !limited || allowed[e / per] ? choice[e] : 0.0f;  // masked_fill(0.0)
    push_top(v, e, K, tv, experts, count);
  }
  finish(c, scores, experts, weights);
}

void route_unfused(const ModelConfig& c, const float* logits, const float* bias, int* experts,
                   float* weights, RouterScratch& s) {
  const int E = c.n_routed_experts, G = c.n_group, per = E / G, K = c.num_experts_per_tok;
  s.scores.resize(uz(E));
  s.choice.resize(uz(E));
  s.group.resize(uz(G));
  s.order.resize(uz(std::max(E, G)));
  // scores
  if (c.scoring_func == ScoringFunc::kSigmoid) {
    for (int e = 0; e < E; ++e) s.scores[uz(e)] = 1.0f / (1.0f + std::exp(-logits[e]));
  } else {
    const float mx = *std::max_element(logits, logits + E);
    float sum = 0.0f;
    for (int e = 0; e < E; ++e) sum += s.scores[uz(e)] = std::exp(logits[e] - mx);
    for (int e = 0; e < E; ++e) s.scores[uz(e)] /= sum;
  }
  // + bias
  for (int e = 0; e < E; ++e) s.choice[uz(e)] = s.scores[uz(e)] + (bias ? bias[e] : 0.0f);
  // group scores, group top-k, mask
  if (c.topk_method != TopkMethod::kGreedy && G > 1) {
    for (int g = 0; g < G; ++g) {
      float top = -INFINITY, second = -INFINITY;
      for (int i = 0; i < per; ++i) {
        const float v = s.choice[uz(g * per + i)];
        if (v > top) {
          second = top;
          top = v;
        } else if (v > second) {
          second = v;
        }
      }
      s.group[uz(g)] = c.topk_method == TopkMethod::kNoauxTc ? top + second : top;
    }
    std::iota(s.order.begin(), s.order.begin() + G, 0);
    std::stable_sort(s.order.begin(), s.order.begin() + G,
                     [&](int a, int b) { return s.group[uz(a)] > s.group[uz(b)]; });
    std::vector<bool> keep(uz(G), false);
    for (int i = 0; i < c.topk_group; ++i) keep[uz(s.order[uz(i)])] = true;
    for (int e = 0; e < E; ++e) {
      if (!keep[uz(e / per)]) s.choice[uz(e)] = 0.0f;
    }
  }
  // top-k
  std::iota(s.order.begin(), s.order.begin() + E, 0);
  std::stable_sort(s.order.begin(), s.order.begin() + E,
                   [&](int a, int b) { return s.choice[uz(a)] > s.choice[uz(b)]; });
  for (int k = 0; k < K; ++k) experts[k] = s.order[uz(k)];
  finish(c, s.scores.data(), experts, weights);
}

}  // namespace omni::model::ops
