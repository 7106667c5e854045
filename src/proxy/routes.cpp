// The proxy's routes other than generation: probes, metrics, the model list.
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <set>

#include "gateway_impl.hpp"

namespace omni::proxy {
namespace {

namespace json = boost::json;
namespace asio = boost::asio;

Task<void> health(http::Request&, http::ResponseWriter& writer) {
  http::Response response = json_response(200, R"({"status":"ok"})");
  (void)co_await writer.send(std::move(response));
}

// Ready when a whole path exists: a usable decode node, and a usable prefill node unless the
// mode is aggregated.
Task<void> ready(Gateway::Impl& g, http::ResponseWriter& writer) {
  const DispatcherSnapshot snapshot = g.dispatcher->snapshot();
  const bool needs_prefill = g.config.pd_mode != PdMode::kAggregated;
  const bool ok = snapshot.decode_usable && (!needs_prefill || snapshot.prefill_usable);
  json::object body;
  body["ready"] = ok;
  body["prefill_usable"] = snapshot.prefill_usable;
  body["decode_usable"] = snapshot.decode_usable;
  body["pd_mode"] = pd_mode_name(g.config.pd_mode);
  http::Response response = json_response(ok ? 200 : 503, json::serialize(body));
  (void)co_await writer.send(std::move(response));
}

Task<void> metrics_route(Gateway::Impl& g, http::ResponseWriter& writer) {
  http::Response response;
  response.headers.add("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
  response.body = g.registry.expose();
  (void)co_await writer.send(std::move(response));
}

// /v1/models aggregated from the pools: the union by id of what each engine serves.
Task<void> models(Gateway::Impl& g, http::Request& request, http::ResponseWriter& writer) {
  auto executor = co_await asio::this_coro::executor;
  http::Client& client = g.decode_client(executor);
  json::array data;
  std::set<std::string> seen;
  bool any_answered = false;
  for (const NodeEntry& node : g.directory.all()) {
    http::Request ask;
    ask.method = http::Method::kGet;
    ask.target = "/v1/models";
    if (auto id = request.headers.get("X-Request-Id")) ask.headers.add("X-Request-Id", std::string(*id));
    const http::Endpoint to{node.host, node.port};
    auto answer = co_await client.send(to, std::move(ask));
    if (!answer || answer->status != 200) continue;
    boost::system::error_code ec;
    json::value parsed = json::parse(answer->body, ec);
    if (ec || !parsed.is_object()) continue;
    any_answered = true;
    const json::value* list = parsed.get_object().if_contains("data");
    if (!list || !list->is_array()) continue;
    for (const json::value& model : list->get_array()) {
      const json::value* id = model.is_object() ? model.get_object().if_contains("id") : nullptr;
      if (!id || !id->is_string() || !seen.insert(std::string(id->get_string())).second) continue;
      data.push_back(model);
    }
  }
  if (!any_answered) {
    http::Response response = http::error_response(503, "no engine answered /v1/models", "ServiceUnavailableError");
    (void)co_await writer.send(std::move(response));
    co_return;
  }
  json::object body;
  body["object"] = "list";
  body["data"] = std::move(data);
  http::Response response = json_response(200, json::serialize(body));
  (void)co_await writer.send(std::move(response));
}

}  // namespace

std::optional<std::string_view> bearer_token(const http::Request& request) {
  auto header = request.headers.get("Authorization");
  if (!header) return std::nullopt;
  constexpr std::string_view kPrefix = "Bearer ";
  if (header->size() <= kPrefix.size() || !http::iequals(header->substr(0, kPrefix.size()), kPrefix)) {
    return std::nullopt;
  }
  return header->substr(kPrefix.size());
}

http::Response json_response(int status, std::string body) {
  http::Response response;
  response.status = status;
  response.headers.add("Content-Type", "application/json");
  response.body = std::move(body);
  return response;
}

http::Handler make_handler(Gateway::Impl& g) {
  http::Router router;
  auto* gp = &g;
  router.add(http::Method::kPost, "/v1/completions",
             [gp](http::Request& r, http::ResponseWriter& w) -> Task<void> {
               co_await handle_generate(*gp, r, w, Api::kCompletions);
             });
  router.add(http::Method::kPost, "/v1/chat/completions",
             [gp](http::Request& r, http::ResponseWriter& w) -> Task<void> {
               co_await handle_generate(*gp, r, w, Api::kChatCompletions);
             });
  router.add(http::Method::kGet, "/v1/models",
             [gp](http::Request& r, http::ResponseWriter& w) -> Task<void> { co_await models(*gp, r, w); });
  router.add(http::Method::kGet, "/health", health);
  router.add(http::Method::kGet, "/ready",
             [gp](http::Request&, http::ResponseWriter& w) -> Task<void> { co_await ready(*gp, w); });
  router.add(http::Method::kGet, "/metrics",
             [gp](http::Request&, http::ResponseWriter& w) -> Task<void> { co_await metrics_route(*gp, w); });
  auto admin = [gp](http::Request& r, http::ResponseWriter& w) -> Task<void> {
    co_await handle_admin(*gp, r, w);
  };
  router.add(http::Method::kGet, "/admin/requests", admin);
  router.add(http::Method::kGet, "/admin/nodes", admin);
  router.add(http::Method::kPost, "/admin/drain", admin);
  router.add(http::Method::kPost, "/admin/reload", admin);
  return router.handler();
}

}  // namespace omni::proxy
