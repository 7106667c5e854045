// The generation routes (/v1/completions, /v1/chat/completions) and the PD pull route.
//
// One request: faults → parse/validate → PD (prefill-only, or pull the KV from the prefill
// instance) → submit to the engine driver → answer as one JSON body or as an SSE stream whose
// chunks follow the engine's steps. Every wait has the request deadline; a client that goes
// away aborts its request in the engine.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <cstdlib>
#include <random>

#include "omni/http/client.hpp"
#include "omni/http/sse.hpp"
#include "omni/log/log.hpp"
#include "sim/pd.hpp"
#include "sim/response.hpp"
#include "sim/service.hpp"
#include "sim/token_gen.hpp"

namespace omni::sim {
namespace asio = boost::asio;
namespace json = boost::json;
namespace {

using SteadyTime = std::chrono::steady_clock::time_point;

std::string random_id() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(32, '0');
  for (char& c : out) c = kHex[rng() & 0xf];
  return out;
}

Task<void> sleep_for(Duration d) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  timer.expires_after(d);
  co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
}

// Everything one generation request carries through its stages.
struct Job {
  SimService::Context& ctx;
  Endpoint endpoint;
  GenerationRequest req;
  PdRequest pd;
  std::string base_id;
  std::string request_header_id;  // echoed as X-Request-Id
  ResponseContext rctx;
  std::shared_ptr<RequestChannel> channel;
  engine::SeqId seq = 0;
  SteadyTime deadline;
  bool stall = false;
  bool bootstrap = false;  // SGLang pairing by bootstrap_room instead of NIXL params

  ~Job() {
    if (channel) channel->detach();  // the driver may outlive this handler's io_context
  }
};

http::Headers echo_headers(const Job& job) {
  http::Headers h;
  if (!job.request_header_id.empty()) h.set("X-Request-Id", job.request_header_id);
  return h;
}

Task<void> answer(Job& job, http::ResponseWriter& w, http::Response r, const char* route) {
  for (const auto& [name, value] : echo_headers(job)) r.headers.set(name, value);
  job.ctx.metrics->on_http(route, r.status);
  co_await w.send(std::move(r));
}

// Named locals only inside co_await (GCC 12 miscompiles temporaries there).
Task<void> answer_error(Job& job, http::ResponseWriter& w, const ApiError& error, const char* route) {
  http::Response r = error.response();
  co_await answer(job, w, std::move(r), route);
}

std::vector<std::uint64_t> prompt_block_hashes(const Job& job) {
  if (!job.ctx.cfg.enable_prefix_caching) return {};
  kvcache::BlockHasher hasher(job.ctx.hash_algo, job.ctx.cfg.block_size, job.ctx.hash_root);
  kvcache::RequestExtraInputs extra;
  extra.cache_salt = job.req.cache_salt;
  std::vector<std::uint64_t> out;
  for (const kvcache::BlockHash& h : hasher.hash_all(job.req.prompt_tokens, extra)) {
    out.push_back(kvcache::event_int(h));
  }
  return out;
}

// The modelled KV pull from the prefill instance. Returns the transfer time in model seconds,
// or the error to answer.
Task<std::variant<double, ApiError>> pull_remote_kv(Job& job) {
  const RemotePrefill& remote = job.pd.remote;
  http::Client client(co_await asio::this_coro::executor);
  const http::Endpoint to{remote.host, remote.port};
  const std::string body = job.bootstrap
                               ? "{\"bootstrap_room\":" + std::to_string(job.req.bootstrap->room) + "}"
                               : "{\"remote_engine_id\":" + json_quote(remote.engine_id) +
                                     ",\"remote_request_id\":" + json_quote(remote.request_id) + "}";
  // SGLang sends both halves at once: the prefill may not be done yet, so the decode side asks
  // again until --bootstrap-timeout. NIXL params arrive after the prefill: one ask.
  const auto give_up = std::chrono::steady_clock::now() + job.ctx.cfg.bootstrap_timeout;
  Result<http::Response> res = make_error(ErrorCode::kTimeout, "bootstrap timed out");
  for (;;) {
    http::Request pull;
    pull.method = http::Method::kPost;
    pull.target = "/omni/v1/kv_pull";
    pull.headers.set("Content-Type", "application/json");
    pull.body = body;
    res = co_await client.send(to, std::move(pull));
    if (!job.bootstrap || (res && res->status == 200) || std::chrono::steady_clock::now() >= give_up) break;
    const Duration retry_after = std::chrono::milliseconds(5);
    co_await sleep_for(retry_after);
  }
  if (!res) {
    co_return ApiError{500,
                       "KV transfer from " + to.to_string() + " failed: " + res.error().message,
                       "InternalServerError", ""};
  }
  if (res->status != 200) {
    co_return bad_request("kv_transfer_params are stale: the prefill instance " + to.to_string() +
                              " no longer holds the KV of " + remote.request_id +
                              " (lease expired, already pulled, or unknown engine id)",
                          "kv_transfer_params");
  }
  boost::system::error_code ec;
  json::value v = json::parse(res->body, ec);
  std::uint64_t tokens = job.req.prompt_tokens.size();
  if (!ec && v.is_object()) {
    if (auto it = v.get_object().find("prompt_tokens"); it != v.get_object().end() && it->value().is_int64()) {
      tokens = static_cast<std::uint64_t>(it->value().get_int64());
    }
  }
  co_return job.ctx.driver->cost_model().kv_transfer_seconds(tokens, job.ctx.cfg.kv_link_gbps);
}

