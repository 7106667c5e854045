// The bridge between the engine loop thread and one choice's handler coroutine, as omni-sim's
// RequestChannel, but carrying what a real engine produces: the tokens, the text that may be
// shown, log-probabilities, the finish and its reason.
//
//   loop thread: publish() / fail()  ──(state under a mutex)──►  handler: co_await wait()
//
// The handler waits on a steady_timer in its own coroutine; the loop wakes it by posting a
// cancel of that timer to the handler's executor. Updates coalesce: the handler reads what is
// new since it last looked (read(), from its own offsets). detach() stops all posting.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "omni/engine/engine.hpp"
#include "omni/http/task.hpp"
#include "serve/sampling.hpp"

namespace omni::serve {

struct ChoiceProgress {
  std::vector<std::uint32_t> tokens;    // every output token so far
  std::vector<TokenLogprobs> logprobs;  // per token, when requested
  std::string text;                     // the text that may be shown so far
  std::uint32_t cached_tokens = 0;      // vLLM's num_cached_tokens
  engine::FinishReason finish = engine::FinishReason::kNone;
  std::string stop_reason = "null";         // raw JSON
  std::string kv_transfer_params = "null";  // a PD prefill instance's answer (raw JSON)
  std::optional<std::string> error;
  int error_status = 500;
  bool done() const { return finish != engine::FinishReason::kNone || error.has_value(); }
};

// What is new for a reader that has seen `tokens` tokens and `text` bytes.
struct ChoiceDelta {
  std::vector<std::uint32_t> tokens;
  std::vector<TokenLogprobs> logprobs;
  std::string text;
  std::uint32_t total_tokens = 0;
  std::uint32_t cached_tokens = 0;
  engine::FinishReason finish = engine::FinishReason::kNone;
  std::string stop_reason = "null";
  std::string kv_transfer_params = "null";
  std::optional<std::string> error;
  int error_status = 500;
  bool done() const { return finish != engine::FinishReason::kNone || error.has_value(); }
};

class ChoiceChannel : public std::enable_shared_from_this<ChoiceChannel> {
 public:
  explicit ChoiceChannel(boost::asio::any_io_executor executor);

  // Loop side, any thread: `update` edits the progress under the lock.
  template <class Fn>
  void publish(Fn&& update) {
    std::lock_guard lock(mu_);
    update(progress_);
    wake_locked();
  }
  void fail(std::string message, int status = 500);

  // Handler side: returns as soon as there is anything past (seen_tokens, seen_text) or the
  // choice is done; nullopt when `deadline` passes first.
  Task<std::optional<ChoiceDelta>> wait(std::uint32_t seen_tokens, std::size_t seen_text,
                                        std::chrono::steady_clock::time_point deadline);
  ChoiceDelta read(std::uint32_t seen_tokens, std::size_t seen_text) const;
  void detach();
  engine::SeqId id = 0;

 private:
  bool has_news_locked(std::uint32_t seen_tokens, std::size_t seen_text) const;
  ChoiceDelta read_locked(std::uint32_t seen_tokens, std::size_t seen_text) const;
  void wake_locked();

  boost::asio::any_io_executor executor_;
  mutable std::mutex mu_;
  ChoiceProgress progress_;
  bool waiting_ = false;
  bool detached_ = false;
  boost::asio::steady_timer* timer_ = nullptr;
};

}  // namespace omni::serve
