// The decode leg (and aggregated mode's only leg): send to the engine, relay its answer.
//
// Streams are relayed piece by piece as they arrive (each piece one flushed chunk), never
// buffered to the end. The client sees nothing until the engine's first body byte, so a
// decode that fails before it can still be retried on another node. After that, a failure
// ends the stream with a well-formed error event and [DONE], never a silent cut.
#include <boost/asio/this_coro.hpp>

#include "call.hpp"

namespace omni::proxy {
namespace {

namespace asio = boost::asio;

// Follows SSE event boundaries across pieces: a blank line ends an event.
class EventCounter {
 public:
  // Events completed by `piece`.
  std::uint64_t feed(std::string_view piece) {
    std::uint64_t events = 0;
    for (const char c : piece) {
      if (c == '\r') continue;
      if (c == '\n') {
        if (++newlines_ == 2) ++events;
      } else {
        newlines_ = 0;
      }
    }
    tail_ += piece;
    if (tail_.find("data: [DONE]") != std::string::npos) done_seen_ = true;
    if (tail_.size() > 16) tail_.erase(0, tail_.size() - 16);
    return events;
  }
  bool at_boundary() const noexcept { return newlines_ >= 2; }
  bool done_seen() const noexcept { return done_seen_; }

 private:
  int newlines_ = 2;  // the start of a stream is a boundary
  std::string tail_;
  bool done_seen_ = false;
};

// vLLM's in-stream error event (json.dumps spacing), then [DONE] unless the engine sent it.
std::string error_event(std::string_view message, bool at_boundary, bool done_seen) {
  std::string out = at_boundary ? "" : "\n\n";
  out += "data: {\"error\": {\"message\": " + json_quote(message) +
         ", \"type\": \"InternalServerError\", \"param\": null, \"code\": 502}}\n\n";
  if (!done_seen) out += "data: [DONE]\n\n";
  return out;
}

http::Headers client_headers(const Call& call, const http::Headers& upstream) {
  http::Headers headers;
  headers.add("Content-Type",
              std::string(upstream.get("Content-Type").value_or("application/json")));
  headers.add("X-Request-Id", call.request_id);
  if (call.explain) headers.add("X-Omni-Decision", decision_receipt(call));
  return headers;
}

// A write to the client failed: it left, or stopped reading for longer than
// timeouts.client_write (cut, and logged as such).
void client_write_failed(Call& call, const Status& written) {
  call.stream_open = false;  // nothing more can be written to it
  const bool too_slow = written.error().code == ErrorCode::kTimeout;
  call.outcome = too_slow ? RequestOutcome::kClientTooSlow : RequestOutcome::kClientDisconnected;
  call.error = too_slow ? "the client read too slowly: cut after timeouts.client_write"
                        : "the client went away during the stream";
}

// The client left while its engine call ran: the call was cancelled (its engine connection
// closed, so the engine aborts); nothing is written back.
LegResult client_left(Call& call) {
  call.outcome = RequestOutcome::kClientDisconnected;
  call.status = kClientClosedRequest;
  call.error = client_gone_error().message;
  call.g.metrics.cancelled_legs->inc();
  return LegResult{LegEnd::kDone, Outcome::kNeutral};
}

std::string millis(Duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + " ms";
}

// A call that failed before the client saw a byte: what the node should learn, and a retry.
LegResult engine_call_failed(Call& call, const Leg& leg, const Error& error) {
  call.error = leg.node.spec.name + ": " + error.to_string();
  if (auto kind = node_error_of(error)) count_node_error(call, leg.node, *kind);
  return LegResult{LegEnd::kRetry, Outcome::kFailure};
}

// What a sequential PD decode's refusal means when it says the prefill's KV could not be
// loaded (kv_unusable): with a redo left the caller prefills again; without one, a refusal that
// names the transfer is the proxy's own 502 (the client sent no transfer parameters) and a 500
// is relayed as the engine's.
enum class KvVerdict { kNotKv, kRedo, kProxysFault };

KvVerdict kv_verdict(Call& call, const Leg& leg, int status, std::string_view body) {
  if (!call.decode_loads_remote_kv || !kv_unusable(status, body)) return KvVerdict::kNotKv;
  call.error = leg.node.spec.name + " could not load the prefill's KV (answered " +
               std::to_string(status) + ")";
  count_node_error(call, leg.node, NodeErrorKind::kKvTransfer);
  if (call.may_redo_kv) return KvVerdict::kRedo;
  return status == 500 ? KvVerdict::kNotKv : KvVerdict::kProxysFault;
}

// A decode's refusal: relayed as the engine's, or turned into a redo or the proxy's 502 when it
// is about the KV the proxy arranged (kv_verdict).
Task<LegResult> refused(Call& call, const Leg& leg, int status, const http::Headers& headers,
                        std::string body) {
  switch (kv_verdict(call, leg, status, body)) {
    case KvVerdict::kRedo: co_return LegResult{LegEnd::kKvLost, Outcome::kNeutral};
    case KvVerdict::kProxysFault:
      co_await answer_error(call, 502,
                            "the decode engine could not load the KV of this request's prefill",
                            RequestOutcome::kUpstreamError, "BadGatewayError");
      co_return LegResult{LegEnd::kDone, Outcome::kNeutral};
    case KvVerdict::kNotKv: break;
  }
  // The request's fault, not the node's: the client gets the engine's own answer.
  co_await relay_refusal(call, status, headers, std::move(body));
  co_return LegResult{LegEnd::kDone, Outcome::kSuccess};
}

Task<LegResult> send_whole(Call& call, Leg& leg, EngineClient& engine, http::Request request) {
  auto executor = co_await asio::this_coro::executor;
  http::Abort abort;
  LegDeadline deadline(executor, abort);
  arm_leg_deadline(
      call, deadline, call.g.config.timeouts.first_token,
      "no answer from the decode engine within " + millis(call.g.config.timeouts.first_token));
  auto send = engine.send(leg.node, std::move(request), &abort);  // named: GCC 12 and temporaries
  auto guarded = within(deadline, std::move(send));
  auto answer = co_await unless_client_leaves(call, abort, std::move(guarded));
  if (!answer && call.client_gone) co_return client_left(call);
  if (!answer) co_return engine_call_failed(call, leg, answer.error());
  if (engine_failed(answer->status, answer->body)) {
    call.error = leg.node.spec.name + " answered " + std::to_string(answer->status);
    count_node_error(call, leg.node, NodeErrorKind::kHttp5xx);
    co_return LegResult{LegEnd::kRetry, Outcome::kFailure};
  }
  if (answer->status != 200) {
    co_return co_await refused(call, leg, answer->status, answer->headers, std::move(answer->body));
  }
  std::string not_completion;  // a converted chat request (chat_bridge.hpp) gets its chat body
  if (!chat_whole_body(call, answer->body, not_completion)) {
    count_node_error(call, leg.node, NodeErrorKind::kBadResponse);
    co_await answer_error(call, 502, not_completion, RequestOutcome::kUpstreamError,
                          "BadGatewayError");
    co_return LegResult{LegEnd::kDone, Outcome::kFailure};
  }
  call.life.output_event(call.g.clock.now(), 1);
  if (call.decode_lease) call.decode_lease->first_token();
  http::Response response;
  response.status = answer->status;
  response.headers = client_headers(call, answer->headers);
  response.body = std::move(answer->body);
  // An engine's transfer parameters (its id, host and port) are the proxy's business only.
  if (auto hidden = hide_transfer_params(response.body)) response.body = std::move(*hidden);
  call.status = response.status;
  call.bytes_out += response.body.size();
  (void)co_await call.writer.send(std::move(response));
  co_return LegResult{LegEnd::kDone, Outcome::kSuccess};
}

// The engine answered an error before streaming: its body is small; read it, then either
// relay it (the request's fault) or retry elsewhere (the engine's).
Task<LegResult> forward_refusal(Call& call, const Leg& leg, http::ResponseStream& stream) {
  std::string body;
  for (;;) {
    auto piece = co_await stream.next();
    if (!piece || !*piece || body.size() > 1024 * 1024) break;
    body += **piece;
  }
  if (engine_failed(stream.status(), body)) {
    call.error = leg.node.spec.name + " answered " + std::to_string(stream.status());
    count_node_error(call, leg.node, NodeErrorKind::kHttp5xx);
    co_return LegResult{LegEnd::kRetry, Outcome::kFailure};
  }
  co_return co_await refused(call, leg, stream.status(), stream.headers(), std::move(body));
}

// What broke a stream, when another engine may continue it: not a cancellation (the client
// left, the parallel prefill failed) and not the whole request's deadline.
std::optional<MigrationCause> migration_cause(const Call& call, const LegDeadline& deadline,
                                              const Error& error) {
  if (error.code == ErrorCode::kCancelled || call.client_gone) return std::nullopt;
  if (std::chrono::steady_clock::now() >= call.deadline) return std::nullopt;
  if (deadline.expired()) return MigrationCause::kIdle;
  return MigrationCause::kConnection;
}

bool may_migrate(const Call& call) {
  return call.migration.splice && call.migration.splice->can_continue() &&
         call.migration.count < call.g.config.migration_max_attempts && !call.client_gone;
}

// The decode stream broke after the client got part of the answer. The answer was whole (only
// the end missing): the stream is ended as the engine would have. Otherwise, when it may, the
// request path continues it on another engine (MigrationState::pending); if not, the client
// gets vLLM's in-stream error event and [DONE].
Task<LegResult> stream_broke(Call& call, const Leg& leg, const EventCounter& counter,
                             std::optional<MigrationCause> cause, std::string error,
                             Outcome node_outcome = Outcome::kFailure) {
  call.error = leg.node.spec.name + ": " + error;
  if (node_outcome == Outcome::kFailure) {
    count_node_error(call, leg.node, NodeErrorKind::kStreamBroken);
  }
  const StreamSplice* splice = call.migration.splice ? &*call.migration.splice : nullptr;
  if (splice && splice->finished()) {
    if (!splice->done_seen()) (void)co_await call.writer.write_chunk("data: [DONE]\n\n");
    call.stream_open = false;
    if (Status flushed = co_await call.writer.end_stream(); !flushed)
      client_write_failed(call, flushed);
    co_return LegResult{LegEnd::kDone, Outcome::kFailure};
  }
  if (cause && may_migrate(call)) {
    call.migration.pending = true;
    call.migration.cause = *cause;
    call.migration.broken_decodes.push_back(leg.id());
    call.migration.broken_names.push_back(leg.node.spec.name);
    co_return LegResult{LegEnd::kDone, node_outcome};
  }
  call.outcome = RequestOutcome::kStreamError;
  const std::string tail = error_event(call.error, counter.at_boundary(), counter.done_seen());
  (void)co_await call.writer.write_chunk(tail);
  call.stream_open = false;
  (void)co_await call.writer.end_stream();
  co_return LegResult{LegEnd::kDone, Outcome::kFailure};
}

Task<LegResult> relay(Call& call, const Leg& leg, http::ResponseStream& stream,
                      LegDeadline& deadline, std::string first) {
  if (!call.stream_open) {  // a continuation writes into the stream already begun
    const http::Headers headers = client_headers(call, stream.headers());
    if (!co_await call.writer.begin_stream(200, headers)) {
      call.outcome = RequestOutcome::kClientDisconnected;
      co_return LegResult{LegEnd::kDone, Outcome::kNeutral};
    }
    call.stream_open = true;
  }
  call.status = 200;
  call.migration.decode_legs.push_back(leg.node.spec.name);
  const Duration idle = call.g.config.timeouts.decode_idle;
  const std::string idle_reason = "the decode stream was silent for " + millis(idle);
  EventCounter counter;
  std::string piece = std::move(first);
  for (;;) {
    // A migratable stream goes through its splice: whole events only, the engine's error event
    // withheld (the request may continue elsewhere), a continuation's events rewritten.
    bool engine_error = false;
    if (call.migration.splice) {
      StreamSplice::Fed fed = call.migration.splice->feed(piece);
      piece = std::move(fed.out);
      engine_error = fed.engine_error;
    }
    // A converted chat request's events become chat chunks (chat_bridge.hpp); on a malformed
    // engine event the piece ends with an error event and [DONE], and the stream ends here.
    std::string chat_error;
    const bool chat_ok = chat_stream_piece(call, piece, chat_error);
    const std::uint64_t events = counter.feed(piece);
    if (events > 0) {
      call.life.output_event(call.g.clock.now(), events);
      call.events += events;
      call.g.metrics.relayed_events->inc(static_cast<double>(events));
    }
    call.bytes_out += piece.size();
    if (Status written = co_await call.writer.write_chunk(piece); !written) {
      // The client went away (or read too slowly): returning destroys the stream, which
      // closes the engine connection, and the engine aborts the request.
      client_write_failed(call, written);
      call.g.metrics.cancelled_legs->inc();
      co_return LegResult{LegEnd::kDone, Outcome::kNeutral};
    }
    if (!chat_ok) {
      call.error = chat_error;
      count_node_error(call, leg.node, NodeErrorKind::kBadResponse);
      call.outcome = RequestOutcome::kStreamError;
      call.stream_open = false;
      (void)co_await call.writer.end_stream();
      co_return LegResult{LegEnd::kDone, Outcome::kFailure};
    }
    if (engine_error) {
      std::string said =
          "the engine ended the stream with an error: " + call.migration.splice->engine_error();
      const std::optional<MigrationCause> cause = MigrationCause::kEngineError;
      // Arguments named: GCC 12 mishandles temporaries inside a co_await expression.
      auto broke = stream_broke(call, leg, counter, cause, std::move(said));
      co_return co_await std::move(broke);
    }
    if (may_migrate(call) &&
        call.g.drains.due(leg.node.spec.name, std::chrono::steady_clock::now())) {
      // Drained and its grace is over: the stream moves (its engine call is closed on return,
      // so the engine aborts the request); nobody's failure.
      const std::optional<MigrationCause> cause = MigrationCause::kDrain;
      std::string why = "drained, and timeouts.drain_grace ran out";
      auto broke = stream_broke(call, leg, counter, cause, std::move(why), Outcome::kNeutral);
      co_return co_await std::move(broke);
    }
    arm_leg_deadline(call, deadline, idle, idle_reason);
    auto next = co_await within(deadline, stream.next());
    if (next && co_await leg_cancelled()) {
      next = make_error(ErrorCode::kCancelled, "the prefill leg failed");
    }
    if (!next) {
      const std::optional<MigrationCause> cause = migration_cause(call, deadline, next.error());
      auto broke = stream_broke(call, leg, counter, cause, next.error().to_string());
      co_return co_await std::move(broke);
    }
    if (!*next) break;
    piece = std::move(**next);
  }
  // The engine is done: its node's budget is free now, while the client may still be reading
  // the stream's backlog (ResponseWriter::write_chunk keeps up to stream_backlog_bytes).
  if (call.decode_lease) call.decode_lease->release(Outcome::kSuccess);
  call.stream_open = false;
  if (Status flushed = co_await call.writer.end_stream(); !flushed)
    client_write_failed(call, flushed);
  co_return LegResult{LegEnd::kDone, Outcome::kSuccess};
}

Task<LegResult> stream_once(Call& call, Leg& leg, EngineClient& engine, http::Request request);

}  // namespace

Task<bool> leg_cancelled() {
  const asio::cancellation_state state = co_await asio::this_coro::cancellation_state;
  co_return state.cancelled() != asio::cancellation_type::none;
}

Task<void> end_open_stream(Call& call) {
  if (!call.stream_open) co_return;
  call.stream_open = false;
  if (call.client_gone) co_return;
  call.outcome = RequestOutcome::kStreamError;
  call.status = 200;
  const bool done = call.migration.splice && call.migration.splice->done_seen();
  const std::string tail = error_event(call.error, true, done);
  call.bytes_out += tail.size();
  (void)co_await call.writer.write_chunk(tail);
  (void)co_await call.writer.end_stream();
}

Task<LegResult> decode_once(Call& call, Leg& leg, std::string body) {
  // Cancellation (parallel mode) must surface as errors from the engine calls, not as an
  // exception that would skip the error event and the lease's release.
  co_await asio::this_coro::throw_if_cancelled(false);
  auto executor = co_await asio::this_coro::executor;
  EngineClient& engine = call.engine(executor, Role::kDecode);
  call.life.mark(Stage::kDecoding, call.g.clock.now());
  http::Request request = upstream_request(call, std::move(body));
  if (!call.info.stream) co_return co_await send_whole(call, leg, engine, std::move(request));
  co_return co_await stream_once(call, leg, engine, std::move(request));
}

namespace {

// The streaming half of decode_once, a coroutine of its own so that the non-streaming path's
// frame stays small: Asio recycles coroutine frames of up to 1 KiB per thread, and a larger
// one costs an aligned allocation and a free on every request.
Task<LegResult> stream_once(Call& call, Leg& leg, EngineClient& engine, http::Request request) {
  auto executor = co_await asio::this_coro::executor;
  // Until the first event the client has been sent nothing, so only a watch notices it leave.
  http::Abort abort;  // declared before the stream, which keeps a pointer to it
  LegDeadline deadline(executor, abort);
  const Duration first_token = call.g.config.timeouts.first_token;
  arm_leg_deadline(call, deadline, first_token,
                   "no first token from the decode engine within " + millis(first_token));
  auto open = within(deadline, engine.open(leg.node, std::move(request), &abort));
  auto opened = co_await unless_client_leaves(call, abort, std::move(open));
  if (!opened && call.client_gone) co_return client_left(call);
  if (!opened) co_return engine_call_failed(call, leg, opened.error());
  http::ResponseStream& stream = **opened;
  if (stream.status() != 200) co_return co_await forward_refusal(call, leg, stream);
  auto next = within(deadline, stream.next());
  auto first = co_await unless_client_leaves(call, abort, std::move(next));
  if (!first && call.client_gone) co_return client_left(call);
  if (first && co_await leg_cancelled()) {
    first = make_error(ErrorCode::kCancelled, "the prefill leg failed");
  }
  if (!first || !*first) {
    if (!first) co_return engine_call_failed(call, leg, first.error());
    call.error = leg.node.spec.name + " ended the stream before any event";
    count_node_error(call, leg.node, NodeErrorKind::kStreamBroken);
    co_return LegResult{LegEnd::kRetry, Outcome::kFailure};
  }
  if (call.decode_lease) call.decode_lease->first_token();
  co_return co_await relay(call, leg, stream, deadline, std::move(**first));
}

}  // namespace
}  // namespace omni::proxy
