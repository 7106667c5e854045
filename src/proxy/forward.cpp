// The generation routes: admission, then one of the three PD modes.
//
//   sequential (vLLM NixlConnector): prefill leg (max_tokens 1, kv_transfer_params asking for
//       a remote decode), retried on other prefill nodes; then the decode leg with the
//       prefill's kv_transfer_params, retried on other decode nodes before its first byte.
//   parallel (SGLang bootstrap): prefill and decode chosen together and sent concurrently with
//       bootstrap_host/port/room; whichever leg fails first cancels the other.
//   aggregated: the decode pool serves the untouched body.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "call.hpp"

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

Ticket make_ticket(Call& call, Role role, std::uint32_t attempt, std::vector<std::uint32_t> tried,
                   std::string group, std::optional<std::uint32_t> prefill_node = std::nullopt) {
  Ticket ticket;
  ticket.arrival = call.life.at(Stage::kReceived);
  ticket.prefill_node = prefill_node;
  ticket.id = call.g.new_id();
  ticket.role = role;
  ticket.prompt_tokens = call.info.prompt_tokens;
  ticket.max_tokens = call.info.max_tokens;
  ticket.tried = std::move(tried);
  ticket.attempt = attempt;
  ticket.group = std::move(group);
  // Only placements that prefill look prefixes up (a PD decode leg goes by load).
  if (role == Role::kPrefill || call.g.config.pd_mode == PdMode::kAggregated) {
    ticket.block_hashes = call.prompt.block_hashes;
  }
  return ticket;
}

// Tokenize once (prompt.hpp): the exact count replaces the byte estimate, the block hashes go
// with every ticket; with --send-token-ids a text prompt reaches the engines as those ids.
void read_prompt(Call& call) {
  // Without a tokenizer only a prompt of token ids can be hashed: skip the body otherwise.
  const bool ids_possible = call.api == Api::kCompletions && !call.info.text_prompt;
  if (!call.g.prompts->has_tokenizer() && !ids_possible) return;
  call.prompt = call.g.prompts->read_valid(call.request.body, call.api);
  if (call.prompt.tokens) call.info.prompt_tokens = *call.prompt.tokens;
  if (!call.g.config.send_token_ids || call.prompt.text_ids.empty()) return;
  std::string ids = "[";
  for (std::uint32_t id : call.prompt.text_ids) ids += std::to_string(id) + ',';
  ids.back() = ']';
  auto body = edit_object(call.request.body, {JsonEdit{"prompt", std::move(ids)}});
  if (body) call.request.body = std::move(*body);
}

// ---- sequential -----------------------------------------------------------------------------

struct PrefillDone {
  std::string kv_transfer_params;
  std::string group;
  std::uint32_t node = 0;  // where the KV waits for the decode
};

