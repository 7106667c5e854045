// The generation routes (/v1/completions, /v1/chat/completions).
//
// One request: faults → parse/validate → PD (prefill-only, or pull the KV from the prefill
// instance; a KV that cannot be loaded is recomputed, as vLLM's kv_load_failure_policy
// "recompute") → plan each choice's stop → submit to the engine driver → answer as one JSON
// body or as an SSE stream (respond.cpp). Every wait has the request deadline; a client that
// goes away aborts its requests in the engine.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "omni/engine/output_length.hpp"
#include "omni/log/log.hpp"
#include "sim/job.hpp"

namespace omni::sim {
namespace asio = boost::asio;
namespace {

std::string random_hex(std::size_t n) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(n, '0');
  for (char& c : out) c = kHex[rng() & 0xf];
  return out;
}

std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The output-length model's key of one choice: the same request id stops at the same length
// on every instance with the same --seed (PD prefill and decode agree).
std::uint64_t eos_key(std::uint64_t seed, std::string_view id, std::uint32_t choice) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : id) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return mix(mix(seed ^ 0xe05ULL) ^ h ^ (std::uint64_t{choice} << 32));
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

// Builds the choices and their stop plans, then submits one engine request per choice.
// Returns the error to answer, if any (already-submitted choices are aborted).
std::optional<ApiError> submit_choices(Job& job, asio::any_io_executor ex, double transfer_s) {
  const bool prefill_only = job.pd.mode == PdMode::kPrefillOnly;
  const engine::ModelProfile& model = job.ctx.driver->cost_model().model();
  const std::vector<std::uint64_t> hashes = prompt_block_hashes(job);
  for (std::uint32_t i = 0; i < job.req.n; ++i) {
    const std::string id = i == 0 ? job.base_id : job.base_id + "/" + std::to_string(i);
    auto c = std::make_unique<ChoiceState>(i, id, job.ctx);
    const std::uint32_t eos = engine::sample_output_length(model, eos_key(job.ctx.cfg.seed, id, i));
    c->plan = prefill_only
                  ? OutputPlan{1, false, "null", 1, std::string::npos}
                  : plan_output(c->gen, *job.ctx.codec, job.req.max_tokens, eos, job.req.stop);
    Submission s;
    s.spec.prompt_tokens = job.prompt_len();
    s.spec.max_output_tokens = prefill_only ? 1 : job.req.max_tokens;
    s.spec.stop_after = c->plan.stops ? c->plan.tokens : 0;
    s.spec.block_hashes = hashes;
    if (job.ctx.publisher) s.spec.prompt_token_ids = job.req.prompt_tokens;
    s.spec.prefill_only = prefill_only;
    s.spec.kv_preloaded = job.pd.mode == PdMode::kRemotePrefill;
    s.transfer_seconds = transfer_s;
    s.max_tokens_param = job.req.max_tokens;
    s.held_key = prefill_only ? job.held_key : std::string();
    auto channel = job.ctx.driver->submit(std::move(s), ex);
    if (!channel) {
      job.abort_all();
      if (channel.error().code == ErrorCode::kInvalidArgument) {
        return bad_request(channel.error().message,
                           job.bootstrap ? "bootstrap_room" : "kv_transfer_params");
      }
      return ApiError{503, channel.error().message, "ServiceUnavailableError", ""};
    }
    c->channel = std::move(*channel);
    c->seq = c->channel->id;
    job.choices.push_back(std::move(c));
  }
  return std::nullopt;
}

// SGLang PD: the role comes from the server's --disaggregation-mode, the pairing from the room.
std::optional<ApiError> setup_bootstrap(Job& job) {
  const SimConfig& cfg = job.ctx.cfg;
  if (job.pd.mode != PdMode::kNone || !job.req.bootstrap || cfg.disaggregation_mode == "null") {
    return std::nullopt;
  }
  job.bootstrap = true;
  if (cfg.disaggregation_mode == "prefill") {
    job.pd.mode = PdMode::kPrefillOnly;
    return std::nullopt;
  }
  if (job.req.bootstrap->port < 1 || job.req.bootstrap->port > 65535) {
    return bad_request("bootstrap_port must be a port number", "bootstrap_port");
  }
  job.pd.mode = PdMode::kRemotePrefill;
  job.pd.remote.host = job.req.bootstrap->host;
  job.pd.remote.port = static_cast<std::uint16_t>(job.req.bootstrap->port);
  return std::nullopt;
}

