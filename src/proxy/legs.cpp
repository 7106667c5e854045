// The pieces every PD mode is built from (call.hpp): the scheduler's decision, the next leg,
// deadlines, the engine's verdict, and the answers to the client.
#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cctype>

#include "call.hpp"
#include "omni/log/log.hpp"

namespace omni::proxy {
namespace {

namespace asio = boost::asio;
constexpr auto kAsTuple = asio::as_tuple(asio::use_awaitable);

struct DecisionWait {
  explicit DecisionWait(asio::any_io_executor ex) : executor(std::move(ex)) {}
  asio::any_io_executor executor;
  // Only a ticket that has to wait needs one: most are decided inside submit().
  std::optional<asio::steady_timer> timer;
  // The I/O thread (one io_context each) that waits: a decision made on it needs no post.
  std::thread::id thread = std::this_thread::get_id();
  std::optional<Result<Placement>> result;
  bool abandoned = false;
  bool client_gone = false;

  // On the waiting thread only.
  void take(Gateway::Impl& g, Result<Placement> decision) {
    if (abandoned) {
      if (decision) g.dispatcher->release(decision->lease, Outcome::kNeutral);
      return;
    }
    result = std::move(decision);
    if (timer) timer->cancel();
  }
};

Ticket make_ticket(Call& call, const LegRequest& leg) {
  Ticket ticket;
  ticket.id = call.g.new_id();
  ticket.role = leg.role;
  ticket.prompt_tokens = call.info.prompt_tokens;
  ticket.max_tokens = call.info.max_tokens;
  ticket.tried = leg.tried;
  ticket.attempt = leg.attempt;
  ticket.group = leg.group;
  ticket.arrival = call.life.at(Stage::kReceived);
  ticket.prefill_node = leg.prefill_node;
  ticket.band = call.traffic.band;
  ticket.tenant = call.traffic.tenant;
  ticket.tenant_weight = call.traffic.weight;
  ticket.tenant_node_share = call.traffic.node_share;
  // Only placements that prefill look prefixes up (a PD decode leg goes by load).
  if (leg.role == Role::kPrefill || call.g.config.pd_mode == PdMode::kAggregated) {
    ticket.block_hashes = call.prompt.block_hashes;
  }
  return ticket;
}

bool contains_nocase(std::string_view text, std::string_view word) {
  return std::search(text.begin(), text.end(), word.begin(), word.end(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) ==
                  std::tolower(static_cast<unsigned char>(b));
         }) != text.end();
}

}  // namespace

Task<Result<Placement>> acquire(Gateway::Impl& g, Ticket ticket, Call* client) {
  auto executor = co_await asio::this_coro::executor;
  auto wait = std::make_shared<DecisionWait>(executor);
  const std::uint64_t id = ticket.id;
  // Usually the decision is made inside submit(), on this thread (the dispatcher combines):
  // then it is taken at once, with no post and no wake-up. Otherwise the master that made it
  // posts it here.
  Status submitted =
      g.dispatcher->submit(std::move(ticket), [wait, &g](Result<Placement> decision) {
        if (std::this_thread::get_id() == wait->thread) {
          wait->take(g, std::move(decision));
          return;
        }
        asio::post(wait->executor, [wait, &g, decision = std::move(decision)]() mutable {
          wait->take(g, std::move(decision));
        });
      });
  if (!submitted) co_return std::move(submitted).error();
  if (wait->result) co_return std::move(*wait->result);
  // The ticket waits in the proxy queue: a client that leaves meanwhile cancels it at once.
  wait->timer.emplace(executor);
  std::optional<detail::Unwatch> unwatch;
  if (client && client->writer.watch_close([wait, client] {
        client->client_gone = true;
        wait->client_gone = true;
        wait->timer->cancel();
      })) {
    unwatch.emplace(client->writer);
  }
  // The scheduler answers within the queue timeout; the margin covers its tick.
  wait->timer->expires_after(g.config.timeouts.queue + std::chrono::seconds(5));
  while (!wait->result) {
    auto [ec] = co_await wait->timer->async_wait(kAsTuple);
    if (wait->client_gone && !wait->result) {
      wait->abandoned = true;
      g.dispatcher->cancel(id);
      co_return client_gone_error();
    }
    if (!ec && !wait->result) {
      wait->abandoned = true;
      g.dispatcher->cancel(id);
      co_return make_error(ErrorCode::kTimeout, "the scheduler did not answer in time");
    }
  }
  co_return std::move(*wait->result);
}