// The prefill legs with retries. nullopt: the client has been answered already.
Task<std::optional<PrefillDone>> run_prefill(Call& call) {
  auto prefill = prefill_body(call.request.body);
  if (!prefill) {
    co_await answer_error(call, 400, prefill.error().message, RequestOutcome::kClientError);
    co_return std::nullopt;
  }
  auto executor = co_await asio::this_coro::executor;
  http::Client& client = call.g.prefill_client(executor);
  std::vector<std::uint32_t> tried;
  call.life.mark(Stage::kWaitingPrefill, call.g.clock.now());
  for (std::uint32_t attempt = 0; attempt < call.g.config.retries.prefill_attempts; ++attempt) {
    if (attempt > 0) {
      call.prefill_retries++;
      call.g.metrics.prefill_retries->inc();
    }
    Ticket ticket = make_ticket(call, Role::kPrefill, attempt, tried, "");
    auto placement = co_await acquire(call.g, std::move(ticket), &call);
    if (!placement) {
      if (attempt > 0 && placement.error().code == ErrorCode::kUnavailable) break;
      co_await answer_no_node(call, placement.error());
      co_return std::nullopt;
    }
    call.life.mark(Stage::kPrefillScheduled, call.g.clock.now());
    call.prefill_node = placement->node;
    call.entry.prefill_node.store(placement->lease.node, std::memory_order_relaxed);
    auto node = call.g.directory.find(placement->node);
    if (!node) {
      call.g.dispatcher->release(placement->lease, Outcome::kNeutral);
      tried.push_back(placement->lease.node);
      continue;
    }
    call.life.mark(Stage::kPrefilling, call.g.clock.now());
    const http::Endpoint to{node->host, node->port};
    http::Request request = upstream_request(call, *prefill);
    http::Abort abort;
    auto send = client.send(to, std::move(request), &abort);  // named: see run_parallel
    auto answer = co_await unless_client_leaves(call, abort, std::move(send));
    if (!answer && call.client_gone) {
      call.g.metrics.cancelled_legs->inc();
      call.g.dispatcher->release(placement->lease, Outcome::kNeutral);
      co_await answer_error(call, kClientClosedRequest, answer.error().message,
                            RequestOutcome::kClientDisconnected);
      co_return std::nullopt;
    }
    if (!answer || answer->status >= 500) {
      call.error = answer ? to.to_string() + " answered " + std::to_string(answer->status)
                          : answer.error().to_string();
      call.g.metrics.prefill_errors->inc();
      call.g.dispatcher->release(placement->lease, Outcome::kFailure);
      tried.push_back(placement->lease.node);
      continue;
    }
    call.g.dispatcher->release(placement->lease, Outcome::kSuccess);
    auto params = answer->status == 200 ? kv_transfer_params_of(answer->body)
                                        : Result<std::optional<std::string>>(std::nullopt);
    if (!params || !*params) {
      // A refusal, or no usable kv_transfer_params: the prefill's answer is the answer.
      http::Response response;
      response.status = answer->status;
      response.headers.add(
          "Content-Type",
          std::string(answer->headers.get("Content-Type").value_or("application/json")));
      response.headers.add("X-Request-Id", call.request_id);
      response.body = std::move(answer->body);
      if (auto hidden = hide_transfer_params(response.body)) response.body = std::move(*hidden);
      std::string not_completion;
      if (response.status == 200 && !chat_whole_body(call, response.body, not_completion)) {
        co_await answer_error(call, 502, not_completion, RequestOutcome::kUpstreamError,
                              "BadGatewayError");
        co_return std::nullopt;
      }
      call.status = response.status;
      call.outcome =
          response.status >= 400 ? RequestOutcome::kClientError : RequestOutcome::kSuccess;
      call.bytes_out += response.body.size();
      call.life.output_event(call.g.clock.now(), 1);
      (void)co_await call.writer.send(std::move(response));
      co_return std::nullopt;
    }
    co_return PrefillDone{std::move(**params), placement->group, placement->lease.node};
  }
  co_await answer_error(call, 502, "every prefill attempt failed: " + call.error,
                        RequestOutcome::kUpstreamError, "BadGatewayError");
  co_return std::nullopt;
}

// Decode legs with retries before the first byte; `group` keeps them in the prefill's PD group.
// Each attempt sends its own copy of `body` (the client consumes what it sends).
Task<void> run_decode(Call& call, const std::string& body, std::string group,
                      std::optional<std::uint32_t> prefill_node = std::nullopt) {
  std::vector<std::uint32_t> tried;
  call.life.mark(Stage::kWaitingDecode, call.g.clock.now());
  for (std::uint32_t attempt = 0; attempt < call.g.config.retries.decode_attempts; ++attempt) {
    if (attempt > 0) {
      call.decode_retries++;
      call.g.metrics.decode_retries->inc();
    }
    Ticket ticket = make_ticket(call, Role::kDecode, attempt, tried, group, prefill_node);
    auto placement = co_await acquire(call.g, std::move(ticket), &call);
    if (!placement) {
      if (attempt > 0 && placement.error().code == ErrorCode::kUnavailable) break;
      co_await answer_no_node(call, placement.error());
      co_return;
    }
    call.life.mark(Stage::kDecodeScheduled, call.g.clock.now());
    call.decode_node = placement->node;
    call.entry.decode_node.store(placement->lease.node, std::memory_order_relaxed);
    std::string attempt_body = body;
    LeaseGuard lease(*call.g.dispatcher, placement->lease);
    call.decode_lease = &lease;
    const LegResult result = co_await decode_once(call, *placement, std::move(attempt_body));
    call.decode_lease = nullptr;
    lease.release(result.node_outcome);
    if (result.end == LegEnd::kDone) co_return;
    call.g.metrics.decode_errors->inc();
    tried.push_back(placement->lease.node);
  }
  co_await answer_error(call, 502, "every decode attempt failed: " + call.error,
                        RequestOutcome::kUpstreamError, "BadGatewayError");
}

