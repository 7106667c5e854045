// Model and hardware profiles: YAML parsing (yaml-cpp) and the built-in, embedded set.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "embedded_profiles.hpp"
#include "omni/engine/cost_model.hpp"

namespace omni::engine {
namespace {

// Reads optional scalar `key` of `node` into `out`; a present key of the wrong type is an error
// that names the key.
template <class T>
Status read_key(const YAML::Node& node, const char* key, T& out) {
  const YAML::Node value = node[key];
  if (!value) return ok_status();
  try {
    out = value.as<T>();
  } catch (const YAML::Exception& e) {
    return make_error(ErrorCode::kInvalidArgument, std::string(key) + ": " + e.what());
  }
  return ok_status();
}

Result<YAML::Node> parse_yaml(std::string_view text) {
  try {
    YAML::Node root = YAML::Load(std::string(text));
    if (!root.IsMap()) return make_error(ErrorCode::kInvalidArgument, "profile: not a mapping");
    return root;
  } catch (const YAML::Exception& e) {
    return make_error(ErrorCode::kInvalidArgument, std::string("profile: ") + e.what());
  }
}

#define OMNI_READ(node, key, field)                      \
  do {                                                   \
    if (Status st_ = read_key(node, key, field); !st_) { \
      return std::move(st_).error();                     \
    }                                                    \
  } while (false)

Status read_model_shapes(const YAML::Node& n, ModelProfile& m) {
  OMNI_READ(n, "num_layers", m.num_layers);
  OMNI_READ(n, "num_dense_layers", m.num_dense_layers);
  OMNI_READ(n, "hidden_size", m.hidden_size);
  OMNI_READ(n, "num_heads", m.num_heads);
  OMNI_READ(n, "num_kv_heads", m.num_kv_heads);
  OMNI_READ(n, "head_dim", m.head_dim);
  OMNI_READ(n, "q_lora_rank", m.q_lora_rank);
  OMNI_READ(n, "kv_lora_rank", m.kv_lora_rank);
  OMNI_READ(n, "rope_dim", m.rope_dim);
  OMNI_READ(n, "nope_dim", m.nope_dim);
  OMNI_READ(n, "v_head_dim", m.v_head_dim);
  OMNI_READ(n, "num_experts", m.num_experts);
  OMNI_READ(n, "num_shared_experts", m.num_shared_experts);
  OMNI_READ(n, "experts_per_token", m.experts_per_token);
  OMNI_READ(n, "expert_intermediate", m.expert_intermediate);
  OMNI_READ(n, "dense_intermediate", m.dense_intermediate);
  OMNI_READ(n, "vocab_size", m.vocab_size);
  OMNI_READ(n, "num_mtp_layers", m.num_mtp_layers);
  OMNI_READ(n, "bytes_per_param", m.bytes_per_param);
  OMNI_READ(n, "kv_bytes_per_elem", m.kv_bytes_per_elem);
  OMNI_READ(n, "max_model_len", m.max_model_len);
  OMNI_READ(n, "output_length_mean", m.output_length_mean);
  OMNI_READ(n, "output_length_sd", m.output_length_sd);
  OMNI_READ(n, "output_length_min", m.output_length_min);
  OMNI_READ(n, "aliases", m.aliases);
  return ok_status();
}

Status check_model(const ModelProfile& m) {
  auto bad = [](const std::string& what) {
    return make_error(ErrorCode::kInvalidArgument, "model profile: " + what);
  };
  if (m.name.empty()) return bad("name: required");
  if (m.num_layers == 0 || m.hidden_size == 0 || m.num_heads == 0 || m.vocab_size == 0) {
    return bad("num_layers, hidden_size, num_heads and vocab_size must be positive");
  }
  if (m.num_dense_layers > m.num_layers) return bad("num_dense_layers: more than num_layers");
  if (m.attention == AttentionKind::kMla && (m.kv_lora_rank == 0 || m.v_head_dim == 0)) {
    return bad("mla: kv_lora_rank and v_head_dim must be positive");
  }
  if (m.attention == AttentionKind::kGqa && (m.num_kv_heads == 0 || m.head_dim == 0)) {
    return bad("gqa: num_kv_heads and head_dim must be positive");
  }
  const bool has_moe = m.num_dense_layers < m.num_layers;
  if (has_moe && (m.num_experts == 0 || m.experts_per_token == 0 ||
                  m.experts_per_token > m.num_experts || m.expert_intermediate == 0)) {
    return bad("moe layers need num_experts >= experts_per_token > 0 and expert_intermediate");
  }
  if (m.num_dense_layers > 0 && m.dense_intermediate == 0) {
    return bad("dense_intermediate: required with dense layers");
  }
  if (!(m.bytes_per_param > 0) || !(m.kv_bytes_per_elem > 0)) {
    return bad("bytes_per_param and kv_bytes_per_elem must be positive");
  }
  if (!(m.output_length_mean >= 1) || !(m.output_length_sd >= 0) || m.output_length_min == 0) {
    return bad("output_length_mean >= 1, output_length_sd >= 0 and output_length_min >= 1");
  }
  return ok_status();
}

Status check_hardware(const HardwareProfile& h) {
  if (h.name.empty()) return make_error(ErrorCode::kInvalidArgument, "hardware profile: name");
  if (!(h.dense_tflops > 0) || !(h.hbm_tbps > 0) || !(h.hbm_gib > 0)) {
    return make_error(ErrorCode::kInvalidArgument,
                      "hardware profile: dense_tflops, hbm_tbps, hbm_gib must be positive");
  }
  if (!(h.mfu > 0 && h.mfu <= 1) || !(h.mbu > 0 && h.mbu <= 1) ||
      !(h.comm_efficiency > 0 && h.comm_efficiency <= 1)) {
    return make_error(ErrorCode::kInvalidArgument,
                      "hardware profile: mfu, mbu, comm_efficiency must be in (0, 1]");
  }
  if (!(h.attention_mfu >= 0 && h.attention_mfu <= 1) || h.devices_per_node == 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "hardware profile: attention_mfu in [0, 1], devices_per_node > 0");
  }
  if (h.step_overhead_s < 0 || h.interconnect_gbps < 0 || h.scaleup_gbps < 0) {
    return make_error(ErrorCode::kInvalidArgument, "hardware profile: negative value");
  }
  return ok_status();
}

bool name_matches(std::string_view want, const std::string& name,
                  const std::vector<std::string>& aliases) {
  if (want == name) return true;
  return std::find(aliases.begin(), aliases.end(), want) != aliases.end();
}

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::kNotFound, "cannot open profile " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool looks_like_path(const std::string& s) {
  return s.find('/') != std::string::npos || s.ends_with(".yaml") || s.ends_with(".yml");
}

}  // namespace

