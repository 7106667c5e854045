// make-model: presets, seeded random weights, and the writers of both checkpoint formats.
#include "omni/model/make_model.hpp"

#include <boost/json.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <numbers>

namespace omni::model {
namespace {

std::size_t z(std::int64_t v) { return static_cast<std::size_t>(v); }

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed * 0x9E3779B97F4A7C15ULL + 1) {}
  std::uint64_t next() {
    std::uint64_t x = (state_ += 0x9E3779B97F4A7C15ULL);
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u1 = std::max(uniform(), 1e-300), u2 = uniform();
    const double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(2.0 * std::numbers::pi * u2);
    has_spare_ = true;
    return r * std::cos(2.0 * std::numbers::pi * u2);
  }

 private:
  std::uint64_t state_;
  double spare_ = 0.0;
  bool has_spare_ = false;
};

template <class T>
std::span<const std::byte> bytes_of(const std::vector<T>& v) {
  return std::as_bytes(std::span<const T>(v));
}

std::vector<std::byte> convert(const std::vector<float>& v, DType dtype) {
  std::vector<std::byte> out;
  if (dtype == DType::kF32) {
    out.resize(v.size() * 4);
    std::memcpy(out.data(), v.data(), out.size());
  } else if (dtype == DType::kF16 || dtype == DType::kBF16) {
    std::vector<std::uint16_t> h(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
      h[i] = dtype == DType::kF16 ? float_to_f16(v[i]) : float_to_bf16(v[i]);
    }
    out.resize(h.size() * 2);
    std::memcpy(out.data(), h.data(), out.size());
  }
  return out;
}

std::uint8_t fp8_fast(float f) {
  if (std::isnan(f)) return 0x7f;
  const std::uint8_t sign = std::signbit(f) ? 0x80 : 0x00;
  const float a = std::fabs(f);
  if (a < 0.015625f) {  // below 2^-6: subnormal steps of 2^-9 (8 rounds up to the first normal)
    return static_cast<std::uint8_t>(sign | static_cast<std::uint8_t>(std::nearbyint(a * 512.0f)));
  }
  int ex = 0;
  const float fr = std::frexp(a, &ex);  // a = fr * 2^ex, fr in [0.5, 1)
  int e = ex - 1;
  int m = static_cast<int>(std::nearbyint((2.0f * fr - 1.0f) * 8.0f));
  if (m == 8) {
    m = 0;
    ++e;
  }
  const int biased = e + 7;
  if (biased > 15 || (biased == 15 && m == 7)) return static_cast<std::uint8_t>(sign | 0x7e);
  return static_cast<std::uint8_t>(sign | (biased << 3) | m);
}

// FP8 e4m3 with 128x128 block inverse scales (DeepSeek-V3's weight_scale_inv).
void quantize_fp8(const MasterTensor& t, std::vector<std::byte>& q, std::vector<float>& scales) {
  const auto rows = t.shape[0], cols = t.shape[1];
  const auto sr = (rows + kFp8Block - 1) / kFp8Block, sc = (cols + kFp8Block - 1) / kFp8Block;
  scales.assign(z(sr * sc), 1.0f);
  q.resize(z(rows * cols));
  for (std::int64_t br = 0; br < sr; ++br) {
    for (std::int64_t bc = 0; bc < sc; ++bc) {
      float amax = 0.0f;
      for (auto r = br * kFp8Block; r < std::min(rows, (br + 1) * kFp8Block); ++r) {
        for (auto c = bc * kFp8Block; c < std::min(cols, (bc + 1) * kFp8Block); ++c) {
          amax = std::max(amax, std::fabs(t.values[z(r * cols + c)]));
        }
      }
      const float scale = amax > 0.0f ? amax / 448.0f : 1.0f;
      scales[z(br * sc + bc)] = scale;
      for (auto r = br * kFp8Block; r < std::min(rows, (br + 1) * kFp8Block); ++r) {
        for (auto c = bc * kFp8Block; c < std::min(cols, (bc + 1) * kFp8Block); ++c) {
          q[z(r * cols + c)] = static_cast<std::byte>(fp8_fast(t.values[z(r * cols + c)] / scale));
        }
      }
    }
  }
}

