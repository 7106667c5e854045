#include "auth.hpp"

#include <openssl/crypto.h>
#include <openssl/sha.h>

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

}  // namespace

Credentials::Credentials(const std::vector<std::string>& secrets) {
  digests_.reserve(secrets.size());
  for (const std::string& secret : secrets) digests_.push_back(digest_of(secret));
}

bool Credentials::accepts(std::string_view token) const noexcept {
  const auto candidate = digest_of(token);
  int matches = 0;
  for (const auto& digest : digests_) {
    matches |= CRYPTO_memcmp(candidate.data(), digest.data(), digest.size()) == 0 ? 1 : 0;
  }
  return matches != 0;
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
                                                  const http::Request& head) {
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
  const Credentials* guard = nullptr;
  if (starts_with(path, "/v1/")) {
    guard = &rules.api_keys;
  } else if (starts_with(path, "/admin/") || path == "/admin") {
    guard = &rules.admin;
  }
  if (guard == nullptr || guard->empty()) return std::nullopt;
  const auto token = bearer_token(head.headers);
  if (token && guard->accepts(*token)) return std::nullopt;
  if (guard == &rules.admin) {
    return refusal(401, "admin token required", "AuthenticationError");
  }
  return refusal(401, "Unauthorized: a valid API key is required", "AuthenticationError");
}

}  // namespace omni::proxy
