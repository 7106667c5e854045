#include "serve/channel.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace omni::serve {
namespace asio = boost::asio;

ChoiceChannel::ChoiceChannel(asio::any_io_executor executor) : executor_(std::move(executor)) {}

void ChoiceChannel::fail(std::string message, int status) {
  std::lock_guard lock(mu_);
  if (!progress_.error) {
    progress_.error = std::move(message);
    progress_.error_status = status;
  }
  wake_locked();
}

void ChoiceChannel::wake_locked() {
  if (!waiting_ || detached_) return;
  waiting_ = false;
  asio::post(executor_, [self = shared_from_this()] {
    asio::steady_timer* timer = nullptr;
    {
      std::lock_guard lock(self->mu_);
      timer = self->timer_;
    }
    if (timer) timer->cancel();
  });
}

void ChoiceChannel::detach() {
  std::lock_guard lock(mu_);
  detached_ = true;
  waiting_ = false;
  timer_ = nullptr;
}

bool ChoiceChannel::has_news_locked(std::uint32_t seen_tokens, std::size_t seen_text) const {
  return progress_.tokens.size() != seen_tokens || progress_.text.size() != seen_text ||
         progress_.done();
}

ChoiceDelta ChoiceChannel::read_locked(std::uint32_t seen_tokens, std::size_t seen_text) const {
  ChoiceDelta d;
  const ChoiceProgress& p = progress_;
  if (seen_tokens < p.tokens.size()) {
    d.tokens.assign(p.tokens.begin() + seen_tokens, p.tokens.end());
    if (p.logprobs.size() > seen_tokens) {
      d.logprobs.assign(p.logprobs.begin() + seen_tokens, p.logprobs.end());
    }
  }
  if (seen_text < p.text.size()) d.text = p.text.substr(seen_text);
  d.total_tokens = static_cast<std::uint32_t>(p.tokens.size());
  d.cached_tokens = p.cached_tokens;
  d.finish = p.finish;
  d.stop_reason = p.stop_reason;
  d.kv_transfer_params = p.kv_transfer_params;
  d.error = p.error;
  d.error_status = p.error_status;
  return d;
}

ChoiceDelta ChoiceChannel::read(std::uint32_t seen_tokens, std::size_t seen_text) const {
  std::lock_guard lock(mu_);
  return read_locked(seen_tokens, seen_text);
}

Task<std::optional<ChoiceDelta>> ChoiceChannel::wait(
    std::uint32_t seen_tokens, std::size_t seen_text,
    std::chrono::steady_clock::time_point deadline) {
  asio::steady_timer timer(executor_);
  for (;;) {
    {
      std::lock_guard lock(mu_);
      timer_ = nullptr;
      waiting_ = false;
      if (has_news_locked(seen_tokens, seen_text)) co_return read_locked(seen_tokens, seen_text);
      if (std::chrono::steady_clock::now() >= deadline) co_return std::nullopt;
      waiting_ = !detached_;
      timer_ = detached_ ? nullptr : &timer;
    }
    timer.expires_at(deadline);
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
  }
}

}  // namespace omni::serve
