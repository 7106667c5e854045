#include "leg_deadline.hpp"

namespace omni::proxy {

LegDeadline::LegDeadline(boost::asio::any_io_executor executor, http::Abort& abort)
    : state_(std::make_shared<State>(std::move(executor))) {
  state_->abort = &abort;
}

LegDeadline::~LegDeadline() {
  state_->abort = nullptr;
  state_->timer.cancel();
}

void LegDeadline::expires_after(Duration timeout, std::string reason) {
  if (timeout <= Duration::zero()) {
    state_->deadline = std::chrono::steady_clock::time_point::max();
    return;
  }
  state_->deadline = std::chrono::steady_clock::now() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(timeout);
  state_->reason = std::move(reason);
  if (!state_->armed || state_->deadline < state_->armed_for) arm(state_);
}

void LegDeadline::arm(const std::shared_ptr<State>& state) {
  state->armed = true;
  state->armed_for = state->deadline;
  state->timer.expires_at(state->deadline);
  state->timer.async_wait([state](const boost::system::error_code& ec) {
    if (ec == boost::asio::error::operation_aborted) return;  // replaced by a newer wait
    state->armed = false;
    if (state->abort == nullptr ||
        state->deadline == std::chrono::steady_clock::time_point::max()) {
      return;
    }
    if (std::chrono::steady_clock::now() < state->deadline) {
      arm(state);  // moved later meanwhile: wait for the new one
      return;
    }
    state->expired = true;
    state->abort->abort();
  });
}

}  // namespace omni::proxy