Task<void> run_sequential(Call& call) {
  auto prefill = co_await run_prefill(call);
  if (!prefill) co_return;
  auto body = decode_body(call.request.body, prefill->kv_transfer_params);
  if (!body) {
    co_await answer_error(call, 400, body.error().message, RequestOutcome::kClientError);
    co_return;
  }
  co_await run_decode(call, *body, std::move(prefill->group), prefill->node);
}

// ---- parallel -------------------------------------------------------------------------------

enum class PrefillEnd { kPending, kOk, kFailed };

// The prefill half of a parallel pair. Returns only if it failed (which cancels the decode);
// on success it waits to be cancelled when the decode ends.
Task<int> prefill_leg(Call& call, const NodeEntry& node, std::string body, PrefillEnd& end) {
  co_await asio::this_coro::throw_if_cancelled(false);
  auto executor = co_await asio::this_coro::executor;
  http::Client& client = call.g.prefill_client(executor);
  call.life.mark(Stage::kPrefilling, call.g.clock.now());
  const http::Endpoint to{node.host, node.port};
  http::Request request = upstream_request(call, std::move(body));
  auto answer = co_await client.send(to, std::move(request));
  if (!answer || answer->status >= 500) {
    call.error = answer ? to.to_string() + " answered " + std::to_string(answer->status)
                        : answer.error().to_string();
    end = PrefillEnd::kFailed;
    co_return 0;
  }
  end = PrefillEnd::kOk;
  // A cancellation may have arrived while the send was in a phase that ignores it; waiting
  // now would never be cancelled again.
  if (co_await leg_cancelled()) co_return 1;
  asio::steady_timer forever(executor, asio::steady_timer::time_point::max());
  (void)co_await forever.async_wait(kAsTuple);
  co_return 1;
}

Task<LegResult> decode_leg(Call& call, const Placement& placement, std::string body, bool& ended) {
  LegResult result = co_await decode_once(call, placement, std::move(body));
  ended = true;
  co_return result;
}

