// The proxy's routes other than generation: probes, metrics, the model list.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include "recording_writer.hpp"

#include "gateway_impl.hpp"
#include "leg_deadline.hpp"
#include "model_catalog.hpp"

namespace omni::proxy {
namespace {

namespace json = boost::json;
namespace asio = boost::asio;

Task<void> health(http::Request&, http::ResponseWriter& writer) {
  http::Response response = json_response(200, R"({"status":"ok"})");
  (void)co_await writer.send(std::move(response));
}

// Ready when a whole path exists: a usable decode node, and a usable prefill node unless the
// mode is aggregated. The body names the roles the mode needs that have no usable node (and,
// with the fleet sync on, whether NATS is reachable: it does not decide readiness).
Task<void> ready(Gateway::Impl& g, http::ResponseWriter& writer) {
  const DispatcherSnapshot snapshot = g.dispatcher->snapshot();
  const bool needs_prefill = g.config.pd_mode != PdMode::kAggregated;
  const bool ok = snapshot.decode_usable && (!needs_prefill || snapshot.prefill_usable);
  json::array missing;
  if (needs_prefill && !snapshot.prefill_usable) missing.emplace_back("prefill");
  if (!snapshot.decode_usable) missing.emplace_back("decode");
  json::object body;
  body["ready"] = ok;
  body["missing"] = std::move(missing);
  body["prefill_usable"] = snapshot.prefill_usable;
  body["decode_usable"] = snapshot.decode_usable;
  body["pd_mode"] = pd_mode_name(g.config.pd_mode);
  if (g.fleet) {
    // Informational: a replica cut off from NATS still serves, on its own counts.
    json::object fleet;
    fleet["connected"] = g.fleet->connected();
    fleet["replicas"] = g.fleet->live_replicas();
    body["fleet"] = std::move(fleet);
  }
  http::Response response = json_response(ok ? 200 : 503, json::serialize(body));
  (void)co_await writer.send(std::move(response));
}

Task<void> metrics_route(Gateway::Impl& g, http::ResponseWriter& writer) {
  http::Response response;
  response.headers.add("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
  response.body = g.registry.expose();
  (void)co_await writer.send(std::move(response));
}

std::vector<std::string> node_names(const std::vector<NodeEntry>& nodes) {
  std::vector<std::string> names;
  names.reserve(nodes.size());
  for (const NodeEntry& node : nodes) names.push_back(node.spec.name);
  return names;
}

// One engine's GET /v1/models into the catalog, aborted when `left` runs out. Runs detached:
// everything it uses is its own or shared (`state`); `g` outlives the I/O threads.
struct ModelsFetch {
  explicit ModelsFetch(asio::any_io_executor executor) : wake(std::move(executor)) {}
  asio::steady_timer wake;  // the route waits on it; the last fetch to end cancels it
  std::size_t pending = 0;
};

Task<void> fetch_models(Gateway::Impl& g, NodeEntry node, std::string request_id, Duration left,
                        std::shared_ptr<ModelsFetch> state) {
  auto executor = co_await asio::this_coro::executor;
  http::Request ask;
  ask.method = http::Method::kGet;
  ask.target = "/v1/models";
  if (!request_id.empty()) ask.headers.add("X-Request-Id", std::move(request_id));
  authorize_for_engines(g, ask);
  // The deadline's timer shares its state with its handler, which forgets `abort` when the
  // deadline object goes: a timer firing as the answer arrives touches nothing destroyed.
  http::Abort abort;
  LegDeadline bound(executor, abort);
  bound.expires_after(left, "timeouts.models passed");
  // Named, not a temporary in the co_await: GCC 12 destroys such a temporary twice when the
  // call is aborted (this route crashed the proxy so with a stalled engine).
  const http::Endpoint endpoint{node.host, node.port, node.tls};
  auto answer = co_await g.decode_client(executor).send(endpoint, std::move(ask), &abort);
  if (answer && answer->status == 200) {
    if (auto list = parse_models(answer->body))
      g.models.store(node.spec.name, std::move(*list), g.clock.now());
  }
  if (--state->pending == 0) state->wake.cancel();
}

// /v1/models: the union by id of what the engines serve, from the catalog the health checker
// keeps (model_catalog.hpp). Engines not known yet are asked now, all at once, within one short
// deadline (timeouts.models), each call aborted when it runs out: a stalled engine delays the
// answer by that much at most, and never keeps the others from being asked.
Task<void> models(Gateway::Impl& g, http::Request& request, http::ResponseWriter& writer) {
  const std::vector<NodeEntry> nodes = g.directory.all();
  auto executor = co_await asio::this_coro::executor;
  const Duration left = g.config.timeouts.models;
  const auto deadline = std::chrono::steady_clock::now() + left;
  auto state = std::make_shared<ModelsFetch>(executor);
  std::string request_id(request.headers.get("X-Request-Id").value_or(""));
  for (const NodeEntry& node : nodes) {
    if (g.models.fetched_at(node.spec.name)) continue;
    ++state->pending;
    asio::co_spawn(executor, fetch_models(g, node, request_id, left, state), asio::detached);
  }
  // Every fetch ends by the deadline (each aborts itself); the margin covers their last steps.
  while (state->pending > 0 && std::chrono::steady_clock::now() < deadline) {
    state->wake.expires_at(deadline + std::chrono::milliseconds(50));
    (void)co_await state->wake.async_wait(asio::as_tuple(asio::use_awaitable));
  }
  auto body = g.models.union_body(node_names(nodes));
  if (!body) {
    http::Response response =
        http::error_response(503, "no engine answered /v1/models", "ServiceUnavailableError");
    (void)co_await writer.send(std::move(response));
    co_return;
  }
  http::Response response = json_response(200, std::move(*body));
  (void)co_await writer.send(std::move(response));
}

// Every route but generation goes through here: one access-log line (probes and metrics
// scrapes excepted, as they would drown it) and the status metric, whatever answered —
// a route, or the router's 404/405.
Task<void> logged(Gateway::Impl& g, const http::Handler& routes, http::Request& request,
                  http::ResponseWriter& writer) {
  const auto wall = std::chrono::system_clock::now();
  const TimePoint started = g.clock.now();
  RecordingWriter recorder(writer);
  co_await routes(request, recorder);
  const RouteLabel route = route_label(request.path());
  if (route == RouteLabel::kHealth || route == RouteLabel::kReady ||
      route == RouteLabel::kMetrics) {
    g.metrics.responses->count(route, recorder.status());
    co_return;
  }
  PlainRequestLog entry;
  entry.wall = wall;
  if (auto id = request.headers.get("X-Request-Id")) entry.request_id = *id;
  entry.remote = request.remote;
  entry.method = http::method_name(request.method);
  entry.target = request.target;
  entry.status = recorder.status();
  entry.outcome = recorder.status() < 400 ? "success" : "client_error";
  entry.bytes_out = recorder.bytes();
  entry.elapsed = g.clock.now() - started;
  log_plain_request(g, entry);
}

// The probes, /metrics and the admin API: on the traffic listener when there is no admin
// listener, else on the admin listener alone.
void add_operator_routes(http::Router& router, Gateway::Impl& g) {
  auto* gp = &g;
  router.add(http::Method::kGet, "/metrics",
             [gp](http::Request&, http::ResponseWriter& w) -> Task<void> {
               co_await metrics_route(*gp, w);
             });
  auto admin = [gp](http::Request& r, http::ResponseWriter& w) -> Task<void> {
    co_await handle_admin(*gp, r, w);
  };
  router.add(http::Method::kGet, "/admin/requests", admin);
  router.add(http::Method::kGet, "/admin/nodes", admin);
  router.add(http::Method::kGet, "/admin/replicas", admin);
  router.add(http::Method::kGet, "/admin/decisions", admin);
  router.add(http::Method::kGet, "/dashboard",
             [](http::Request&, http::ResponseWriter& w) -> Task<void> {
               http::Response response;
               response.headers.add("Content-Type", "text/html; charset=utf-8");
               // Everything is inline: nothing may load from elsewhere, and no script may run but
               // ours.
               response.headers.add("Content-Security-Policy",
                                    "default-src 'none'; script-src 'unsafe-inline'; style-src "
                                    "'unsafe-inline'; connect-src 'self'; img-src 'self' data:");
               response.headers.add("Cache-Control", "no-store");
               response.body = std::string(dashboard_page());
               (void)co_await w.send(std::move(response));
             });
  router.add(http::Method::kPost, "/admin/drain", admin);
  router.add(http::Method::kPost, "/admin/reload", admin);
}

void add_probe_routes(http::Router& router, Gateway::Impl& g) {
  auto* gp = &g;
  router.add(http::Method::kGet, "/health", health);
  router.add(
      http::Method::kGet, "/ready",
      [gp](http::Request&, http::ResponseWriter& w) -> Task<void> { co_await ready(*gp, w); });
}

// /admin/nodes/{name}/drain has a variable segment, which the router (exact paths) cannot
// match: the admin API takes every path under /admin/nodes/ itself, its 404 and 405 too.
http::Handler admin_nodes_handler(Gateway::Impl& g) {
  auto* gp = &g;
  return [gp](http::Request& r, http::ResponseWriter& w) -> Task<void> {
    co_await handle_admin(*gp, r, w);
  };
}

http::Handler admin_listener_handler(Gateway::Impl& g) {
  http::Router router;
  add_probe_routes(router, g);
  add_operator_routes(router, g);
  auto* gp = &g;
  return [gp, routes = router.handler(), admin_nodes = admin_nodes_handler(g)](
             http::Request& r, http::ResponseWriter& w) -> Task<void> {
    if (r.path().starts_with("/admin/nodes/")) co_return co_await logged(*gp, admin_nodes, r, w);
    co_await logged(*gp, routes, r, w);
  };
}

}  // namespace

http::Response json_response(int status, std::string body) {
  http::Response response;
  response.status = status;
  response.headers.add("Content-Type", "application/json");
  response.body = std::move(body);
  return response;
}

http::Handler make_handler(Gateway::Impl& g, Listener listener) {
  if (listener == Listener::kAdmin) return admin_listener_handler(g);
  http::Router router;
  auto* gp = &g;
  // Reached through the router only by methods other than POST: they make it answer 405.
  router.add(http::Method::kPost, "/v1/completions",
             [gp](http::Request& r, http::ResponseWriter& w) -> Task<void> {
               co_await handle_generate(*gp, r, w, Api::kCompletions);
             });
  router.add(http::Method::kPost, "/v1/chat/completions",
             [gp](http::Request& r, http::ResponseWriter& w) -> Task<void> {
               co_await handle_generate(*gp, r, w, Api::kChatCompletions);
             });
  router.add(http::Method::kGet, "/v1/models",
             [gp](http::Request& r, http::ResponseWriter& w) -> Task<void> {
               co_await models(*gp, r, w);
             });
  add_probe_routes(router, g);
  const bool operator_routes = !g.config.admin_listen;
  if (operator_routes) add_operator_routes(router, g);
  // The generation routes first, without the router: they are nearly every request, and
  // their Call writes their log line and metrics itself.
  return [gp, routes = router.handler(), operator_routes, admin_nodes = admin_nodes_handler(g)](
             http::Request& r, http::ResponseWriter& w) -> Task<void> {
    if (r.method == http::Method::kPost) {
      const std::string_view path = r.path();
      if (path == "/v1/completions")
        co_return co_await handle_generate(*gp, r, w, Api::kCompletions);
      if (path == "/v1/chat/completions") {
        co_return co_await handle_generate(*gp, r, w, Api::kChatCompletions);
      }
    }
    if (operator_routes && r.path().starts_with("/admin/nodes/")) {
      co_return co_await logged(*gp, admin_nodes, r, w);
    }
    co_await logged(*gp, routes, r, w);
  };
}

}  // namespace omni::proxy
