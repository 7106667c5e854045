// config.json -> ModelConfig, its validation, and the derived RoPE/softmax quantities.
#include <boost/json.hpp>

#include <cmath>
#include <numbers>
#include <sstream>

#include "omni/model/config.hpp"

namespace omni::model {
namespace json = boost::json;
namespace {

struct Reader {
  const json::object& obj;
  std::string source;
  std::vector<std::string> problems;

  void fail(std::string_view key, const std::string& why) {
    problems.push_back(source + ": " + std::string(key) + ": " + why);
  }
  const json::value* get(std::string_view key) const {
    const auto* v = obj.if_contains(key);
    return v && !v->is_null() ? v : nullptr;
  }
  void integer(std::string_view key, int& out, bool required) {
    const auto* v = get(key);
    if (!v) {
      if (required) fail(key, "missing");
      return;
    }
    if (v->is_int64() && v->as_int64() >= 0 && v->as_int64() <= (1LL << 31) - 1) {
      out = static_cast<int>(v->as_int64());
    } else if (v->is_uint64() && v->as_uint64() <= (1ULL << 31) - 1) {
      out = static_cast<int>(v->as_uint64());
    } else {
      fail(key, "expected a non-negative integer, got " + json::serialize(*v));
    }
  }
  void number(std::string_view key, double& out) {
    const auto* v = get(key);
    if (!v) return;
    if (v->is_number()) {
      out = v->to_number<double>();
    } else {
      fail(key, "expected a number, got " + json::serialize(*v));
    }
  }
  void boolean(std::string_view key, bool& out) {
    const auto* v = get(key);
    if (!v) return;
    if (v->is_bool()) {
      out = v->as_bool();
    } else {
      fail(key, "expected true or false, got " + json::serialize(*v));
    }
  }
  std::optional<std::string> string(std::string_view key) {
    const auto* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_string()) {
      fail(key, "expected a string, got " + json::serialize(*v));
      return std::nullopt;
    }
    return std::string(v->as_string());
  }
  std::optional<int> token_id(std::string_view key) {
    const auto* v = get(key);
    if (!v) return std::nullopt;
    const json::value* first = v;
    if (v->is_array()) {
      if (v->as_array().empty()) return std::nullopt;
      first = &v->as_array()[0];
    }
    if (first->is_int64() && first->as_int64() >= 0) return static_cast<int>(first->as_int64());
    fail(key, "expected a token id, got " + json::serialize(*v));
    return std::nullopt;
  }
};

void read_rope_scaling(Reader& r, RopeScaling& out) {
  const auto* v = r.get("rope_scaling");
  if (!v) return;
  if (!v->is_object()) {
    r.fail("rope_scaling", "expected an object or null");
    return;
  }
  Reader s{v->as_object(), r.source + ": rope_scaling", {}};
  auto type = s.string("rope_type");
  if (!type) type = s.string("type");
  if (!type || *type == "default") {
  } else if (*type == "yarn") {
    out.yarn = true;
    s.number("factor", out.factor);
    s.integer("original_max_position_embeddings", out.original_max_position_embeddings, false);
    s.number("beta_fast", out.beta_fast);
    s.number("beta_slow", out.beta_slow);
    s.number("mscale", out.mscale);
    s.number("mscale_all_dim", out.mscale_all_dim);
    double attention = 0.0;
    if (s.get("attention_factor")) {
      s.number("attention_factor", attention);
      out.attention_factor = attention;
    }
    s.boolean("truncate", out.truncate);
    if (!s.get("factor")) s.fail("factor", "missing (required for yarn)");
  } else {
    s.fail("rope_type", "unsupported RoPE scaling '" + *type + "' (yarn or default)");
  }
  for (auto& p : s.problems) r.problems.push_back(std::move(p));
}

double yarn_get_mscale(double scale, double mscale) {
  return scale <= 1.0 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

}  // namespace

std::string_view arch_name(Arch arch) noexcept {
  return arch == Arch::kDeepseekV2 ? "deepseek_v2" : "deepseek_v3";
}

bool ModelConfig::is_moe_layer(int layer) const noexcept {
  return n_routed_experts > 0 && layer >= first_k_dense_replace &&
         (moe_layer_freq <= 1 || layer % moe_layer_freq == 0);
}

double ModelConfig::softmax_scale() const noexcept {
  double scale = 1.0 / std::sqrt(static_cast<double>(qk_head_dim()));
  if (rope_scaling.yarn && rope_scaling.mscale_all_dim != 0.0) {
    const double m = yarn_get_mscale(rope_scaling.factor, rope_scaling.mscale_all_dim);
    scale *= m * m;
  }
  return scale;
}

double ModelConfig::rope_attention_factor() const noexcept {
  if (!rope_scaling.yarn) return 1.0;
  if (rope_scaling.attention_factor) return *rope_scaling.attention_factor;
  const double f = rope_scaling.factor;
  if (rope_scaling.mscale != 0.0 && rope_scaling.mscale_all_dim != 0.0) {
    return yarn_get_mscale(f, rope_scaling.mscale) /
           yarn_get_mscale(f, rope_scaling.mscale_all_dim);
  }
  return yarn_get_mscale(f, 1.0);
}

std::vector<double> ModelConfig::rope_inv_freq() const {
  const int dim = qk_rope_head_dim;
  const int half = dim / 2;
  std::vector<double> inv(static_cast<std::size_t>(half));
  for (int i = 0; i < half; ++i) {
    inv[static_cast<std::size_t>(i)] = 1.0 / std::pow(rope_theta, 2.0 * i / dim);
  }
  if (!rope_scaling.yarn) return inv;
  const double factor = rope_scaling.factor;
  const int original = rope_scaling.original_max_position_embeddings > 0
                           ? rope_scaling.original_max_position_embeddings
                           : max_position_embeddings;
  auto correction_dim = [&](double rotations) {
    return (dim * std::log(original / (rotations * 2.0 * std::numbers::pi))) /
           (2.0 * std::log(rope_theta));
  };
  double low = correction_dim(rope_scaling.beta_fast);
  double high = correction_dim(rope_scaling.beta_slow);
  if (rope_scaling.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(dim - 1));
  if (low == high) high += 0.001;
  for (int i = 0; i < half; ++i) {
    const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);
    const double extrapolation = 1.0 - ramp;
    const double extra = inv[static_cast<std::size_t>(i)];
    const double inter = extra / factor;
    inv[static_cast<std::size_t>(i)] = inter * (1.0 - extrapolation) + extra * extrapolation;
  }
  return inv;
}

