// A deadline over an engine call, kept the way the HTTP layer keeps its own (socket_watchdog):
// arming is a clock read and a store, one timer per leg wakes at the earliest deadline and
// re-arms when the deadline has moved later, and at expiry it aborts the call (http::Abort), so
// a streamed decode can push its idle deadline forward on every piece at no cost.
//
// Each deadline carries its reason: the call's error then says which one ran out ("no first
// token within 120s"), not merely that something timed out.
//
// Threading: one coroutine's; its executor runs the timer.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "omni/common/clock.hpp"
#include "omni/common/result.hpp"
#include "omni/http/client.hpp"

namespace omni::proxy {

class LegDeadline {
 public:
  LegDeadline(boost::asio::any_io_executor executor, http::Abort& abort);
  ~LegDeadline();
  LegDeadline(const LegDeadline&) = delete;
  LegDeadline& operator=(const LegDeadline&) = delete;

  // The call must end within `timeout` from now, else it is aborted for `reason`. A zero or
  // negative timeout means no deadline.
  void expires_after(Duration timeout, std::string reason);
  // Whether a deadline ran out (the call was aborted by it).
  bool expired() const noexcept { return state_->expired; }
  // The error of a call this deadline aborted: kTimeout with the reason.
  Error error() const { return make_error(ErrorCode::kTimeout, state_->reason); }

 private:
  struct State {
    explicit State(boost::asio::any_io_executor ex) : timer(std::move(ex)) {}
    boost::asio::steady_timer timer;
    http::Abort* abort = nullptr;  // null once the owner is gone
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
    std::chrono::steady_clock::time_point armed_for = std::chrono::steady_clock::time_point::max();
    bool armed = false;
    bool expired = false;
    std::string reason;
  };
  static void arm(const std::shared_ptr<State>& state);
  std::shared_ptr<State> state_;
};

// Runs `op` (made with `abort`) under `deadline`: its error becomes the deadline's when the
// deadline aborted it.
template <class T>
Task<Result<T>> within(LegDeadline& deadline, Task<Result<T>> op) {
  Result<T> result = co_await std::move(op);
  if (!result && deadline.expired()) co_return deadline.error();
  co_return result;
}

}  // namespace omni::proxy