namespace {
// At debug level, which request a placement's ticket belongs to (the placement's own line,
// from the scheduler, has the policy's inputs but knows only the ticket).
void say_leg(const Call& call, bool prefill, const Placement& placement) {
  static const std::shared_ptr<spdlog::logger> logger = log::get("proxy");
  if (!logger->should_log(spdlog::level::debug)) return;
  logger->debug("request {}: {} leg on {} (ticket {})", call.request_id,
                prefill ? "prefill" : "decode", placement.node, placement.lease.ticket);
}
}  // namespace

Task<Result<Leg>> next_leg(Call& call, const LegRequest& wanted) {
  LegRequest request = wanted;
  const bool prefill = request.role == Role::kPrefill;
  for (;;) {
    call.life.mark(prefill ? Stage::kWaitingPrefill : Stage::kWaitingDecode, call.g.clock.now());
    Ticket ticket = make_ticket(call, request);
    auto placement = co_await acquire(call.g, std::move(ticket), &call);
    if (!placement) co_return std::move(placement).error();
    for (std::size_t cause = 0; cause < kWaitCauses; ++cause) {
      call.waited[cause] += placement->waited[cause];
    }
    LeaseGuard lease(*call.g.dispatcher, placement->lease);
    auto node = call.g.directory.find(placement->node);
    if (!node) {  // removed by a reload meanwhile: try another
      request.tried.push_back(placement->lease.node);
      continue;
    }
    call.life.mark(prefill ? Stage::kPrefillScheduled : Stage::kDecodeScheduled,
                   call.g.clock.now());
    say_leg(call, prefill, *placement);
    (prefill ? call.prefill_node : call.decode_node) = placement->node;
    (prefill ? call.entry.prefill_node : call.entry.decode_node)
        .store(placement->lease.node, std::memory_order_relaxed);
    co_return Leg{std::move(*placement), std::move(*node), std::move(lease)};
  }
}

void arm_leg_deadline(const Call& call, LegDeadline& deadline, Duration timeout,
                      std::string reason) {
  if (call.deadline != std::chrono::steady_clock::time_point::max()) {
    const auto left =
        std::chrono::duration_cast<Duration>(call.deadline - std::chrono::steady_clock::now());
    if (timeout <= Duration::zero() || left < timeout) {
      deadline.expires_after(std::max(left, Duration{1}),
                             "the request deadline (timeouts.request) passed");
      return;
    }
  }
  deadline.expires_after(timeout, std::move(reason));
}

std::string_view node_error_kind_name(NodeErrorKind kind) noexcept {
  switch (kind) {
    case NodeErrorKind::kConnect: return "connect";
    case NodeErrorKind::kTls: return "tls";
    case NodeErrorKind::kTimeout: return "timeout";
    case NodeErrorKind::kHttp5xx: return "http_5xx";
    case NodeErrorKind::kBadResponse: return "bad_response";
    case NodeErrorKind::kStreamBroken: return "stream_broken";
    case NodeErrorKind::kKvTransfer: return "kv_transfer";
  }
  return "connect";
}

std::optional<NodeErrorKind> node_error_of(const Error& error) noexcept {
  switch (error.code) {
    case ErrorCode::kCancelled: return std::nullopt;
    case ErrorCode::kTimeout: return NodeErrorKind::kTimeout;
    case ErrorCode::kProtocol:
    case ErrorCode::kTooLarge: return NodeErrorKind::kBadResponse;
    default: break;
  }
  // The HTTP client names the stage that failed ("...: TLS handshake: ...", "tlsv13 alert").
  const std::string_view message = error.message;
  if (message.find("TLS") != std::string_view::npos ||
      message.find("SSL") != std::string_view::npos) {
    return NodeErrorKind::kTls;
  }
  return NodeErrorKind::kConnect;
}

void count_node_error(const Call& call, const NodeEntry& node, NodeErrorKind kind) {
  metrics::CounterFamily* family = call.g.metrics.node_errors;
  if (family == nullptr) return;
  // A failure is rare next to a request: the family's lookup (a lock) is affordable here.
  if (auto counter =
          family->with({role_name(node.spec.role), node.spec.name, node_error_kind_name(kind)})) {
    (*counter)->inc();
  }
}

void count_engine_failure(const Call& call, const NodeEntry& node,
                          const Result<http::Response>& answer) {
  if (answer) {
    count_node_error(call, node, NodeErrorKind::kHttp5xx);
  } else if (auto kind = node_error_of(answer.error())) {
    count_node_error(call, node, *kind);
  }
}

