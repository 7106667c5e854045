// PD disaggregation between omni-sim instances: the decode side's KV pull (NIXL-style params,
// or SGLang's bootstrap room), the prefill side's params and its pull route.
#include <boost/asio/this_coro.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <random>

#include "omni/http/client.hpp"
#include "sim/job.hpp"

namespace omni::sim {
namespace asio = boost::asio;
namespace json = boost::json;
namespace {

// A NIXL pull is one ask; an unreachable or hung prefill instance is a load failure after this.
constexpr Duration kPullTimeout = std::chrono::seconds(10);

http::Request pull_request(const std::string& body) {
  http::Request pull;
  pull.method = http::Method::kPost;
  pull.target = "/omni/v1/kv_pull";
  pull.headers.set("Content-Type", "application/json");
  pull.body = body;
  return pull;
}

std::uint64_t held_prompt_tokens(const std::string& body, std::uint64_t fallback) {
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (!ec && v.is_object()) {
    if (auto it = v.get_object().find("prompt_tokens");
        it != v.get_object().end() && it->value().is_int64()) {
      return static_cast<std::uint64_t>(it->value().get_int64());
    }
  }
  return fallback;
}

// SGLang sends both halves at once: the prefill may not be done yet, so the decode side asks
// its bootstrap again until --bootstrap-timeout.
Task<PullResult> pull_by_room(Job& job, const http::Endpoint& to) {
  const std::uint64_t room = job.req.bootstrap->room;
  const auto give_up = std::chrono::steady_clock::now() + job.ctx.cfg.bootstrap_timeout;
  PullResult out;
  out.failure = "bootstrap_timeout";
  out.message = "KV transfer of bootstrap_room " + std::to_string(room) + " from " +
                to.to_string() + " timed out after " +
                std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   job.ctx.cfg.bootstrap_timeout)
                                   .count()) +
                " ms: no prefill instance handed it over";
  if (job.ctx.faults->config().bootstrap_never_connects) {
    // Fault injection: this decode never contacts the bootstrap; it times out as SGLang would.
    job.ctx.metrics->on_fault("bootstrap_never_connects");
    co_await sleep_for(job.ctx.cfg.bootstrap_timeout);
    co_return out;
  }
  http::ClientOptions options;
  options.connect_timeout =
      std::min<Duration>(job.ctx.cfg.bootstrap_timeout, std::chrono::seconds(2));
  options.read_timeout = job.ctx.cfg.bootstrap_timeout;
  http::Client client(co_await asio::this_coro::executor, options);
  const std::string body = "{\"bootstrap_room\":" + std::to_string(room) + "}";
  for (;;) {
    Result<http::Response> res = co_await client.send(to, pull_request(body));
    if (res && res->status == 200) {
      const std::uint64_t tokens = held_prompt_tokens(res->body, job.req.prompt_tokens.size());
      out.transfer_s =
          job.ctx.driver->cost_model().kv_transfer_seconds(tokens, job.ctx.cfg.kv_link_gbps);
      co_return out;
    }
    if (std::chrono::steady_clock::now() >= give_up) co_return out;
    const Duration retry_after = std::chrono::milliseconds(5);
    co_await sleep_for(retry_after);
  }
}

}  // namespace

Task<PullResult> pull_remote_kv(Job& job) {
  const RemotePrefill& remote = job.pd.remote;
  const http::Endpoint to{remote.host, remote.port};
  if (job.bootstrap) co_return co_await pull_by_room(job, to);
  http::ClientOptions options;
  options.connect_timeout = std::chrono::seconds(2);
  options.read_timeout = kPullTimeout;
  options.write_timeout = kPullTimeout;
  http::Client client(co_await asio::this_coro::executor, options);
  const std::string body = "{\"remote_engine_id\":" + json_quote(remote.engine_id) +
                           ",\"remote_request_id\":" + json_quote(remote.request_id) + "}";
  Result<http::Response> res = co_await client.send(to, pull_request(body));
  PullResult out;
  if (!res) {
    out.failure = "unreachable";
    out.message = "KV transfer from " + to.to_string() + " failed: " + res.error().message;
    co_return out;
  }
  if (res->status != 200) {
    out.failure = "not_held";
    out.message = "the prefill instance " + to.to_string() + " no longer holds the KV of " +
                  remote.request_id + " (lease expired, already pulled, or unknown engine id)";
    co_return out;
  }
  const std::uint64_t tokens = held_prompt_tokens(res->body, job.req.prompt_tokens.size());
  out.transfer_s =
      job.ctx.driver->cost_model().kv_transfer_seconds(tokens, job.ctx.cfg.kv_link_gbps);
  co_return out;
}

