// Binding tensors to roles: HF names (transformers' DeepseekV3ForCausalLM, plus the MTP layer
// at index num_hidden_layers) and llama.cpp's deepseek2 GGUF names. Shapes are checked
// against the config; a mismatch names the tensor and both shapes.
#include <bit>
#include <cmath>
#include <cstring>

#include "omni/model/weights.hpp"

namespace omni::model {
namespace {

std::string shape_text(const std::vector<std::int64_t>& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

bool is_float_dtype(DType d) { return d == DType::kF32 || d == DType::kF16 || d == DType::kBF16; }

bool finite_bytes(const TensorView& t) {
  const std::size_t n = static_cast<std::size_t>(t.numel());
  switch (t.dtype) {
    case DType::kF32:
      for (std::size_t i = 0; i < n; ++i) {
        std::uint32_t v;
        std::memcpy(&v, t.data + 4 * i, 4);
        if ((v & 0x7f800000U) == 0x7f800000U) return false;
      }
      return true;
    case DType::kF16:
    case DType::kBF16: {
      const std::uint16_t mask = t.dtype == DType::kF16 ? 0x7c00 : 0x7f80;
      for (std::size_t i = 0; i < n; ++i) {
        std::uint16_t v;
        std::memcpy(&v, t.data + 2 * i, 2);
        if ((v & mask) == mask) return false;
      }
      return true;
    }
    case DType::kF8E4M3:
      for (std::size_t i = 0; i < n; ++i) {
        if ((static_cast<std::uint8_t>(t.data[i]) & 0x7fU) == 0x7fU) return false;
      }
      return true;
    case DType::kQ8_0:
      for (std::size_t b = 0; b < n / kQ8Block; ++b) {
        std::uint16_t d;
        std::memcpy(&d, t.data + b * kQ8BlockBytes, 2);
        if ((d & 0x7c00) == 0x7c00) return false;
      }
      return true;
    default: return true;
  }
}

class Binder {
 public:
  Binder(const ModelConfig& c, const WeightSource& s, bool check_finite)
      : cfg_(c), src_(s), check_finite_(check_finite) {}

  Error missing(const std::string& name) const {
    return make_error(ErrorCode::kNotFound, src_.describe() + ": tensor '" + name + "' is missing");
  }
  Error wrong(const TensorView& t, const std::string& why) const {
    return make_error(ErrorCode::kInvalidArgument, t.file + ": tensor '" + t.name + "': " + why);
  }

  Result<const TensorView*> tensor(const std::string& name, std::vector<std::int64_t> shape) {
    const TensorView* t = src_.find(name);
    if (!t) return missing(name);
    if (t->shape != shape) {
      return wrong(*t, "shape " + shape_text(t->shape) + ", the config needs " + shape_text(shape));
    }
    if (check_finite_ && !finite_bytes(*t)) return wrong(*t, "holds NaN or infinite values");
    return t;
  }

  Result<std::vector<float>> vector(const std::string& name, int n) {
    auto t = tensor(name, {n});
    if (!t) return std::move(t).error();
    if (!is_float_dtype((*t)->dtype)) {
      return wrong(**t, "a norm or bias must be f32, f16 or bf16, not " +
                            std::string(dtype_name((*t)->dtype)));
    }
    Matrix m{(*t)->dtype, 1, n, (*t)->data, row_bytes((*t)->dtype, n)};
    std::vector<float> out(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) out[static_cast<std::size_t>(i)] = static_cast<float>(m.at(0, i));
    return out;
  }

  Result<Matrix> matrix_of(const TensorView& t, int rows, int cols, const std::string& scale_name) {
    Matrix m;
    m.dtype = t.dtype;
    m.rows = rows;
    m.cols = cols;
    m.data = t.data;
    m.row_stride = row_bytes(t.dtype, cols);
    if (t.dtype == DType::kF8E4M3) {
      const int sr = (rows + kFp8Block - 1) / kFp8Block, sc = (cols + kFp8Block - 1) / kFp8Block;
      const TensorView* s = src_.find(scale_name);
      if (!s) return missing(scale_name);
      if (s->dtype != DType::kF32 || s->shape != std::vector<std::int64_t>{sr, sc}) {
        return wrong(*s, "FP8 block scales must be f32 " + shape_text({sr, sc}) + ", got " +
                             std::string(dtype_name(s->dtype)) + " " + shape_text(s->shape));
      }
      if (check_finite_ && !finite_bytes(*s)) return wrong(*s, "holds NaN or infinite values");
      m.scale_inv = reinterpret_cast<const float*>(s->data);
      m.scale_cols = sc;
    } else if (!is_float_dtype(t.dtype) && t.dtype != DType::kQ8_0) {
      return wrong(t, "unsupported weight dtype " + std::string(dtype_name(t.dtype)));
    }
    return m;
  }

  Result<Matrix> matrix(const std::string& name, int rows, int cols) {
    auto t = tensor(name, {rows, cols});
    if (!t) return std::move(t).error();
    return matrix_of(**t, rows, cols, name + "_scale_inv");
  }

  // A GGUF stack [count][rows][cols] split into `count` matrices.
  Result<std::vector<Matrix>> stack(const std::string& name, int count, int rows, int cols) {
    auto t = tensor(name, {count, rows, cols});
    if (!t) return std::move(t).error();
    if ((*t)->dtype == DType::kF8E4M3) return wrong(**t, "FP8 stacks are not supported in GGUF");
    auto whole = matrix_of(**t, rows * count, cols, "");
    if (!whole) return std::move(whole).error();
    std::vector<Matrix> out;
    for (int e = 0; e < count; ++e) out.push_back(whole->slice_rows(e * rows, rows));
    return out;
  }

  const ModelConfig& cfg_;
  const WeightSource& src_;
  bool check_finite_;
};

#define OMNI_BIND(target, expr)                    \
  do {                                             \
    auto bound_ = (expr);                          \
    if (!bound_) return std::move(bound_).error(); \
    target = std::move(*bound_);                   \
  } while (0)

Status bind_hf_attention(Binder& b, const std::string& p, AttentionWeights& a) {
  const ModelConfig& c = b.cfg_;
  const int h = c.num_attention_heads, qk = c.qk_head_dim(), H = c.hidden_size;
  if (c.q_lora_rank > 0) {
    OMNI_BIND(a.q_a, b.matrix(p + "q_a_proj.weight", c.q_lora_rank, H));
    OMNI_BIND(a.q_a_norm, b.vector(p + "q_a_layernorm.weight", c.q_lora_rank));
    OMNI_BIND(a.q_b, b.matrix(p + "q_b_proj.weight", h * qk, c.q_lora_rank));
  } else {
    OMNI_BIND(a.q, b.matrix(p + "q_proj.weight", h * qk, H));
  }
  OMNI_BIND(a.kv_a, b.matrix(p + "kv_a_proj_with_mqa.weight", c.latent_dim(), H));
  OMNI_BIND(a.kv_a_norm, b.vector(p + "kv_a_layernorm.weight", c.kv_lora_rank));
  Matrix kv_b;
  const int per_head = c.qk_nope_head_dim + c.v_head_dim;
  OMNI_BIND(kv_b, b.matrix(p + "kv_b_proj.weight", h * per_head, c.kv_lora_rank));
  for (int i = 0; i < h; ++i) {
    a.uk.push_back(kv_b.slice_rows(i * per_head, c.qk_nope_head_dim));
    a.uv.push_back(kv_b.slice_rows(i * per_head + c.qk_nope_head_dim, c.v_head_dim));
  }
  a.uk_transposed = false;
  OMNI_BIND(a.o, b.matrix(p + "o_proj.weight", H, h * c.v_head_dim));
  return ok_status();
}

Status bind_hf_mlp(Binder& b, const std::string& p, int inter, MlpWeights& m) {
  const int H = b.cfg_.hidden_size;
  OMNI_BIND(m.gate, b.matrix(p + "gate_proj.weight", inter, H));
  OMNI_BIND(m.up, b.matrix(p + "up_proj.weight", inter, H));
  OMNI_BIND(m.down, b.matrix(p + "down_proj.weight", H, inter));
  return ok_status();
}

Status bind_hf_layer(Binder& b, int layer, LayerWeights& w) {
  const ModelConfig& c = b.cfg_;
  const std::string p = "model.layers." + std::to_string(layer) + ".";
  OMNI_BIND(w.attn_norm, b.vector(p + "input_layernorm.weight", c.hidden_size));
  OMNI_BIND(w.ffn_norm, b.vector(p + "post_attention_layernorm.weight", c.hidden_size));
  if (auto st = bind_hf_attention(b, p + "self_attn.", w.attn); !st) return st;
  w.is_moe = c.is_moe_layer(layer);
  if (!w.is_moe) return bind_hf_mlp(b, p + "mlp.", c.intermediate_size, w.dense);
  const int E = c.n_routed_experts;
  OMNI_BIND(w.moe.router, b.matrix(p + "mlp.gate.weight", E, c.hidden_size));
  if (c.topk_method == TopkMethod::kNoauxTc) {
    OMNI_BIND(w.moe.bias, b.vector(p + "mlp.gate.e_score_correction_bias", E));
  }
  w.moe.experts.resize(static_cast<std::size_t>(E));
  for (int e = 0; e < E; ++e) {
    if (auto st = bind_hf_mlp(b, p + "mlp.experts." + std::to_string(e) + ".",
                              c.moe_intermediate_size, w.moe.experts[static_cast<std::size_t>(e)]);
        !st) {
      return st;
    }
  }
  if (c.n_shared_experts > 0) {
    return bind_hf_mlp(b, p + "mlp.shared_experts.", c.moe_intermediate_size * c.n_shared_experts,
                       w.moe.shared);
  }
  return ok_status();
}

Result<ModelWeights> bind_hf(Binder& b) {
  const ModelConfig& c = b.cfg_;
  ModelWeights w;
  OMNI_BIND(w.embed, b.matrix("model.embed_tokens.weight", c.vocab_size, c.hidden_size));
  w.layers.resize(static_cast<std::size_t>(c.num_hidden_layers));
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    if (auto st = bind_hf_layer(b, l, w.layers[static_cast<std::size_t>(l)]); !st) {
      return std::move(st).error();
    }
  }
  OMNI_BIND(w.final_norm, b.vector("model.norm.weight", c.hidden_size));
  if (c.tie_word_embeddings && !b.src_.find("lm_head.weight")) {
    w.lm_head = w.embed;
  } else {
    OMNI_BIND(w.lm_head, b.matrix("lm_head.weight", c.vocab_size, c.hidden_size));
  }
  if (c.num_nextn_predict_layers > 0) {
    const int l = c.num_hidden_layers;
    const std::string p = "model.layers." + std::to_string(l) + ".";
    MtpWeights m;
    OMNI_BIND(m.enorm, b.vector(p + "enorm.weight", c.hidden_size));
    OMNI_BIND(m.hnorm, b.vector(p + "hnorm.weight", c.hidden_size));
    OMNI_BIND(m.eh_proj, b.matrix(p + "eh_proj.weight", c.hidden_size, 2 * c.hidden_size));
    OMNI_BIND(m.head_norm, b.vector(p + "shared_head.norm.weight", c.hidden_size));
    // DeepSeek-V3 ships copies of the main embedding and head here; without them, share.
    m.embed = w.embed;
    if (b.src_.find(p + "embed_tokens.weight")) {
      OMNI_BIND(m.embed, b.matrix(p + "embed_tokens.weight", c.vocab_size, c.hidden_size));
    }
    m.head = w.lm_head;
    if (b.src_.find(p + "shared_head.head.weight")) {
      OMNI_BIND(m.head, b.matrix(p + "shared_head.head.weight", c.vocab_size, c.hidden_size));
    }
    if (auto st = bind_hf_layer(b, l, m.layer); !st) return std::move(st).error();
    w.mtp = std::move(m);
  }
  return w;
}

Status bind_gguf_layer(Binder& b, int layer, LayerWeights& w) {
  const ModelConfig& c = b.cfg_;
  const std::string p = "blk." + std::to_string(layer) + ".";
  const int H = c.hidden_size, h = c.num_attention_heads, qk = c.qk_head_dim();
  OMNI_BIND(w.attn_norm, b.vector(p + "attn_norm.weight", H));
  OMNI_BIND(w.ffn_norm, b.vector(p + "ffn_norm.weight", H));
  AttentionWeights& a = w.attn;
  if (c.q_lora_rank > 0) {
    OMNI_BIND(a.q_a, b.matrix(p + "attn_q_a.weight", c.q_lora_rank, H));
    OMNI_BIND(a.q_a_norm, b.vector(p + "attn_q_a_norm.weight", c.q_lora_rank));
    OMNI_BIND(a.q_b, b.matrix(p + "attn_q_b.weight", h * qk, c.q_lora_rank));
  } else {
    OMNI_BIND(a.q, b.matrix(p + "attn_q.weight", h * qk, H));
  }
  OMNI_BIND(a.kv_a, b.matrix(p + "attn_kv_a_mqa.weight", c.latent_dim(), H));
  OMNI_BIND(a.kv_a_norm, b.vector(p + "attn_kv_a_norm.weight", c.kv_lora_rank));
  if (b.src_.find(p + "attn_k_b.weight")) {
    OMNI_BIND(a.uk, b.stack(p + "attn_k_b.weight", h, c.kv_lora_rank, c.qk_nope_head_dim));
    OMNI_BIND(a.uv, b.stack(p + "attn_v_b.weight", h, c.v_head_dim, c.kv_lora_rank));
    a.uk_transposed = true;
  } else {  // older GGUFs keep kv_b whole
    Matrix kv_b;
    const int per_head = c.qk_nope_head_dim + c.v_head_dim;
    OMNI_BIND(kv_b, b.matrix(p + "attn_kv_b.weight", h * per_head, c.kv_lora_rank));
    for (int i = 0; i < h; ++i) {
      a.uk.push_back(kv_b.slice_rows(i * per_head, c.qk_nope_head_dim));
      a.uv.push_back(kv_b.slice_rows(i * per_head + c.qk_nope_head_dim, c.v_head_dim));
    }
  }
  OMNI_BIND(a.o, b.matrix(p + "attn_output.weight", H, h * c.v_head_dim));
  w.is_moe = c.is_moe_layer(layer);
  if (!w.is_moe) {
    OMNI_BIND(w.dense.gate, b.matrix(p + "ffn_gate.weight", c.intermediate_size, H));
    OMNI_BIND(w.dense.up, b.matrix(p + "ffn_up.weight", c.intermediate_size, H));
    OMNI_BIND(w.dense.down, b.matrix(p + "ffn_down.weight", H, c.intermediate_size));
    return ok_status();
  }
  const int E = c.n_routed_experts, I = c.moe_intermediate_size;
  OMNI_BIND(w.moe.router, b.matrix(p + "ffn_gate_inp.weight", E, H));
  if (c.topk_method == TopkMethod::kNoauxTc) {
    OMNI_BIND(w.moe.bias, b.vector(p + "exp_probs_b.bias", E));
  }
  std::vector<Matrix> gate, up, down;
  OMNI_BIND(gate, b.stack(p + "ffn_gate_exps.weight", E, I, H));
  OMNI_BIND(up, b.stack(p + "ffn_up_exps.weight", E, I, H));
  OMNI_BIND(down, b.stack(p + "ffn_down_exps.weight", E, H, I));
  for (int e = 0; e < E; ++e) {
    const auto i = static_cast<std::size_t>(e);
    w.moe.experts.push_back({gate[i], up[i], down[i]});
  }
  if (c.n_shared_experts > 0) {
    const int S = I * c.n_shared_experts;
    OMNI_BIND(w.moe.shared.gate, b.matrix(p + "ffn_gate_shexp.weight", S, H));
    OMNI_BIND(w.moe.shared.up, b.matrix(p + "ffn_up_shexp.weight", S, H));
    OMNI_BIND(w.moe.shared.down, b.matrix(p + "ffn_down_shexp.weight", H, S));
  }
  return ok_status();
}

Result<ModelWeights> bind_gguf(Binder& b) {
  const ModelConfig& c = b.cfg_;
  ModelWeights w;
  OMNI_BIND(w.embed, b.matrix("token_embd.weight", c.vocab_size, c.hidden_size));
  w.layers.resize(static_cast<std::size_t>(c.num_hidden_layers));
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    if (auto st = bind_gguf_layer(b, l, w.layers[static_cast<std::size_t>(l)]); !st) {
      return std::move(st).error();
    }
  }
  OMNI_BIND(w.final_norm, b.vector("output_norm.weight", c.hidden_size));
  if (b.src_.find("output.weight")) {
    OMNI_BIND(w.lm_head, b.matrix("output.weight", c.vocab_size, c.hidden_size));
  } else {
    w.lm_head = w.embed;
  }
  return w;
}

}  // namespace

