#include "omni/serve/service.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>

#include "omni/log/log.hpp"
#include "omni/tokenizer/tokenizer.hpp"
#include "serve/context.hpp"
#include "serve/text_stream.hpp"
#include "sim/chat_codec.hpp"
#include "sim/pd.hpp"
#include "sim/response.hpp"
#include "sim/sim_config.hpp"

namespace omni::serve {
namespace json = boost::json;
namespace {

using Context = ServeService::Context;

std::string hex64(std::uint64_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) out[static_cast<std::size_t>(i)] = kDigits[v & 0xf];
  return out;
}

std::uint64_t random_u64() {
  std::random_device rd;
  return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
}

// sim::TextCodec over the model's tokenizer: decoding skips special tokens (vLLM's
// skip_special_tokens default), so EOS shows no text.
class ModelCodec final : public sim::TextCodec {
 public:
  explicit ModelCodec(std::shared_ptr<const tokenizer::Tokenizer> t) : t_(std::move(t)) {}
  std::vector<std::uint32_t> encode(std::string_view text) const override {
    auto ids = t_->encode(text);
    return ids ? *ids : std::vector<std::uint32_t>{};
  }
  std::vector<std::uint32_t> encode_with_special_tokens(std::string_view text) const override {
    auto ids = t_->encode(text, {true});
    return ids ? *ids : std::vector<std::uint32_t>{};
  }
  std::string decode(std::span<const std::uint32_t> tokens) const override {
    return t_->decode(tokens, {true});
  }
  std::string token_text(std::uint32_t token) const override {
    return t_->decode(std::span<const std::uint32_t>(&token, 1));
  }
  std::uint32_t vocab_size() const override { return static_cast<std::uint32_t>(t_->vocab_size()); }
  std::span<const std::uint32_t> generatable() const override { return {}; }