std::string prefill_params_json(const Job& job) {
  if (job.pd.mode != PdMode::kPrefillOnly || job.bootstrap) return "null";
  PrefillParams p;
  const auto bs = job.ctx.cfg.block_size;
  const auto blocks = (job.req.prompt_tokens.size() + bs - 1) / bs;
  // Block ids are opaque to routers; omni-sim numbers them per hold so they are stable.
  const std::uint64_t base = (std::hash<std::string>{}(job.held_key) % 1000000) * 1024;
  for (std::uint64_t i = 0; i < blocks; ++i) p.block_ids.push_back(base + i);
  p.engine_id = job.ctx.engine_id;
  p.request_id = job.held_key;
  p.host = job.ctx.cfg.host == "0.0.0.0" ? "127.0.0.1" : job.ctx.cfg.host;
  p.port = job.ctx.server->port();
  p.tp_size = job.ctx.driver->cost_model().layout().tp;
  p.num_tokens = job.prompt_len();
  return format_prefill_params(p);
}

// POST /omni/v1/kv_pull {"remote_engine_id", "remote_request_id"} (NIXL-style) or
// {"bootstrap_room"} (SGLang-style, also served on --disaggregation-bootstrap-port): a decode
// instance reads the KV this (prefill) instance holds. 200 {"prompt_tokens": N} frees the
// blocks; 404 when nothing is held under that id (unknown, already pulled, lease expired).
http::Handler make_kv_pull_handler(SimService::Context& ctx) {
  return [&ctx](http::Request& request, http::ResponseWriter& w) -> Task<void> {
    boost::system::error_code ec;
    json::value v = json::parse(request.body, ec);
    const json::object* o = ec ? nullptr : v.if_object();
    auto text = [&](std::string_view key) -> std::string {
      if (!o) return {};
      auto it = o->find(key);
      return it != o->end() && it->value().is_string() ? std::string(it->value().get_string())
                                                       : std::string();
    };
    std::string engine_id = text("remote_engine_id");
    std::string request_id = text("remote_request_id");
    bool room = false;
    if (o) {
      // SGLang pairing: the room is the key, there is no engine id to check.
      if (auto it = o->find("bootstrap_room"); it != o->end() && it->value().is_int64()) {
        request_id = "room-" + std::to_string(it->value().get_int64());
        engine_id = ctx.engine_id;
        room = true;
      }
    }
    if (room && ctx.faults->config().bootstrap_never_connects) {
      // Fault injection: the bootstrap peer never hands the KV over (nor answers).
      ctx.metrics->on_fault("bootstrap_never_connects");
      co_await wait_for_close(w, std::chrono::hours(24));
      co_return;
    }
    http::Response r;
    if (request_id.empty()) {
      r = validation_error("remote_request_id required", "remote_request_id").response();
    } else if (engine_id != ctx.engine_id) {
      r = ApiError{404, "unknown engine id " + engine_id, "NotFoundError", "remote_engine_id"}
              .response();
    } else if (auto held = ctx.driver->release_held(request_id)) {
      r.status = 200;
      r.headers.set("Content-Type", "application/json");
      r.body = "{\"prompt_tokens\":" + std::to_string(held->prompt_tokens) + "}";
    } else {
      r = ApiError{404, "no KV held for " + request_id, "NotFoundError", "remote_request_id"}
              .response();
    }
    co_await w.send(std::move(r));
  };
}

}  // namespace omni::sim
