#include "socket_watchdog.hpp"

#include <boost/asio/error.hpp>

namespace omni::http::detail {

ConnectionWatchdog::ConnectionWatchdog(const IoExecutor& executor, TcpSocket& socket)
    : state_(std::make_shared<State>(executor)) {
  state_->socket = &socket;
}

ConnectionWatchdog::~ConnectionWatchdog() {
  state_->socket = nullptr;
  state_->timer.cancel();
}

void ConnectionWatchdog::expires_after(Duration timeout) {
  State& s = *state_;
  s.expired = false;
  s.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout);
  // A pending wait at or before the new deadline will re-arm itself when it wakes.
  if (!s.armed || s.deadline < s.armed_for) arm(state_, s.deadline);
}

void ConnectionWatchdog::disarm() {
  State& s = *state_;
  s.deadline = Clock::time_point::max();
  if (!s.armed) return;
  s.armed = false;
  s.timer.cancel();
}

void ConnectionWatchdog::arm(const std::shared_ptr<State>& state, Clock::time_point when) {
  state->armed = true;
  state->armed_for = when;
  state->timer.expires_at(when);  // cancels a pending wait: its handler sees operation_aborted
  state->timer.async_wait([state](const boost::system::error_code& ec) {
    // Aborted: disarmed, re-armed or destroyed since; whoever did that owns the state now.
    if (ec != boost::asio::error::operation_aborted) on_wake(state);
  });
}

void ConnectionWatchdog::on_wake(const std::shared_ptr<State>& state) {
  State& s = *state;
  s.armed = false;
  if (s.socket == nullptr || s.deadline == Clock::time_point::max()) return;
  if (Clock::now() < s.deadline) {
    arm(state, s.deadline);  // the deadline moved later since this wait was armed
    return;
  }
  s.expired = true;
  boost::system::error_code ignored;
  s.socket->cancel(ignored);
}

}  // namespace omni::http::detail