Status validate(const ModelConfig& c, std::string_view source) {
  std::vector<std::string> problems;
  auto check = [&](bool ok, std::string_view key, const std::string& why) {
    if (!ok) problems.push_back(std::string(source) + ": " + std::string(key) + ": " + why);
  };
  check(c.vocab_size > 0, "vocab_size", "must be > 0");
  check(c.hidden_size > 0, "hidden_size", "must be > 0");
  check(c.num_hidden_layers > 0, "num_hidden_layers", "must be > 0");
  check(c.num_attention_heads > 0, "num_attention_heads", "must be > 0");
  check(c.kv_lora_rank > 0, "kv_lora_rank", "must be > 0");
  check(c.kv_lora_rank % 64 == 0, "kv_lora_rank",
        "must be a multiple of 64 (the AMLA kernel's value width), got " +
            std::to_string(c.kv_lora_rank));
  check(c.qk_rope_head_dim > 0 && c.qk_rope_head_dim % 2 == 0, "qk_rope_head_dim",
        "must be even and > 0");
  check(c.qk_nope_head_dim > 0, "qk_nope_head_dim", "must be > 0");
  check(c.v_head_dim > 0, "v_head_dim", "must be > 0");
  check(c.rms_norm_eps > 0, "rms_norm_eps", "must be > 0");
  check(c.rope_theta > 1, "rope_theta", "must be > 1");
  if (c.n_routed_experts > 0) {
    check(c.moe_intermediate_size > 0, "moe_intermediate_size", "must be > 0 with experts");
    check(c.num_experts_per_tok > 0 && c.num_experts_per_tok <= c.n_routed_experts,
          "num_experts_per_tok",
          "must be in 1..n_routed_experts (got " + std::to_string(c.num_experts_per_tok) + " > " +
              std::to_string(c.n_routed_experts) + ")");
    check(c.n_group > 0 && c.n_routed_experts % c.n_group == 0, "n_group",
          "must divide n_routed_experts");
    check(c.topk_group > 0 && c.topk_group <= c.n_group, "topk_group", "must be in 1..n_group");
    if (c.n_group > 0 && c.topk_group > 0 && c.n_routed_experts % c.n_group == 0) {
      check(c.topk_group * (c.n_routed_experts / c.n_group) >= c.num_experts_per_tok, "topk_group",
            "the chosen groups hold fewer experts than num_experts_per_tok");
      if (c.topk_method == TopkMethod::kNoauxTc) {
        check(c.n_routed_experts / c.n_group >= 2, "n_group",
              "noaux_tc scores a group by its top two experts: groups need >= 2 experts");
      }
    }
  }
  if (c.first_k_dense_replace > 0 || c.n_routed_experts == 0) {
    check(c.intermediate_size > 0, "intermediate_size", "must be > 0 for dense layers");
  }
  check(c.first_k_dense_replace <= c.num_hidden_layers, "first_k_dense_replace",
        "must be <= num_hidden_layers");
  if (c.rope_scaling.yarn) {
    check(c.rope_scaling.factor >= 1.0, "rope_scaling.factor", "must be >= 1");
    check(c.rope_scaling.beta_fast > 0 && c.rope_scaling.beta_slow > 0, "rope_scaling.beta_fast",
          "beta_fast and beta_slow must be > 0");
  }
  if (c.bos_token_id)
    check(*c.bos_token_id < c.vocab_size, "bos_token_id", "outside the vocabulary");
  if (c.eos_token_id)
    check(*c.eos_token_id < c.vocab_size, "eos_token_id", "outside the vocabulary");
  if (problems.empty()) return ok_status();
  std::string message;
  for (const auto& p : problems) message += (message.empty() ? "" : "\n") + p;
  return make_error(ErrorCode::kInvalidArgument, message);
}