Task<void> run_parallel(Call& call) {
  using namespace asio::experimental::awaitable_operators;
  std::vector<std::uint32_t> tried_prefill;
  std::vector<std::uint32_t> tried_decode;
  const std::uint32_t attempts =
      std::max(call.g.config.retries.prefill_attempts, call.g.config.retries.decode_attempts);
  for (std::uint32_t attempt = 0; attempt < attempts; ++attempt) {
    if (attempt > 0) call.prefill_retries++;
    call.life.mark(Stage::kWaitingPrefill, call.g.clock.now());
    Ticket prefill_ticket = make_ticket(call, Role::kPrefill, attempt, tried_prefill, "");
    auto prefill = co_await acquire(call.g, std::move(prefill_ticket), &call);
    if (!prefill) {
      if (attempt > 0 && prefill.error().code == ErrorCode::kUnavailable) break;
      co_await answer_no_node(call, prefill.error());
      co_return;
    }
    call.life.mark(Stage::kPrefillScheduled, call.g.clock.now());
    call.prefill_node = prefill->node;
    call.entry.prefill_node.store(prefill->lease.node, std::memory_order_relaxed);
    call.life.mark(Stage::kWaitingDecode, call.g.clock.now());
    Ticket decode_ticket = make_ticket(call, Role::kDecode, attempt, tried_decode, prefill->group,
                                       prefill->lease.node);
    auto decode = co_await acquire(call.g, std::move(decode_ticket), &call);
    if (!decode) {
      call.g.dispatcher->release(prefill->lease, Outcome::kNeutral);
      if (attempt > 0 && decode.error().code == ErrorCode::kUnavailable) break;
      co_await answer_no_node(call, decode.error());
      co_return;
    }
    LeaseGuard decode_lease(*call.g.dispatcher, decode->lease);
    call.life.mark(Stage::kDecodeScheduled, call.g.clock.now());
    call.decode_node = decode->node;
    call.entry.decode_node.store(decode->lease.node, std::memory_order_relaxed);
    auto node = call.g.directory.find(prefill->node);
    if (!node) {
      call.g.dispatcher->release(prefill->lease, Outcome::kNeutral);
      tried_prefill.push_back(prefill->lease.node);
      continue;
    }
    Bootstrap bootstrap{node->host, node->bootstrap_port, call.g.random64() >> 1};
    if (bootstrap.host.find(':') != std::string::npos) bootstrap.host = "[" + bootstrap.host + "]";
    auto body = bootstrap_body(call.request.body, bootstrap);
    if (!body) {
      call.g.dispatcher->release(prefill->lease, Outcome::kNeutral);
      co_await answer_error(call, 400, body.error().message, RequestOutcome::kClientError);
      co_return;
    }
    PrefillEnd prefill_end = PrefillEnd::kPending;
    bool decode_ended = false;
    LegResult decode_result;
    std::string prefill_copy = *body;
    call.decode_lease = &decode_lease;
    // Named first: GCC 12 mishandles temporaries inside a co_await expression.
    auto both = decode_leg(call, *decode, std::move(*body), decode_ended) ||
                prefill_leg(call, *node, std::move(prefill_copy), prefill_end);
    auto winner = co_await std::move(both);
    call.decode_lease = nullptr;
    if (winner.index() == 0) decode_result = std::get<0>(winner);
    const bool prefill_failed = prefill_end == PrefillEnd::kFailed;
    if (prefill_failed) {
      call.g.metrics.prefill_errors->inc();
      call.g.metrics.cancelled_legs->inc();
    } else if (prefill_end == PrefillEnd::kPending) {
      call.g.metrics.cancelled_legs->inc();  // the decode ended first: the prefill was cancelled
    }
    const Outcome prefill_outcome = prefill_failed                   ? Outcome::kFailure
                                    : prefill_end == PrefillEnd::kOk ? Outcome::kSuccess
                                                                     : Outcome::kNeutral;
    call.g.dispatcher->release(prefill->lease, prefill_outcome);
    if (winner.index() == 1) {
      // The prefill failed and the decode was cancelled; the decode node is not to blame.
      decode_lease.release(Outcome::kNeutral);
      if (call.writer.started()) co_return;  // the decode already sent the error event
      tried_prefill.push_back(prefill->lease.node);
      continue;
    }
    decode_lease.release(decode_result.node_outcome);
    if (decode_result.end == LegEnd::kDone) co_return;
    call.g.metrics.decode_errors->inc();
    tried_decode.push_back(decode->lease.node);
  }
  co_await answer_error(call, 502, "every prefill/decode pair failed: " + call.error,
                        RequestOutcome::kUpstreamError, "BadGatewayError");
}

// The client's body without the fields the proxy owns (client_pd_fields: strip), or false
// after a 400 (reject).
Task<bool> take_proxy_owned_fields(Call& call) {
  if (call.info.proxy_owned_fields == 0) co_return true;
  const std::string names = proxy_owned_field_names(call.info.proxy_owned_fields);
  if (call.g.config.client_pd_fields == ClientPdFields::kReject) {
    call.g.metrics.client_pd_fields->with({"rejected"}).value()->inc();
    co_await answer_error(call, 400, "these fields are set by the proxy, not the client: " + names,
                          RequestOutcome::kClientError, "BadRequestError", names);
    co_return false;
  }
  auto stripped = strip_proxy_owned(call.request.body);
  if (!stripped) {  // cannot happen for a body inspect_request accepted
    co_await answer_error(call, 400, stripped.error().message, RequestOutcome::kClientError);
    co_return false;
  }
  call.g.metrics.client_pd_fields->with({"stripped"}).value()->inc();
  call.request.body = std::move(*stripped);
  co_return true;
}

