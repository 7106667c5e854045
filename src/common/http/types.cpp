#include "omni/http/types.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <cstring>

namespace omni::http {

std::string_view method_name(Method method) noexcept {
  switch (method) {
    case Method::kGet: return "GET";
    case Method::kHead: return "HEAD";
    case Method::kPost: return "POST";
    case Method::kPut: return "PUT";
    case Method::kDelete: return "DELETE";
    case Method::kOptions: return "OPTIONS";
    case Method::kPatch: return "PATCH";
    case Method::kUnknown: break;
  }
  return "UNKNOWN";
}

Method parse_method(std::string_view name) noexcept {
  for (Method m : {Method::kGet, Method::kHead, Method::kPost, Method::kPut, Method::kDelete,
                   Method::kOptions, Method::kPatch}) {
    if (name == method_name(m)) return m;
  }
  return Method::kUnknown;
}

std::string_view status_reason(int status) noexcept {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 499: return "Client Closed Request";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

bool iequals(std::string_view a, std::string_view b) noexcept {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           auto lower = [](char c) {
             return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
           };
           return lower(x) == lower(y);
         });
}

bool has_line_break(std::string_view text) noexcept {
  if (text.size() < 32) {
    for (const char c : text) {
      if (c == '\r' || c == '\n' || c == '\0') return true;
    }
    return false;
  }
  // Longer values: three vectorised scans beat one byte-by-byte pass.
  return std::memchr(text.data(), '\r', text.size()) != nullptr ||
         std::memchr(text.data(), '\n', text.size()) != nullptr ||
         std::memchr(text.data(), '\0', text.size()) != nullptr;
}

void Headers::add(std::string name, std::string value) {
  // Requests and responses carry a handful of fields: one allocation instead of four growths.
  if (fields_.capacity() == 0) fields_.reserve(8);
  fields_.emplace_back(std::move(name), std::move(value));
}

void Headers::set(std::string name, std::string value) {
  remove(name);
  add(std::move(name), std::move(value));
}

std::optional<std::string_view> Headers::get(std::string_view name) const {
  for (const auto& [n, v] : fields_) {
    if (iequals(n, name)) return std::string_view(v);
  }
  return std::nullopt;
}

std::size_t Headers::remove(std::string_view name) {
  return std::erase_if(fields_, [&](const Field& f) { return iequals(f.first, name); });
}

std::string_view Request::path() const noexcept {
  const std::string_view t(target);
  return t.substr(0, t.find('?'));
}

std::string_view Request::query() const noexcept {
  const std::string_view t(target);
  const auto q = t.find('?');
  return q == std::string_view::npos ? std::string_view{} : t.substr(q + 1);
}

std::string error_body(int status, std::string_view message, std::string_view type,
                       std::string_view param) {
  boost::json::object error;
  error["message"] = message;
  error["type"] = type.empty() ? status_reason(status) : type;
  if (param.empty()) {
    error["param"] = nullptr;
  } else {
    error["param"] = param;
  }
  error["code"] = status;
  boost::json::object body;
  body["error"] = std::move(error);
  return boost::json::serialize(body);
}

Response error_response(int status, std::string_view message, std::string_view type,
                        std::string_view param) {
  Response response;
  response.status = status;
  response.headers.add("Content-Type", "application/json");
  response.body = error_body(status, message, type, param);
  return response;
}

}  // namespace omni::http