Result<ModelWeights> bind_weights(const ModelConfig& config, const WeightSource& source,
                                  bool check_finite) {
  Binder b(config, source, check_finite);
  return source.gguf() ? bind_gguf(b) : bind_hf(b);
}

Result<ModelConfig> config_from_gguf(const GgufHeader& g, std::string_view file) {
  auto arch = g.get_string("general.architecture");
  if (!arch) return std::move(arch).error();
  if (*arch != "deepseek2") {
    return make_error(ErrorCode::kUnsupported, std::string(file) + ": general.architecture '" +
                                                   *arch + "' is not supported (deepseek2)");
  }
  ModelConfig c;
  std::string problems;
  auto u = [&](const char* key, int& out, bool required) {
    auto v = g.get_uint(std::string("deepseek2.") + key);
    if (v && *v < (1U << 31)) {
      out = static_cast<int>(*v);
    } else if (required || v.error().code != ErrorCode::kNotFound) {
      problems += std::string(file) + ": deepseek2." + key + ": missing or not an integer\n";
    }
  };
  auto f = [&](const char* key, double& out) {
    if (auto v = g.get_float(std::string("deepseek2.") + key)) out = *v;
  };
  u("block_count", c.num_hidden_layers, true);
  u("embedding_length", c.hidden_size, true);
  u("feed_forward_length", c.intermediate_size, false);
  u("attention.head_count", c.num_attention_heads, true);
  u("attention.q_lora_rank", c.q_lora_rank, false);
  u("attention.kv_lora_rank", c.kv_lora_rank, true);
  int key_mla = 0, value_mla = 0;
  u("attention.key_length_mla", key_mla, true);
  u("attention.value_length_mla", value_mla, true);
  u("rope.dimension_count", c.qk_rope_head_dim, true);
  u("expert_count", c.n_routed_experts, false);
  u("expert_used_count", c.num_experts_per_tok, false);
  u("expert_shared_count", c.n_shared_experts, false);
  u("expert_feed_forward_length", c.moe_intermediate_size, false);
  u("expert_group_count", c.n_group, false);
  u("expert_group_used_count", c.topk_group, false);
  u("leading_dense_block_count", c.first_k_dense_replace, false);
  u("context_length", c.max_position_embeddings, false);
  int gating = 2;
  u("expert_gating_func", gating, false);
  f("attention.layer_norm_rms_epsilon", c.rms_norm_eps);
  f("rope.freq_base", c.rope_theta);
  f("expert_weights_scale", c.routed_scaling_factor);
  if (auto v = g.get_bool("deepseek2.expert_weights_norm")) {
    c.norm_topk_prob = *v;
  } else {
    c.norm_topk_prob = false;
  }
  c.qk_nope_head_dim = key_mla - c.qk_rope_head_dim;
  c.v_head_dim = value_mla;
  c.scoring_func = gating == 1 ? ScoringFunc::kSoftmax : ScoringFunc::kSigmoid;
  if (c.scoring_func == ScoringFunc::kSigmoid) {
    c.arch = Arch::kDeepseekV3;
    c.topk_method = TopkMethod::kNoauxTc;
  } else {
    c.arch = Arch::kDeepseekV2;
    c.topk_method = c.n_group > 1 ? TopkMethod::kGroupLimitedGreedy : TopkMethod::kGreedy;
  }
  if (auto type = g.get_string("deepseek2.rope.scaling.type"); type && *type == "yarn") {
    c.rope_scaling.yarn = true;
    f("rope.scaling.factor", c.rope_scaling.factor);
    u("rope.scaling.original_context_length", c.rope_scaling.original_max_position_embeddings,
      false);
    f("rope.scaling.yarn_beta_fast", c.rope_scaling.beta_fast);
    f("rope.scaling.yarn_beta_slow", c.rope_scaling.beta_slow);
    double log_mul = 0.0;
    f("rope.scaling.yarn_log_multiplier", log_mul);
    // llama.cpp's converter writes 0.1 * mscale_all_dim and assumes mscale == 1.
    c.rope_scaling.mscale_all_dim = log_mul / 0.1;
    c.rope_scaling.mscale = log_mul != 0.0 ? 1.0 : 0.0;
  }
  const auto* tokens = g.find("tokenizer.ggml.tokens");
  if (tokens && std::holds_alternative<GgufArray>(tokens->value)) {
    c.vocab_size = static_cast<int>(std::get<GgufArray>(tokens->value).size());
  }
  int vocab = 0;
  u("vocab_size", vocab, false);
  if (vocab > 0) c.vocab_size = vocab;
  if (auto v = g.get_uint("tokenizer.ggml.bos_token_id")) c.bos_token_id = static_cast<int>(*v);
  if (auto v = g.get_uint("tokenizer.ggml.eos_token_id")) c.eos_token_id = static_cast<int>(*v);
  if (!problems.empty()) {
    problems.pop_back();
    return make_error(ErrorCode::kInvalidArgument, problems);
  }
  if (auto st = validate(c, file); !st) return std::move(st).error();
  return c;
}

}  // namespace omni::model