// The decode side's KV: pulled (the transfer time), or, when it cannot be loaded, recomputed
// locally (kv_load_failure_policy "recompute") or failed with 500 ("fail", and SGLang's
// bootstrap, which has no recompute). Never a 400: the client's request was valid.
Task<std::variant<double, ApiError>> load_remote_kv(Job& job) {
  PullResult pulled = co_await pull_remote_kv(job);
  if (pulled.transfer_s) co_return *pulled.transfer_s;
  const bool recompute = !job.bootstrap && job.ctx.kv_transfer.recompute_on_load_failure;
  job.ctx.metrics->on_kv_load_failure(pulled.failure, recompute ? "recompute" : "fail");
  if (!recompute) co_return internal_error(pulled.message);
  log::get("sim")->info("request {}: remote KV not loaded ({}); recomputing the prompt locally",
                        job.rctx.id, pulled.message);
  job.pd.mode = PdMode::kNone;
  co_return 0.0;
}

Task<void> generate(SimService::Context& ctx, Endpoint endpoint, http::Request& request,
                    http::ResponseWriter& w) {
  Job job(ctx, endpoint);
  job.deadline = std::chrono::steady_clock::now() + ctx.cfg.request_timeout;
  if (auto id = request.headers.get("X-Request-Id")) job.request_header_id = std::string(*id);
  job.fault = ctx.faults->decide();
  if (job.fault.crash) {
    log::get("sim")->error("fault injection: crashing after {} requests",
                           ctx.cfg.fault_crash_after);
    std::_Exit(70);
  }
  if (job.fault.hang) {
    // Accepted and read, never answered: the request ends when the client gives up.
    ctx.metrics->on_fault("hang");
    co_await wait_for_close(w, std::chrono::hours(24));
    co_return;
  }
  if (ctx.faults->config().added_latency.count() > 0) {
    ctx.metrics->on_fault("latency");
    co_await sleep_for(ctx.faults->config().added_latency);
  }
  if (job.fault.error) {
    ctx.metrics->on_fault("error");
    const int status = ctx.faults->config().error_status;
    ApiError e{status, "injected fault (--fault-error-rate)",
               status == 500 ? "InternalServerError" : "", ""};
    co_await answer_error(job, w, e);
    co_return;
  }
  auto content_type = request.headers.get("Content-Type");
  if (!content_type || content_type->find("application/json") == std::string_view::npos) {
    ApiError e = validation_error("Unsupported Media Type: Only 'application/json' is allowed");
    co_await answer_error(job, w, e);
    co_return;
  }
  ParsedRequest parsed = parse_generation_request(request.body, endpoint, ctx.limits, *ctx.codec);
  if (auto* e = std::get_if<ApiError>(&parsed)) {
    ApiError err = *e;
    co_await answer_error(job, w, err);
    co_return;
  }
  job.req = std::move(std::get<GenerationRequest>(parsed));
  auto pd = parse_pd_request(job.req.kv_transfer_params);
  std::optional<ApiError> refused;
  if (auto* e = std::get_if<ApiError>(&pd)) {
    refused = *e;
  } else {
    job.pd = std::get<PdRequest>(pd);
    refused = setup_bootstrap(job);
  }
  if (!refused && job.pd.mode != PdMode::kNone && job.req.n > 1) {
    refused = not_implemented("n > 1 is not supported with PD disaggregation in omni-sim");
  }
  if (!refused && job.pd.mode == PdMode::kPrefillOnly && job.req.stream && !job.bootstrap) {
    refused = bad_request("kv_transfer_params with do_remote_decode need stream=false", "stream");
  }
  if (refused) {
    ApiError err = *refused;
    co_await answer_error(job, w, err);
    co_return;
  }
  job.base_id = !job.request_header_id.empty() ? job.request_header_id
                                               : job.req.body_request_id.value_or(random_hex(32));
  job.rctx = {endpoint, (endpoint == Endpoint::kChat ? "chatcmpl-" : "cmpl-") + job.base_id,
              std::chrono::duration_cast<std::chrono::seconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count(),
              job.req.model, ctx.fingerprint};
  if (job.pd.mode == PdMode::kPrefillOnly) {
    // The hold's key is unique, as vLLM's engine-internal id (<id>-0-<8 random>): two requests
    // with one X-Request-Id never share, overwrite or leak each other's KV. SGLang pairs by the
    // room the router chose; a room already in use is refused.
    job.held_key = job.bootstrap ? "room-" + std::to_string(job.req.bootstrap->room)
                                 : job.rctx.id + "-0-" + random_hex(8);
  }
  double transfer_s = 0;
  if (job.pd.mode == PdMode::kRemotePrefill) {
    auto loaded = co_await load_remote_kv(job);
    if (auto* e = std::get_if<ApiError>(&loaded)) {
      ApiError err = *e;
      co_await answer_error(job, w, err);
      co_return;
    }
    transfer_s = std::get<double>(loaded);
  }
  if (auto error = submit_choices(job, co_await asio::this_coro::executor, transfer_s)) {
    ApiError err = *error;
    co_await answer_error(job, w, err);
    co_return;
  }
  ctx.in_flight.fetch_add(1, std::memory_order_relaxed);
  if (job.req.stream) {
    co_await respond_stream(job, w);
  } else {
    co_await respond_whole(job, w);
  }
  ctx.in_flight.fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace

Job::~Job() {
  for (auto& c : choices) {
    if (c->channel) c->channel->detach();
  }
}

void Job::abort_all() {
  for (auto& c : choices) {
    if (c->channel) ctx.driver->abort(c->seq);
  }
}

Usage Job::usage(std::uint32_t cached_tokens) const {
  Usage u{prompt_len(), 0, std::nullopt};
  for (const auto& c : choices) u.completion_tokens += c->last.output_tokens;
  if (ctx.cfg.enable_prompt_tokens_details && cached_tokens > 0) u.cached_tokens = cached_tokens;
  return u;
}

const char* route_of(Endpoint e) {
  return e == Endpoint::kChat ? "/v1/chat/completions" : "/v1/completions";
}

std::string speed_text(double speed) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.15g", speed);
  return buf;
}