Result<ModelConfig> parse_config_json(std::string_view text, std::string_view source) {
  boost::system::error_code ec;
  json::value root = json::parse(text, ec);
  if (ec) {
    return make_error(ErrorCode::kInvalidArgument,
                      std::string(source) + ": not valid JSON: " + ec.message());
  }
  if (!root.is_object()) {
    return make_error(ErrorCode::kInvalidArgument, std::string(source) + ": expected an object");
  }
  Reader r{root.as_object(), std::string(source), {}};
  ModelConfig c;
  const auto type = r.string("model_type");
  if (!type) {
    return make_error(ErrorCode::kInvalidArgument, std::string(source) + ": model_type: missing");
  }
  if (*type == "deepseek_v3" || *type == "kimi_k2") {
    c.arch = Arch::kDeepseekV3;
  } else if (*type == "deepseek_v2") {
    c.arch = Arch::kDeepseekV2;
    c.scoring_func = ScoringFunc::kSoftmax;
    c.topk_method = TopkMethod::kGreedy;
    c.norm_topk_prob = false;
  } else {
    return make_error(ErrorCode::kUnsupported,
                      std::string(source) + ": model_type: unsupported architecture '" + *type +
                          "' (supported: deepseek_v3, deepseek_v2)");
  }
  r.integer("vocab_size", c.vocab_size, true);
  r.integer("hidden_size", c.hidden_size, true);
  r.integer("intermediate_size", c.intermediate_size, false);
  r.integer("moe_intermediate_size", c.moe_intermediate_size, false);
  r.integer("num_hidden_layers", c.num_hidden_layers, true);
  r.integer("num_attention_heads", c.num_attention_heads, true);
  r.integer("q_lora_rank", c.q_lora_rank, false);
  r.integer("kv_lora_rank", c.kv_lora_rank, true);
  r.integer("qk_nope_head_dim", c.qk_nope_head_dim, true);
  r.integer("qk_rope_head_dim", c.qk_rope_head_dim, true);
  r.integer("v_head_dim", c.v_head_dim, true);
  r.integer("n_routed_experts", c.n_routed_experts, false);
  r.integer("n_shared_experts", c.n_shared_experts, false);
  r.integer("num_experts_per_tok", c.num_experts_per_tok, false);
  r.integer("n_group", c.n_group, false);
  r.integer("topk_group", c.topk_group, false);
  r.integer("first_k_dense_replace", c.first_k_dense_replace, false);
  r.integer("moe_layer_freq", c.moe_layer_freq, false);
  r.integer("max_position_embeddings", c.max_position_embeddings, false);
  r.integer("num_nextn_predict_layers", c.num_nextn_predict_layers, false);
  if (auto s = r.string("scoring_func")) {
    if (*s == "sigmoid") {
      c.scoring_func = ScoringFunc::kSigmoid;
    } else if (*s == "softmax") {
      c.scoring_func = ScoringFunc::kSoftmax;
    } else {
      r.fail("scoring_func", "unsupported '" + *s + "' (sigmoid, softmax)");
    }
  }
  if (auto s = r.string("topk_method")) {
    if (*s == "noaux_tc") {
      c.topk_method = TopkMethod::kNoauxTc;
    } else if (*s == "greedy") {
      c.topk_method = TopkMethod::kGreedy;
    } else if (*s == "group_limited_greedy") {
      c.topk_method = TopkMethod::kGroupLimitedGreedy;
    } else {
      r.fail("topk_method", "unsupported '" + *s + "' (noaux_tc, greedy, group_limited_greedy)");
    }
  }
  r.boolean("norm_topk_prob", c.norm_topk_prob);
  r.number("routed_scaling_factor", c.routed_scaling_factor);
  r.number("rms_norm_eps", c.rms_norm_eps);
  r.number("rope_theta", c.rope_theta);
  r.boolean("rope_interleave", c.rope_interleave);
  r.boolean("tie_word_embeddings", c.tie_word_embeddings);
  c.bos_token_id = r.token_id("bos_token_id");
  c.eos_token_id = r.token_id("eos_token_id");
  read_rope_scaling(r, c.rope_scaling);
  if (!r.problems.empty()) {
    std::string message;
    for (const auto& p : r.problems) message += (message.empty() ? "" : "\n") + p;
    return make_error(ErrorCode::kInvalidArgument, message);
  }
  if (auto st = validate(c, source); !st) return std::move(st).error();
  return c;
}

