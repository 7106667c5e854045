// The float64 reference: transformers' DeepseekV3ForCausalLM, statement by statement.
#include "omni/model/reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace omni::model {
namespace {

using Vec = std::vector<double>;
std::size_t z(int v) { return static_cast<std::size_t>(v); }

// y[t][r] = sum_c x[t][c] W[r][c]
Vec linear(const Matrix& w, const Vec& x, int n) {
  Vec y(z(n) * z(w.rows), 0.0);
  Vec row(z(w.cols));
  for (int r = 0; r < w.rows; ++r) {
    for (int c = 0; c < w.cols; ++c) row[z(c)] = w.at(r, c);
    for (int t = 0; t < n; ++t) {
      double s = 0.0;
      for (int c = 0; c < w.cols; ++c) s += x[z(t) * z(w.cols) + z(c)] * row[z(c)];
      y[z(t) * z(w.rows) + z(r)] = s;
    }
  }
  return y;
}

// DeepseekV3RMSNorm over rows of width `dim`.
Vec rms_norm(const Vec& x, int n, int dim, const std::vector<float>& weight, double eps) {
  Vec y(x.size());
  for (int t = 0; t < n; ++t) {
    double ss = 0.0;
    for (int i = 0; i < dim; ++i) ss += x[z(t) * z(dim) + z(i)] * x[z(t) * z(dim) + z(i)];
    const double inv = 1.0 / std::sqrt(ss / dim + eps);
    for (int i = 0; i < dim; ++i) {
      y[z(t) * z(dim) + z(i)] = weight[z(i)] * (x[z(t) * z(dim) + z(i)] * inv);
    }
  }
  return y;
}

double silu(double v) { return v / (1.0 + std::exp(-v)); }

Vec mlp(const MlpWeights& m, const Vec& x, int n) {
  const Vec g = linear(m.gate, x, n);
  const Vec u = linear(m.up, x, n);
  Vec a(g.size());
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = silu(g[i]) * u[i];
  return linear(m.down, a, n);
}

// apply_rotary_pos_emb_interleave (or apply_rotary_pos_emb) on one rope vector in place.
void rope(const ModelConfig& c, const Vec& inv_freq, double attention_factor, int pos, double* x) {
  const int d = c.qk_rope_head_dim, half = d / 2;
  Vec v(z(d));
  if (c.rope_interleave) {  // view(d/2, 2).transpose: evens first, then odds
    for (int i = 0; i < half; ++i) {
      v[z(i)] = x[2 * i];
      v[z(half + i)] = x[2 * i + 1];
    }
  } else {
    std::copy(x, x + d, v.begin());
  }
  for (int i = 0; i < d; ++i) {
    const double freq = pos * inv_freq[z(i % half)];
    const double cs = std::cos(freq) * attention_factor, sn = std::sin(freq) * attention_factor;
    const double rotated = i < half ? -v[z(i + half)] : v[z(i - half)];
    x[i] = v[z(i)] * cs + rotated * sn;
  }
}

Vec attention(const ModelConfig& c, const AttentionWeights& a, const Vec& x, int n) {
  const int heads = c.num_attention_heads, qk = c.qk_head_dim(), nope = c.qk_nope_head_dim;
  const int rope_dim = c.qk_rope_head_dim, vd = c.v_head_dim, lora = c.kv_lora_rank;
  Vec q =
      c.q_lora_rank > 0
          ? linear(a.q_b,
                   rms_norm(linear(a.q_a, x, n), n, c.q_lora_rank, a.q_a_norm, c.rms_norm_eps), n)
          : linear(a.q, x, n);
  Vec ckv = linear(a.kv_a, x, n);  // [n][lora + rope]
  Vec k_pass(z(n) * z(lora));
  Vec k_rot(z(n) * z(rope_dim));
  for (int t = 0; t < n; ++t) {
    for (int i = 0; i < lora; ++i)
      k_pass[z(t) * z(lora) + z(i)] = ckv[z(t) * z(c.latent_dim()) + z(i)];
    for (int i = 0; i < rope_dim; ++i) {
      k_rot[z(t) * z(rope_dim) + z(i)] = ckv[z(t) * z(c.latent_dim()) + z(lora + i)];
    }
  }
  const Vec normed = rms_norm(k_pass, n, lora, a.kv_a_norm, c.rms_norm_eps);
  // kv_b: per head, k_nope = W_UK[h] c and v = W_UV[h] c.
  Vec k_nope(z(n) * z(heads) * z(nope)), value(z(n) * z(heads) * z(vd));
  for (int h = 0; h < heads; ++h) {
    const Matrix& uk = a.uk[z(h)];
    const Matrix& uv = a.uv[z(h)];
    for (int t = 0; t < n; ++t) {
      const double* cv = &normed[z(t) * z(lora)];
      for (int d = 0; d < nope; ++d) {
        double s = 0.0;
        for (int i = 0; i < lora; ++i) s += (a.uk_transposed ? uk.at(i, d) : uk.at(d, i)) * cv[i];
        k_nope[(z(t) * z(heads) + z(h)) * z(nope) + z(d)] = s;
      }
      for (int d = 0; d < vd; ++d) {
        double s = 0.0;
        for (int i = 0; i < lora; ++i) s += uv.at(d, i) * cv[i];
        value[(z(t) * z(heads) + z(h)) * z(vd) + z(d)] = s;
      }
    }
  }
  const Vec inv_freq = c.rope_inv_freq();
  const double af = c.rope_attention_factor();
  for (int t = 0; t < n; ++t) {
    rope(c, inv_freq, af, t, &k_rot[z(t) * z(rope_dim)]);
    for (int h = 0; h < heads; ++h)
      rope(c, inv_freq, af, t, &q[(z(t) * z(heads) + z(h)) * z(qk) + z(nope)]);
  }
  const double scale = c.softmax_scale();
  Vec out(z(n) * z(heads) * z(vd), 0.0);
  Vec p(z(n));
  for (int h = 0; h < heads; ++h) {
    for (int t = 0; t < n; ++t) {
      const double* qv = &q[(z(t) * z(heads) + z(h)) * z(qk)];
      double mx = -std::numeric_limits<double>::infinity();
      for (int s = 0; s <= t; ++s) {
        double dot = 0.0;
        for (int d = 0; d < nope; ++d)
          dot += qv[d] * k_nope[(z(s) * z(heads) + z(h)) * z(nope) + z(d)];
        for (int d = 0; d < rope_dim; ++d) dot += qv[nope + d] * k_rot[z(s) * z(rope_dim) + z(d)];
        p[z(s)] = dot * scale;
        mx = std::max(mx, p[z(s)]);
      }
      double sum = 0.0;
      for (int s = 0; s <= t; ++s) {
        p[z(s)] = std::exp(p[z(s)] - mx);
        sum += p[z(s)];
      }
      for (int s = 0; s <= t; ++s) {
        const double w = p[z(s)] / sum;
        for (int d = 0; d < vd; ++d) {
          out[(z(t) * z(heads) + z(h)) * z(vd) + z(d)] +=
              w * value[(z(s) * z(heads) + z(h)) * z(vd) + z(d)];
        }
      }
    }
  }
  return linear(a.o, out, n);
}

Vec moe(const ModelConfig& c, const MoeWeights& m, const Vec& x, int n) {
  const int H = c.hidden_size;
  Vec y(z(n) * z(H), 0.0);
  for (int t = 0; t < n; ++t) {
    const std::span<const double> xt(&x[z(t) * z(H)], z(H));
    const Vec xv(xt.begin(), xt.end());
    for (const auto& r : reference_route(c, m, xt)) {
      const Vec o = mlp(m.experts[z(r.expert)], xv, 1);
      for (int i = 0; i < H; ++i) y[z(t) * z(H) + z(i)] += o[z(i)] * r.weight;
    }
  }
  if (!m.shared.empty()) {
    const Vec s = mlp(m.shared, x, n);
    for (std::size_t i = 0; i < y.size(); ++i) y[i] += s[i];
  }
  return y;
}

// Indices of the k largest values (ties: the lower index), as a set.
std::vector<int> top_k(const Vec& v, int k) {
  std::vector<int> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return v[z(a)] > v[z(b)]; });
  idx.resize(z(k));
  return idx;
}

}  // namespace