 private:
  std::shared_ptr<const tokenizer::Tokenizer> t_;
};

Result<std::unique_ptr<sim::TextCodec>> make_codec(const ServeConfig& cfg,
                                                   const model::LoadedModel& m) {
  const std::string path = cfg.tokenizer.value_or(m.tokenizer_path);
  if (path.empty()) return sim::with_chat_templates(sim::make_builtin_codec(), "{}");
  auto tok = tokenizer::Tokenizer::load(path);
  if (!tok) return make_error(ErrorCode::kInvalidArgument, "tokenizer: " + tok.error().message);
  const std::string config = (*tok)->config_json();
  return sim::with_chat_templates(std::make_unique<ModelCodec>(std::move(*tok)), config);
}

// vLLM: NONE_HASH from $PYTHONHASHSEED when set, else random bytes per process.
kvcache::BlockHash hash_root(kvcache::HashAlgo algo) {
  if (const char* seed = std::getenv("PYTHONHASHSEED")) return kvcache::none_hash(algo, seed);
  std::vector<std::uint8_t> bytes(32);
  std::random_device rd;
  for (auto& b : bytes) b = static_cast<std::uint8_t>(rd());
  return *kvcache::BlockHash::from_bytes(bytes);
}

http::Response json_response(int status, std::string body) {
  http::Response r;
  r.status = status;
  r.headers.set("Content-Type", "application/json");
  r.body = std::move(body);
  return r;
}

Task<void> send(http::ResponseWriter& w, http::Response r) { co_await w.send(std::move(r)); }

// The scheduler's cost model is not used to time steps here (the forward pass is real), but
// its profile describes the model: built from the checkpoint's config.
engine::CostModel cost_model_of(const model::ModelConfig& c, double bytes_per_param,
                                std::uint32_t spec_tokens) {
  engine::ModelProfile p;
  p.name = "omni-serve";
  p.num_layers = static_cast<std::uint32_t>(c.num_hidden_layers);
  p.num_dense_layers = static_cast<std::uint32_t>(c.first_k_dense_replace);
  p.hidden_size = static_cast<std::uint32_t>(c.hidden_size);
  p.num_heads = static_cast<std::uint32_t>(c.num_attention_heads);
  p.q_lora_rank = static_cast<std::uint32_t>(c.q_lora_rank);
  p.kv_lora_rank = static_cast<std::uint32_t>(c.kv_lora_rank);
  p.rope_dim = static_cast<std::uint32_t>(c.qk_rope_head_dim);
  p.nope_dim = static_cast<std::uint32_t>(c.qk_nope_head_dim);
  p.v_head_dim = static_cast<std::uint32_t>(c.v_head_dim);
  p.num_experts = static_cast<std::uint32_t>(c.n_routed_experts);
  p.num_shared_experts = static_cast<std::uint32_t>(c.n_shared_experts);
  p.experts_per_token = static_cast<std::uint32_t>(c.num_experts_per_tok);
  p.expert_intermediate = static_cast<std::uint32_t>(c.moe_intermediate_size);
  p.dense_intermediate = static_cast<std::uint32_t>(c.intermediate_size);
  p.vocab_size = static_cast<std::uint32_t>(c.vocab_size);
  p.num_mtp_layers = static_cast<std::uint32_t>(c.num_nextn_predict_layers);
  p.bytes_per_param = bytes_per_param;
  engine::HardwareProfile hw;
  hw.name = "cpu";
  hw.dense_tflops = 0.2;
  hw.fp8_tflops = 0.2;
  hw.hbm_tbps = 0.01;
  hw.hbm_gib = 16;
  engine::MtpConfig mtp;
  mtp.num_speculative_tokens = spec_tokens;
  mtp.acceptance_rate = 0.0;  // decided by the real verification
  return engine::CostModel(p, hw, {}, mtp);
}

http::Handler models_handler(Context& ctx) {
  return [&ctx](http::Request&, http::ResponseWriter& w) -> Task<void> {
    std::string data;
    for (const std::string& name : ctx.limits.served_names) {
      if (!data.empty()) data += ',';
      const std::string created = std::to_string(ctx.created);
      data += "{\"id\":" + sim::json_quote(name) + ",\"object\":\"model\",\"created\":" + created +
              ",\"owned_by\":\"vllm\",\"root\":" + sim::json_quote(ctx.model_path) +
              ",\"parent\":null,\"max_model_len\":" + std::to_string(ctx.limits.max_model_len) +
              ",\"permission\":[{\"id\":\"modelperm-" + hex64(std::hash<std::string>{}(name)) +
              "\",\"object\":\"model_permission\",\"created\":" + created +
              ",\"allow_create_engine\":false,\"allow_sampling\":true,\"allow_logprobs\":true,"
              "\"allow_search_indices\":false,\"allow_view\":true,\"allow_fine_tuning\":false,"
              "\"organization\":\"*\",\"group\":null,\"is_blocking\":false}]}";
    }
    http::Response r = json_response(200, "{\"object\":\"list\",\"data\":[" + data + "]}");
    co_await send(w, std::move(r));
  };
}

http::Handler health_handler() {
  return [](http::Request&, http::ResponseWriter& w) -> Task<void> {
    http::Response r;
    r.status = 200;
    co_await send(w, std::move(r));
  };
}

// vLLM's {"version"}, plus what omni-serve runs.
http::Handler version_handler(Context& ctx) {
  return [&ctx](http::Request&, http::ResponseWriter& w) -> Task<void> {
    http::Response r = json_response(
        200, std::string("{\"version\":\"") + kVllmVersion +
                 "\",\"omni_serve\":{\"model\":" + sim::json_quote(ctx.model_path) +
                 ",\"threads\":" + std::to_string(ctx.cfg.threads) +
                 ",\"block_size\":" + std::to_string(ctx.cfg.block_size) +
                 ",\"num_speculative_tokens\":" + std::to_string(ctx.spec_tokens) + "}}");
    co_await send(w, std::move(r));
  };
}

http::Handler load_handler(Context& ctx) {
  return [&ctx](http::Request&, http::ResponseWriter& w) -> Task<void> {
    http::Response r = json_response(
        200,
        "{\"server_load\":" + std::to_string(ctx.in_flight.load(std::memory_order_relaxed)) + "}");
    co_await send(w, std::move(r));
  };
}

http::Handler metrics_handler(Context& ctx) {
  return [&ctx](http::Request&, http::ResponseWriter& w) -> Task<void> {
    http::Response r;
    r.headers.set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
    r.body = ctx.registry.expose();
    co_await send(w, std::move(r));
  };
}

// POST /reset_prefix_cache (vLLM's, dev mode there): 200 when reset; 409 while blocks are used.
http::Handler reset_handler(Context& ctx) {
  return [&ctx](http::Request&, http::ResponseWriter& w) -> Task<void> {
    std::future<bool> done = ctx.loop->reset_prefix_cache();
    boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor);
    for (int waited = 0;
         done.wait_for(std::chrono::seconds(0)) != std::future_status::ready && waited < 5000;
         ++waited) {
      timer.expires_after(std::chrono::milliseconds(1));
      co_await timer.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
    }
    http::Response r;
    if (done.wait_for(std::chrono::seconds(0)) == std::future_status::ready && done.get()) {
      r.status = 200;
    } else {
      r = sim::ApiError{409, "prefix cache not reset: requests are running or holding KV",
                        "ConflictError", ""}
              .response();
    }
    co_await send(w, std::move(r));
  };
}

