// Who may call what, decided on the request head alone: the HTTP server runs screen_head()
// (ServerHooks::screen_head) before it reads a body, so a client without a valid key is
// answered 401 without ever getting to send one (an unauthenticated client cannot make the
// proxy buffer megabytes before it learns the answer).
//
// On the traffic listener:
//   /v1/*                a Bearer key from api_keys, when any is configured
//   /admin/*             the admin token when one is configured; without one, local clients only
//   /metrics, /dashboard local clients, or the admin token
//   /health, /ready      open (probes)
//   (with a separate admin listener, /admin/* and /metrics are not served here at all: 404)
// On the admin listener (--admin-listen, loopback by default):
//   /admin/*             the admin token, when one is configured
//   /metrics, /health, /ready   open: whoever reaches the listener may scrape it
// Any route: at most one Authorization field; an X-Request-Id of 1-256 visible ASCII bytes.
//
// "Local" is a peer on a loopback address whose request was not relayed: a request carrying
// Forwarded, X-Forwarded-For or X-Real-IP came through another proxy (a local nginx in front
// would otherwise make every remote client look local). Refused admin requests get 401 (a token
// is configured: present it) or 403 (none is: use the admin listener or configure one).
//
// Keys are compared in constant time: each configured key is kept as its SHA-256, and a
// token's digest is compared with every one of them with CRYPTO_memcmp, without stopping at
// a match, so neither the position of a match nor a common prefix shows in the timing.
//
// Threading: immutable after construction; shared by every I/O thread.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "omni/http/types.hpp"

namespace omni::proxy {

class Credentials {
 public:
  Credentials() = default;
  explicit Credentials(const std::vector<std::string>& secrets);
  bool empty() const noexcept { return digests_.empty(); }
  bool accepts(std::string_view token) const noexcept;
  // Which secret (its index in the constructor's list) the token is; constant time.
  std::optional<std::size_t> match(std::string_view token) const noexcept;

 private:
  std::vector<std::array<unsigned char, 32>> digests_;
};

struct AccessRules {
  Credentials api_keys;         // empty: /v1/* is open
  Credentials admin;            // empty: /admin/* only for local clients on the traffic port
  bool admin_listener = false;  // /admin/* and /metrics have their own listener
};

// Which listener a request arrived on.
enum class Listener { kTraffic, kAdmin };

// The address of a peer written "host:port" or "[v6]:port" (http::Request::remote), without
// port or brackets: "10.0.0.7", "::1".
std::string_view peer_address(std::string_view remote) noexcept;
// Whether the request comes straight from this host (see the top of this file).
bool is_local_client(const http::Request& head);

// The token of "Authorization: Bearer <token>" (scheme case-insensitive), if any.
std::optional<std::string_view> bearer_token(const http::Headers& headers);

// Whether a client's X-Request-Id can be logged and echoed as it is: 1-256 bytes of visible
// ASCII (no spaces, controls or bytes over 0x7e, which would have to be escaped everywhere).
bool valid_request_id(std::string_view id) noexcept;

// The answer to a head that may not proceed, or nullopt to go on reading the request.
std::optional<http::Response> screen_request_head(const AccessRules& rules,
                                                  const http::Request& head,
                                                  Listener listener = Listener::kTraffic);

}  // namespace omni::proxy