Result<std::shared_ptr<RequestChannel>> submit(Job& job, asio::any_io_executor ex, double transfer_s) {
  Submission s;
  s.spec.prompt_tokens = static_cast<std::uint32_t>(job.req.prompt_tokens.size());
  s.spec.max_output_tokens = job.pd.mode == PdMode::kPrefillOnly ? 1 : job.req.max_tokens;
  s.spec.block_hashes = prompt_block_hashes(job);
  if (job.ctx.publisher) s.spec.prompt_token_ids = job.req.prompt_tokens;
  s.spec.prefill_only = job.pd.mode == PdMode::kPrefillOnly;
  s.spec.kv_preloaded = job.pd.mode == PdMode::kRemotePrefill;
  s.transfer_seconds = transfer_s;
  s.max_tokens_param = job.req.max_tokens;
  if (s.spec.prefill_only) {
    s.held_key = job.bootstrap ? "room-" + std::to_string(job.req.bootstrap->room) : job.rctx.id + "-0";
  }
  return job.ctx.driver->submit(std::move(s), ex);
}

std::string prefill_params_json(const Job& job) {
  if (job.pd.mode != PdMode::kPrefillOnly || job.bootstrap) return "null";
  PrefillParams p;
  const auto bs = job.ctx.cfg.block_size;
  const auto blocks = (job.req.prompt_tokens.size() + bs - 1) / bs;
  // Block ids are opaque to routers; omni-sim numbers them per request so they are stable.
  const std::uint64_t base = (std::hash<std::string>{}(job.base_id) % 1000000) * 1024;
  for (std::uint64_t i = 0; i < blocks; ++i) p.block_ids.push_back(base + i);
  p.engine_id = job.ctx.engine_id;
  p.request_id = job.rctx.id + "-0";
  p.host = job.ctx.cfg.host == "0.0.0.0" ? "127.0.0.1" : job.ctx.cfg.host;
  p.port = job.ctx.server->port();
  p.tp_size = job.ctx.cfg.tensor_parallel_size;
  p.num_tokens = static_cast<std::uint32_t>(job.req.prompt_tokens.size());
  return format_prefill_params(p);
}

Task<void> respond_whole(Job& job, http::ResponseWriter& w, const char* route) {
  RequestProgress p;
  for (;;) {
    auto next = co_await job.channel->wait(p.output_tokens, job.deadline);
    if (!next) {
      job.ctx.driver->abort(job.seq);
      const ApiError timeout = internal_error("request timed out in the engine");
      co_await answer_error(job, w, timeout, route);
      co_return;
    }
    p = *next;
    if (p.done()) break;
  }
  if (p.error) {
    ApiError e{p.error_status, *p.error, p.error_status == 400 ? "BadRequestError" : "InternalServerError", ""};
    co_await answer_error(job, w, e, route);
    co_return;
  }
  TokenGenerator gen(job.ctx.cfg.seed, job.base_id, *job.ctx.codec);
  const std::vector<std::uint32_t> out = gen.range(0, p.output_tokens);
  const Usage usage{static_cast<std::uint32_t>(job.req.prompt_tokens.size()), p.output_tokens};
  const TokenIds ids{job.req.prompt_tokens, out, job.req.return_token_ids};
  http::Response r;
  r.headers.set("Content-Type", "application/json");
  r.body = format_response(job.rctx, job.ctx.codec->decode(out), finish_reason_name(p.finish), usage,
                           ids, prefill_params_json(job));
  co_await answer(job, w, std::move(r), route);
}

