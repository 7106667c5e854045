// The bridge between the engine driver thread and one request's handler coroutine.
//
//   driver thread: update() / fail()  ──(state under a mutex)──►  handler: co_await wait()
//
// The handler waits on a steady_timer that lives in its own coroutine; the driver wakes it by
// posting a cancel of that timer to the handler's executor (so the timer is only ever touched
// from its own thread). A wake-up is posted only while the handler is actually waiting, so
// updates coalesce: the handler always reads the latest totals, never a backlog. Every wait has
// a deadline. detach() (the handler is gone) stops all posting, so a channel the driver still
// holds never touches an executor whose io_context has been destroyed.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "omni/engine/engine.hpp"
#include "omni/http/task.hpp"

namespace omni::sim {

struct RequestProgress {
  std::uint32_t output_tokens = 0;  // generated so far
  std::uint32_t cached_tokens = 0;  // prompt tokens served from the prefix cache
  engine::FinishReason finish = engine::FinishReason::kNone;
  std::optional<std::string> error;  // the request failed (engine refused it, shutdown, ...)
  int error_status = 500;            // 400 when the engine refused the request as invalid
  bool done() const { return finish != engine::FinishReason::kNone || error.has_value(); }
};

class RequestChannel : public std::enable_shared_from_this<RequestChannel> {
 public:
  explicit RequestChannel(boost::asio::any_io_executor executor);

  // Driver side, any thread.
  void update(std::uint32_t output_tokens, std::uint32_t cached_tokens,
              engine::FinishReason finish);
  void fail(std::string message, int status = 500);

  // Handler side: returns as soon as the progress differs from `seen_tokens` or the request is
  // done; nullopt when `deadline` passes first.
  Task<std::optional<RequestProgress>> wait(std::uint32_t seen_tokens,
                                            std::chrono::steady_clock::time_point deadline);
  RequestProgress snapshot() const;
  // Handler side: no more wake-ups. Called when the handler finishes or is destroyed.
  void detach();
  // The engine's id of the request (set by the driver before the channel is handed out).
  engine::SeqId id = 0;

 private:
  void wake_locked();

  boost::asio::any_io_executor executor_;
  mutable std::mutex mu_;
  RequestProgress progress_;
  bool waiting_ = false;
  bool detached_ = false;
  boost::asio::steady_timer* timer_ = nullptr;  // the waiting handler's timer, its thread only
};

}  // namespace omni::sim
