#include "sim/sim_config.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <cctype>

namespace omni::sim {
namespace json = boost::json;

void describe(config::Schema<SimConfig>& s) {
  s.field("host", &SimConfig::host, "Address to listen on (vLLM --host)").non_empty();
  s.field("port", &SimConfig::port, "TCP port; 0 picks a free one, printed at start (vLLM --port)");
  s.field("model", &SimConfig::model, "Model name or path, as vLLM's --model").non_empty();
  s.field("served_model_name", &SimConfig::served_model_name,
          "Names the API accepts (vLLM --served-model-name); default: --model");
  s.field("model_profile", &SimConfig::model_profile,
          "Engine-model profile (name or YAML path); default: guessed from --model");
  s.field("hardware", &SimConfig::hardware,
          "Hardware profile (h800, h200, ascend-910c or a YAML path)")
      .non_empty();
  s.field("max_num_seqs", &SimConfig::max_num_seqs, "Most sequences per step (vLLM)")
      .range(1, 1u << 20);
  s.field("max_num_batched_tokens", &SimConfig::max_num_batched_tokens,
          "Token budget per step (vLLM)")
      .range(1, 1u << 24);
  s.field("block_size", &SimConfig::block_size, "Tokens per KV block (vLLM)").range(1, 4096);
  s.field("num_gpu_blocks_override", &SimConfig::num_gpu_blocks_override,
          "KV blocks; default: what fits in the hardware's memory (vLLM)");
  s.field("max_model_len", &SimConfig::max_model_len,
          "Context length; default: the profile's (vLLM)");
  s.field("tensor_parallel_size", &SimConfig::tensor_parallel_size,
          "TP size (vLLM); unset with --data-parallel-size: the smallest layout that fits")
      .range(1, 1024);
  s.field("data_parallel_size", &SimConfig::data_parallel_size, "DP size (vLLM)").range(1, 1024);
  s.field("enable_expert_parallel", &SimConfig::enable_expert_parallel,
          "Shard experts over TP x DP (vLLM)");
  s.field("enable_prefix_caching", &SimConfig::enable_prefix_caching,
          "Prefix caching (vLLM; on by default)");
  s.field("prefix_caching_hash_algo", &SimConfig::prefix_caching_hash_algo,
          "sha256, sha256_cbor, xxhash or xxhash_cbor (vLLM); root from $PYTHONHASHSEED")
      .check([](const std::string& v) -> Status {
        auto algo = kvcache::parse_hash_algo(v);
        if (!algo) return std::move(algo).error();
        return ok_status();
      });
  s.field("num_speculative_tokens", &SimConfig::num_speculative_tokens,
          "MTP draft tokens per step (0: off)")
      .range(0, 16);
  s.field("speculative_acceptance_rate", &SimConfig::speculative_acceptance_rate,
          "Acceptance rate of each MTP draft token")
      .range(0.0, 1.0);
  s.field("kv_events_config", &SimConfig::kv_events_config, "KV events, vLLM's JSON form");
  s.field("kv_transfer_config", &SimConfig::kv_transfer_config,
          "KV connector, vLLM's JSON form (PD)");
  s.field("tokenizer", &SimConfig::tokenizer,
          "Hugging Face tokenizer.json for prompts and generated text; default: a built-in codec");
  s.field("seed", &SimConfig::seed, "Seed of the engine model and of the generated text");
  s.field("speed", &SimConfig::speed, "Run the model clock this many times faster than wall time")
      .range(0.001, 1e9);
  s.field("kv_link_gbps", &SimConfig::kv_link_gbps,
          "PD KV-transfer link bandwidth in gigabits per second (omni-cluster's default: one 400 "
          "Gb/s NIC)")
      .range(0.001, 1e6);
  s.field("request_timeout", &SimConfig::request_timeout, "Longest a request may take (wall time)")
      .min(1ms);
  s.field("disaggregation_mode", &SimConfig::disaggregation_mode,
          "SGLang PD role for requests with bootstrap_host/port/room: null, prefill or decode")
      .check([](const std::string& v) -> Status {
        if (v == "null" || v == "prefill" || v == "decode") return ok_status();
        return make_error(ErrorCode::kInvalidArgument,
                          "expected null, prefill or decode, got '" + v + "'");
      });
  s.field("disaggregation_bootstrap_port", &SimConfig::disaggregation_bootstrap_port,
          "SGLang prefill side: the bootstrap service's port (SGLang's flag; default 8998, 0: a "
          "free one)");
  s.field("bootstrap_timeout", &SimConfig::bootstrap_timeout,
          "SGLang decode side: how long to wait for the paired prefill (wall time)")
      .min(1ms);
  s.field("enable_prompt_tokens_details", &SimConfig::enable_prompt_tokens_details,
          "usage.prompt_tokens_details.cached_tokens in responses (vLLM's flag)");
  s.field("io_threads", &SimConfig::io_threads, "HTTP I/O threads").range(1, 64);
  s.field("fault_error_rate", &SimConfig::fault_error_rate,
          "Fraction of requests failed on purpose")
      .range(0.0, 1.0);
  s.field("fault_error_status", &SimConfig::fault_error_status, "HTTP status of injected errors")
      .range(400, 599);
  s.field("fault_latency", &SimConfig::fault_latency, "Latency added to every generation request")
      .min(0s);
  s.field("fault_stall_rate", &SimConfig::fault_stall_rate, "Fraction of streams that stall once")
      .range(0.0, 1.0);
  s.field("fault_stall_duration", &SimConfig::fault_stall_duration,
          "How long a stall lasts; 0: until the client goes away (forever)")
      .min(0s);
  s.field("fault_stall_after_tokens", &SimConfig::fault_stall_after_tokens,
          "A stalling stream stalls once this many tokens were sent")
      .range(1, 1u << 30);
  s.field("fault_crash_after", &SimConfig::fault_crash_after,
          "Exit abruptly (status 70) on the request after this many (0: never)");
  s.field("fault_crash_after_tokens", &SimConfig::fault_crash_after_tokens,
          "Exit abruptly (status 70) once a request has sent this many tokens (0: never)");
  s.field("fault_stream_error_rate", &SimConfig::fault_stream_error_rate,
          "Fraction of streams cut by an in-stream error event (then [DONE])")
      .range(0.0, 1.0);
  s.field("fault_stream_error_after_tokens", &SimConfig::fault_stream_error_after_tokens,
          "An erroring stream sends its error event once this many tokens were sent")
      .range(1, 1u << 30);
  s.field("fault_hang_rate", &SimConfig::fault_hang_rate,
          "Fraction of generation requests never answered (held until the client goes away)")
      .range(0.0, 1.0);
  s.field("fault_unresponsive", &SimConfig::fault_unresponsive,
          "Accept connections and read requests on every route, answer none (a hung engine)");
  s.field("fault_bootstrap_never_connects", &SimConfig::fault_bootstrap_never_connects,
          "SGLang PD: the bootstrap peer never connects (prefill: pulls never answered; decode: "
          "never pulls, fails after --bootstrap-timeout)");
  s.field("fault_refuse_connections_for", &SimConfig::fault_refuse_connections_for,
          "Open the listener only after this long (connections are refused until then)")
      .min(0s);
  s.section("log", &SimConfig::log, config::describe_log);
}

namespace {

Error config_error(const std::string& flag, const std::string& why) {
  return make_error(ErrorCode::kInvalidArgument, flag + ": " + why);
}

Result<json::object> parse_object(const std::string& flag, const std::string& text) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return config_error(flag, "expected a JSON object, got '" + text + "'");
  return v.get_object();
}

std::optional<std::string> str_field(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  if (it == o.end() || !it->value().is_string()) return std::nullopt;
  return std::string(it->value().get_string());
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string guess_profile(const std::string& model) {
  const std::string m = lower(model);
  if (m.find("pangu") != std::string::npos) return "openpangu-ultra-moe-718b";
  if (m.find("qwen3-235b") != std::string::npos) return "qwen3-235b-a22b";
  if (m.find("deepseek") != std::string::npos) return "deepseek-v3";
  const auto slash = m.rfind('/');
  return slash == std::string::npos ? m : m.substr(slash + 1);
}

// The smallest layout whose KV cache holds one whole context: TP over one node's devices
// first, then DP over nodes (experts sharded over every device of a MoE model). Leaves the
// single-device layout when nothing up to 64 nodes fits (start-up then refuses, as vLLM).
std::optional<std::string> pick_layout(EngineSetup& s, std::uint32_t model_len) {
  const bool moe = s.model.num_dense_layers < s.model.num_layers && s.model.num_experts > 0;
  std::vector<engine::ParallelLayout> candidates;
  const std::uint32_t node = std::max(1u, s.hardware.devices_per_node);
  for (std::uint32_t tp = 1; tp <= node; tp *= 2) candidates.push_back({tp, 1, false});
  for (std::uint32_t dp = 2; dp <= 64; dp *= 2) candidates.push_back({node, dp, false});
  for (engine::ParallelLayout layout : candidates) {
    layout.ep = s.layout.ep || (moe && layout.devices() > 1);
    if (!engine::validate_layout(s.model, layout)) continue;
    const engine::CostModel cost(s.model, s.hardware, layout, s.mtp);
    if (cost.kv_capacity_tokens() < model_len) continue;
    s.layout = layout;
    return std::to_string(layout.devices()) + " x " + s.hardware.name +
           " (--tensor-parallel-size " + std::to_string(layout.tp) + " --data-parallel-size " +
           std::to_string(layout.dp) + (layout.ep ? " --enable-expert-parallel" : "") +
           "), the smallest layout whose KV cache holds a " + std::to_string(model_len) +
           "-token context; pass a layout to choose another";
  }
  return std::nullopt;
}

}  // namespace

Result<std::optional<kvcache::ZmqPublisherConfig>> parse_kv_events_config(
    const std::optional<std::string>& text) {
  if (!text) return std::optional<kvcache::ZmqPublisherConfig>();
  auto obj = parse_object("kv_events_config", *text);
  if (!obj) return std::move(obj).error();
  auto enabled = obj->find("enable_kv_cache_events");
  const bool on =
      enabled != obj->end() && enabled->value().is_bool() && enabled->value().get_bool();
  const std::string publisher = str_field(*obj, "publisher").value_or(on ? "zmq" : "null");
  if (!on || publisher == "null") return std::optional<kvcache::ZmqPublisherConfig>();
  if (publisher != "zmq")
    return config_error("kv_events_config", "unknown publisher '" + publisher + "'");
  kvcache::ZmqPublisherConfig c;
  c.endpoint = str_field(*obj, "endpoint").value_or(c.endpoint);
  c.replay_endpoint = str_field(*obj, "replay_endpoint");
  c.topic = str_field(*obj, "topic").value_or("");
  auto number = [&](std::string_view key, auto& out) {
    auto it = obj->find(key);
    if (it != obj->end() && it->value().is_int64() && it->value().get_int64() > 0) {
      out = static_cast<std::remove_reference_t<decltype(out)>>(it->value().get_int64());
    }
  };
  number("buffer_steps", c.buffer_steps);
  number("hwm", c.hwm);
  number("max_queue_size", c.max_queue_size);
  return std::optional<kvcache::ZmqPublisherConfig>(c);
}

Result<KvTransferConfig> parse_kv_transfer_config(const std::optional<std::string>& text) {
  KvTransferConfig c;
  if (!text) return c;
  auto obj = parse_object("kv_transfer_config", *text);
  if (!obj) return std::move(obj).error();
  c.connector = str_field(*obj, "kv_connector").value_or("");
  c.role = str_field(*obj, "kv_role").value_or(c.role);
  c.engine_id = str_field(*obj, "engine_id").value_or("");
  auto extra = obj->find("kv_connector_extra_config");
  if (extra != obj->end() && extra->value().is_object()) {
    auto lease = extra->value().get_object().find("kv_lease_duration");
    if (lease != extra->value().get_object().end() && lease->value().is_number()) {
      c.lease_seconds = lease->value().to_number<double>();
    }
  }
  if (c.lease_seconds <= 0)
    return config_error("kv_transfer_config", "kv_lease_duration must be > 0");
  if (auto policy = str_field(*obj, "kv_load_failure_policy")) {
    if (*policy != "recompute" && *policy != "fail") {
      return config_error(
          "kv_transfer_config",
          "kv_load_failure_policy must be recompute or fail, got '" + *policy + "'");
    }
    c.recompute_on_load_failure = *policy == "recompute";
  }
  return c;
}

std::vector<std::string> served_names(const SimConfig& cfg) {
  return cfg.served_model_name.empty() ? std::vector<std::string>{cfg.model}
                                       : cfg.served_model_name;
}

Result<EngineSetup> engine_setup(const SimConfig& cfg, bool emit_kv_events) {
  EngineSetup s;
  const std::string profile = cfg.model_profile.value_or(guess_profile(cfg.model));
  auto model = engine::load_model_profile(profile);
  if (!model) {
    std::string names;
    for (const auto& n : engine::builtin_model_names()) names += (names.empty() ? "" : ", ") + n;
    return config_error("model_profile", "no profile '" + profile + "' (" + model.error().message +
                                             "); built in: " + names + "; pass --model-profile");
  }
  auto hw = engine::load_hardware_profile(cfg.hardware);
  if (!hw) return config_error("hardware", hw.error().message);
  s.model = *model;
  s.hardware = *hw;
  s.mtp.num_speculative_tokens = cfg.num_speculative_tokens;
  s.mtp.acceptance_rate = cfg.speculative_acceptance_rate;
  s.layout.tp = cfg.tensor_parallel_size.value_or(1);
  s.layout.dp = cfg.data_parallel_size.value_or(1);
  s.layout.ep = cfg.enable_expert_parallel;
  const std::uint32_t model_len =
      cfg.max_model_len.value_or(s.model.max_model_len > 0 ? s.model.max_model_len : 163840);
  if (!cfg.tensor_parallel_size && !cfg.data_parallel_size && !cfg.num_gpu_blocks_override) {
    s.picked = pick_layout(s, model_len);
  }
  s.config.block_size = cfg.block_size;
  s.config.num_gpu_blocks = cfg.num_gpu_blocks_override.value_or(0);
  s.config.max_num_seqs = cfg.max_num_seqs;
  s.config.max_num_batched_tokens = cfg.max_num_batched_tokens;
  s.config.max_model_len = model_len;
  s.config.enable_prefix_caching = cfg.enable_prefix_caching;
  s.config.emit_kv_events = emit_kv_events;
  return s;
}

}  // namespace omni::sim
