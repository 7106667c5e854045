#include "omni/serve/config.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include "omni/kvcache/block_hash.hpp"

namespace omni::serve {
namespace json = boost::json;

namespace {

Status one_of(const std::string& v, std::initializer_list<const char*> allowed) {
  std::string list;
  for (const char* a : allowed) {
    if (v == a) return ok_status();
    list += (list.empty() ? "" : ", ") + std::string(a);
  }
  return make_error(ErrorCode::kInvalidArgument, "expected one of " + list + ", got '" + v + "'");
}

Error config_error(const std::string& flag, const std::string& why) {
  return make_error(ErrorCode::kInvalidArgument, flag + ": " + why);
}

Result<json::object> parse_object(const std::string& flag, const std::string& text) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return config_error(flag, "expected a JSON object, got '" + text + "'");
  return v.get_object();
}

std::optional<std::string> text_of(const json::object& o, std::string_view key) {
  auto it = o.find(key);
  if (it == o.end() || !it->value().is_string()) return std::nullopt;
  return std::string(it->value().get_string());
}

// A non-negative integer field, or an error naming it.
Status uint_of(const std::string& flag, const json::object& o, std::string_view key,
               std::uint32_t& out) {
  auto it = o.find(key);
  if (it == o.end() || it->value().is_null()) return ok_status();
  if (!it->value().is_int64() || it->value().get_int64() < 0 ||
      it->value().get_int64() > 1'000'000'000) {
    return config_error(flag, std::string(key) + " must be a non-negative integer");
  }
  out = static_cast<std::uint32_t>(it->value().get_int64());
  return ok_status();
}

Status number_of(const std::string& flag, const json::object& o, std::string_view key,
                 double& out) {
  auto it = o.find(key);
  if (it == o.end() || it->value().is_null()) return ok_status();
  if (!it->value().is_number()) return config_error(flag, std::string(key) + " must be a number");
  out = it->value().to_number<double>();
  return ok_status();
}

}  // namespace

