// One proxied generation request ("call") while it is served: its client, its lifecycle, and
// what the access log and metrics will say about it. Internal to the request path.
#pragma once

#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "gateway_impl.hpp"

namespace omni::proxy {

// A placement's lease, released exactly once: by release(), or neutrally when the guard is
// destroyed first (an early return, a cancelled coroutine). Move-only.
class LeaseGuard {
 public:
  LeaseGuard(Dispatcher& dispatcher, const Lease& lease)
      : dispatcher_(&dispatcher), lease_(lease) {}
  LeaseGuard(LeaseGuard&& other) noexcept
      : dispatcher_(std::exchange(other.dispatcher_, nullptr)), lease_(other.lease_) {}
  LeaseGuard& operator=(LeaseGuard&&) = delete;
  LeaseGuard(const LeaseGuard&) = delete;
  LeaseGuard& operator=(const LeaseGuard&) = delete;
  ~LeaseGuard() { release(Outcome::kNeutral); }

  void release(Outcome outcome) {
    if (dispatcher_ == nullptr) return;
    std::exchange(dispatcher_, nullptr)->release(lease_, outcome);
  }
  bool held() const noexcept { return dispatcher_ != nullptr; }

 private:
  Dispatcher* dispatcher_;
  Lease lease_;
};

struct Call {
  Call(Gateway::Impl& gateway, http::Request& req, http::ResponseWriter& out, Api route_api)
      : g(gateway), request(req), writer(out), api(route_api) {}

  Gateway::Impl& g;
  http::Request& request;
  http::ResponseWriter& writer;
  Api api;
  std::uint64_t id = 0;
  std::string request_id;         // the client's X-Request-Id (or ours): logs, and echoed back
  std::string engine_request_id;  // unique per call: the X-Request-Id every engine call carries
  RequestInfo info;
  PromptInfo prompt;  // the proxy's own tokens and block hashes (prompt.hpp)
  Lifecycle life;
  InflightEntry entry;
  std::chrono::system_clock::time_point wall{};

  // What happened, for the access log and metrics; exactly one outcome per request.
  RequestOutcome outcome = RequestOutcome::kSuccess;
  int status = 0;
  std::string error;
  std::string prefill_node;
  std::string decode_node;
  std::uint32_t prefill_retries = 0;
  std::uint32_t decode_retries = 0;
  std::uint64_t bytes_out = 0;
  std::uint64_t events = 0;
  // The decode leg's lease while its engine runs. The relay releases it (success) as soon as
  // the engine's stream has ended, before a slow client has read it all: the node's budget
  // follows what the engine does, not how fast the client reads.
  LeaseGuard* decode_lease = nullptr;
  // The client closed its connection while the call waited (queue, engine): nothing more is
  // written to it, its engine calls are cancelled, the outcome is client_disconnected.
  bool client_gone = false;
};

// Waits for the scheduler's decision on `ticket` (bounded by the queue timeout). With a
// `client`, a client that closes its connection meanwhile cancels the ticket at once
// (kCancelled, client->client_gone set).
Task<Result<Placement>> acquire(Gateway::Impl& g, Ticket ticket, Call* client = nullptr);

// ---- noticing a client that leaves while its call waits for an engine ------------------------

// The access log's status for a call whose client left first (nginx's convention).
inline constexpr int kClientClosedRequest = 499;

inline Error client_gone_error() {
  return make_error(ErrorCode::kCancelled, "the client closed the connection");
}

namespace detail {
struct Unwatch {
  http::ResponseWriter& writer;
  ~Unwatch() { writer.unwatch_close(); }
};
}  // namespace detail

// Runs `op` (an engine call made with `abort`) unless the client closes its connection first:
// then `abort` ends the call (its engine connection is closed, so the engine aborts the
// request), call.client_gone is set and the result is kCancelled. `op` runs inline, in this
// coroutine: a cancellation of this coroutine (parallel mode cancelling a leg) reaches its
// socket operations directly. Cost: one peeking receive on the client's socket.
template <class T>
Task<Result<T>> unless_client_leaves(Call& call, http::Abort& abort, Task<Result<T>> op) {
  if (call.client_gone) co_return client_gone_error();
  if (!call.writer.watch_close([&call, &abort] {
        call.client_gone = true;
        abort.abort();
      })) {
    co_return co_await std::move(op);
  }
  const detail::Unwatch unwatch{call.writer};
  Result<T> result = co_await std::move(op);
  if (call.client_gone) co_return client_gone_error();
  co_return result;
}

// The request to an engine: same route, `body`, the call's X-Request-Id.
http::Request upstream_request(const Call& call, std::string body);

// Answers the client with an OpenAI error (only before anything was sent) and records it.
Task<void> answer_error(Call& call, int status, std::string message, RequestOutcome outcome,
                        std::string_view type = {}, std::string_view param = {});
// Maps a scheduling failure to its answer: 429 + Retry-After when the queue is full, 503
// when no node was free in time or none is left to try.
Task<void> answer_no_node(Call& call, const Error& error);

// How one decode attempt ended.
enum class LegEnd {
  kDone,   // the client has its answer (success, an engine 4xx, or an error event after start)
  kRetry,  // failed before any byte reached the client: another node may try
};
struct LegResult {
  LegEnd end = LegEnd::kRetry;
  Outcome node_outcome = Outcome::kFailure;  // what the node's health should learn
};

// One decode attempt on `placement`: non-streaming, or the SSE stream relayed event by event.
// Safe to cancel (parallel mode does when the prefill leg fails).
Task<LegResult> decode_once(Call& call, const Placement& placement, std::string body);

// Whether the current coroutine (a PD leg run by the awaitable operators) has been asked to
// stop. Checked between operations, because a cancellation delivered while an operation
// ignores it is not repeated.
Task<bool> leg_cancelled();

// Writes the access-log line and the metrics of a finished call.
void finish_call(Call& call);

}  // namespace omni::proxy
