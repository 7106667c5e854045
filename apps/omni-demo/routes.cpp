#include "routes.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <charconv>
#include <optional>
#include <string>

#include "omni/http/sse.hpp"

namespace omni::demo {
namespace {

namespace asio = boost::asio;

// The integer value of `key` in a query string "a=1&b=2"; nullopt if absent or not a number.
std::optional<int> query_int(std::string_view query, std::string_view key) {
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    const auto eq = pair.find('=');
    if (eq == std::string_view::npos || pair.substr(0, eq) != key) continue;
    const std::string_view text = pair.substr(eq + 1);
    int value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
    return value;
  }
  return std::nullopt;
}

http::Response json_response(int status, std::string body) {
  http::Response response;
  response.status = status;
  response.headers.add("Content-Type", "application/json");
  response.body = std::move(body);
  return response;
}

Task<void> health(http::Request&, http::ResponseWriter& writer) {
  http::Response response = json_response(200, R"({"status":"ok"})");
  (void)co_await writer.send(std::move(response));
}

Task<void> echo(http::Request& request, http::ResponseWriter& writer) {
  http::Response response;
  response.headers.add(
      "Content-Type",
      std::string(request.headers.get("Content-Type").value_or("application/octet-stream")));
  response.body = std::move(request.body);
  (void)co_await writer.send(std::move(response));
}

// Reads and checks the stream's parameters; an error answer has been sent when it fails.
Task<std::optional<std::pair<int, int>>> stream_params(http::Request& request,
                                                       http::ResponseWriter& writer) {
  const std::string_view query = request.query();
  const bool has_events = query.find("events=") != std::string_view::npos;
  const bool has_interval = query.find("interval_ms=") != std::string_view::npos;
  const auto events = has_events ? query_int(query, "events") : std::optional<int>(5);
  const auto interval = has_interval ? query_int(query, "interval_ms") : std::optional<int>(0);
  // Built before the co_await, never as a temporary inside it (GCC 12 miscompiles those).
  std::optional<http::Response> refusal;
  if (!events || *events < 0 || *events > kMaxStreamEvents) {
    refusal = http::error_response(
        400, "events must be an integer in 0.." + std::to_string(kMaxStreamEvents), {}, "events");
  } else if (!interval || *interval < 0 || *interval > 10'000) {
    refusal =
        http::error_response(400, "interval_ms must be an integer in 0..10000", {}, "interval_ms");
  }
  if (refusal) {
    (void)co_await writer.send(std::move(*refusal));
    co_return std::nullopt;
  }
  co_return std::pair{*events, *interval};
}

Task<void> stream(http::Request& request, http::ResponseWriter& writer) {
  const auto params = co_await stream_params(request, writer);
  if (!params) co_return;
  const auto [events, interval_ms] = *params;
  http::SseWriter sse(writer);
  if (!co_await sse.begin()) co_return;
  asio::steady_timer timer(co_await asio::this_coro::executor);
  for (int i = 0; i < events; ++i) {
    if (i > 0 && interval_ms > 0) {
      timer.expires_after(std::chrono::milliseconds(interval_ms));
      co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    const std::string data =
        R"({"index":)" + std::to_string(i) + R"(,"of":)" + std::to_string(events) + "}";
    if (!co_await sse.send_data(data)) co_return;  // the client went away
  }
  if (!co_await sse.send_data("[DONE]")) co_return;
  (void)co_await sse.end();
}

}  // namespace

http::Router make_routes(metrics::Registry& registry, Instrumentation& instrumentation) {
  http::Router router;
  router.add(http::Method::kGet, "/health", instrumentation.wrap("/health", health));
  router.add(
      http::Method::kGet, "/metrics",
      instrumentation.wrap(
          "/metrics", [&registry](http::Request&, http::ResponseWriter& writer) -> Task<void> {
            http::Response response;
            response.headers.add("Content-Type", std::string(metrics::kContentType));
            response.body = registry.expose();
            (void)co_await writer.send(std::move(response));
          }));
  router.add(http::Method::kPost, "/v1/demo/echo", instrumentation.wrap("/v1/demo/echo", echo));
  router.add(http::Method::kGet, "/v1/demo/stream",
             instrumentation.wrap("/v1/demo/stream", stream));
  return router;
}

}  // namespace omni::demo