// llama.cpp's quantize_row_q8_0_ref: d = amax / 127, q = round(x / d).
std::vector<std::byte> quantize_q8_0(const std::vector<float>& v) {
  std::vector<std::byte> out(v.size() / kQ8Block * kQ8BlockBytes);
  for (std::size_t b = 0; b < v.size() / kQ8Block; ++b) {
    float amax = 0.0f;
    for (int i = 0; i < kQ8Block; ++i) amax = std::max(amax, std::fabs(v[b * kQ8Block + z(i)]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const std::uint16_t dh = float_to_f16(d);
    std::memcpy(&out[b * kQ8BlockBytes], &dh, 2);
    for (int i = 0; i < kQ8Block; ++i) {
      out[b * kQ8BlockBytes + 2 + z(i)] = static_cast<std::byte>(
          static_cast<std::int8_t>(std::nearbyint(v[b * kQ8Block + z(i)] * id)));
    }
  }
  return out;
}

bool is_projection(const std::string& name, const MasterTensor& t) {
  if (t.shape.size() != 2) return false;
  return name.find("embed_tokens") == std::string::npos &&
         name.find("lm_head") == std::string::npos &&
         name.find("shared_head.head") == std::string::npos &&
         name.find("mlp.gate.weight") == std::string::npos;
}

class Generator {
 public:
  Generator(const ModelConfig& c, std::uint64_t seed) : c_(c), rng_(seed) {}

  void matrix(const std::string& name, int rows, int cols, double std) {
    MasterTensor t;
    t.shape = {rows, cols};
    t.values.resize(z(rows) * z(cols));
    for (auto& v : t.values) v = static_cast<float>(rng_.normal() * std);
    out_[name] = std::move(t);
  }
  void norm(const std::string& name, int n) {
    MasterTensor t;
    t.shape = {n};
    t.values.resize(z(n));
    for (auto& v : t.values) v = static_cast<float>(1.0 + 0.1 * rng_.normal());
    out_[name] = std::move(t);
  }
  void bias(const std::string& name, int n) {
    MasterTensor t;
    t.shape = {n};
    t.values.resize(z(n));
    for (auto& v : t.values) v = static_cast<float>(0.2 * rng_.uniform());
    out_[name] = std::move(t);
  }
  void mlp(const std::string& p, int inter, double out_scale) {
    const int H = c_.hidden_size;
    matrix(p + "gate_proj.weight", inter, H, 1.0 / std::sqrt(H));
    matrix(p + "up_proj.weight", inter, H, 1.0 / std::sqrt(H));
    matrix(p + "down_proj.weight", H, inter, out_scale / std::sqrt(inter));
  }
  void layer(int l) {
    const ModelConfig& c = c_;
    const int H = c.hidden_size, h = c.num_attention_heads;
    const std::string p = "model.layers." + std::to_string(l) + ".";
    norm(p + "input_layernorm.weight", H);
    norm(p + "post_attention_layernorm.weight", H);
    const std::string a = p + "self_attn.";
    if (c.q_lora_rank > 0) {
      matrix(a + "q_a_proj.weight", c.q_lora_rank, H, 1.0 / std::sqrt(H));
      norm(a + "q_a_layernorm.weight", c.q_lora_rank);
      matrix(a + "q_b_proj.weight", h * c.qk_head_dim(), c.q_lora_rank,
             1.0 / std::sqrt(c.q_lora_rank));
    } else {
      matrix(a + "q_proj.weight", h * c.qk_head_dim(), H, 1.0 / std::sqrt(H));
    }
    matrix(a + "kv_a_proj_with_mqa.weight", c.latent_dim(), H, 1.0 / std::sqrt(H));
    norm(a + "kv_a_layernorm.weight", c.kv_lora_rank);
    matrix(a + "kv_b_proj.weight", h * (c.qk_nope_head_dim + c.v_head_dim), c.kv_lora_rank,
           1.0 / std::sqrt(c.kv_lora_rank));
    matrix(a + "o_proj.weight", H, h * c.v_head_dim, 0.5 / std::sqrt(h * c.v_head_dim));
    if (!c.is_moe_layer(l)) {
      mlp(p + "mlp.", c.intermediate_size, 0.5);
      return;
    }
    matrix(p + "mlp.gate.weight", c.n_routed_experts, H, 1.5 / std::sqrt(H));
    if (c.topk_method == TopkMethod::kNoauxTc)
      bias(p + "mlp.gate.e_score_correction_bias", c.n_routed_experts);
    for (int e = 0; e < c.n_routed_experts; ++e) {
      mlp(p + "mlp.experts." + std::to_string(e) + ".", c.moe_intermediate_size, 0.5);
    }
    if (c.n_shared_experts > 0) {
      mlp(p + "mlp.shared_experts.", c.moe_intermediate_size * c.n_shared_experts, 0.5);
    }
  }
  std::map<std::string, MasterTensor> run() {
    const ModelConfig& c = c_;
    const int H = c.hidden_size;
    matrix("model.embed_tokens.weight", c.vocab_size, H, 1.0);
    for (int l = 0; l < c.num_hidden_layers; ++l) layer(l);
    norm("model.norm.weight", H);
    matrix("lm_head.weight", c.vocab_size, H, 2.0 / std::sqrt(H));
    if (c.num_nextn_predict_layers > 0) {
      const std::string p = "model.layers." + std::to_string(c.num_hidden_layers) + ".";
      norm(p + "enorm.weight", H);
      norm(p + "hnorm.weight", H);
      matrix(p + "eh_proj.weight", H, 2 * H, 1.0 / std::sqrt(2 * H));
      norm(p + "shared_head.norm.weight", H);
      layer(c.num_hidden_layers);
    }
    return std::move(out_);
  }

 private:
  const ModelConfig& c_;
  Rng rng_;
  std::map<std::string, MasterTensor> out_;
};

Status write_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) return make_error(ErrorCode::kIo, "cannot write " + p.string());
  return ok_status();
}

