// One proxied generation request ("call") while it is served, and the pieces every PD mode is
// built from: its legs. Internal to the request path.
//
//   handle_generate (forward.cpp)
//     ├─ the body: validated once (inspect_request), PD fields stripped, token ids spliced,
//     │  then cut once into its top-level members (call.members); every leg's body is rebuilt
//     │  from those spans
//     ├─ next_leg(call, LegRequest) ── one way to get any leg of any mode: a ticket, the
//     │  scheduler's decision (acquire), the node resolved, a LeaseGuard that releases it
//     └─ the legs talk to engines only through EngineClient (engine_client.hpp), under
//        LegDeadlines (leg_deadline.hpp): the prefill leg, the first decode event, the decode
//        stream's idle gaps and the whole request each end with their own error
#pragma once

#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine_client.hpp"
#include "gateway_impl.hpp"
#include "leg_deadline.hpp"
#include "omni/proxy/migration.hpp"

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
  // Aggregated mode: the request's first token came back (the scheduler's first_token).
  void first_token() {
    if (dispatcher_ != nullptr) dispatcher_->first_token(lease_);
  }
  bool held() const noexcept { return dispatcher_ != nullptr; }
  const Lease& lease() const noexcept { return lease_; }

 private:
  Dispatcher* dispatcher_;
  Lease lease_;
};

// A tenant's admission (tenant_limits.hpp): its slot is given back exactly once, with the
// completion tokens its answer used, by finish() or (0 tokens) when destroyed first.
class TenantSlot {
 public:
  TenantSlot(Gateway::Impl& g, std::uint32_t tenant) : g_(&g), tenant_(tenant) {}
  TenantSlot(const TenantSlot&) = delete;
  TenantSlot& operator=(const TenantSlot&) = delete;
  ~TenantSlot() { finish(0); }
  void finish(std::uint64_t completion_tokens) {
    if (g_ == nullptr) return;
    Gateway::Impl& g = *std::exchange(g_, nullptr);
    std::lock_guard lock(g.tenants.mu);
    g.tenants.limiter.finish(tenant_, completion_tokens, g.clock.now());
  }

 private:
  Gateway::Impl* g_;
  std::uint32_t tenant_;
};

// Mid-stream migration (omni/proxy/migration.hpp) of one streamed request.
struct MigrationState {
  // Follows the stream the client receives; absent when the request is not streamed, cannot be
  // continued with the same meaning (`blocker` says why) or migration is off.
  std::optional<StreamSplice> splice;
  std::string blocker;
  std::uint32_t count = 0;  // continuations started
  // The decode leg broke mid-stream and may be continued: the request path does so.
  bool pending = false;
  MigrationCause cause = MigrationCause::kConnection;
  std::vector<std::uint32_t> broken_decodes;  // not to be used again by this request
  std::vector<std::string> broken_names;      // the same nodes by name
  std::vector<std::string> decode_legs;       // every decode node that streamed to the client
  // The engines' body before the first continuation (each continuation is built from it, with
  // everything sent so far), its members, its RequestInfo, and the engine request id.
  std::string origin_body;
  std::vector<JsonMember> origin_members;
  RequestInfo origin_info;
  std::string origin_engine_id;
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
  // The client's body cut once into its top-level members (spans into request.body, which
  // does not change after): each leg's body is rebuilt from them.
  std::vector<JsonMember> members;
  Lifecycle life;
  InflightEntry entry;
  std::chrono::system_clock::time_point wall{};
  // The whole request's deadline (timeouts.request), on the steady clock; max(): none.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();

  // What happened, for the access log and metrics; exactly one outcome per request.
  RequestOutcome outcome = RequestOutcome::kSuccess;
  int status = 0;
  std::string error;
  std::string prefill_node;
  std::string decode_node;
  std::uint32_t prefill_retries = 0;
  std::uint32_t decode_retries = 0;
  std::uint32_t kv_redos = 0;  // sequential PD: prefill + decode redone after lost KV
  // Sequential PD: the decode leg loads KV a prefill left (its body carries the prefill's
  // kv_transfer_params); `may_redo_kv`: a decode that cannot load it ends with kKvLost, and the
  // proxy prefills again, instead of relaying the engine's answer.
  bool decode_loads_remote_kv = false;
  bool may_redo_kv = false;
  std::uint64_t bytes_out = 0;
  std::uint64_t events = 0;
  // The decode leg's lease while its engine runs. The relay releases it (success) as soon as
  // the engine's stream has ended, before a slow client has read it all: the node's budget
  // follows what the engine does, not how fast the client reads.
  LeaseGuard* decode_lease = nullptr;
  // The client closed its connection while the call waited (queue, engine): nothing more is
  // written to it, its engine calls are cancelled, the outcome is client_disconnected.
  bool client_gone = false;
  // The client's stream has begun and not ended: a continuation writes into it, and a request
  // that ends otherwise closes it with an error event (end_open_stream).
  bool stream_open = false;
  std::uint64_t bytes_in = 0;  // the client's body as received
  MigrationState migration;
  // Its traffic class (traffic_rules.hpp) and names for logs and metrics.
  RequestClass traffic;
  std::string tenant_name;
  std::string band_name;
  std::optional<TenantSlot> tenant_slot;
  metrics::Counter* class_counter = nullptr;  // omni_proxy_class_requests_total{band, tenant}
  std::uint64_t retry_after_s = 1;            // a 429's Retry-After
  WaitTimes waited{};                         // every leg's time in the proxy queue, by cause
  // X-Omni-Explain: 1 from an operator: the answer carries X-Omni-Decision (decision_receipt).
  bool explain = false;

