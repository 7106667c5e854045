#include "sim/request_channel.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace omni::sim {
namespace asio = boost::asio;

RequestChannel::RequestChannel(asio::any_io_executor executor) : executor_(std::move(executor)) {}

void RequestChannel::update(std::uint32_t output_tokens, std::uint32_t cached_tokens,
                            engine::FinishReason finish) {
  std::lock_guard lock(mu_);
  progress_.output_tokens = output_tokens;
  progress_.cached_tokens = cached_tokens;
  if (finish != engine::FinishReason::kNone) progress_.finish = finish;
  wake_locked();
}

void RequestChannel::fail(std::string message, int status) {
  std::lock_guard lock(mu_);
  if (!progress_.error) {
    progress_.error = std::move(message);
    progress_.error_status = status;
  }
  wake_locked();
}

void RequestChannel::wake_locked() {
  if (!waiting_ || detached_) return;
  waiting_ = false;
  asio::post(executor_, [self = shared_from_this()] {
    // Runs on the handler's thread, like every change of timer_: no race with it.
    asio::steady_timer* timer = nullptr;
    {
      std::lock_guard lock(self->mu_);
      timer = self->timer_;
    }
    if (timer) timer->cancel();
  });
}

void RequestChannel::detach() {
  std::lock_guard lock(mu_);
  detached_ = true;
  waiting_ = false;
  timer_ = nullptr;
}

RequestProgress RequestChannel::snapshot() const {
  std::lock_guard lock(mu_);
  return progress_;
}

Task<std::optional<RequestProgress>> RequestChannel::wait(
    std::uint32_t seen_tokens, std::chrono::steady_clock::time_point deadline) {
  asio::steady_timer timer(executor_);
  for (;;) {
    {
      std::lock_guard lock(mu_);
      timer_ = nullptr;
      waiting_ = false;
      if (progress_.output_tokens != seen_tokens || progress_.done()) co_return progress_;
      if (std::chrono::steady_clock::now() >= deadline) co_return std::nullopt;
      waiting_ = !detached_;
      timer_ = detached_ ? nullptr : &timer;
    }
    timer.expires_at(deadline);
    // Either the deadline (no error) or a wake-up (operation_aborted): re-check the state.
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
  }
}

}  // namespace omni::sim
