// Timeouts for one connection (the server's and the client's) at the price of a clock read
// per operation.
//
// beast::tcp_stream re-arms a timer for every read and write: a timer-queue insert and a
// removal, each under the reactor's lock, plus a type-erased executor copied into every
// handler. On the proxy's request path that was several percent of the work per request. Here
// an operation only records its deadline (expires_after); one timer per connection, armed
// lazily, wakes at the earliest deadline it was armed for, re-arms itself when the deadline
// has since moved later, and cancels (never closes) the socket's pending operation once it has
// passed, so a server can still answer 408. An operation that then fails with
// operation_aborted checks expired() to tell a timeout from an abort or a stop.
//
// disarm() stops the timer, so an idle client pool is no pending work for the io_context
// (run() still returns when everything else is done); idle() leaves its wait pending, which
// then carries over to the next operation: about one timer operation per timeout period
// instead of two per request, for an io_context that is stopped explicitly (the server's, and
// a client with ClientOptions::keep_timers_armed, as omni-proxy's).
#pragma once

#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <memory>

#include "omni/common/clock.hpp"

namespace omni::http::detail {

// Sockets and timers are bound to their io_context's executor itself, not to a type-erased
// any_io_executor, whose copies every composed operation would otherwise pay for.
using IoExecutor = boost::asio::io_context::executor_type;
using TcpSocket = boost::asio::basic_stream_socket<boost::asio::ip::tcp, IoExecutor>;

class ConnectionWatchdog {
 public:
  ConnectionWatchdog(const IoExecutor& executor, TcpSocket& socket);
  ~ConnectionWatchdog();
  ConnectionWatchdog(const ConnectionWatchdog&) = delete;
  ConnectionWatchdog& operator=(const ConnectionWatchdog&) = delete;

  // The operation about to start must end within `timeout`.
  void expires_after(Duration timeout);
  // No operation is pending and none is due: stop the timer.
  void disarm();
  // No operation is due, but leave the timer's wait pending: when it wakes it stops unless an
  // operation has set a deadline meanwhile, which it then covers.
  void idle() noexcept { state_->deadline = Clock::time_point::max(); }
  // The last deadline passed and the watchdog cancelled the socket's operation.
  bool expired() const noexcept { return state_->expired; }

 private:
  using Clock = std::chrono::steady_clock;
  // Shared with the pending wait's handler, which may run after the connection is gone.
  struct State {
    explicit State(const IoExecutor& executor) : timer(executor) {}
    boost::asio::basic_waitable_timer<Clock, boost::asio::wait_traits<Clock>, IoExecutor> timer;
    TcpSocket* socket = nullptr;  // null once the connection is gone
    Clock::time_point deadline = Clock::time_point::max();
    Clock::time_point armed_for = Clock::time_point::max();
    bool armed = false;  // a wait is pending (or its success is queued)
    bool expired = false;
  };
  static void arm(const std::shared_ptr<State>& state, Clock::time_point when);
  static void on_wake(const std::shared_ptr<State>& state);

  std::shared_ptr<State> state_;
};

}  // namespace omni::http::detail