// tokenizer.ggml.* from tokenizer.json (+ tokenizer_config.json for BOS/EOS), as llama.cpp's
// converter builds them for a BPE vocabulary: tokens by id ("[PAD<i>]" for holes), types
// (1 normal, 3 control, 4 user-defined, 5 unused), merges "a b".
Status tokenizer_kv(const TokenizerFiles& tok, int vocab_size, std::vector<GgufKv>& kv) {
  namespace json = boost::json;
  boost::system::error_code ec;
  auto root = json::parse(tok.tokenizer_json, ec);
  if (ec || !root.is_object())
    return make_error(ErrorCode::kInvalidArgument, "tokenizer.json: not JSON");
  const auto* model = root.as_object().if_contains("model");
  if (!model || !model->is_object())
    return make_error(ErrorCode::kInvalidArgument, "tokenizer.json: no model");
  std::vector<std::string> tokens(z(vocab_size));
  std::vector<std::int32_t> types(z(vocab_size), 5);
  for (int i = 0; i < vocab_size; ++i) tokens[z(i)] = "[PAD" + std::to_string(i) + "]";
  if (const auto* vocab = model->as_object().if_contains("vocab"); vocab && vocab->is_object()) {
    for (const auto& [k, v] : vocab->as_object()) {
      if (v.is_int64() && v.as_int64() >= 0 && v.as_int64() < vocab_size) {
        tokens[z(v.as_int64())] = std::string(k);
        types[z(v.as_int64())] = 1;
      }
    }
  }
  std::optional<std::int64_t> bos, eos;
  std::string bos_text, eos_text;
  if (!tok.tokenizer_config_json.empty()) {
    auto cfg = json::parse(tok.tokenizer_config_json, ec);
    if (!ec && cfg.is_object()) {
      auto text_of = [](const json::value* v) -> std::string {
        if (!v) return "";
        if (v->is_string()) return std::string(v->as_string());
        if (v->is_object()) {
          if (const auto* c = v->as_object().if_contains("content"); c && c->is_string())
            return std::string(c->as_string());
        }
        return "";
      };
      bos_text = text_of(cfg.as_object().if_contains("bos_token"));
      eos_text = text_of(cfg.as_object().if_contains("eos_token"));
      if (const auto* t = cfg.as_object().if_contains("chat_template"); t && t->is_string()) {
        kv.push_back({"tokenizer.chat_template", gguf_string(std::string(t->as_string()))});
      }
    }
  }
  if (const auto* added = root.as_object().if_contains("added_tokens");
      added && added->is_array()) {
    for (const auto& a : added->as_array()) {
      if (!a.is_object()) continue;
      const auto* id = a.as_object().if_contains("id");
      const auto* content = a.as_object().if_contains("content");
      const auto* special = a.as_object().if_contains("special");
      if (!id || !id->is_int64() || !content || !content->is_string()) continue;
      const auto i = id->as_int64();
      if (i < 0 || i >= vocab_size) continue;
      tokens[z(i)] = std::string(content->as_string());
      types[z(i)] = special && special->is_bool() && special->as_bool() ? 3 : 4;
      if (tokens[z(i)] == bos_text) bos = i;
      if (tokens[z(i)] == eos_text) eos = i;
    }
  }
  std::vector<std::string> merges;
  if (const auto* m = model->as_object().if_contains("merges"); m && m->is_array()) {
    for (const auto& e : m->as_array()) {
      if (e.is_string()) {
        merges.emplace_back(e.as_string());
      } else if (e.is_array() && e.as_array().size() == 2 && e.as_array()[0].is_string() &&
                 e.as_array()[1].is_string()) {
        merges.push_back(std::string(e.as_array()[0].as_string()) + " " +
                         std::string(e.as_array()[1].as_string()));
      }
    }
  }
  kv.push_back({"tokenizer.ggml.model", gguf_string("gpt2")});
  kv.push_back({"tokenizer.ggml.pre", gguf_string("deepseek-v3")});
  kv.push_back({"tokenizer.ggml.tokens", gguf_string_array(std::move(tokens))});
  kv.push_back({"tokenizer.ggml.token_type", gguf_i32_array(types)});
  kv.push_back({"tokenizer.ggml.merges", gguf_string_array(std::move(merges))});
  if (bos)
    kv.push_back({"tokenizer.ggml.bos_token_id", gguf_u32(static_cast<std::uint32_t>(*bos))});
  if (eos)
    kv.push_back({"tokenizer.ggml.eos_token_id", gguf_u32(static_cast<std::uint32_t>(*eos))});
  kv.push_back({"tokenizer.ggml.add_bos_token", gguf_bool(bos.has_value())});
  kv.push_back({"tokenizer.ggml.add_eos_token", gguf_bool(false)});
  return ok_status();
}

}  // namespace