std::string token_list(std::span<const std::uint32_t> tokens) {
  std::string out = "[";
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(tokens[i]);
  }
  return out + "]";
}

http::Response tokenize(Context& ctx, const std::string& body) {
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec || !v.is_object())
    return sim::validation_error("Input should be a valid dictionary").response();
  const json::object& o = v.get_object();
  std::vector<std::uint32_t> tokens;
  if (auto p = o.find("prompt"); p != o.end() && p->value().is_string()) {
    bool special = true;
    if (auto s = o.find("add_special_tokens"); s != o.end() && s->value().is_bool())
      special = s->value().get_bool();
    tokens = special ? ctx.codec->encode_with_special_tokens(p->value().get_string())
                     : ctx.codec->encode(p->value().get_string());
  } else if (auto m = o.find("messages"); m != o.end() && m->value().is_array()) {
    auto chat = sim::chat_prompt_tokens(o, *ctx.codec);
    if (auto* error = std::get_if<sim::ApiError>(&chat)) return error->response();
    tokens = std::move(std::get<std::vector<std::uint32_t>>(chat));
  } else {
    return sim::validation_error("Field required: 'prompt' (string) or 'messages' (list)", "prompt")
        .response();
  }
  bool strs = false;
  if (auto s = o.find("return_token_strs"); s != o.end() && s->value().is_bool())
    strs = s->value().get_bool();
  std::string token_strs = "null";
  if (strs) {
    token_strs = "[";
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      token_strs += (i ? "," : "") + sim::json_quote(valid_utf8(ctx.codec->token_text(tokens[i])));
    }
    token_strs += "]";
  }
  return json_response(200, "{\"count\":" + std::to_string(tokens.size()) +
                                ",\"max_model_len\":" + std::to_string(ctx.limits.max_model_len) +
                                ",\"tokens\":" + token_list(tokens) +
                                ",\"token_strs\":" + token_strs + "}");
}

http::Response detokenize(Context& ctx, const std::string& body) {
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec || !v.is_object())
    return sim::validation_error("Input should be a valid dictionary").response();
  auto t = v.get_object().find("tokens");
  if (t == v.get_object().end() || !t->value().is_array()) {
    return sim::validation_error("Field required", "tokens").response();
  }
  std::vector<std::uint32_t> tokens;
  for (const json::value& id : t->value().get_array()) {
    if (!id.is_int64() || id.get_int64() < 0 || id.get_int64() >= ctx.model->config.vocab_size) {
      return sim::validation_error("Input should be a valid token id", "tokens").response();
    }
    tokens.push_back(static_cast<std::uint32_t>(id.get_int64()));
  }
  return json_response(
      200, "{\"prompt\":" + sim::json_quote(valid_utf8(ctx.codec->decode(tokens))) + "}");
}

