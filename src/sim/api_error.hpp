// An error as vLLM answers it: HTTP status + the OpenAI error body (spec §3.6).
#pragma once

#include <string>
#include <utility>

#include "omni/http/types.hpp"

namespace omni::sim {

struct ApiError {
  int status = 400;
  std::string message;
  std::string type;   // empty: the HTTP reason phrase ("Bad Request"), as vLLM's validation
  std::string param;  // empty: null

  http::Response response() const { return http::error_response(status, message, type, param); }
  std::string body() const { return http::error_body(status, message, type, param); }
};

// Request validation failures (pydantic in vLLM): 400 "Bad Request".
inline ApiError validation_error(std::string message, std::string param = {}) {
  return {400, std::move(message), "", std::move(param)};
}
// Semantic errors raised while serving (ValueError in vLLM): 400 "BadRequestError".
inline ApiError bad_request(std::string message, std::string param = {}) {
  return {400, std::move(message), "BadRequestError", std::move(param)};
}
inline ApiError not_found_model(const std::string& model) {
  return {404, "The model `" + model + "` does not exist.", "NotFoundError", "model"};
}
inline ApiError not_implemented(std::string message) {
  return {501, std::move(message), "NotImplementedError", ""};
}
inline ApiError internal_error(std::string message) {
  return {500, std::move(message), "InternalServerError", ""};
}

}  // namespace omni::sim