bool engine_failed(int status, std::string_view body) {
  if (status == 502 || status == 503 || status == 504) return true;
  if (status != 500) return false;
  return contains_nocase(body, "unhealthy") || contains_nocase(body, "enginedead") ||
         contains_nocase(body, "engine is dead") || contains_nocase(body, "engine core");
}

bool kv_unusable(int status, std::string_view body) {
  if (status == 500) return true;
  if (status < 400 || status >= 500) return false;
  return contains_nocase(body, "kv_transfer") || contains_nocase(body, "kv transfer") ||
         contains_nocase(body, "remote kv") || contains_nocase(body, "no longer holds");
}

namespace {

// What an engine's logs and traces need from the client's request: the W3C trace context,
// passed through so that one trace spans client, proxy and engine, and the client's address
// appended to X-Forwarded-For as nginx's $proxy_add_x_forwarded_for does.
void add_forwarded_headers(const http::Request& client, http::Headers& out) {
  for (const std::string_view name : {"traceparent", "tracestate"}) {
    if (auto value = client.headers.get(name)) out.add(std::string(name), std::string(*value));
  }
  const std::string_view address = peer_address(client.remote);
  if (address.empty()) return;
  std::string chain(client.headers.get("X-Forwarded-For").value_or(""));
  if (!chain.empty()) chain += ", ";
  chain += address;
  out.add("X-Forwarded-For", std::move(chain));
}

}  // namespace

http::Request upstream_request(const Call& call, std::string body) {
  http::Request request;
  request.method = http::Method::kPost;
  request.target = engine_target(call);  // /v1/completions for a converted chat request
  request.headers.add("Content-Type", "application/json");
  request.headers.add("X-Request-Id", call.engine_request_id);
  add_forwarded_headers(call.request, request.headers);
  request.body = std::move(body);
  return request;
}

Task<void> answer_error(Call& call, int status, std::string message, RequestOutcome outcome,
                        std::string_view type, std::string_view param) {
  call.outcome = call.client_gone ? RequestOutcome::kClientDisconnected : outcome;
  call.status = call.client_gone ? kClientClosedRequest : status;
  if (call.error.empty()) call.error = message;
  if (call.writer.started() || call.client_gone) co_return;
  http::Response response = http::error_response(status, message, type, param);
  response.headers.add("X-Request-Id", call.request_id);
  if (status == 429) response.headers.add("Retry-After", std::to_string(call.retry_after_s));
  call.bytes_out += response.body.size();
  (void)co_await call.writer.send(std::move(response));
}

Task<void> answer_no_node(Call& call, const Error& error) {
  call.error = error.to_string();
  if (call.client_gone) {
    co_await answer_error(call, kClientClosedRequest, error.message,
                          RequestOutcome::kClientDisconnected);
    co_return;
  }
  if (error.code == ErrorCode::kResourceExhausted) {
    co_await answer_error(call, 429,
                          "the proxy is at capacity (" + error.message + "); retry later",
                          RequestOutcome::kRejected, "RateLimitError");
  } else if (error.code == ErrorCode::kTimeout) {
    // The scheduler's own words: every node busy, or none of the role usable (down, ejected).
    co_await answer_error(call, 503, error.message, RequestOutcome::kTimeout,
                          "ServiceUnavailableError");
  } else {
    co_await answer_error(call, 503, error.message, RequestOutcome::kUpstreamError,
                          "ServiceUnavailableError");
  }
}

Task<void> relay_refusal(Call& call, int status, const http::Headers& headers, std::string body) {
  if (call.writer.started() || call.client_gone) {
    // A continuation refused mid-stream: the stream ends with an error event (end_open_stream).
    call.error = "the engine answered " + std::to_string(status) + ": " + body.substr(0, 512);
    co_return;
  }
  http::Response response;
  response.status = status;
  response.headers.add("Content-Type",
                       std::string(headers.get("Content-Type").value_or("application/json")));
  response.headers.add("X-Request-Id", call.request_id);
  response.body = std::move(body);
  call.status = status;
  call.outcome = status >= 500 ? RequestOutcome::kUpstreamError : RequestOutcome::kClientError;
  if (call.error.empty()) call.error = "the engine answered " + std::to_string(status);
  call.bytes_out += response.body.size();
  (void)co_await call.writer.send(std::move(response));
}

}  // namespace omni::proxy