http::Handler body_handler(Context& ctx, http::Response (*fn)(Context&, const std::string&)) {
  return [&ctx, fn](http::Request& req, http::ResponseWriter& w) -> Task<void> {
    http::Response r = fn(ctx, req.body);
    co_await send(w, std::move(r));
  };
}

void publish_events(Context& ctx, std::vector<kvcache::KVEvent> events) {
  if (!ctx.publisher) return;
  kvcache::KVEventBatch batch;
  batch.ts =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  batch.events = std::move(events);
  batch.data_parallel_rank = 0;
  ctx.publisher->publish(std::move(batch));
  const auto stats = ctx.publisher->stats();
  ctx.metrics->on_kv_events(stats.dropped - ctx.kv_dropped_seen,
                            stats.published - ctx.kv_published_seen);
  ctx.kv_dropped_seen = stats.dropped;
  ctx.kv_published_seen = stats.published;
}

// The prefill side's kv_transfer_params (vLLM's NixlConnector answer).
std::string hold_params(const Context& ctx, const std::string& key,
                        std::span<const engine::BlockId> blocks, std::uint32_t prompt) {
  sim::PrefillParams p;
  for (const engine::BlockId b : blocks) p.block_ids.push_back(b);
  p.engine_id = ctx.engine_id;
  p.request_id = key;
  p.host = ctx.kv_host;
  p.port = ctx.kv_server ? ctx.kv_server->port() : 0;
  p.tp_size = 1;
  p.num_tokens = prompt;
  return sim::format_prefill_params(p);
}

Result<model::EngineOptions> engine_options(const ServeConfig& c, std::uint64_t pages,
                                            std::uint32_t spec_tokens) {
  model::EngineOptions o;
  o.threads = c.threads;
  o.pin_threads = c.pin_threads;
  o.cache_dtype = c.cache_dtype == "f32" ? model::CacheDtype::kF32 : model::CacheDtype::kBF16;
  o.page_size = static_cast<int>(c.block_size);
  o.num_pages = static_cast<int>(pages);
  o.gemm = c.gemm == "own" ? model::GemmBackend::kOwn : model::GemmBackend::kBlas;
  o.fused = c.fused;
  o.absorbed_max_tokens = static_cast<int>(std::max(2u, 1 + spec_tokens));
  if (c.isa.empty()) {
    const auto& isa = omni::amla::runtime_isa();
    if (!isa) return isa.error();
    o.isa = *isa;
  } else {
    auto isa = omni::amla::choose_isa(c.isa);
    if (!isa) return std::move(isa).error();
    o.isa = *isa;
  }
  return o;
}

std::string env_or(const char* name, std::string fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

}  // namespace