Result<ModelConfig> preset_config(Arch arch, std::string_view preset) {
  ModelConfig c;
  c.arch = arch;
  if (preset == "micro") {
    c.vocab_size = 512;
    c.hidden_size = 64;
    c.intermediate_size = 128;
    c.moe_intermediate_size = 32;
    c.num_hidden_layers = 3;
    c.num_attention_heads = 4;
    c.q_lora_rank = 32;
    c.kv_lora_rank = 64;
    c.qk_nope_head_dim = 16;
    c.qk_rope_head_dim = 16;
    c.v_head_dim = 16;
    c.n_routed_experts = 8;
    c.n_shared_experts = 1;
    c.num_experts_per_tok = 3;
    c.n_group = 4;
    c.topk_group = 2;
    c.first_k_dense_replace = 1;
  } else if (preset == "tiny") {
    c.vocab_size = 129280;
    c.hidden_size = 256;
    c.intermediate_size = 512;
    c.moe_intermediate_size = 128;
    c.num_hidden_layers = 4;
    c.num_attention_heads = 8;
    c.q_lora_rank = 128;
    c.kv_lora_rank = 128;
    c.qk_nope_head_dim = 32;
    c.qk_rope_head_dim = 32;
    c.v_head_dim = 32;
    c.n_routed_experts = 16;
    c.n_shared_experts = 1;
    c.num_experts_per_tok = 4;
    c.n_group = 4;
    c.topk_group = 2;
    c.first_k_dense_replace = 1;
  } else if (preset == "small") {
    c.vocab_size = 129280;
    c.hidden_size = 1024;
    c.intermediate_size = 2816;
    c.moe_intermediate_size = 256;
    c.num_hidden_layers = 8;
    c.num_attention_heads = 16;
    c.q_lora_rank = 384;
    c.kv_lora_rank = 512;
    c.qk_nope_head_dim = 128;
    c.qk_rope_head_dim = 64;
    c.v_head_dim = 128;
    c.n_routed_experts = 64;
    c.n_shared_experts = 1;
    c.num_experts_per_tok = 6;
    c.n_group = 8;
    c.topk_group = 4;
    c.first_k_dense_replace = 1;
  } else {
    return make_error(ErrorCode::kInvalidArgument,
                      "unknown preset '" + std::string(preset) + "' (micro, tiny, small)");
  }
  c.max_position_embeddings = 163840;
  c.rope_theta = 10000.0;
  c.rms_norm_eps = 1e-6;
  c.num_nextn_predict_layers = 1;
  c.rope_scaling.yarn = true;  // DeepSeek-V3's own rope_scaling
  c.rope_scaling.factor = 40.0;
  c.rope_scaling.original_max_position_embeddings = 4096;
  c.rope_scaling.beta_fast = 32.0;
  c.rope_scaling.beta_slow = 1.0;
  c.rope_scaling.mscale = 1.0;
  c.rope_scaling.mscale_all_dim = 1.0;
  if (arch == Arch::kDeepseekV3) {
    c.scoring_func = ScoringFunc::kSigmoid;
    c.topk_method = TopkMethod::kNoauxTc;
    c.norm_topk_prob = true;
    c.routed_scaling_factor = 2.5;
  } else {
    c.scoring_func = ScoringFunc::kSoftmax;
    c.topk_method = TopkMethod::kGroupLimitedGreedy;
    c.norm_topk_prob = false;
    c.routed_scaling_factor = 1.0;
  }
  if (c.vocab_size > 1000) {
    c.bos_token_id = 0;  // <｜begin▁of▁sentence｜>
    c.eos_token_id = 1;  // <｜end▁of▁sentence｜>
  }
  if (auto st = validate(c, preset); !st) return std::move(st).error();
  return c;
}