void describe(config::Schema<ServeConfig>& s) {
  s.field("host", &ServeConfig::host, "Address to listen on (vLLM --host)").non_empty();
  s.field("port", &ServeConfig::port, "TCP port; 0 picks a free one, printed (vLLM --port)");
  s.field("served_model_name", &ServeConfig::served_model_name,
          "Names the API accepts (vLLM); default: the model directory's or file's name");
  s.field("max_model_len", &ServeConfig::max_model_len, "Context length, prompt + output (vLLM)")
      .range(2, 1u << 24);
  s.field("max_num_seqs", &ServeConfig::max_num_seqs, "Most sequences per step (vLLM)")
      .range(1, 1u << 16);
  s.field("max_num_batched_tokens", &ServeConfig::max_num_batched_tokens,
          "Token budget per step: chunked prefill and decodes together (vLLM)")
      .range(1, 1u << 24);
  s.field("block_size", &ServeConfig::block_size,
          "Tokens per KV block (vLLM), which is the paged latent cache's page")
      .range(1, 4096);
  s.field("num_gpu_blocks_override", &ServeConfig::num_gpu_blocks_override,
          "KV blocks in the pool (vLLM); default: what --kv-cache-memory-bytes holds");
  s.field("kv_cache_memory_bytes", &ServeConfig::kv_cache_memory_bytes,
          "Memory of the paged latent cache, all layers (vLLM)")
      .range(std::uint64_t{1} << 16, std::uint64_t{1} << 42);
  s.field("enable_prefix_caching", &ServeConfig::enable_prefix_caching,
          "Prefix caching (vLLM; on by default)");
  s.field("prefix_caching_hash_algo", &ServeConfig::prefix_caching_hash_algo,
          "sha256, sha256_cbor, xxhash or xxhash_cbor (vLLM); root from $PYTHONHASHSEED")
      .check([](const std::string& v) -> Status {
        auto algo = kvcache::parse_hash_algo(v);
        if (!algo) return std::move(algo).error();
        return ok_status();
      });
  s.field("kv_events_config", &ServeConfig::kv_events_config,
          "KV events, vLLM's JSON (enable_kv_cache_events, publisher, endpoint, topic, ...)");
  s.field("kv_transfer_config", &ServeConfig::kv_transfer_config,
          "PD KV transfer, vLLM's JSON: {\"kv_connector\":\"NixlConnector\",\"kv_role\":...}");
  s.field("speculative_config", &ServeConfig::speculative_config,
          "Speculative decoding, vLLM's JSON: "
          "{\"method\":\"deepseek_mtp\",\"num_speculative_tokens\":k}");
  s.field("enable_expert_parallel", &ServeConfig::enable_expert_parallel,
          "Expert parallelism over --data-parallel-size ranks of the thread pool (vLLM)");
  s.field("data_parallel_size", &ServeConfig::data_parallel_size,
          "With --enable-expert-parallel: the expert ranks (vLLM's EP size = DP x TP)")
      .range(1, 64);
  s.field("enable_eplb", &ServeConfig::enable_eplb,
          "Live expert rebalancing on the counted loads (vLLM's EPLB flag)");
  s.field("eplb_config", &ServeConfig::eplb_config,
          "vLLM's JSON: window_size, step_interval, num_redundant_experts, log_balancedness; "
          "omni-serve's: imbalance_threshold, max_moves, smoothing");
  s.field("expert_placement", &ServeConfig::expert_placement,
          "Initial placement: a plan JSON written by `omni-placement plan`");
  s.field("seed", &ServeConfig::seed, "Seed of requests without their own (vLLM --seed)");
  s.field("enable_prompt_tokens_details", &ServeConfig::enable_prompt_tokens_details,
          "usage.prompt_tokens_details.cached_tokens in responses (vLLM)");
  s.field("tokenizer", &ServeConfig::tokenizer,
          "tokenizer.json (or its directory); default: the model's own");
  s.field("threads", &ServeConfig::threads, "Engine worker threads (the loop thread included)")
      .range(1, 1024);
  s.field("pin_threads", &ServeConfig::pin_threads, "Pin worker i to CPU i");
  s.field("cache_dtype", &ServeConfig::cache_dtype, "Latent KV cache dtype: bf16 or f32")
      .check([](const std::string& v) {
        return one_of(v, {"bf16", "f32"});
      });
  s.field("isa", &ServeConfig::isa,
          "Kernel ISA: scalar, avx2 or avx512; default the best (OMNI_FORCE_ISA)");
  s.field("gemm", &ServeConfig::gemm, "Prefill GEMMs: blas or own").check([](const std::string& v) {
    return one_of(v, {"blas", "own"});
  });
  s.field("fused", &ServeConfig::fused, "Fused operators (false: the unfused sequences)");
  s.field("check_weights", &ServeConfig::check_weights, "Scan every weight for NaN/inf at load");
  s.field("kv_transfer_host", &ServeConfig::kv_transfer_host,
          "PD side channel address in kv_transfer_params; default $VLLM_NIXL_SIDE_CHANNEL_HOST, "
          "else --host (127.0.0.1 for 0.0.0.0)");
  s.field("kv_transfer_port", &ServeConfig::kv_transfer_port,
          "PD side channel port (the KV block server); default $VLLM_NIXL_SIDE_CHANNEL_PORT, "
          "else a free one");
  s.field("kv_staging_bytes", &ServeConfig::kv_staging_bytes,
          "Decode side: most fetched KV bytes waiting for their blocks (more waits)")
      .range(std::uint64_t{1} << 16, std::uint64_t{1} << 42);
  s.field("io_threads", &ServeConfig::io_threads, "HTTP I/O threads").range(1, 64);
  s.field("max_in_flight", &ServeConfig::max_in_flight,
          "Requests queued or running; more are answered 503")
      .range(1, 1u << 20);
  s.field("request_timeout", &ServeConfig::request_timeout, "Longest a request may take").min(1ms);
  s.section("log", &ServeConfig::log, config::describe_log);
}

