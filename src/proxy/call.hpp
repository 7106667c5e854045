// One proxied generation request ("call") while it is served: its client, its lifecycle, and
// what the access log and metrics will say about it. Internal to the request path.
#pragma once

#include <string>

#include "gateway_impl.hpp"

namespace omni::proxy {

struct Call {
  Call(Gateway::Impl& gateway, http::Request& req, http::ResponseWriter& out, Api route_api)
      : g(gateway), request(req), writer(out), api(route_api) {}

  Gateway::Impl& g;
  http::Request& request;
  http::ResponseWriter& writer;
  Api api;
  std::uint64_t id = 0;
  std::string request_id;
  RequestInfo info;
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
};

// Waits for the scheduler's decision on `ticket` (bounded by the queue timeout).
Task<Result<Placement>> acquire(Gateway::Impl& g, Ticket ticket);

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