Task<void> respond_stream(Job& job, http::ResponseWriter& w, const char* route) {
  http::SseWriter sse(w);
  http::Headers headers = echo_headers(job);
  job.ctx.metrics->on_http(route, 200);
  if (!(co_await sse.begin(std::move(headers)))) {
    job.ctx.driver->abort(job.seq);
    co_return;
  }
  const auto prompt_len = static_cast<std::uint32_t>(job.req.prompt_tokens.size());
  const bool continuous = job.req.include_usage && job.req.continuous_usage_stats;
  auto usage_at = [&](std::uint32_t n) { return continuous ? std::optional<Usage>(Usage{prompt_len, n}) : std::nullopt; };
  if (job.endpoint == Endpoint::kChat) {
    const std::string role = format_role_chunk(job.rctx, usage_at(0));
    if (!(co_await sse.send_data(role))) {
      job.ctx.driver->abort(job.seq);
      co_return;
    }
  }
  TokenGenerator gen(job.ctx.cfg.seed, job.base_id, *job.ctx.codec);
  std::uint32_t sent = 0;
  for (;;) {
    auto next = co_await job.channel->wait(sent, job.deadline);
    if (!next || next->error) {
      if (!next) job.ctx.driver->abort(job.seq);
      const std::string message = next ? *next->error : std::string("request timed out in the engine");
      const std::string err = format_stream_error(message, "InternalServerError", 500);
      co_await sse.send_data(err);
      break;
    }
    const RequestProgress p = *next;
    const std::vector<std::uint32_t> fresh = gen.range(sent, p.output_tokens);
    const std::string finish(p.done() ? finish_reason_name(p.finish) : "");
    const bool fingerprint = p.done() && !job.req.include_usage;
    const TokenIds ids{{}, fresh, job.req.return_token_ids};
    const std::string chunk = format_chunk(job.rctx, job.ctx.codec->decode(fresh), finish,
                                           usage_at(p.output_tokens), ids, fingerprint);
    if (!(co_await sse.send_data(chunk))) {
      job.ctx.driver->abort(job.seq);
      co_return;
    }
    sent = p.output_tokens;
    if (p.done()) {
      if (job.req.include_usage) {
        const std::string usage = format_usage_chunk(job.rctx, Usage{prompt_len, sent});
        co_await sse.send_data(usage);
      }
      break;
    }
    if (job.stall) {
      job.stall = false;
      job.ctx.metrics->on_fault("stall");
      co_await sleep_for(job.ctx.faults->config().stall_duration);
    }
  }
  const std::string done = "[DONE]";
  co_await sse.send_data(done);
  co_await sse.end();
}

const char* route_of(Endpoint e) { return e == Endpoint::kChat ? "/v1/chat/completions" : "/v1/completions"; }

