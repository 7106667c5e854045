// Result<T>: the value-or-error type used on every request path.
//
// Expected failures (bad client input, engine errors, timeouts) are values, not exceptions:
// a function that can fail returns Result<T>, the caller checks it, counts it in a metric and
// answers properly. Broken invariants are bugs and assert instead.
#pragma once

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace omni {

// The error taxonomy. Stable: metrics and logs carry these names, so add, never rename.
enum class ErrorCode {
  kInvalidArgument,    // the caller's input is wrong (HTTP 400)
  kNotFound,           // no such thing (HTTP 404)
  kUnsupported,        // understood, but not supported (HTTP 405/501)
  kTooLarge,           // a size limit was exceeded (HTTP 413/431)
  kResourceExhausted,  // a bounded queue or pool is full (HTTP 429/503)
  kTimeout,            // a deadline passed (HTTP 408/504)
  kUnavailable,        // the peer cannot be reached or is not ready (HTTP 502/503)
  kCancelled,          // the operation was cancelled, e.g. by shutdown
  kProtocol,           // the peer spoke the protocol wrongly (HTTP 502)
  kIo,                 // an operating-system I/O error
  kInternal,           // a bug or an unexpected state (HTTP 500)
};

// The stable snake_case name of a code, e.g. "invalid_argument".
std::string_view error_code_name(ErrorCode code) noexcept;

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;

  // "invalid_argument: listen_port: must be in 1..65535"
  std::string to_string() const;
  friend bool operator==(const Error&, const Error&) = default;
};

inline Error make_error(ErrorCode code, std::string message) {
  return Error{code, std::move(message)};
}

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value)
      : state_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  Result(Error error) : state_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  bool ok() const noexcept { return state_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  T& value() & {
    assert(ok());
    return std::get<0>(state_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(state_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(state_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const& {
    assert(!ok());
    return std::get<1>(state_);
  }
  Error&& error() && {
    assert(!ok());
    return std::get<1>(std::move(state_));
  }

  template <class U>
  T value_or(U&& fallback) const& {
    return ok() ? value() : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  std::variant<T, Error> state_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT: implicit by design

  bool ok() const noexcept { return ok_; }
  explicit operator bool() const noexcept { return ok_; }
  const Error& error() const& {
    assert(!ok_);
    return error_;
  }
  Error&& error() && {
    assert(!ok_);
    return std::move(error_);
  }

 private:
  Error error_;
  bool ok_ = true;
};

using Status = Result<void>;

inline Status ok_status() { return {}; }

}  // namespace omni
