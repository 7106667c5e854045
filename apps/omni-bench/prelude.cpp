#include "prelude.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <algorithm>

#include "omni/http/client.hpp"
#include "omni/workload/openai_request.hpp"

namespace omni::bench {
namespace {

namespace asio = boost::asio;

http::Request get(std::string target) {
  http::Request r;
  r.method = http::Method::kGet;
  r.target = std::move(target);
  return r;
}

// Runs `task(client)` to its end on a private io_context.
template <class F>
void run_with_client(const Options& o, Duration timeout, F task) {
  asio::io_context io;
  http::ClientOptions c;
  c.connect_timeout = std::min<Duration>(timeout, std::chrono::seconds(2));
  c.read_timeout = timeout;
  c.write_timeout = timeout;
  c.max_idle_per_endpoint = std::max<std::size_t>(8, o.concurrency);
  http::Client client(io.get_executor(), c);
  asio::co_spawn(io, task(client), asio::detached);
  io.run();
}

std::optional<boost::json::object> json_object(const Result<http::Response>& r) {
  if (!r || r->status != 200) return std::nullopt;
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(r->body, ec);
  if (ec || !v.is_object()) return std::nullopt;
  return v.get_object();
}

}  // namespace

ServerInfo probe_server(const Options& o, bool want_speed, bool want_model) {
  ServerInfo info;
  if (!want_speed && !want_model) return info;
  run_with_client(o, std::chrono::seconds(3), [&](http::Client& client) -> Task<void> {
    if (want_speed) {
      auto version = co_await client.send(o.server, get(o.prefix + "/version"));
      if (auto doc = json_object(version)) {
        const auto* sim = doc->if_contains("omni_sim");
        const auto* speed =
            sim && sim->is_object() ? sim->get_object().if_contains("speed") : nullptr;
        if (speed && speed->is_number() && speed->to_number<double>() > 0)
          info.speed = speed->to_number<double>();
      }
    }
    if (!want_model) co_return;
    auto models = co_await client.send(o.server, get(o.prefix + "/v1/models"));
    auto doc = json_object(models);
    const auto* data = doc ? doc->if_contains("data") : nullptr;
    if (!data || !data->is_array() || data->get_array().empty() ||
        !data->get_array()[0].is_object())
      co_return;
    const auto& first = data->get_array()[0].get_object();
    for (const char* key : {"root", "id"}) {
      if (const auto* v = first.if_contains(key); v && v->is_string()) {
        info.model_id = std::string(v->get_string());
        break;
      }
    }
  });
  return info;
}

Status warm_up(const Options& o, const workload::RequestSpec& spec, std::uint32_t count) {
  std::uint32_t next = 0, completed = 0;
  std::string last_error = "no answer";
  const std::uint32_t workers =
      std::max<std::uint32_t>(1, std::min(count, o.concurrency ? o.concurrency : count));
  const std::string body = workload::request_body(spec, o.body);
  asio::io_context io;
  http::ClientOptions c;
  c.read_timeout = o.timeout;
  c.write_timeout = o.timeout;
  c.max_idle_per_endpoint = workers;
  http::Client client(io.get_executor(), c);
  auto worker = [&]() -> Task<void> {
    while (next < count) {
      const std::uint32_t k = next++;
      http::Request r;
      r.method = http::Method::kPost;
      r.target = o.target;
      r.headers.add("Content-Type", "application/json");
      r.headers.add("X-Request-Id", o.request_id_prefix + "warmup-" + std::to_string(k));
      r.body = body;
      auto answer = co_await client.send(o.server, std::move(r));
      if (answer && answer->status == 200) {
        ++completed;
      } else {
        last_error = answer ? "HTTP " + std::to_string(answer->status) : answer.error().message;
      }
    }
  };
  for (std::uint32_t w = 0; w < workers; ++w) asio::co_spawn(io, worker(), asio::detached);
  io.run();
  if (completed == 0 && count > 0) {
    return make_error(ErrorCode::kUnavailable,
                      "warm-up: no request completed (" + last_error + ")");
  }
  return ok_status();
}

Status reset_prefix_cache(const Options& o) {
  Status result = make_error(ErrorCode::kUnavailable, "no answer");
  run_with_client(o, std::chrono::seconds(10), [&](http::Client& client) -> Task<void> {
    http::Request r;
    r.method = http::Method::kPost;
    r.target = o.prefix + "/reset_prefix_cache";
    auto answer = co_await client.send(o.server, std::move(r));
    if (!answer) {
      result = answer.error();
    } else if (answer->status != 200) {
      result = make_error(ErrorCode::kUnavailable, "HTTP " + std::to_string(answer->status) + ": " +
                                                       answer->body.substr(0, 200));
    } else {
      result = ok_status();
    }
  });
  return result;
}

}  // namespace omni::bench
