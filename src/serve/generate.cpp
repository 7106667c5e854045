// The generation routes (/v1/completions, /v1/chat/completions) of omni-serve.
//
// One request: parse and validate (omni-sim's vLLM request code: prompt, limits, stop
// conditions, n, streaming; then the sampling fields, vLLM's checks) → PD (prefill-only: hold
// the KV and return kv_transfer_params; remote prefill: the KV is pulled before the request
// enters the scheduler) → one engine request per choice → the answer, whole or streamed
// (respond.cpp). A client that goes away aborts its requests (their blocks return to the pool).
#include <boost/asio/this_coro.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <random>

#include "omni/log/log.hpp"
#include "serve/job.hpp"
#include "sim/pd.hpp"

namespace omni::serve {
namespace asio = boost::asio;
namespace json = boost::json;
namespace {

std::string random_hex(std::size_t n) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(n, '0');
  for (char& c : out) c = kHex[rng() & 0xf];
  return out;
}

// The decode side's remote KV from vLLM's NixlConnector params (validated by omni-sim's
// parse_pd_request first): the prefill's blocks, one list per KV-cache group (or flat).
std::optional<sim::ApiError> read_remote(const json::object& params, RemoteKv& remote) {
  auto blocks = params.find("remote_block_ids");
  if (blocks == params.end() || !blocks->value().is_array()) {
    return sim::bad_request("invalid kv_transfer_params: remote_block_ids", "kv_transfer_params");
  }
  const json::array& outer = blocks->value().get_array();
  const json::array* ids = &outer;
  if (!outer.empty() && outer.front().is_array()) ids = &outer.front().get_array();
  for (const json::value& v : *ids) {
    if (!v.is_int64() || v.get_int64() < 0 || v.get_int64() > 0xffffffffLL) {
      return sim::bad_request("invalid kv_transfer_params: remote_block_ids", "kv_transfer_params");
    }
    remote.block_ids.push_back(static_cast<std::uint32_t>(v.get_int64()));
  }
  auto text = [&](const char* key) {
    auto it = params.find(key);
    return it != params.end() && it->value().is_string() ? std::string(it->value().get_string())
                                                         : std::string();
  };
  remote.engine_id = text("remote_engine_id");
  remote.request_id = text("remote_request_id");
  remote.host = text("remote_host");
  remote.port = static_cast<std::uint16_t>(params.at("remote_port").get_int64());
  if (auto t = params.find("remote_num_tokens"); t != params.end() && t->value().is_int64()) {
    remote.num_tokens = static_cast<std::uint32_t>(t->value().get_int64());
  }
  return std::nullopt;
}

std::optional<sim::ApiError> setup_pd(Job& job) {
  if (!job.ctx.kv_transfer.enabled || !job.req.kv_transfer_params) return std::nullopt;
  auto pd = sim::parse_pd_request(job.req.kv_transfer_params);
  if (auto* e = std::get_if<sim::ApiError>(&pd)) return *e;
  job.pd = std::get<sim::PdRequest>(pd).mode;
  if (job.pd == sim::PdMode::kNone) return std::nullopt;
  if (job.req.n > 1) {
    return sim::not_implemented("n > 1 is not supported with PD disaggregation in omni-serve");
  }
  if (job.pd == sim::PdMode::kPrefillOnly) {
    if (job.req.stream) {
      return sim::bad_request("kv_transfer_params with do_remote_decode need stream=false",
                              "stream");
    }
    return std::nullopt;
  }
  RemoteKv remote;
  if (auto e = read_remote(*job.req.kv_transfer_params, remote)) return e;
  const std::uint32_t bs = job.ctx.cfg.block_size;
  const auto need = static_cast<std::uint32_t>((job.req.prompt_tokens.size() + bs - 1) / bs);
  if (remote.block_ids.size() != need) {
    return sim::bad_request(
        "invalid kv_transfer_params: " + std::to_string(remote.block_ids.size()) +
            " remote blocks for a prompt of " + std::to_string(job.req.prompt_tokens.size()) +
            " tokens (block size " + std::to_string(bs) + ")",
        "kv_transfer_params");
  }
  job.remote = std::move(remote);
  return std::nullopt;
}

std::unique_ptr<Seq> make_seq(Job& job, std::uint32_t i, asio::any_io_executor ex) {
  ServeService::Context& ctx = job.ctx;
  const sim::GenerationRequest& r = job.req;
  StopRules rules;
  rules.stop = r.stop.stop;
  rules.stop_token_ids = r.stop.stop_token_ids;
  if (ctx.model->config.eos_token_id)
    rules.eos = static_cast<std::uint32_t>(*ctx.model->config.eos_token_id);
  rules.ignore_eos = r.stop.ignore_eos;
  rules.include_stop_str_in_output = r.stop.include_stop_str_in_output;
  rules.min_tokens = r.min_tokens;
  // The engine caps the output so that the request fits the KV cache; the text stops there too.
  const std::uint64_t room =
      std::min<std::uint64_t>(ctx.limits.max_model_len, ctx.kv_capacity_tokens) -
      r.prompt_tokens.size();
  rules.max_tokens = static_cast<std::uint32_t>(std::min<std::uint64_t>(r.max_tokens, room));
  if (job.pd == sim::PdMode::kPrefillOnly) rules.max_tokens = 1;
  auto seq = std::make_unique<Seq>(*ctx.codec, std::move(rules), r.prompt_tokens);
  seq->sampling = job.sampling;
  // vLLM's parallel sampling: child i of a seeded request uses seed + i.
  seq->sampling.seed = job.sampling.seed + i;
  if (!r.stop.ignore_eos && ctx.model->config.eos_token_id)
    seq->masked_ids.push_back(static_cast<std::uint32_t>(*ctx.model->config.eos_token_id));
  seq->masked_ids.insert(seq->masked_ids.end(), r.stop.stop_token_ids.begin(),
                         r.stop.stop_token_ids.end());
  seq->max_tokens_param =
      r.requested_max_tokens
          ? static_cast<std::uint32_t>(std::max<std::int64_t>(0, *r.requested_max_tokens))
          : r.max_tokens;
  seq->extra.cache_salt = r.cache_salt;
  if (ctx.cfg.enable_prefix_caching || ctx.kv_transfer.enabled) {
    kvcache::BlockHasher hasher(ctx.hash_algo, ctx.cfg.block_size, ctx.hash_root);
    seq->hashes = hasher.hash_all(seq->prompt, seq->extra);
  }
  seq->prefill_only = job.pd == sim::PdMode::kPrefillOnly;
  seq->hold_key = job.hold_key;
  if (job.remote) seq->remote = *job.remote;
  seq->channel = std::make_shared<ChoiceChannel>(ex);
  return seq;
}

std::optional<sim::ApiError> submit_choices(Job& job, asio::any_io_executor ex) {
  std::vector<std::unique_ptr<Seq>> seqs;
  for (std::uint32_t i = 0; i < job.req.n; ++i) {
    seqs.push_back(make_seq(job, i, ex));
    auto c = std::make_unique<ChoiceState>();
    c->index = i;
    c->channel = seqs.back()->channel;
    job.choices.push_back(std::move(c));
  }
  if (Status st = job.ctx.loop->submit(std::move(seqs)); !st) {
    job.choices.clear();
    return sim::ApiError{503, st.error().message, "ServiceUnavailableError", ""};
  }
  for (auto& c : job.choices) c->seq = c->channel->id;
  return std::nullopt;
}

Task<void> generate(ServeService::Context& ctx, sim::Endpoint endpoint, http::Request& request,
                    http::ResponseWriter& w) {
  Job job(ctx, endpoint);
  job.deadline = std::chrono::steady_clock::now() + ctx.cfg.request_timeout;
  if (auto id = request.headers.get("X-Request-Id")) job.request_header_id = std::string(*id);
  auto content_type = request.headers.get("Content-Type");
  if (!content_type || content_type->find("application/json") == std::string_view::npos) {
    const sim::ApiError e =
        sim::validation_error("Unsupported Media Type: Only 'application/json' is allowed");
    co_await answer_error(job, w, e);
    co_return;
  }
  sim::ParsedRequest parsed =
      sim::parse_generation_request(request.body, endpoint, ctx.limits, *ctx.codec);
  if (auto* e = std::get_if<sim::ApiError>(&parsed)) {
    const sim::ApiError err = *e;
    co_await answer_error(job, w, err);
    co_return;
  }
  job.req = std::move(std::get<sim::GenerationRequest>(parsed));
  if (const auto vocab = static_cast<std::uint32_t>(ctx.model->config.vocab_size);
      !job.req.prompt_tokens.empty()) {
    const std::uint32_t top =
        *std::max_element(job.req.prompt_tokens.begin(), job.req.prompt_tokens.end());
    if (top >= vocab) {
      const sim::ApiError err =
          sim::bad_request("Token id " + std::to_string(top) + " is out of vocabulary", "prompt");
      co_await answer_error(job, w, err);
      co_return;
    }
  }
  {
    // The sampling fields, which omni-sim's parser only type-checks.
    boost::system::error_code ec;
    const json::value body = json::parse(request.body, ec);
    auto sampling = parse_sampling(body.get_object(), endpoint == sim::Endpoint::kChat);
    if (auto* e = std::get_if<sim::ApiError>(&sampling)) {
      const sim::ApiError err = *e;
      co_await answer_error(job, w, err);
      co_return;
    }
    job.sampling = std::get<SamplingParams>(sampling);
    if (!job.sampling.seeded && ctx.cfg.seed != 0) {
      // --seed: requests without their own seed draw from the server's generator.
      job.sampling.seed ^= ctx.cfg.seed * 0x9e3779b97f4a7c15ULL;
    }
    if (const auto* pl = body.get_object().if_contains("prompt_logprobs"); pl && !pl->is_null()) {
      const sim::ApiError err =
          sim::not_implemented("prompt_logprobs is not supported by omni-serve");
      co_await answer_error(job, w, err);
      co_return;
    }
  }
  if (auto e = setup_pd(job)) {
    const sim::ApiError err = *e;
    co_await answer_error(job, w, err);
    co_return;
  }
  job.base_id = !job.request_header_id.empty() ? job.request_header_id
                                               : job.req.body_request_id.value_or(random_hex(32));
  job.rctx = {endpoint, (endpoint == sim::Endpoint::kChat ? "chatcmpl-" : "cmpl-") + job.base_id,
              std::chrono::duration_cast<std::chrono::seconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count(),
              job.req.model, ctx.fingerprint};
  if (job.pd == sim::PdMode::kPrefillOnly) {
    // vLLM's engine-internal id (<id>-0-<8 random>): unique, so two requests with one
    // X-Request-Id never share or overwrite each other's held KV.
    job.hold_key = job.rctx.id + "-0-" + random_hex(8);
  }
  if (endpoint == sim::Endpoint::kCompletions && job.req.echo) {
    job.echo_text = ctx.codec->decode(job.req.prompt_tokens);
  }
  if (auto error = submit_choices(job, co_await asio::this_coro::executor)) {
    const sim::ApiError err = *error;
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
  for (auto& c : choices) ctx.loop->abort(c->seq);
  if (!hold_key.empty()) ctx.loop->drop_hold(hold_key);
}

http::Handler make_generate_handler(ServeService::Context& ctx, sim::Endpoint endpoint) {
  return [&ctx, endpoint](http::Request& request, http::ResponseWriter& w) -> Task<void> {
    co_await generate(ctx, endpoint, request, w);
  };
}

}  // namespace omni::serve