std::vector<RoutedExpert> reference_route(const ModelConfig& c, const MoeWeights& m,
                                          std::span<const double> x) {
  const int E = c.n_routed_experts, per_group = E / c.n_group;
  Vec logits(z(E));
  for (int e = 0; e < E; ++e) {
    double s = 0.0;
    for (int i = 0; i < c.hidden_size; ++i) s += x[z(i)] * m.router.at(e, i);
    logits[z(e)] = s;
  }
  Vec scores(z(E));
  if (c.scoring_func == ScoringFunc::kSigmoid) {
    for (int e = 0; e < E; ++e) scores[z(e)] = 1.0 / (1.0 + std::exp(-logits[z(e)]));
  } else {
    const double mx = *std::max_element(logits.begin(), logits.end());
    double sum = 0.0;
    for (int e = 0; e < E; ++e) sum += scores[z(e)] = std::exp(logits[z(e)] - mx);
    for (auto& s : scores) s /= sum;
  }
  Vec choice = scores;
  if (c.topk_method == TopkMethod::kNoauxTc) {
    for (int e = 0; e < E; ++e) choice[z(e)] += m.bias[z(e)];
  }
  if (c.topk_method != TopkMethod::kGreedy && c.n_group > 1) {
    Vec group(z(c.n_group));
    for (int g = 0; g < c.n_group; ++g) {
      Vec members(choice.begin() + g * per_group, choice.begin() + (g + 1) * per_group);
      std::sort(members.rbegin(), members.rend());
      group[z(g)] = c.topk_method == TopkMethod::kNoauxTc ? members[0] + members[1] : members[0];
    }
    const auto keep = top_k(group, c.topk_group);
    for (int e = 0; e < E; ++e) {
      if (std::find(keep.begin(), keep.end(), e / per_group) == keep.end()) choice[z(e)] = 0.0;
    }
  }
  const auto chosen = top_k(choice, c.num_experts_per_tok);
  std::vector<RoutedExpert> out;
  double sum = 0.0;
  for (const int e : chosen) {
    out.push_back({e, scores[z(e)]});
    sum += scores[z(e)];
  }
  for (auto& r : out) {
    if (c.norm_topk_prob) r.weight /= sum + 1e-20;
    r.weight *= c.routed_scaling_factor;
  }
  return out;
}

