// OMNI_CHAT_TRY(var, expr): evaluate a Result-returning expression; on error return the error
// from the enclosing function (which returns a Result or Status), else bind the value to `var`.
#pragma once

#define OMNI_CHAT_CONCAT_INNER(a, b) a##b
#define OMNI_CHAT_CONCAT(a, b) OMNI_CHAT_CONCAT_INNER(a, b)
#define OMNI_CHAT_TRY(var, expr)                                       \
  auto OMNI_CHAT_CONCAT(try_result_, __LINE__) = (expr);               \
  if (!OMNI_CHAT_CONCAT(try_result_, __LINE__).ok())                   \
    return std::move(OMNI_CHAT_CONCAT(try_result_, __LINE__)).error(); \
  auto var = std::move(OMNI_CHAT_CONCAT(try_result_, __LINE__)).value()

// OMNI_CHAT_CHECK(expr): propagate the error of a Status-returning expression.
#define OMNI_CHAT_CHECK(expr)                                         \
  do {                                                                \
    auto check_status_ = (expr);                                      \
    if (!check_status_.ok()) return std::move(check_status_).error(); \
  } while (false)