std::string to_config_json(const ModelConfig& c) {
  json::object o;
  o["architectures"] =
      json::array{c.arch == Arch::kDeepseekV2 ? "DeepseekV2ForCausalLM" : "DeepseekV3ForCausalLM"};
  o["model_type"] = arch_name(c.arch);
  o["vocab_size"] = c.vocab_size;
  o["hidden_size"] = c.hidden_size;
  o["intermediate_size"] = c.intermediate_size;
  o["moe_intermediate_size"] = c.moe_intermediate_size;
  o["num_hidden_layers"] = c.num_hidden_layers;
  o["num_attention_heads"] = c.num_attention_heads;
  o["num_key_value_heads"] = c.num_attention_heads;
  if (c.q_lora_rank > 0) {
    o["q_lora_rank"] = c.q_lora_rank;
  } else {
    o["q_lora_rank"] = nullptr;
  }
  o["kv_lora_rank"] = c.kv_lora_rank;
  o["qk_nope_head_dim"] = c.qk_nope_head_dim;
  o["qk_rope_head_dim"] = c.qk_rope_head_dim;
  o["v_head_dim"] = c.v_head_dim;
  o["n_routed_experts"] = c.n_routed_experts;
  o["n_shared_experts"] = c.n_shared_experts;
  o["num_experts_per_tok"] = c.num_experts_per_tok;
  o["n_group"] = c.n_group;
  o["topk_group"] = c.topk_group;
  o["first_k_dense_replace"] = c.first_k_dense_replace;
  o["moe_layer_freq"] = c.moe_layer_freq;
  o["scoring_func"] = c.scoring_func == ScoringFunc::kSigmoid ? "sigmoid" : "softmax";
  o["topk_method"] = c.topk_method == TopkMethod::kNoauxTc  ? "noaux_tc"
                     : c.topk_method == TopkMethod::kGreedy ? "greedy"
                                                            : "group_limited_greedy";
  o["norm_topk_prob"] = c.norm_topk_prob;
  o["routed_scaling_factor"] = c.routed_scaling_factor;
  o["rms_norm_eps"] = c.rms_norm_eps;
  o["rope_theta"] = c.rope_theta;
  o["max_position_embeddings"] = c.max_position_embeddings;
  o["rope_interleave"] = c.rope_interleave;
  o["num_nextn_predict_layers"] = c.num_nextn_predict_layers;
  o["tie_word_embeddings"] = c.tie_word_embeddings;
  o["hidden_act"] = "silu";
  o["torch_dtype"] = "bfloat16";
  if (c.bos_token_id) o["bos_token_id"] = *c.bos_token_id;
  if (c.eos_token_id) o["eos_token_id"] = *c.eos_token_id;
  if (c.rope_scaling.yarn) {
    json::object rs;
    rs["type"] = "yarn";
    rs["rope_type"] = "yarn";
    rs["factor"] = c.rope_scaling.factor;
    rs["original_max_position_embeddings"] = c.rope_scaling.original_max_position_embeddings;
    rs["beta_fast"] = c.rope_scaling.beta_fast;
    rs["beta_slow"] = c.rope_scaling.beta_slow;
    if (c.rope_scaling.mscale != 0.0) rs["mscale"] = c.rope_scaling.mscale;
    if (c.rope_scaling.mscale_all_dim != 0.0) rs["mscale_all_dim"] = c.rope_scaling.mscale_all_dim;
    o["rope_scaling"] = std::move(rs);
  } else {
    o["rope_scaling"] = nullptr;
  }
  return json::serialize(o);
}

}  // namespace omni::model