std::map<std::string, MasterTensor> random_weights(const ModelConfig& config, std::uint64_t seed) {
  return Generator(config, seed).run();
}

Result<std::unique_ptr<MemorySource>> to_source(const std::map<std::string, MasterTensor>& master,
                                                DType dtype) {
  auto src = std::make_unique<MemorySource>();
  for (const auto& [name, t] : master) {
    if (dtype == DType::kF8E4M3 && is_projection(name, t)) {
      std::vector<std::byte> q;
      std::vector<float> scales;
      quantize_fp8(t, q, scales);
      src->add(name, DType::kF8E4M3, t.shape, q);
      const auto sr = (t.shape[0] + kFp8Block - 1) / kFp8Block,
                 sc = (t.shape[1] + kFp8Block - 1) / kFp8Block;
      src->add(name + "_scale_inv", DType::kF32, {sr, sc}, bytes_of(scales));
    } else if (dtype == DType::kF8E4M3) {
      src->add(name, DType::kBF16, t.shape, convert(t.values, DType::kBF16));
    } else if (dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16) {
      src->add(name, dtype, t.shape, convert(t.values, dtype));
    } else {
      return make_error(ErrorCode::kUnsupported,
                        "safetensors checkpoints hold f32, f16, bf16 or f8_e4m3, not " +
                            std::string(dtype_name(dtype)));
    }
  }
  return src;
}