Result<std::unique_ptr<ServeService>> ServeService::create(const ServeConfig& cfg) {
  std::unique_ptr<ServeService> service(new ServeService());
  service->ctx_ = std::make_unique<Context>();
  Context& ctx = *service->ctx_;
  ctx.cfg = cfg;
  auto events = sim::parse_kv_events_config(cfg.kv_events_config);
  if (!events) return std::move(events).error();
  auto transfer = parse_kv_transfer(cfg.kv_transfer_config);
  if (!transfer) return std::move(transfer).error();
  ctx.kv_transfer = *transfer;
  auto spec = parse_speculative_config(cfg.speculative_config);
  if (!spec) return std::move(spec).error();
  auto eplb = parse_eplb_config(cfg.eplb_config);
  if (!eplb) return std::move(eplb).error();
  auto loaded = model::load_model(cfg.model, cfg.check_weights);
  if (!loaded) return std::move(loaded).error();
  ctx.model = std::move(*loaded);
  const model::ModelConfig& mc = ctx.model->config;
  ctx.model_path = cfg.model;
  if (*spec && !ctx.model->weights.mtp) {
    return make_error(ErrorCode::kInvalidArgument,
                      "--speculative-config deepseek_mtp: the model has no MTP layer "
                      "(num_nextn_predict_layers is 0, or a GGUF file, which carries none)");
  }
  ctx.spec_tokens = *spec ? (*spec)->num_speculative_tokens : 0;
  // The block pool: one block per page of every layer of the paged latent cache.
  const int cache_layers = mc.num_hidden_layers + (ctx.model->weights.mtp ? 1 : 0);
  const std::uint64_t bytes_per_block = std::uint64_t(cache_layers) * cfg.block_size *
                                        static_cast<std::uint64_t>(mc.latent_dim()) *
                                        (cfg.cache_dtype == "f32" ? 4 : 2);
  const std::uint64_t blocks =
      cfg.num_gpu_blocks_override.value_or(cfg.kv_cache_memory_bytes / bytes_per_block);
  if (blocks < 2 || blocks > (1u << 30)) {
    return make_error(ErrorCode::kInvalidArgument,
                      "the KV cache holds " + std::to_string(blocks) + " blocks of " +
                          std::to_string(bytes_per_block) +
                          " bytes: give it more memory "
                          "(--kv-cache-memory-bytes) or set --num-gpu-blocks-override");
  }
  ctx.kv_capacity_tokens = blocks * cfg.block_size;
  if (ctx.kv_capacity_tokens < cfg.max_model_len) {
    // vLLM refuses to start in this case, with this message; so does omni-serve.
    return make_error(ErrorCode::kInvalidArgument,
                      "The model's max seq len (" + std::to_string(cfg.max_model_len) +
                          ") is larger than the maximum number of tokens that can be stored in KV "
                          "cache (" +
                          std::to_string(ctx.kv_capacity_tokens) +
                          "). Try increasing --kv-cache-memory-bytes or decreasing "
                          "--max-model-len.");
  }
  auto options = engine_options(cfg, blocks, ctx.spec_tokens);
  if (!options) return std::move(options).error();
  auto engine = model::Engine::create(*ctx.model, *options);
  if (!engine) return std::move(engine).error();
  ctx.engine = std::move(*engine);
  auto codec = make_codec(cfg, *ctx.model);
  if (!codec) return std::move(codec).error();
  ctx.codec = std::move(*codec);
  std::filesystem::path mp(cfg.model);
  const std::string name =
      (mp.has_filename() ? mp.filename() : mp.parent_path().filename()).string();
  ctx.limits = {
      cfg.served_model_name.empty() ? std::vector<std::string>{name} : cfg.served_model_name,
      cfg.max_model_len};
  ctx.hash_algo = *kvcache::parse_hash_algo(cfg.prefix_caching_hash_algo);
  ctx.hash_root = hash_root(ctx.hash_algo);
  ctx.engine_id =
      transfer->engine_id.empty() ? "omni-serve-" + hex64(random_u64()) : transfer->engine_id;
  ctx.fingerprint = std::string("vllm-") + kVllmVersion + "-" +
                    hex64(std::hash<std::string>{}(cfg.model)).substr(0, 8);
  ctx.created = std::chrono::duration_cast<std::chrono::seconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  ctx.kv_host = cfg.kv_transfer_host.value_or(env_or(
      "VLLM_NIXL_SIDE_CHANNEL_HOST", cfg.host == "0.0.0.0" ? std::string("127.0.0.1") : cfg.host));

  engine::EngineConfig ec;
  ec.block_size = cfg.block_size;
  ec.num_gpu_blocks = blocks;
  ec.max_num_seqs = cfg.max_num_seqs;
  ec.max_num_batched_tokens = cfg.max_num_batched_tokens;
  ec.max_model_len = cfg.max_model_len;
  ec.enable_prefix_caching = cfg.enable_prefix_caching;
  ec.emit_kv_events = events->has_value();
  double bytes_per_param = 4.0;
  if (!ctx.model->weights.layers.empty()) {
    switch (ctx.model->weights.layers[0].attn.kv_a.dtype) {
      case model::DType::kBF16:
      case model::DType::kF16: bytes_per_param = 2.0; break;
      case model::DType::kF8E4M3:
      case model::DType::kQ8_0: bytes_per_param = 1.0; break;
      default: break;
    }
  }
  engine::Engine scheduler(ec, cost_model_of(mc, bytes_per_param, ctx.spec_tokens), cfg.seed);

  sim::CacheInfo cache{cfg.block_size, cfg.prefix_caching_hash_algo, cfg.enable_prefix_caching,
                       blocks};
  Context* raw = &ctx;
  auto metrics = sim::SimMetrics::create(
      ctx.registry, ctx.limits.served_names.front(), ctx.limits.max_model_len, cache,
      [raw] { return raw->loop ? raw->loop->stats().gauges : sim::EngineGauges{}; });
  if (!metrics) return std::move(metrics).error();
  ctx.metrics = std::move(*metrics);
  if (*events) {
    auto publisher = kvcache::ZmqEventPublisher::start(**events);
    if (!publisher) return std::move(publisher).error();
    ctx.publisher = std::move(*publisher);
  }
  ExecutorOptions xo;
  xo.block_size = cfg.block_size;
  xo.spec_tokens = ctx.spec_tokens;
  xo.prefix_caching = cfg.enable_prefix_caching || ctx.kv_transfer.enabled;
  xo.hash_algo = ctx.hash_algo;
  xo.hash_root = ctx.hash_root;
  // The loop looks sequences up for the executor (same thread).
  ctx.executor = std::make_unique<ModelExecutor>(*ctx.engine, xo, [raw](engine::SeqId id) {
    return raw->loop ? raw->loop->find(id) : nullptr;
  });
  if (cfg.enable_expert_parallel) {
    auto ep =
        ExpertParallel::create(*ctx.engine, *ctx.model, static_cast<int>(cfg.data_parallel_size),
                               cfg.enable_eplb, *eplb, cfg.expert_placement);
    if (!ep) return std::move(ep).error();
    ctx.ep = std::move(*ep);
  } else if (cfg.expert_placement || cfg.enable_eplb) {
    return make_error(ErrorCode::kInvalidArgument,
                      "--expert-placement and --enable-eplb need --enable-expert-parallel");
  }
  if (ctx.kv_transfer.enabled) ctx.fetcher = std::make_unique<KvFetcher>(2);
  LoopOptions lo;
  lo.max_in_flight = cfg.max_in_flight;
  lo.lease_seconds = ctx.kv_transfer.lease_seconds;
  lo.recompute_on_load_failure = ctx.kv_transfer.recompute_on_load_failure;
  lo.staging_bytes = cfg.kv_staging_bytes;
  lo.hold_params = [raw](const std::string& key, std::span<const engine::BlockId> b,
                         std::uint32_t prompt) { return hold_params(*raw, key, b, prompt); };
  ctx.loop = std::make_unique<EngineLoop>(
      std::move(scheduler), *ctx.executor, std::move(lo), ctx.metrics.get(),
      [raw](std::vector<kvcache::KVEvent> e) { publish_events(*raw, std::move(e)); },
      ctx.fetcher.get(), &ctx.transfer);
  if (ctx.ep) ctx.loop->set_between_steps([raw] { raw->ep->between_steps(); });
  if (auto st = register_serve_metrics(ctx); !st) return std::move(st).error();

  http::Router router;
  router.add(http::Method::kPost, "/v1/completions",
             make_generate_handler(ctx, sim::Endpoint::kCompletions));
  router.add(http::Method::kPost, "/v1/chat/completions",
             make_generate_handler(ctx, sim::Endpoint::kChat));
  router.add(http::Method::kGet, "/v1/models", models_handler(ctx));
  router.add(http::Method::kGet, "/health", health_handler());
  router.add(http::Method::kGet, "/ping", health_handler());
  router.add(http::Method::kPost, "/ping", health_handler());
  router.add(http::Method::kGet, "/version", version_handler(ctx));
  router.add(http::Method::kGet, "/load", load_handler(ctx));
  router.add(http::Method::kGet, "/metrics", metrics_handler(ctx));
  router.add(http::Method::kPost, "/reset_prefix_cache", reset_handler(ctx));
  router.add(http::Method::kPost, "/tokenize", body_handler(ctx, tokenize));
  router.add(http::Method::kPost, "/detokenize", body_handler(ctx, detokenize));
  router.add(http::Method::kGet, "/omni/v1/expert_placement", make_ep_handler(ctx, false));
  router.add(http::Method::kPost, "/omni/v1/expert_placement/rebalance",
             make_ep_handler(ctx, true));
  http::ServerOptions so;
  so.host = cfg.host;
  so.port = cfg.port;
  so.io_threads = cfg.io_threads;
  so.shutdown_grace = std::chrono::seconds(2);
  so.server_name = "omni-serve";
  ctx.server = std::make_unique<http::Server>(so, router.handler());

  const model::EngineOptions& eo = ctx.engine->options();
  ctx.description =
      name + ": " + std::to_string(mc.num_hidden_layers) + " layers, hidden " +
      std::to_string(mc.hidden_size) + ", " + std::to_string(mc.n_routed_experts) +
      " experts top-" + std::to_string(mc.num_experts_per_tok) + "; KV cache " +
      std::to_string(blocks) + " blocks x " + std::to_string(cfg.block_size) + " tokens (" +
      (cfg.cache_dtype) + ", " + std::to_string(blocks * bytes_per_block >> 20) + " MiB); " +
      std::to_string(eo.threads) + " threads, " + std::string(omni::amla::isa_name(eo.isa)) +
      (ctx.spec_tokens ? "; MTP " + std::to_string(ctx.spec_tokens) + " draft(s)" : "") +
      (ctx.ep ? "; EP " + std::to_string(cfg.data_parallel_size) + " ranks" +
                    (cfg.enable_eplb ? " (live EPLB)" : "")
              : "") +
      (ctx.kv_transfer.enabled ? "; PD " + ctx.kv_transfer.role : "");
  return service;
}

