#include <string>

#include "omni/http/server.hpp"

namespace omni::http {
namespace {

// Templates over the route list because Router::Route is private: deduction reaches it
// where naming it would not.
//
// dispatch() is a coroutine that owns a reference to the routes, so it does not depend on
// the lifetime of the std::function that started it.
template <class Routes>
Task<void> dispatch(std::shared_ptr<Routes> routes, Request& request, ResponseWriter& writer);

}  // namespace

Router& Router::add(Method method, std::string path, Handler handler) {
  routes_->push_back(Route{method, std::move(path), std::move(handler)});
  return *this;
}

Handler Router::handler() const {
  // Shares the route list: add every route before the server starts, as the list is not
  // locked against concurrent requests.
  return [routes = routes_](Request& request, ResponseWriter& writer) {
    return dispatch(routes, request, writer);
  };
}

namespace {

template <class Routes>
const Handler* find(const Routes& routes, Method method, std::string_view path) {
  for (const auto& route : routes) {
    if (route.method == method && route.path == path) return &route.handler;
  }
  return nullptr;
}

template <class Routes>
std::string allowed_methods(const Routes& routes, std::string_view path) {
  std::string allow;
  for (const auto& route : routes) {
    if (route.path != path) continue;
    if (!allow.empty()) allow += ", ";
    allow += method_name(route.method);
  }
  return allow;
}

template <class Routes>
Task<void> dispatch(std::shared_ptr<Routes> routes, Request& request, ResponseWriter& writer) {
  const std::string_view path = request.path();
  const Handler* handler = find(*routes, request.method, path);
  // HEAD is GET without the body (RFC 9110 9.3.2); the server drops the body.
  if (handler == nullptr && request.method == Method::kHead)
    handler = find(*routes, Method::kGet, path);
  if (handler != nullptr) {
    co_await (*handler)(request, writer);
    co_return;
  }
  const std::string allow = allowed_methods(*routes, path);
  if (allow.empty()) {
    (void)co_await writer.send(error_response(404, "no route for " + std::string(path)));
    co_return;
  }
  Response response = error_response(405, "method " + std::string(method_name(request.method)) +
                                              " is not allowed for " + std::string(path));
  response.headers.set("Allow", allow);
  (void)co_await writer.send(std::move(response));
}

}  // namespace
}  // namespace omni::http