// A request without a max_tokens bound may generate up to the context (as vLLM): admission
// counts that, not vLLM's completions default.
void bound_max_tokens(Call& call) {
  if (!call.info.max_tokens_unbounded) return;
  const std::uint64_t context = call.g.max_model_len();
  const std::uint64_t prompt = call.info.prompt_tokens;
  call.info.max_tokens = context > prompt ? context - prompt : 1;
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

http::Request upstream_request(const Call& call, std::string body) {
  http::Request request;
  request.method = http::Method::kPost;
  request.target = engine_target(call);  // /v1/completions for a converted chat request
  request.headers.add("Content-Type", "application/json");
  request.headers.add("X-Request-Id", call.engine_request_id);
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
  if (status == 429) response.headers.add("Retry-After", "1");
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
    co_await answer_error(call, 429, "the proxy is at capacity; retry later",
                          RequestOutcome::kRejected, "RateLimitError");
  } else if (error.code == ErrorCode::kTimeout) {
    co_await answer_error(call, 503, "no engine was free within the queue timeout",
                          RequestOutcome::kTimeout, "ServiceUnavailableError");
  } else {
    co_await answer_error(call, 503, error.message, RequestOutcome::kUpstreamError,
                          "ServiceUnavailableError");
  }
}

Task<void> handle_generate(Gateway::Impl& g, http::Request& request, http::ResponseWriter& writer,
                           Api api) {
  // On the heap, not in the frame: Asio recycles coroutine frames of up to 1 KiB per thread,
  // and a larger frame costs an aligned allocation and a free on every request.
  const auto owned = std::make_unique<Call>(g, request, writer, api);
  Call& call = *owned;
  call.id = g.new_id();
  call.wall = std::chrono::system_clock::now();
  call.life.mark(Stage::kReceived, g.clock.now());
  // The client's id (checked by the head screen: visible ASCII, at most 256 bytes) is for
  // logs and echoed back; the engines get an id of ours, unique per call, so that two
  // clients sending one id can never share (or free) each other's KV on an engine.
  // The engines' id keeps the client's as a prefix so that engine logs can still be searched
  // by it (vLLM appends random characters to its internal ids the same way).
  auto given_id = request.headers.get("X-Request-Id");
  if (given_id && !given_id->empty()) {
    call.request_id = std::string(*given_id);
    call.engine_request_id = call.request_id + "-" + g.new_request_id().substr(0, 16);
  } else {
    call.request_id = g.new_request_id();
    call.engine_request_id = call.request_id;
  }
  call.entry.request_id = call.request_id;
  call.entry.route = std::string(request.path());
  call.entry.life = &call.life;
  call.entry.received = *call.life.at(Stage::kReceived);
  g.inflight.add(call.id, &call.entry);

  BadRequest bad;
  ChatBridge chat;  // --chat-to-completions; the legs reach it through call.entry.chat
  // Authentication happened on the request head (auth.hpp), before the body was read.
  if (auto info = inspect_request(request.body, api, &bad); !info) {
    co_await answer_error(call, 400, bad.message, RequestOutcome::kClientError, "BadRequestError",
                          bad.param);
  } else if (call.info = *info; co_await take_proxy_owned_fields(call)) {
    if (!chat.begin(call)) read_prompt(call);  // a converted chat request has its ids already
    bound_max_tokens(call);
    // The prefix lookup itself happens in the scheduler, with the placement.
    call.life.mark(Stage::kTokenized, g.clock.now());
    call.life.mark(Stage::kPrefixMatched, g.clock.now());
    switch (g.config.pd_mode) {
      case PdMode::kSequential: co_await run_sequential(call); break;
      case PdMode::kParallel: co_await run_parallel(call); break;
      case PdMode::kAggregated: {
        std::string any_group;
        co_await run_decode(call, request.body, std::move(any_group));
        break;
      }
    }
  }
  g.inflight.remove(call.id);
  finish_call(call);
}

}  // namespace omni::proxy