ServeService::~ServeService() { stop(); }

Status ServeService::start() {
  Context& ctx = *ctx_;
  if (ctx.kv_transfer.enabled) {
    const std::uint16_t port = ctx.cfg.kv_transfer_port.value_or(
        static_cast<std::uint16_t>(std::atoi(env_or("VLLM_NIXL_SIDE_CHANNEL_PORT", "0").c_str())));
    EngineLoop* loop = ctx.loop.get();
    auto server = KvBlockServer::start(
        ctx.cfg.host == "0.0.0.0" ? "0.0.0.0" : ctx.kv_host, port, ctx.engine_id,
        ctx.engine->cache(),
        [loop](const std::string& key, TransferStatus& why) { return loop->take_hold(key, why); },
        [loop](const std::string& key, bool acked) { loop->end_pull(key, acked); }, ctx.transfer);
    if (!server) return std::move(server).error();
    ctx.kv_server = std::move(*server);
  }
  ctx.loop->start();
  return ctx.server->start();
}

std::uint16_t ServeService::port() const { return ctx_->server->port(); }
std::uint16_t ServeService::kv_transfer_port() const {
  return ctx_->kv_server ? ctx_->kv_server->port() : 0;
}
std::string ServeService::kv_events_endpoint() const {
  return ctx_->publisher ? ctx_->publisher->bound_endpoint() : std::string();
}
std::string ServeService::describe() const { return ctx_->description; }

void ServeService::stop() {
  if (!ctx_) return;
  if (ctx_->server) ctx_->server->stop();
  if (ctx_->kv_server) ctx_->kv_server->stop();
  if (ctx_->fetcher) ctx_->fetcher->stop();
  if (ctx_->loop) ctx_->loop->stop();
  if (ctx_->publisher) ctx_->publisher->stop();
}

}  // namespace omni::serve