Task<void> generate(SimService::Context& ctx, Endpoint endpoint, http::Request& request,
                    http::ResponseWriter& w) {
  const char* route = route_of(endpoint);
  Job job{ctx, endpoint, {}, {}, {}, {}, {}, nullptr, 0, {}, false, false};
  job.deadline = std::chrono::steady_clock::now() + ctx.cfg.request_timeout;
  if (auto id = request.headers.get("X-Request-Id")) job.request_header_id = std::string(*id);
  const FaultDecision fault = ctx.faults->decide();
  if (fault.crash) {
    log::get("sim")->error("fault injection: crashing after {} requests", ctx.cfg.fault_crash_after);
    std::_Exit(70);
  }
  if (ctx.faults->config().added_latency.count() > 0) {
    ctx.metrics->on_fault("latency");
    co_await sleep_for(ctx.faults->config().added_latency);
  }
  if (fault.error) {
    ctx.metrics->on_fault("error");
    const int status = ctx.faults->config().error_status;
    ApiError e{status, "injected fault (--fault-error-rate)", status == 500 ? "InternalServerError" : "", ""};
    co_await answer_error(job, w, e, route);
    co_return;
  }
  auto content_type = request.headers.get("Content-Type");
  if (!content_type || content_type->find("application/json") == std::string_view::npos) {
    ApiError e = validation_error("Unsupported Media Type: Only 'application/json' is allowed");
    co_await answer_error(job, w, e, route);
    co_return;
  }
  ParsedRequest parsed = parse_generation_request(request.body, endpoint, ctx.limits, *ctx.codec);
  if (auto* e = std::get_if<ApiError>(&parsed)) {
    ApiError err = *e;
    co_await answer_error(job, w, err, route);
    co_return;
  }
  job.req = std::move(std::get<GenerationRequest>(parsed));
  auto pd = parse_pd_request(job.req.kv_transfer_params);
  if (auto* e = std::get_if<ApiError>(&pd)) {
    ApiError err = *e;
    co_await answer_error(job, w, err, route);
    co_return;
  }
  job.pd = std::get<PdRequest>(pd);
  if (job.pd.mode == PdMode::kNone && job.req.bootstrap && ctx.cfg.disaggregation_mode != "null") {
    // SGLang PD: the role comes from the server's --disaggregation-mode, the pairing from the room.
    job.bootstrap = true;
    if (ctx.cfg.disaggregation_mode == "prefill") {
      job.pd.mode = PdMode::kPrefillOnly;
    } else {
      job.pd.mode = PdMode::kRemotePrefill;
      job.pd.remote.host = job.req.bootstrap->host;
      job.pd.remote.port = static_cast<std::uint16_t>(job.req.bootstrap->port);
      if (job.req.bootstrap->port < 1 || job.req.bootstrap->port > 65535) {
        ApiError err = bad_request("bootstrap_port must be a port number", "bootstrap_port");
        co_await answer_error(job, w, err, route);
        co_return;
      }
    }
  }
  if (job.pd.mode == PdMode::kPrefillOnly && job.req.stream && !job.bootstrap) {
    ApiError err = bad_request("kv_transfer_params with do_remote_decode need stream=false", "stream");
    co_await answer_error(job, w, err, route);
    co_return;
  }
  job.base_id = !job.request_header_id.empty() ? job.request_header_id
                                                : job.req.body_request_id.value_or(random_id());
  job.rctx = {endpoint, (endpoint == Endpoint::kChat ? "chatcmpl-" : "cmpl-") + job.base_id,
              std::chrono::duration_cast<std::chrono::seconds>(
                  std::chrono::system_clock::now().time_since_epoch()).count(),
              job.req.model, ctx.fingerprint};
  job.stall = fault.stall && job.req.stream;
  double transfer_s = 0;
  if (job.pd.mode == PdMode::kRemotePrefill) {
    auto pulled = co_await pull_remote_kv(job);
    if (auto* e = std::get_if<ApiError>(&pulled)) {
      ApiError err = *e;
      co_await answer_error(job, w, err, route);
      co_return;
    }
    transfer_s = std::get<double>(pulled);
  }
  auto channel = submit(job, co_await asio::this_coro::executor, transfer_s);
  if (!channel) {
    ApiError err{503, channel.error().message, "ServiceUnavailableError", ""};
    co_await answer_error(job, w, err, route);
    co_return;
  }
  job.channel = std::move(*channel);
  job.seq = job.channel->id;
  ctx.in_flight.fetch_add(1, std::memory_order_relaxed);
  if (job.req.stream) {
    co_await respond_stream(job, w, route);
  } else {
    co_await respond_whole(job, w, route);
  }
  ctx.in_flight.fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace

http::Handler make_generate_handler(SimService::Context& ctx, Endpoint endpoint) {
  return [&ctx, endpoint](http::Request& request, http::ResponseWriter& w) -> Task<void> {
    co_await generate(ctx, endpoint, request, w);
  };
}

// POST /omni/v1/kv_pull {"remote_engine_id", "remote_request_id"} (NIXL-style) or
// {"bootstrap_room"} (SGLang-style): a decode instance reads the KV this (prefill) instance holds. 200 {"prompt_tokens": N} frees the blocks;
// 404 when nothing is held under that id (unknown, already pulled, lease expired).
http::Handler make_kv_pull_handler(SimService::Context& ctx) {
  return [&ctx](http::Request& request, http::ResponseWriter& w) -> Task<void> {
    boost::system::error_code ec;
    json::value v = json::parse(request.body, ec);
    const json::object* o = ec ? nullptr : v.if_object();
    auto text = [&](std::string_view key) -> std::string {
      if (!o) return {};
      auto it = o->find(key);
      return it != o->end() && it->value().is_string() ? std::string(it->value().get_string()) : std::string();
    };
    std::string engine_id = text("remote_engine_id");
    std::string request_id = text("remote_request_id");
    if (o) {
      // SGLang pairing: the room is the key, there is no engine id to check.
      if (auto room = o->find("bootstrap_room"); room != o->end() && room->value().is_int64()) {
        request_id = "room-" + std::to_string(room->value().get_int64());
        engine_id = ctx.engine_id;
      }
    }
    http::Response r;
    if (request_id.empty()) {
      r = validation_error("remote_request_id required", "remote_request_id").response();
    } else if (engine_id != ctx.engine_id) {
      r = ApiError{404, "unknown engine id " + engine_id, "NotFoundError", "remote_engine_id"}.response();
    } else if (auto held = ctx.driver->release_held(request_id)) {
      r.status = 200;
      r.headers.set("Content-Type", "application/json");
      r.body = "{\"prompt_tokens\":" + std::to_string(held->prompt_tokens) + "}";
    } else {
      r = ApiError{404, "no KV held for " + request_id, "NotFoundError", "remote_request_id"}.response();
    }
    co_await w.send(std::move(r));
  };
}

}  // namespace omni::sim