http::Headers response_headers(const Job& job) {
  http::Headers h;
  if (!job.request_header_id.empty()) h.set("X-Request-Id", job.request_header_id);
  h.set("X-Omni-Sim-Speed", speed_text(job.ctx.cfg.speed));
  return h;
}

Task<void> answer(Job& job, http::ResponseWriter& w, http::Response r) {
  for (const auto& [name, value] : response_headers(job)) r.headers.set(name, value);
  job.ctx.metrics->on_http(route_of(job.endpoint), r.status);
  co_await w.send(std::move(r));
}

// Named locals only inside co_await (GCC 12 miscompiles temporaries there).
Task<void> answer_error(Job& job, http::ResponseWriter& w, const ApiError& error) {
  http::Response r = error.response();
  co_await answer(job, w, std::move(r));
}

Task<void> sleep_for(Duration d) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  timer.expires_after(d);
  co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
}

Task<void> wait_for_close(http::ResponseWriter& w, Duration at_most) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  timer.expires_after(at_most);
  const bool watching = w.watch_close([&timer] { timer.cancel(); });
  co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
  if (watching) w.unwatch_close();
}

http::Handler make_generate_handler(SimService::Context& ctx, Endpoint endpoint) {
  return [&ctx, endpoint](http::Request& request, http::ResponseWriter& w) -> Task<void> {
    co_await generate(ctx, endpoint, request, w);
  };
}

}  // namespace omni::sim