void reference_layer(const ModelConfig& c, const LayerWeights& layer, Vec& h, int n) {
  const int H = c.hidden_size;
  const Vec x = rms_norm(h, n, H, layer.attn_norm, c.rms_norm_eps);
  const Vec a = attention(c, layer.attn, x, n);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] += a[i];
  const Vec x2 = rms_norm(h, n, H, layer.ffn_norm, c.rms_norm_eps);
  const Vec f = layer.is_moe ? moe(c, layer.moe, x2, n) : mlp(layer.dense, x2, n);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] += f[i];
}

ReferenceOutput reference_forward(const ModelConfig& c, const ModelWeights& w,
                                  std::span<const int> tokens) {
  const int n = static_cast<int>(tokens.size()), H = c.hidden_size;
  Vec h(z(n) * z(H));
  for (int t = 0; t < n; ++t) {
    for (int i = 0; i < H; ++i) h[z(t) * z(H) + z(i)] = w.embed.at(tokens[z(t)], i);
  }
  for (const auto& layer : w.layers) reference_layer(c, layer, h, n);
  ReferenceOutput out;
  out.rows = n;
  out.hidden = rms_norm(h, n, H, w.final_norm, c.rms_norm_eps);
  out.logits = linear(w.lm_head, out.hidden, n);
  return out;
}

std::vector<double> reference_mtp(const ModelConfig& c, const ModelWeights& w,
                                  std::span<const int> tokens_next,
                                  std::span<const double> hidden) {
  const MtpWeights& m = *w.mtp;
  const int n = static_cast<int>(tokens_next.size()), H = c.hidden_size;
  Vec e(z(n) * z(H), 0.0);
  for (int t = 1; t < n; ++t) {  // position 0's embedding is masked to zero
    for (int i = 0; i < H; ++i) e[z(t) * z(H) + z(i)] = m.embed.at(tokens_next[z(t)], i);
  }
  const Vec en = rms_norm(e, n, H, m.enorm, c.rms_norm_eps);
  const Vec hn = rms_norm(Vec(hidden.begin(), hidden.end()), n, H, m.hnorm, c.rms_norm_eps);
  Vec cat(z(n) * z(2 * H));
  for (int t = 0; t < n; ++t) {
    for (int i = 0; i < H; ++i) {
      cat[z(t) * z(2 * H) + z(i)] = en[z(t) * z(H) + z(i)];
      cat[z(t) * z(2 * H) + z(H + i)] = hn[z(t) * z(H) + z(i)];
    }
  }
  Vec h = linear(m.eh_proj, cat, n);
  reference_layer(c, m.layer, h, n);
  return linear(m.head, rms_norm(h, n, H, m.head_norm, c.rms_norm_eps), n);
}

}  // namespace omni::model