  EngineClient& engine(const boost::asio::any_io_executor& executor, Role role) const {
    return g.engine_clients(executor, role);
  }
};

// Waits for the scheduler's decision on `ticket` (bounded by the queue timeout). With a
// `client`, a client that closes its connection meanwhile cancels the ticket at once
// (kCancelled, client->client_gone set).
Task<Result<Placement>> acquire(Gateway::Impl& g, Ticket ticket, Call* client = nullptr);

// ---- legs ----------------------------------------------------------------------------------

// What the next leg of a call is to be.
struct LegRequest {
  Role role = Role::kPrefill;
  std::uint32_t attempt = 0;
  std::vector<std::uint32_t> tried;           // nodes of this role not to use again
  std::string group;                          // a decode after a prefill: stay in its PD group
  std::optional<std::uint32_t> prefill_node;  // a decode after a prefill: where its KV is
};

// A placed leg: the node to call and its lease (released by ownership).
struct Leg {
  Placement placement;
  NodeEntry node;
  LeaseGuard lease;
  std::uint32_t id() const noexcept { return placement.lease.node; }
};

// The one way every mode gets a leg: the ticket, the scheduler's decision, the node resolved
// (a node removed meanwhile is skipped and excluded), the lifecycle and admin entry updated.
// On failure the error is the scheduler's (kResourceExhausted: the queue is full, kTimeout,
// kUnavailable: no node left to try, kCancelled: the client left); nothing was answered yet.
// `wanted` is read before the first suspension; the caller's object may change afterwards.
Task<Result<Leg>> next_leg(Call& call, const LegRequest& wanted);

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

// Arms `deadline` for a leg: `timeout`, or what is left of the whole request when that is
// shorter (each with its own reason).
void arm_leg_deadline(const Call& call, LegDeadline& deadline, Duration timeout,
                      std::string reason);

// Whether an engine's answer says the engine (not the request) failed: 502, 503, 504, and 500
// when the engine says it is dead or unhealthy. Other statuses (4xx, 501 "not supported", a
// 500 about the request) are the request's fault: relayed untouched, never retried elsewhere,
// never counted against the node.
bool engine_failed(int status, std::string_view body);

// Whether a sequential PD decode's answer (not engine_failed) says it could not use the KV the
// prefill left: a 500 (vLLM's kv_load_failure_policy "fail" ends the request with an error,
// whatever the cause), or a 4xx naming the transfer (a stale or unknown kv_transfer_params).
// The proxy wrote those parameters, so the fault is never the client's.
bool kv_unusable(int status, std::string_view body);

// What went wrong on an engine, for omni_proxy_node_errors_total{pool, node, kind}: an
// operator tells a network problem (connect, tls) from an overloaded engine (timeout) from a
// crashing one (http_5xx, stream_broken) without reading logs.
enum class NodeErrorKind {
  kConnect,
  kTls,
  kTimeout,
  kHttp5xx,
  kBadResponse,
  kStreamBroken,
  kKvTransfer,
};
std::string_view node_error_kind_name(NodeErrorKind kind) noexcept;
// The kind of a failed engine call; none for kCancelled (a leg the proxy itself ended).
std::optional<NodeErrorKind> node_error_of(const Error& error) noexcept;
void count_node_error(const Call& call, const NodeEntry& node, NodeErrorKind kind);
// A prefill (or whole) call that failed: its error's kind, or http_5xx for an answer.
void count_engine_failure(const Call& call, const NodeEntry& node,
                          const Result<http::Response>& answer);

// The request to an engine: same route, `body`, the call's engine request id.
http::Request upstream_request(const Call& call, std::string body);

// Answers the client with an OpenAI error (only before anything was sent) and records it.
Task<void> answer_error(Call& call, int status, std::string message, RequestOutcome outcome,
                        std::string_view type = {}, std::string_view param = {});
// Maps a scheduling failure to its answer: 429 + Retry-After when the queue is full, 503
// when no node was free in time or none is left to try.
Task<void> answer_no_node(Call& call, const Error& error);
// Relays an engine's own answer to a bad request (status and body as the engine sent them).
Task<void> relay_refusal(Call& call, int status, const http::Headers& headers, std::string body);

// How one decode attempt ended.
enum class LegEnd {
  kDone,    // the client has its answer (success, an engine's refusal, or an error event)
  kRetry,   // failed before any byte reached the client: another node may try
  kKvLost,  // sequential PD: the decode could not load the prefill's KV (call.may_redo_kv)
};
struct LegResult {
  LegEnd end = LegEnd::kRetry;
  Outcome node_outcome = Outcome::kFailure;  // what the node's health should learn
};

// One decode attempt on `leg`: non-streaming, or the SSE stream relayed event by event.
// Safe to cancel (parallel mode does when the prefill leg fails).
Task<LegResult> decode_once(Call& call, Leg& leg, std::string body);

// A stream still open when the request ends (a continuation found no engine, or was refused):
// vLLM's in-stream error event with call.error, [DONE], the end; outcome stream_error.
Task<void> end_open_stream(Call& call);

// Whether the current coroutine (a PD leg run by the awaitable operators) has been asked to
// stop. Checked between operations, because a cancellation delivered while an operation
// ignores it is not repeated.
Task<bool> leg_cancelled();

// Writes the access-log line and the metrics of a finished call.
void finish_call(Call& call);
// The request's routing decision in one header value: "band=standard; priority=0; tenant=gold;
// prefill=10.0.0.1:8000; decode=10.0.0.2:8000; queue_wait_ms=no_capacity:1.2,priority:0.4".
std::string decision_receipt(const Call& call);

}  // namespace omni::proxy
