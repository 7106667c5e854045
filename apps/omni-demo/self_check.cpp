#include "self_check.hpp"

#include <chrono>
#include <string>

#include "omni/http/sse.hpp"

namespace omni::demo {
namespace {

Status fail(std::string_view check, std::string why) {
  return make_error(ErrorCode::kInternal, std::string(check) + ": " + why);
}

Task<Status> check_get(http::Client& client, const http::Endpoint& server,
                       std::string_view target_view, std::string_view must_contain,
                       std::ostream& out) {
  const std::string target(target_view);
  http::Request request;
  request.target = target;
  request.headers.add("X-Request-Id", "self-check" + target);
  auto response = co_await client.send(server, std::move(request));
  if (!response) co_return fail(target, response.error().to_string());
  if (response->status != 200) co_return fail(target, "status " + std::to_string(response->status));
  if (response->body.find(must_contain) == std::string::npos) {
    co_return fail(target, "the body lacks \"" + std::string(must_contain) + "\"");
  }
  out << "  GET  " << target << " -> " << response->status << ", " << response->body.size()
      << " bytes\n";
  co_return ok_status();
}

Task<Status> check_echo(http::Client& client, const http::Endpoint& server, std::ostream& out) {
  http::Request request;
  request.method = http::Method::kPost;
  request.target = "/v1/demo/echo";
  request.headers.add("Content-Type", "application/json");
  request.body = R"({"hello":"omni"})";
  http::Request sent = request;
  auto response = co_await client.send(server, std::move(sent));
  if (!response) co_return fail(request.target, response.error().to_string());
  if (response->body != request.body) co_return fail(request.target, "the echo differs");
  out << "  POST " << request.target << " -> " << response->status << ", " << response->body
      << "\n";
  co_return ok_status();
}

Task<Status> check_stream(http::Client& client, const http::Endpoint& server, std::ostream& out) {
  constexpr int kEvents = 5;
  http::Request request;
  request.target = "/v1/demo/stream?events=" + std::to_string(kEvents) + "&interval_ms=20";
  const auto start = std::chrono::steady_clock::now();
  http::Request sent = request;
  auto stream = co_await client.open(server, std::move(sent));
  if (!stream) co_return fail(request.target, stream.error().to_string());
  http::SseReader reader(**stream);
  int events = 0;
  bool done = false;
  for (;;) {
    auto event = co_await reader.next();
    if (!event) co_return fail(request.target, event.error().to_string());
    if (!event->has_value()) break;
    if ((*event)->data == "[DONE]") {
      done = true;
    } else {
      ++events;
    }
  }
  if (events != kEvents || !done) {
    co_return fail(request.target,
                   std::to_string(events) + " events, [DONE] " + (done ? "seen" : "missing"));
  }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  out << "  GET  " << request.target << " -> " << events << " events + [DONE] in " << ms.count()
      << " ms\n";
  co_return ok_status();
}

}  // namespace

Task<Status> self_check(http::Client& client, http::Endpoint server, std::ostream& out) {
  out << "self-check against http://" << server.to_string() << ":\n";
  if (Status s = co_await check_get(client, server, "/health", "ok", out); !s) co_return s;
  if (Status s = co_await check_echo(client, server, out); !s) co_return s;
  if (Status s = co_await check_stream(client, server, out); !s) co_return s;
  if (Status s = co_await check_get(client, server, "/metrics", "omni_demo_requests_total", out);
      !s) {
    co_return s;
  }
  out << "self-check passed\n";
  co_return ok_status();
}

}  // namespace omni::demo
