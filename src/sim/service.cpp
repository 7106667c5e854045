#include "sim/service.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <future>

#include "omni/config/http_server_config.hpp"
#include "omni/log/log.hpp"
#include "sim/chat_codec.hpp"
#include "sim/job.hpp"
#include "sim/response.hpp"
#include "sim/tokenizer_codec.hpp"

namespace omni::sim {
namespace json = boost::json;
namespace {

std::string hex64(std::uint64_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) out[static_cast<std::size_t>(i)] = kDigits[v & 0xf];
  return out;
}

// The tokenizer, as vLLM finds it: --tokenizer when given, else the model's own tokenizer.json
// when --model is a local model directory; the built-in codec only when neither exists (a
// model name such as deepseek-ai/DeepSeek-V3 with no files on this machine).
Result<std::unique_ptr<TextCodec>> make_codec(const SimConfig& cfg) {
  std::optional<std::string> path = cfg.tokenizer;
  if (!path) {
    std::error_code ec;
    const std::filesystem::path model(cfg.model);
    if (std::filesystem::is_regular_file(model / "tokenizer.json", ec)) path = model.string();
  }
  // No tokenizer files: the built-in codec and role template (a request's own chat_template
  // still renders).
  if (!path) return with_chat_templates(make_builtin_codec(), "{}");
  auto codec = load_tokenizer_codec(*path);
  if (!codec) return make_error(ErrorCode::kInvalidArgument, "tokenizer: " + codec.error().message);
  return codec;
}

std::uint64_t random_u64() {
  std::random_device rd;
  return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
}

http::Response json_response(int status, std::string body) {
  http::Response r;
  r.status = status;
  r.headers.set("Content-Type", "application/json");
  r.body = std::move(body);
  return r;
}

// vLLM: NONE_HASH from $PYTHONHASHSEED when set, else random bytes per process.
kvcache::BlockHash hash_root(kvcache::HashAlgo algo) {
  if (const char* seed = std::getenv("PYTHONHASHSEED")) return kvcache::none_hash(algo, seed);
  std::vector<std::uint8_t> bytes(32);
  std::random_device rd;
  for (auto& b : bytes) b = static_cast<std::uint8_t>(rd());
  return *kvcache::BlockHash::from_bytes(bytes);
}

// "8 x h200 (--tensor-parallel-size 8 --data-parallel-size 1 --enable-expert-parallel)"
std::string layout_text(const EngineSetup& s) {
  return std::to_string(s.layout.devices()) + " x " + s.hardware.name +
         " (--tensor-parallel-size " + std::to_string(s.layout.tp) + " --data-parallel-size " +
         std::to_string(s.layout.dp) + (s.layout.ep ? " --enable-expert-parallel" : "") + ")";
}

Task<void> send(http::ResponseWriter& w, http::Response r) { co_await w.send(std::move(r)); }

http::Handler models_handler(SimService::Context& ctx) {
  return [&ctx](http::Request&, http::ResponseWriter& w) -> Task<void> {
    std::string data;
    for (const std::string& name : ctx.limits.served_names) {
      if (!data.empty()) data += ',';
      const std::string created = std::to_string(ctx.created);
      data += "{\"id\":" + json_quote(name) + ",\"object\":\"model\",\"created\":" + created +
              ",\"owned_by\":\"vllm\",\"root\":" + json_quote(ctx.cfg.model) +
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

http::Handler health_handler(SimService::Context&) {
  return [](http::Request&, http::ResponseWriter& w) -> Task<void> {
    http::Response r;
    r.status = 200;
    co_await send(w, std::move(r));
  };
}

// vLLM's {"version"}, plus what omni-sim is: the model clock's speed-up, so that a client
// (omni-bench) can report times in model time.
http::Handler version_handler(SimService::Context& ctx) {
  return [&ctx](http::Request&, http::ResponseWriter& w) -> Task<void> {
    http::Response r =
        json_response(200, std::string("{\"version\":\"") + kVllmVersion +
                               "\",\"omni_sim\":{\"speed\":" + speed_text(ctx.cfg.speed) + "}}");
    co_await send(w, std::move(r));
  };
}

// POST /reset_prefix_cache (vLLM's, dev mode there): 200 when the cache was reset; 409 when
// requests run or hold KV (vLLM logs and leaves the cache as it is; omni-sim says so).
http::Handler reset_prefix_cache_handler(SimService::Context& ctx) {
  return [&ctx](http::Request&, http::ResponseWriter& w) -> Task<void> {
    std::future<bool> done = ctx.driver->reset_prefix_cache();
    boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor);
    for (int waited = 0; done.wait_for(std::chrono::seconds(0)) != std::future_status::ready;
         ++waited) {
      if (waited > 5000) break;  // 5 s: the driver thread is gone or stuck
      timer.expires_after(std::chrono::milliseconds(1));
      co_await timer.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
    }
    http::Response r;
    if (done.wait_for(std::chrono::seconds(0)) == std::future_status::ready && done.get()) {
      r.status = 200;
    } else {
      r = ApiError{409, "prefix cache not reset: requests are running or holding KV",
                   "ConflictError", ""}
              .response();
    }
    co_await send(w, std::move(r));
  };
}

// --fault-unresponsive: every route reads its request and never answers.
http::Handler unresponsive(SimService::Context& ctx) {
  return [&ctx](http::Request&, http::ResponseWriter& w) -> Task<void> {
    ctx.metrics->on_fault("unresponsive");
    co_await wait_for_close(w, std::chrono::hours(24));
  };
}

http::Handler load_handler(SimService::Context& ctx) {
  return [&ctx](http::Request&, http::ResponseWriter& w) -> Task<void> {
    http::Response r = json_response(
        200,
        "{\"server_load\":" + std::to_string(ctx.in_flight.load(std::memory_order_relaxed)) + "}");
    co_await send(w, std::move(r));
  };
}

http::Handler metrics_handler(SimService::Context& ctx) {
  return [&ctx](http::Request&, http::ResponseWriter& w) -> Task<void> {
    http::Response r;
    r.headers.set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
    r.body = ctx.registry.expose();
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

// /tokenize: the completion form ("prompt") or the chat form ("messages").
http::Response tokenize(SimService::Context& ctx, const std::string& body) {
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec || !v.is_object())
    return validation_error("Input should be a valid dictionary").response();
  const json::object& o = v.get_object();
  std::vector<std::uint32_t> tokens;
  if (auto p = o.find("prompt"); p != o.end() && p->value().is_string()) {
    tokens = ctx.codec->encode(p->value().get_string());
  } else if (auto m = o.find("messages"); m != o.end() && m->value().is_array()) {
    auto chat = chat_prompt_tokens(o, *ctx.codec);  // the same prompt as /v1/chat/completions
    if (auto* error = std::get_if<ApiError>(&chat)) return error->response();
    tokens = std::move(std::get<std::vector<std::uint32_t>>(chat));
  } else {
    return validation_error("Field required: 'prompt' (string) or 'messages' (list)", "prompt")
        .response();
  }
  bool strs = false;
  if (auto s = o.find("return_token_strs"); s != o.end() && s->value().is_bool())
    strs = s->value().get_bool();
  std::string token_strs = "null";
  if (strs) {
    token_strs = "[";
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      token_strs += (i ? "," : "") + json_quote(ctx.codec->token_text(tokens[i]));
    }
    token_strs += "]";
  }
  return json_response(200, "{\"count\":" + std::to_string(tokens.size()) +
                                ",\"max_model_len\":" + std::to_string(ctx.limits.max_model_len) +
                                ",\"tokens\":" + token_list(tokens) +
                                ",\"token_strs\":" + token_strs + "}");
}

http::Response detokenize(SimService::Context& ctx, const std::string& body) {
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec || !v.is_object())
    return validation_error("Input should be a valid dictionary").response();
  auto t = v.get_object().find("tokens");
  if (t == v.get_object().end() || !t->value().is_array()) {
    return validation_error("Field required", "tokens").response();
  }
  std::vector<std::uint32_t> tokens;
  for (const json::value& id : t->value().get_array()) {
    if (!id.is_int64() || id.get_int64() < 0 || id.get_int64() > 0xffffffffLL) {
      return validation_error("Input should be a valid token id", "tokens").response();
    }
    tokens.push_back(static_cast<std::uint32_t>(id.get_int64()));
  }
  return json_response(200, "{\"prompt\":" + json_quote(ctx.codec->decode(tokens)) + "}");
}

http::Handler body_handler(SimService::Context& ctx,
                           http::Response (*fn)(SimService::Context&, const std::string&)) {
  return [&ctx, fn](http::Request& req, http::ResponseWriter& w) -> Task<void> {
    http::Response r = fn(ctx, req.body);
    co_await send(w, std::move(r));
  };
}

void publish_events(SimService::Context& ctx, std::vector<kvcache::KVEvent> events) {
  if (!ctx.publisher) return;
  kvcache::KVEventBatch batch;
  batch.ts =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  batch.events = std::move(events);
  batch.data_parallel_rank = 0;
  ctx.publisher->publish(std::move(batch));
  const auto stats = ctx.publisher->stats();
  if (ctx.metrics) {
    ctx.metrics->on_kv_events(stats.dropped - ctx.kv_dropped_seen,
                              stats.published - ctx.kv_published_seen);
  }
  ctx.kv_dropped_seen = stats.dropped;
  ctx.kv_published_seen = stats.published;
}

}  // namespace

Result<std::unique_ptr<SimService>> SimService::create(const SimConfig& cfg) {
  std::unique_ptr<SimService> service(new SimService());
  service->ctx_ = std::make_unique<Context>();
  Context& ctx = *service->ctx_;
  ctx.cfg = cfg;
  auto events = parse_kv_events_config(cfg.kv_events_config);
  if (!events) return std::move(events).error();
  auto transfer = parse_kv_transfer_config(cfg.kv_transfer_config);
  if (!transfer) return std::move(transfer).error();
  ctx.kv_transfer = *transfer;
  auto setup = engine_setup(cfg, events->has_value());
  if (!setup) return std::move(setup).error();
  ctx.limits = {served_names(cfg), setup->config.max_model_len};
  auto codec = make_codec(cfg);
  if (!codec) return std::move(codec).error();
  ctx.codec = std::move(*codec);
  ctx.hash_algo = *kvcache::parse_hash_algo(cfg.prefix_caching_hash_algo);
  ctx.hash_root = hash_root(ctx.hash_algo);
  ctx.engine_id =
      transfer->engine_id.empty() ? "omni-sim-" + hex64(random_u64()) : transfer->engine_id;
  ctx.fingerprint =
      std::string("vllm-") + kVllmVersion + "-" +
      hex64(std::hash<std::string>{}(cfg.model + std::to_string(cfg.seed))).substr(0, 8);
  ctx.created = std::chrono::duration_cast<std::chrono::seconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
  ctx.clock = std::make_unique<SteadyClock>(cfg.speed);
  engine::EngineConfig engine_config = setup->config;
  engine::Engine engine(engine_config,
                        engine::CostModel(setup->model, setup->hardware, setup->layout, setup->mtp),
                        cfg.seed);
  const std::uint64_t kv_tokens = engine.stats().total_blocks * cfg.block_size;
  if (kv_tokens < engine_config.max_model_len && !cfg.num_gpu_blocks_override) {
    // vLLM refuses to start in this case, with this message; so does omni-sim.
    return make_error(ErrorCode::kInvalidArgument,
                      "The model's max seq len (" + std::to_string(engine_config.max_model_len) +
                          ") is larger than the maximum number of tokens that can be stored in KV "
                          "cache (" +
                          std::to_string(kv_tokens) +
                          "). Give the model more devices "
                          "(--tensor-parallel-size, --data-parallel-size, --hardware), decrease "
                          "--max-model-len, or set --num-gpu-blocks-override.");
  }
  CacheInfo cache{cfg.block_size, cfg.prefix_caching_hash_algo, cfg.enable_prefix_caching,
                  engine.stats().total_blocks};
  Context* raw = &ctx;
  auto metrics = SimMetrics::create(
      ctx.registry, ctx.limits.served_names.front(), ctx.limits.max_model_len, cache,
      [raw] { return raw->driver ? raw->driver->gauges() : EngineGauges{}; });
  if (!metrics) return std::move(metrics).error();
  ctx.metrics = std::move(*metrics);
  if (*events) {
    auto publisher = kvcache::ZmqEventPublisher::start(**events);
    if (!publisher) return std::move(publisher).error();
    ctx.publisher = std::move(*publisher);
  }
  DriverOptions options;
  options.speed = cfg.speed;
  options.kv_lease_seconds = transfer->lease_seconds;
  ctx.driver = std::make_unique<EngineDriver>(
      std::move(engine), *ctx.clock, options, ctx.metrics.get(),
      [raw](std::vector<kvcache::KVEvent> e) { publish_events(*raw, std::move(e)); });
  FaultConfig faults;
  faults.error_rate = cfg.fault_error_rate;
  faults.error_status = cfg.fault_error_status;
  faults.added_latency = cfg.fault_latency;
  faults.stall_rate = cfg.fault_stall_rate;
  faults.stall_duration = cfg.fault_stall_duration;
  faults.stall_after_tokens = cfg.fault_stall_after_tokens;
  faults.crash_after = cfg.fault_crash_after;
  faults.crash_after_tokens = cfg.fault_crash_after_tokens;
  faults.stream_error_rate = cfg.fault_stream_error_rate;
  faults.stream_error_after_tokens = cfg.fault_stream_error_after_tokens;
  faults.hang_rate = cfg.fault_hang_rate;
  faults.unresponsive = cfg.fault_unresponsive;
  faults.bootstrap_never_connects = cfg.fault_bootstrap_never_connects;
  faults.refuse_connections_for = cfg.fault_refuse_connections_for;
  ctx.faults = std::make_unique<FaultInjector>(faults, cfg.seed ^ 0x5eedfa17ULL);

  http::Router router;
  router.add(http::Method::kPost, "/v1/completions",
             make_generate_handler(ctx, Endpoint::kCompletions));
  router.add(http::Method::kPost, "/v1/chat/completions",
             make_generate_handler(ctx, Endpoint::kChat));
  router.add(http::Method::kGet, "/v1/models", models_handler(ctx));
  router.add(http::Method::kGet, "/health", health_handler(ctx));
  router.add(http::Method::kGet, "/ping", health_handler(ctx));
  router.add(http::Method::kPost, "/ping", health_handler(ctx));
  router.add(http::Method::kGet, "/version", version_handler(ctx));
  router.add(http::Method::kPost, "/reset_prefix_cache", reset_prefix_cache_handler(ctx));
  router.add(http::Method::kGet, "/load", load_handler(ctx));
  router.add(http::Method::kGet, "/metrics", metrics_handler(ctx));
  router.add(http::Method::kPost, "/tokenize", body_handler(ctx, tokenize));
  router.add(http::Method::kPost, "/detokenize", body_handler(ctx, detokenize));
  router.add(http::Method::kPost, "/omni/v1/kv_pull", make_kv_pull_handler(ctx));
  http::ServerOptions server_options;
  server_options.host = cfg.host;
  server_options.port = cfg.port;
  server_options.io_threads = cfg.io_threads;
  server_options.shutdown_grace = std::chrono::seconds(2);
  server_options.server_name = "omni-sim";
  ctx.server = std::make_unique<http::Server>(
      server_options, cfg.fault_unresponsive ? unresponsive(ctx) : router.handler());
  if (cfg.disaggregation_mode == "prefill") {
    // SGLang serves its bootstrap on its own port; decode instances pull rooms there (the
    // HTTP port answers the same route too, for routers that send it).
    http::Router bootstrap;
    bootstrap.add(http::Method::kPost, "/omni/v1/kv_pull", make_kv_pull_handler(ctx));
    bootstrap.add(http::Method::kGet, "/health", health_handler(ctx));
    http::ServerOptions bootstrap_options = server_options;
    bootstrap_options.port = cfg.disaggregation_bootstrap_port.value_or(kSglangBootstrapPort);
    bootstrap_options.server_name = "omni-sim-bootstrap";
    ctx.bootstrap = std::make_unique<http::Server>(
        bootstrap_options, cfg.fault_unresponsive ? unresponsive(ctx) : bootstrap.handler());
  }
  ctx.deployment =
      setup->model.name + " on " + (setup->picked ? *setup->picked : layout_text(*setup));
  return service;
}

SimService::~SimService() { stop(); }

Status SimService::start() {
  ctx_->driver->start();
  if (Status s = ctx_->server->start(); !s) return s;
  if (ctx_->bootstrap) {
    if (Status s = ctx_->bootstrap->start(); !s) {
      if (ctx_->cfg.disaggregation_bootstrap_port) return s;
      // Defaulted (8998) and busy, e.g. several prefill instances on one host: SGLang would
      // refuse to start; omni-sim serves the bootstrap on its HTTP port only and says so.
      log::get("sim")->warn(
          "SGLang bootstrap port {} not available ({}); the bootstrap is served on the "
          "HTTP port only (pass --disaggregation-bootstrap-port)",
          kSglangBootstrapPort, s.error().message);
      ctx_->bootstrap.reset();
    }
  }
  return ok_status();
}

std::uint16_t SimService::port() const { return ctx_->server->port(); }

std::uint16_t SimService::bootstrap_port() const {
  return ctx_->bootstrap ? ctx_->bootstrap->port() : 0;
}

std::string SimService::deployment() const { return ctx_->deployment; }

void SimService::stop() {
  if (!ctx_) return;  // create() may have failed half-way: stop what exists
  if (ctx_->bootstrap) ctx_->bootstrap->stop();
  if (ctx_->server) ctx_->server->stop();
  if (ctx_->driver) ctx_->driver->stop();
  if (ctx_->publisher) ctx_->publisher->stop();
}

std::string SimService::kv_events_endpoint() const {
  return ctx_->publisher ? ctx_->publisher->bound_endpoint() : std::string();
}

}  // namespace omni::sim