Result<std::optional<SpeculativeConfig>> parse_speculative_config(
    const std::optional<std::string>& text) {
  if (!text) return std::optional<SpeculativeConfig>();
  const std::string flag = "speculative_config";
  auto obj = parse_object(flag, *text);
  if (!obj) return std::move(obj).error();
  const std::string method = text_of(*obj, "method").value_or("deepseek_mtp");
  if (method != "deepseek_mtp" && method != "mtp") {
    return config_error(flag, "method '" + method +
                                  "' is not supported (omni-serve drafts with the model's MTP "
                                  "module: deepseek_mtp)");
  }
  SpeculativeConfig c;
  if (auto st = uint_of(flag, *obj, "num_speculative_tokens", c.num_speculative_tokens); !st)
    return std::move(st).error();
  if (c.num_speculative_tokens < 1 || c.num_speculative_tokens > 8) {
    return config_error(flag, "num_speculative_tokens must be in 1..8");
  }
  return std::optional<SpeculativeConfig>(c);
}

Result<EplbConfig> parse_eplb_config(const std::optional<std::string>& text) {
  EplbConfig c;
  if (!text) return c;
  const std::string flag = "eplb_config";
  auto obj = parse_object(flag, *text);
  if (!obj) return std::move(obj).error();
  Status st = uint_of(flag, *obj, "window_size", c.window_size);
  if (st) st = uint_of(flag, *obj, "step_interval", c.step_interval);
  if (st) st = uint_of(flag, *obj, "num_redundant_experts", c.num_redundant_experts);
  if (st) st = uint_of(flag, *obj, "max_moves", c.max_moves);
  if (st) st = number_of(flag, *obj, "imbalance_threshold", c.imbalance_threshold);
  if (st) st = number_of(flag, *obj, "smoothing", c.smoothing);
  if (!st) return std::move(st).error();
  if (auto it = obj->find("log_balancedness"); it != obj->end() && it->value().is_bool()) {
    c.log_balancedness = it->value().get_bool();
  }
  if (c.window_size < 1) return config_error(flag, "window_size must be >= 1");
  if (!(c.smoothing > 0.0 && c.smoothing <= 1.0))
    return config_error(flag, "smoothing must be in (0, 1]");
  if (!(c.imbalance_threshold >= 1.0))
    return config_error(flag, "imbalance_threshold must be >= 1");
  return c;
}

Result<KvTransfer> parse_kv_transfer(const std::optional<std::string>& text) {
  KvTransfer c;
  if (!text) return c;
  const std::string flag = "kv_transfer_config";
  auto obj = parse_object(flag, *text);
  if (!obj) return std::move(obj).error();
  const std::string connector = text_of(*obj, "kv_connector").value_or("");
  if (connector != "NixlConnector") {
    return config_error(flag, "kv_connector '" + connector +
                                  "' is not supported (omni-serve speaks NixlConnector's "
                                  "kv_transfer_params, moving blocks over its TCP side channel)");
  }
  c.enabled = true;
  c.role = text_of(*obj, "kv_role").value_or(c.role);
  if (auto st = one_of(c.role, {"kv_producer", "kv_consumer", "kv_both"}); !st)
    return config_error(flag, "kv_role: " + st.error().message);
  c.engine_id = text_of(*obj, "engine_id").value_or("");
  if (auto extra = obj->find("kv_connector_extra_config");
      extra != obj->end() && extra->value().is_object()) {
    if (auto st =
            number_of(flag, extra->value().get_object(), "kv_lease_duration", c.lease_seconds);
        !st)
      return std::move(st).error();
  }
  if (!(c.lease_seconds > 0)) return config_error(flag, "kv_lease_duration must be > 0");
  if (auto policy = text_of(*obj, "kv_load_failure_policy")) {
    if (auto st = one_of(*policy, {"recompute", "fail"}); !st)
      return config_error(flag, "kv_load_failure_policy: " + st.error().message);
    c.recompute_on_load_failure = *policy == "recompute";
  }
  return c;
}

}  // namespace omni::serve