Status write_hf_checkpoint(const std::filesystem::path& dir, const ModelConfig& config,
                           const std::map<std::string, MasterTensor>& master, DType dtype,
                           const TokenizerFiles* tokenizer) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return make_error(ErrorCode::kIo, dir.string() + ": " + ec.message());
  auto src = to_source(master, dtype);
  if (!src) return std::move(src).error();
  std::vector<TensorToWrite> tensors;
  for (const auto& name : (*src)->names()) {
    const TensorView* t = (*src)->find(name);
    tensors.push_back({name, t->dtype, t->shape, {t->data, t->bytes}});
  }
  if (auto st = write_safetensors(dir / "model.safetensors", tensors, {{"format", "pt"}}); !st)
    return st;
  if (auto st = write_file(dir / "config.json", to_config_json(config)); !st) return st;
  if (tokenizer) {
    if (auto st = write_file(dir / "tokenizer.json", tokenizer->tokenizer_json); !st) return st;
    if (!tokenizer->tokenizer_config_json.empty()) {
      if (auto st = write_file(dir / "tokenizer_config.json", tokenizer->tokenizer_config_json);
          !st)
        return st;
    }
  }
  return ok_status();
}

Status write_gguf_checkpoint(const std::filesystem::path& file, const ModelConfig& c,
                             const std::map<std::string, MasterTensor>& master, DType dtype,
                             const TokenizerFiles* tokenizer) {
  if (dtype != DType::kF32 && dtype != DType::kF16 && dtype != DType::kBF16 &&
      dtype != DType::kQ8_0) {
    return make_error(ErrorCode::kUnsupported, "GGUF checkpoints: f32, f16, bf16 or q8_0");
  }
  if (!c.rope_interleave) {
    return make_error(ErrorCode::kUnsupported,
                      "GGUF needs rope_interleave (llama.cpp rotates adjacent pairs)");
  }
  const std::string a = "deepseek2.";
  std::vector<GgufKv> kv = {
      {"general.architecture", gguf_string("deepseek2")},
      {"general.name", gguf_string("omni-make-model")},
      {"general.file_type", gguf_u32(dtype == DType::kF32    ? 0
                                     : dtype == DType::kF16  ? 1
                                     : dtype == DType::kQ8_0 ? 7
                                                             : 32)},
      {a + "block_count", gguf_u32(static_cast<std::uint32_t>(c.num_hidden_layers))},
      {a + "context_length", gguf_u32(static_cast<std::uint32_t>(c.max_position_embeddings))},
      {a + "embedding_length", gguf_u32(static_cast<std::uint32_t>(c.hidden_size))},
      {a + "feed_forward_length", gguf_u32(static_cast<std::uint32_t>(c.intermediate_size))},
      {a + "attention.head_count", gguf_u32(static_cast<std::uint32_t>(c.num_attention_heads))},
      {a + "attention.head_count_kv", gguf_u32(1)},
      {a + "rope.freq_base", gguf_f32(static_cast<float>(c.rope_theta))},
      {a + "attention.layer_norm_rms_epsilon", gguf_f32(static_cast<float>(c.rms_norm_eps))},
      {a + "expert_used_count", gguf_u32(static_cast<std::uint32_t>(c.num_experts_per_tok))},
      {a + "expert_group_count", gguf_u32(static_cast<std::uint32_t>(c.n_group))},
      {a + "expert_group_used_count", gguf_u32(static_cast<std::uint32_t>(c.topk_group))},
      {a + "expert_gating_func", gguf_u32(c.scoring_func == ScoringFunc::kSigmoid ? 2 : 1)},
      {a + "leading_dense_block_count",
       gguf_u32(static_cast<std::uint32_t>(c.first_k_dense_replace))},
      {a + "vocab_size", gguf_u32(static_cast<std::uint32_t>(c.vocab_size))},
      {a + "attention.kv_lora_rank", gguf_u32(static_cast<std::uint32_t>(c.kv_lora_rank))},
      {a + "attention.key_length", gguf_u32(static_cast<std::uint32_t>(c.latent_dim()))},
      {a + "attention.value_length", gguf_u32(static_cast<std::uint32_t>(c.kv_lora_rank))},
      {a + "attention.key_length_mla", gguf_u32(static_cast<std::uint32_t>(c.qk_head_dim()))},
      {a + "attention.value_length_mla", gguf_u32(static_cast<std::uint32_t>(c.v_head_dim))},
      {a + "expert_feed_forward_length",
       gguf_u32(static_cast<std::uint32_t>(c.moe_intermediate_size))},
      {a + "expert_count", gguf_u32(static_cast<std::uint32_t>(c.n_routed_experts))},
      {a + "expert_shared_count", gguf_u32(static_cast<std::uint32_t>(c.n_shared_experts))},
      {a + "expert_weights_scale", gguf_f32(static_cast<float>(c.routed_scaling_factor))},
      {a + "rope.dimension_count", gguf_u32(static_cast<std::uint32_t>(c.qk_rope_head_dim))},
  };
  if (c.q_lora_rank > 0)
    kv.push_back(
        {a + "attention.q_lora_rank", gguf_u32(static_cast<std::uint32_t>(c.q_lora_rank))});
  if (c.norm_topk_prob) kv.push_back({a + "expert_weights_norm", gguf_bool(true)});
  if (c.rope_scaling.yarn) {
    kv.push_back({a + "rope.scaling.type", gguf_string("yarn")});
    kv.push_back({a + "rope.scaling.factor", gguf_f32(static_cast<float>(c.rope_scaling.factor))});
    kv.push_back(
        {a + "rope.scaling.original_context_length",
         gguf_u32(static_cast<std::uint32_t>(c.rope_scaling.original_max_position_embeddings))});
    kv.push_back({a + "rope.scaling.yarn_beta_fast",
                  gguf_f32(static_cast<float>(c.rope_scaling.beta_fast))});
    kv.push_back({a + "rope.scaling.yarn_beta_slow",
                  gguf_f32(static_cast<float>(c.rope_scaling.beta_slow))});
    if (c.rope_scaling.mscale_all_dim != 0.0) {
      kv.push_back({a + "rope.scaling.yarn_log_multiplier",
                    gguf_f32(static_cast<float>(0.1 * c.rope_scaling.mscale_all_dim))});
    }
  }
  if (tokenizer) {
    if (auto st = tokenizer_kv(*tokenizer, c.vocab_size, kv); !st) return st;
  }
  // Tensors, converted from the master f32 values.
  std::vector<std::vector<std::byte>> storage;
  std::vector<TensorToWrite> tensors;
  auto add = [&](const std::string& name, std::vector<std::int64_t> shape,
                 const std::vector<float>& values, bool keep_f32) {
    DType d = keep_f32 || shape.size() == 1 ? DType::kF32 : dtype;
    // Rows that are not whole q8_0 blocks stay f16, as llama.cpp's converter falls back.
    if (d == DType::kQ8_0 && shape.back() % kQ8Block != 0) d = DType::kF16;
    storage.push_back(d == DType::kQ8_0 ? quantize_q8_0(values) : convert(values, d));
    tensors.push_back({name, d, std::move(shape), storage.back()});
  };
  auto m = [&](const std::string& name) -> const MasterTensor& { return master.at(name); };
  storage.reserve(4096);
  add("token_embd.weight", m("model.embed_tokens.weight").shape,
      m("model.embed_tokens.weight").values, false);
  add("output_norm.weight", {c.hidden_size}, m("model.norm.weight").values, true);
  add("output.weight", m("lm_head.weight").shape, m("lm_head.weight").values, false);
  const int h = c.num_attention_heads, nope = c.qk_nope_head_dim, vd = c.v_head_dim,
            lora = c.kv_lora_rank;
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".",
                      g = "blk." + std::to_string(l) + ".";
    auto copy = [&](const std::string& hf, const std::string& gg, bool keep_f32) {
      add(g + gg, m(p + hf).shape, m(p + hf).values, keep_f32);
    };
    copy("input_layernorm.weight", "attn_norm.weight", true);
    copy("post_attention_layernorm.weight", "ffn_norm.weight", true);
    if (c.q_lora_rank > 0) {
      copy("self_attn.q_a_proj.weight", "attn_q_a.weight", false);
      copy("self_attn.q_a_layernorm.weight", "attn_q_a_norm.weight", true);
      copy("self_attn.q_b_proj.weight", "attn_q_b.weight", false);
    } else {
      copy("self_attn.q_proj.weight", "attn_q.weight", false);
    }
    copy("self_attn.kv_a_proj_with_mqa.weight", "attn_kv_a_mqa.weight", false);
    copy("self_attn.kv_a_layernorm.weight", "attn_kv_a_norm.weight", true);
    // kv_b [h][nope + v][lora] -> k_b [h][lora][nope] (transposed) and v_b [h][v][lora].
    const auto& kv_b = m(p + "self_attn.kv_b_proj.weight").values;
    std::vector<float> k_b(z(h) * z(lora) * z(nope)), v_b(z(h) * z(vd) * z(lora));
    for (int hh = 0; hh < h; ++hh) {
      for (int d = 0; d < nope; ++d) {
        for (int i = 0; i < lora; ++i) {
          k_b[(z(hh) * z(lora) + z(i)) * z(nope) + z(d)] =
              kv_b[(z(hh) * z(nope + vd) + z(d)) * z(lora) + z(i)];
        }
      }
      for (int d = 0; d < vd; ++d) {
        for (int i = 0; i < lora; ++i) {
          v_b[(z(hh) * z(vd) + z(d)) * z(lora) + z(i)] =
              kv_b[(z(hh) * z(nope + vd) + z(nope + d)) * z(lora) + z(i)];
        }
      }
    }
    add(g + "attn_k_b.weight", {h, lora, nope}, k_b, false);
    add(g + "attn_v_b.weight", {h, vd, lora}, v_b, false);
    copy("self_attn.o_proj.weight", "attn_output.weight", false);
    if (!c.is_moe_layer(l)) {
      copy("mlp.gate_proj.weight", "ffn_gate.weight", false);
      copy("mlp.up_proj.weight", "ffn_up.weight", false);
      copy("mlp.down_proj.weight", "ffn_down.weight", false);
      continue;
    }
    copy("mlp.gate.weight", "ffn_gate_inp.weight", true);
    if (c.topk_method == TopkMethod::kNoauxTc)
      copy("mlp.gate.e_score_correction_bias", "exp_probs_b.bias", true);
    for (const char* w : {"gate", "up", "down"}) {
      std::vector<float> stacked;
      std::vector<std::int64_t> shape;
      for (int e = 0; e < c.n_routed_experts; ++e) {
        const auto& t = m(p + "mlp.experts." + std::to_string(e) + "." + w + "_proj.weight");
        stacked.insert(stacked.end(), t.values.begin(), t.values.end());
        shape = {c.n_routed_experts, t.shape[0], t.shape[1]};
      }
      add(g + "ffn_" + w + "_exps.weight", shape, stacked, false);
    }
    if (c.n_shared_experts > 0) {
      copy("mlp.shared_experts.gate_proj.weight", "ffn_gate_shexp.weight", false);
      copy("mlp.shared_experts.up_proj.weight", "ffn_up_shexp.weight", false);
      copy("mlp.shared_experts.down_proj.weight", "ffn_down_shexp.weight", false);
    }
  }
  return write_gguf(file, kv, tensors);
}

}  // namespace omni::model
