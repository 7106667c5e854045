#include "auth.hpp"

#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <boost/asio/ip/address.hpp>

namespace omni::proxy {
namespace {

std::array<unsigned char, 32> digest_of(std::string_view text) {
  std::array<unsigned char, 32> out{};
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), out.data());
  return out;
}

http::Response refusal(int status, std::string_view message, std::string_view type,
                       std::string_view param = {}) {
  http::Response response = http::error_response(status, message, type, param);
  if (status == 401) response.headers.add("WWW-Authenticate", "Bearer");
  return response;
}

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

// The routes an operator runs the proxy with, as opposed to the ones clients use.
bool is_admin_route(std::string_view path) {
  return starts_with(path, "/admin/") || path == "/admin";
}
bool is_operator_route(std::string_view path) {
  return is_admin_route(path) || path == "/metrics" || path == "/dashboard";
}

bool token_accepted(const Credentials& credentials, const http::Request& head) {
  const auto token = bearer_token(head.headers);
  return token && credentials.accepts(*token);
}

// An operator route on the traffic listener: the admin token if one is configured (it is
// required for /admin/*), else only a local client.
std::optional<http::Response> screen_operator_route(const AccessRules& rules,
                                                    const http::Request& head) {
  const std::string_view path = head.path();
  if (!rules.admin.empty()) {
    if (token_accepted(rules.admin, head)) return std::nullopt;
    if (!is_admin_route(path) && is_local_client(head)) return std::nullopt;
    return refusal(401, "admin token required", "AuthenticationError");
  }
  if (is_local_client(head)) return std::nullopt;
  return refusal(403,
                 "admin routes and /metrics answer only local clients on this port: use the "
                 "admin listener (--admin-listen) or configure an admin token",
                 "PermissionDeniedError");
}

}  // namespace

std::string_view peer_address(std::string_view remote) noexcept {
  if (const auto colon = remote.rfind(':'); colon != std::string_view::npos) {
    remote = remote.substr(0, colon);
  }
  if (remote.size() >= 2 && remote.front() == '[' && remote.back() == ']') {
    remote = remote.substr(1, remote.size() - 2);
  }
  return remote;
}

bool is_local_client(const http::Request& head) {
  for (const std::string_view relayed : {"Forwarded", "X-Forwarded-For", "X-Real-IP"}) {
    if (head.headers.get(relayed)) return false;
  }
  const std::string_view host = peer_address(head.remote);
  boost::system::error_code ec;
  const auto address = boost::asio::ip::make_address(std::string(host), ec);
  if (ec) return false;
  if (address.is_v6() && address.to_v6().is_v4_mapped()) {
    return boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, address.to_v6())
        .is_loopback();
  }
  return address.is_loopback();
}

Credentials::Credentials(const std::vector<std::string>& secrets) {
  digests_.reserve(secrets.size());
  for (const std::string& secret : secrets) digests_.push_back(digest_of(secret));
}

bool Credentials::accepts(std::string_view token) const noexcept {
  return match(token).has_value();
}

std::optional<std::size_t> Credentials::match(std::string_view token) const noexcept {
  const auto candidate = digest_of(token);
  // Every digest is compared, and the matching index is selected without a branch on the
  // comparison, so the time depends on neither whether nor where a key matched.
  std::size_t found = 0;
  std::size_t any = 0;
  for (std::size_t i = 0; i < digests_.size(); ++i) {
    const auto equal = static_cast<std::size_t>(
        CRYPTO_memcmp(candidate.data(), digests_[i].data(), digests_[i].size()) == 0);
    found |= (i + 1) & (std::size_t{0} - equal);
    any |= equal;
  }
  if (any == 0) return std::nullopt;
  return found - 1;
}

std::optional<std::string_view> bearer_token(const http::Headers& headers) {
  auto header = headers.get("Authorization");
  if (!header) return std::nullopt;
  constexpr std::string_view kPrefix = "Bearer ";
  if (header->size() <= kPrefix.size() ||
      !http::iequals(header->substr(0, kPrefix.size()), kPrefix)) {
    return std::nullopt;
  }
  return header->substr(kPrefix.size());
}

bool valid_request_id(std::string_view id) noexcept {
  if (id.empty() || id.size() > 256) return false;
  for (const char c : id) {
    if (c < 0x21 || c > 0x7e) return false;
  }
  return true;
}

std::optional<http::Response> screen_request_head(const AccessRules& rules,
                                                  const http::Request& head, Listener listener) {
  std::size_t authorizations = 0;
  for (const auto& [name, value] : head.headers) {
    if (http::iequals(name, "Authorization")) ++authorizations;
  }
  if (authorizations > 1) {
    return refusal(400, "more than one Authorization header", "BadRequestError", "Authorization");
  }
  if (auto id = head.headers.get("X-Request-Id"); id && !id->empty() && !valid_request_id(*id)) {
    return refusal(400, "X-Request-Id must be 1-256 visible ASCII characters", "BadRequestError",
                   "X-Request-Id");
  }
  const std::string_view path = head.path();
  if (listener == Listener::kAdmin) {
    if (!is_admin_route(path) || rules.admin.empty() || token_accepted(rules.admin, head)) {
      return std::nullopt;
    }
    return refusal(401, "admin token required", "AuthenticationError");
  }
  if (is_operator_route(path)) {
    // Served by the admin listener only: the router answers 404 here.
    if (rules.admin_listener) return std::nullopt;
    return screen_operator_route(rules, head);
  }
  if (!starts_with(path, "/v1/") || rules.api_keys.empty()) return std::nullopt;
  if (token_accepted(rules.api_keys, head)) return std::nullopt;
  return refusal(401, "Unauthorized: a valid API key is required", "AuthenticationError");
}

}  // namespace omni::proxy