Result<ModelProfile> parse_model_profile(std::string_view yaml_text) {
  auto root = parse_yaml(yaml_text);
  if (!root) return std::move(root).error();
  const YAML::Node& n = root.value();
  ModelProfile m;
  OMNI_READ(n, "name", m.name);
  std::string attention = "mla";
  OMNI_READ(n, "attention", attention);
  if (attention == "mla") {
    m.attention = AttentionKind::kMla;
  } else if (attention == "gqa") {
    m.attention = AttentionKind::kGqa;
  } else {
    return make_error(ErrorCode::kInvalidArgument, "attention: must be mla or gqa");
  }
  if (Status st = read_model_shapes(n, m); !st) return std::move(st).error();
  if (Status st = check_model(m); !st) return std::move(st).error();
  return m;
}

Result<HardwareProfile> parse_hardware_profile(std::string_view yaml_text) {
  auto root = parse_yaml(yaml_text);
  if (!root) return std::move(root).error();
  const YAML::Node& n = root.value();
  HardwareProfile h;
  OMNI_READ(n, "name", h.name);
  OMNI_READ(n, "dense_tflops", h.dense_tflops);
  OMNI_READ(n, "fp8_tflops", h.fp8_tflops);
  OMNI_READ(n, "hbm_tbps", h.hbm_tbps);
  OMNI_READ(n, "hbm_gib", h.hbm_gib);
  OMNI_READ(n, "interconnect_gbps", h.interconnect_gbps);
  OMNI_READ(n, "scaleup_gbps", h.scaleup_gbps);
  OMNI_READ(n, "mfu", h.mfu);
  OMNI_READ(n, "mbu", h.mbu);
  OMNI_READ(n, "comm_efficiency", h.comm_efficiency);
  OMNI_READ(n, "step_overhead_s", h.step_overhead_s);
  OMNI_READ(n, "attention_mfu", h.attention_mfu);
  OMNI_READ(n, "devices_per_node", h.devices_per_node);
  if (Status st = check_hardware(h); !st) return std::move(st).error();
  return h;
}

#undef OMNI_READ

Result<ModelProfile> builtin_model_profile(std::string_view name) {
  for (const auto& file : embedded::model_files()) {
    auto profile = parse_model_profile(file.yaml);
    if (!profile) {
      return make_error(ErrorCode::kInternal, "built-in model profile " + std::string(file.stem) +
                                                  ": " + profile.error().message);
    }
    if (name_matches(name, profile->name, profile->aliases)) {
      // An alias keeps its own name (deepseek-r1 reports as deepseek-r1).
      profile->name = std::string(name);
      return profile;
    }
  }
  return make_error(ErrorCode::kNotFound, "unknown model profile: " + std::string(name));
}

Result<HardwareProfile> builtin_hardware_profile(std::string_view name) {
  for (const auto& file : embedded::hardware_files()) {
    auto profile = parse_hardware_profile(file.yaml);
    if (!profile) {
      return make_error(
          ErrorCode::kInternal,
          "built-in hardware profile " + std::string(file.stem) + ": " + profile.error().message);
    }
    if (profile->name == name) return profile;
  }
  return make_error(ErrorCode::kNotFound, "unknown hardware profile: " + std::string(name));
}

Result<ModelProfile> load_model_profile(const std::string& path_or_name) {
  if (!looks_like_path(path_or_name) || !std::filesystem::exists(path_or_name)) {
    auto builtin = builtin_model_profile(path_or_name);
    if (builtin || !looks_like_path(path_or_name)) return builtin;
  }
  auto text = read_file(path_or_name);
  if (!text) return std::move(text).error();
  return parse_model_profile(text.value());
}

Result<HardwareProfile> load_hardware_profile(const std::string& path_or_name) {
  if (!looks_like_path(path_or_name) || !std::filesystem::exists(path_or_name)) {
    auto builtin = builtin_hardware_profile(path_or_name);
    if (builtin || !looks_like_path(path_or_name)) return builtin;
  }
  auto text = read_file(path_or_name);
  if (!text) return std::move(text).error();
  return parse_hardware_profile(text.value());
}

std::vector<std::string> builtin_model_names() {
  std::vector<std::string> names;
  for (const auto& file : embedded::model_files()) {
    auto profile = parse_model_profile(file.yaml);
    if (!profile) continue;
    names.push_back(profile->name);
    for (const auto& alias : profile->aliases) names.push_back(alias);
  }
  return names;
}

std::vector<std::string> builtin_hardware_names() {
  std::vector<std::string> names;
  for (const auto& file : embedded::hardware_files()) {
    auto profile = parse_hardware_profile(file.yaml);
    if (profile) names.push_back(profile->name);
  }
  return names;
}

}  // namespace omni::engine
