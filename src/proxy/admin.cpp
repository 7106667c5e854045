// The admin API: in-flight requests with their stage, node states, drain, reload.
// Guarded by admin_token (Bearer) when one is configured.
//
//   GET  /admin/requests              in-flight requests and the queue length
//   GET  /admin/nodes                 every node's state
//   GET  /admin/replicas              the fleet sync: this replica and the others heard from
//   POST /admin/drain                 {"node": "host:port", "drain": true|false}
//   POST /admin/nodes/{name}/drain    the same for the node named in the path (host:port, its
//                                     ':' possibly sent as %3A); body optional: {"drain": false}
//   POST /admin/reload                re-reads the configuration
//   GET  /admin/decisions             the last finished requests: nodes, outcome, times
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <future>
#include <optional>

#include "gateway_impl.hpp"

namespace omni::proxy {
namespace {

namespace json = boost::json;

double ms_between(TimePoint from, TimePoint to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

std::string node_name(const DispatcherSnapshot& snapshot, std::int64_t id) {
  for (const NodeStatus& n : snapshot.nodes) {
    if (static_cast<std::int64_t>(n.id) == id) return n.spec.name;
  }
  return {};
}

std::string list_requests(Gateway::Impl& g) {
  const TimePoint now = g.clock.now();
  const DispatcherSnapshot snapshot = g.dispatcher->snapshot();
  json::array list;
  g.inflight.for_each([&](const InflightEntry& entry) {
    json::object item;
    item["request_id"] = entry.request_id;
    item["route"] = entry.route;
    item["stage"] = stage_name(entry.life->stage());
    item["age_ms"] = ms_between(entry.received, now);
    const auto prefill = entry.prefill_node.load(std::memory_order_relaxed);
    const auto decode = entry.decode_node.load(std::memory_order_relaxed);
    if (prefill >= 0) item["prefill_node"] = node_name(snapshot, prefill);
    if (decode >= 0) item["decode_node"] = node_name(snapshot, decode);
    list.push_back(std::move(item));
  });
  json::object body;
  body["requests"] = std::move(list);
  body["waiting"] = snapshot.waiting;
  return json::serialize(body);
}

std::string list_nodes(Gateway::Impl& g) {
  const DispatcherSnapshot snapshot = g.dispatcher->snapshot();
  json::array list;
  for (const NodeStatus& n : snapshot.nodes) {
    json::object item;
    item["id"] = n.id;
    item["name"] = n.spec.name;
    item["role"] = role_name(n.spec.role);
    item["group"] = n.spec.group;
    item["health"] = health_name(n.health);
    item["draining"] = n.draining;
    item["removed"] = n.removed;
    item["outstanding_tokens"] = n.load.outstanding_tokens;
    item["running"] = n.load.running;
    // What the other replicas of the fleet have on it (fleet sync; 0 when alone).
    item["fleet_outstanding_tokens"] = n.fleet.tokens;
    item["fleet_running"] = n.fleet.running;
    item["dispatched"] = n.dispatched;
    item["failures"] = n.failures;
    item["consecutive_failures"] = n.consecutive_failures;
    // What the engine itself reports on /metrics (health.engine_metrics).
    item["engine_running"] = n.engine.running;
    item["engine_waiting"] = n.engine.waiting;
    item["engine_kv_usage"] = n.engine.kv_usage;
    item["kv_events_stale"] = n.kv_stale;
    list.push_back(std::move(item));
  }
  json::object body;
  body["nodes"] = std::move(list);
  body["pd_mode"] = pd_mode_name(g.config.pd_mode);
  body["policy"] = g.config.policy;
  return json::serialize(body);
}

// Drains (or undrains) the node named `name`: 404 when no such node is configured.
http::Response drain_node(Gateway::Impl& g, const std::string& name, bool draining) {
  bool known = false;
  for (const NodeStatus& n : g.dispatcher->snapshot().nodes)
    known = known || (n.spec.name == name && !n.removed);
  if (!known) return http::error_response(404, "no node named " + name, "NotFoundError", "node");
  set_draining(g, name, draining);
  json::object answer;
  answer["node"] = name;
  answer["draining"] = draining;
  return json_response(200, json::serialize(answer));
}

// POST /admin/drain {"node": "host:port", "drain": true}
http::Response drain(Gateway::Impl& g, const http::Request& request) {
  boost::system::error_code ec;
  json::value body = json::parse(request.body, ec);
  const json::object* object = !ec ? body.if_object() : nullptr;
  const json::value* node = object ? object->if_contains("node") : nullptr;
  if (!node || !node->is_string()) {
    return http::error_response(400, "expected {\"node\": \"host:port\", \"drain\": true|false}",
                                "", "node");
  }
  const json::value* flag = object->if_contains("drain");
  const bool draining = !flag || (flag->is_bool() && flag->get_bool());
  return drain_node(g, std::string(node->get_string()), draining);
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A path segment with its percent-encoding undone (RFC 3986 2.1: "127.0.0.1%3A8100" is
// "127.0.0.1:8100"); nullopt when a '%' is not followed by two hex digits.
std::optional<std::string> percent_decoded(std::string_view segment) {
  std::string out;
  out.reserve(segment.size());
  for (std::size_t i = 0; i < segment.size(); ++i) {
    if (segment[i] != '%') {
      out += segment[i];
      continue;
    }
    if (i + 2 >= segment.size()) return std::nullopt;
    const int high = hex_digit(segment[i + 1]);
    const int low = hex_digit(segment[i + 2]);
    if (high < 0 || low < 0) return std::nullopt;
    out += static_cast<char>(high * 16 + low);
    i += 2;
  }
  return out;
}

// The {name} segment of /admin/nodes/{name}/drain, still encoded; nullopt for any other path.
std::optional<std::string_view> drain_path_segment(std::string_view path) {
  constexpr std::string_view kPrefix = "/admin/nodes/";
  constexpr std::string_view kSuffix = "/drain";
  if (path.size() <= kPrefix.size() + kSuffix.size()) return std::nullopt;
  if (!path.starts_with(kPrefix) || !path.ends_with(kSuffix)) return std::nullopt;
  const std::string_view segment =
      path.substr(kPrefix.size(), path.size() - kPrefix.size() - kSuffix.size());
  if (segment.find('/') != std::string_view::npos) return std::nullopt;
  return segment;
}

// POST /admin/nodes/{name}/drain: /admin/drain for the node named in the path. The body is
// optional; {"drain": false} undrains. Other methods get 405, other paths under /admin 404.
http::Response drain_by_path(Gateway::Impl& g, const http::Request& request) {
  const std::string_view path = request.path();
  const auto segment = drain_path_segment(path);
  if (!segment) return http::error_response(404, "no route for " + std::string(path));
  if (request.method != http::Method::kPost) {
    http::Response response =
        http::error_response(405, "method " + std::string(http::method_name(request.method)) +
                                      " is not allowed for " + std::string(path));
    response.headers.set("Allow", "POST");
    return response;
  }
  const auto name = percent_decoded(*segment);
  if (!name || name->empty()) {
    return http::error_response(400, "malformed node name in the path: " + std::string(*segment),
                                "", "node");
  }
  bool draining = true;
  if (request.body.find_first_not_of(" \t\r\n") != std::string::npos) {
    boost::system::error_code ec;
    const json::value body = json::parse(request.body, ec);
    const json::object* object = !ec ? body.if_object() : nullptr;
    const json::value* flag = object ? object->if_contains("drain") : nullptr;
    if (!object || (flag && !flag->is_bool())) {
      return http::error_response(400, "expected no body or {\"drain\": true|false}", "", "drain");
    }
    draining = !flag || flag->get_bool();
  }
  return drain_node(g, *name, draining);
}

// Reading and parsing the configuration is file I/O: it runs on its own thread while this
// I/O thread keeps serving; the answer comes back by a post. One reload at a time: a second
// one gets 409 at once rather than queueing behind the first.
Task<http::Response> reload(Gateway::Impl& g) {
  namespace asio = boost::asio;
  if (!g.reload_request)
    co_return http::error_response(501, "reload is not available", "NotImplementedError");
  if (g.reload_running.exchange(true)) {
    co_return http::error_response(409, "a reload is already running", "ConflictError");
  }
  struct Done {
    explicit Done(asio::any_io_executor ex)
        : executor(ex), timer(ex, asio::steady_timer::time_point::max()) {}
    asio::any_io_executor executor;
    asio::steady_timer timer;
    std::optional<Status> status;
  };
  auto done = std::make_shared<Done>(co_await asio::this_coro::executor);
  if (g.reload_job.valid()) g.reload_job.wait();  // the previous one has answered already
  g.reload_job = std::async(std::launch::async, [&g, done] {
    Status status = g.reload_request();
    g.reload_running.store(false);
    asio::post(done->executor, [done, status = std::move(status)]() mutable {
      done->status = std::move(status);
      done->timer.cancel();
    });
  });
  while (!done->status) (void)co_await done->timer.async_wait(asio::as_tuple(asio::use_awaitable));
  if (!*done->status) co_return http::error_response(400, done->status->error().message);
  co_return json_response(200, R"({"reloaded":true})");
}

}  // namespace

Task<void> handle_admin(Gateway::Impl& g, http::Request& request, http::ResponseWriter& writer) {
  // The admin token was checked on the request head (auth.hpp).
  const std::string_view path = request.path();
  http::Response response;
  if (path == "/admin/requests") {
    response = json_response(200, list_requests(g));
  } else if (path == "/admin/nodes") {
    response = json_response(200, list_nodes(g));
  } else if (path == "/admin/drain") {
    response = drain(g, request);
  } else if (path == "/admin/reload") {
    response = co_await reload(g);
  } else if (path == "/admin/decisions") {
    response = json_response(200, g.decisions.json());
  } else if (path == "/admin/replicas") {
    response = g.fleet ? json_response(200, g.fleet->admin_json())
                       : json_response(200, R"({"fleet":null,"replicas":[]})");
  } else {
    response = drain_by_path(g, request);
  }
  (void)co_await writer.send(std::move(response));
}

}  // namespace omni::proxy
