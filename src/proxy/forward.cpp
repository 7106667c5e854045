// The generation routes: the body read once, then one of the three PD modes, each built from
// the same legs (call.hpp).
//
//   sequential (vLLM NixlConnector): prefill leg (max_tokens 1, kv_transfer_params asking for
//       a remote decode), retried on other prefill nodes; then the decode leg with the
//       prefill's kv_transfer_params, retried on other decode nodes before its first byte.
//   parallel (SGLang bootstrap): prefill and decode chosen together and sent concurrently with
//       bootstrap_host/port/room; whichever leg fails first cancels the other; a retry takes a
//       fresh pair (neither failed node, the decode in the new prefill's group).
//   aggregated: the decode pool serves the untouched body.
//
// An engine's answer to a bad request (4xx, 501, a 500 about the request) is relayed untouched
// and says nothing against the node; only connection failures, deadlines and 502/503/504 (or a
// 500 saying the engine is unhealthy) count and are retried elsewhere.
#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "call.hpp"
#include "json_scan.hpp"

namespace omni::proxy {
namespace {

namespace asio = boost::asio;
constexpr auto kAsTuple = asio::as_tuple(asio::use_awaitable);

std::string seconds_text(Duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + " ms";
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

// The prefill's own answer goes to the client: a refusal, or a prefill with no usable
// kv_transfer_params.
Task<void> prefill_answers(Call& call, http::Response answer) {
  if (call.writer.started()) {  // a continuation's prefill: the stream ends with an error event
    call.error = "the continuation's prefill answered without KV for a decode";
    co_return;
  }
  if (answer.status != 200) {
    co_await relay_refusal(call, answer.status, answer.headers, std::move(answer.body));
    co_return;
  }
  http::Response response;
  response.status = 200;
  response.headers.add(
      "Content-Type", std::string(answer.headers.get("Content-Type").value_or("application/json")));
  response.headers.add("X-Request-Id", call.request_id);
  if (call.explain) response.headers.add("X-Omni-Decision", decision_receipt(call));
  response.body = std::move(answer.body);
  if (auto hidden = hide_transfer_params(response.body)) response.body = std::move(*hidden);
  std::string not_completion;
  if (!chat_whole_body(call, response.body, not_completion)) {
    co_await answer_error(call, 502, not_completion, RequestOutcome::kUpstreamError,
                          "BadGatewayError");
    co_return;
  }
  call.status = 200;
  call.bytes_out += response.body.size();
  call.life.output_event(call.g.clock.now(), 1);
  (void)co_await call.writer.send(std::move(response));
}

// One prefill attempt on `leg`, under the prefill deadline. Ok(answer) when the engine
// answered (any status); an error when the call failed (connection, deadline, client gone).
Task<Result<http::Response>> prefill_once(Call& call, Leg& leg, std::string body) {
  auto executor = co_await asio::this_coro::executor;
  call.life.mark(Stage::kPrefilling, call.g.clock.now());
  http::Abort abort;
  LegDeadline deadline(executor, abort);
  arm_leg_deadline(
      call, deadline, call.g.config.timeouts.prefill,
      "the prefill leg took longer than " + seconds_text(call.g.config.timeouts.prefill));
  auto send = call.engine(executor, Role::kPrefill)
                  .send(leg.node, upstream_request(call, std::move(body)), &abort);
  auto guarded = within(deadline, std::move(send));  // named: GCC 12 and temporaries
  co_return co_await unless_client_leaves(call, abort, std::move(guarded));
}

// The prefill legs with retries. nullopt: the client has been answered already.
Task<std::optional<PrefillDone>> run_prefill(Call& call) {
  const std::string body = prefill_body(call.members);
  LegRequest request;
  request.role = Role::kPrefill;
  for (; request.attempt < call.g.config.retries.prefill_attempts; ++request.attempt) {
    if (request.attempt > 0) {
      call.prefill_retries++;
      call.g.metrics.prefill_retries->inc();
    }
    auto leg = co_await next_leg(call, request);
    if (!leg) {
      if (request.attempt > 0 && leg.error().code == ErrorCode::kUnavailable) break;
      co_await answer_no_node(call, leg.error());
      co_return std::nullopt;
    }
    auto answer = co_await prefill_once(call, *leg, body);
    if (!answer && call.client_gone) {
      call.g.metrics.cancelled_legs->inc();
      co_await answer_error(call, kClientClosedRequest, answer.error().message,
                            RequestOutcome::kClientDisconnected);
      co_return std::nullopt;
    }
    if (!answer || engine_failed(answer->status, answer->body)) {
      call.error = answer ? leg->node.spec.name + " answered " + std::to_string(answer->status)
                          : leg->node.spec.name + ": " + answer.error().to_string();
      count_engine_failure(call, leg->node, answer);
      call.g.metrics.prefill_errors->inc();
      leg->lease.release(Outcome::kFailure);
      request.tried.push_back(leg->id());
      continue;
    }
    // An answer, even a refusal of the request, says the node works.
    leg->lease.release(Outcome::kSuccess);
    auto params = answer->status == 200 ? kv_transfer_params_of(answer->body)
                                        : Result<std::optional<std::string>>(std::nullopt);
    if (!params || !*params) {
      co_await prefill_answers(call, std::move(*answer));
      co_return std::nullopt;
    }
    co_return PrefillDone{std::move(**params), leg->placement.group, leg->id()};
  }
  co_await answer_error(call, 502, "every prefill attempt failed: " + call.error,
                        RequestOutcome::kUpstreamError, "BadGatewayError");
  co_return std::nullopt;
}

// Decode legs with retries before the first byte; a PD decode stays in its prefill's group.
// Each attempt sends its own copy of `body` (the client consumes what it sends). True when the
// decode could not load the prefill's KV and the caller is to prefill again (call.may_redo_kv);
// otherwise the client has its answer.
// (Arguments by reference, not temporaries: GCC 12 mishandles temporaries in co_await.)
Task<bool> run_decode(Call& call, const std::string& body, const LegRequest& wanted) {
  LegRequest request = wanted;
  request.role = Role::kDecode;
  for (; request.attempt < call.g.config.retries.decode_attempts; ++request.attempt) {
    if (request.attempt > 0) {
      call.decode_retries++;
      call.g.metrics.decode_retries->inc();
    }
    auto leg = co_await next_leg(call, request);
    if (!leg) {
      if (request.attempt > 0 && leg.error().code == ErrorCode::kUnavailable) break;
      co_await answer_no_node(call, leg.error());
      co_return false;
    }
    call.decode_lease = &leg->lease;
    const LegResult result = co_await decode_once(call, *leg, body);
    call.decode_lease = nullptr;
    leg->lease.release(result.node_outcome);
    if (result.end == LegEnd::kDone) co_return false;
    if (result.end == LegEnd::kKvLost) co_return true;
    call.g.metrics.decode_errors->inc();
    request.tried.push_back(leg->id());
  }
  co_await answer_error(call, 502, "every decode attempt failed: " + call.error,
                        RequestOutcome::kUpstreamError, "BadGatewayError");
  co_return false;
}

// A pair redone because the decode could not load its prefill's KV (access log and metric).
void count_kv_redo(Call& call) {
  ++call.kv_redos;
  call.g.metrics.kv_redos->inc();
}

// Prefill, then decode with the prefill's KV. A decode that cannot load that KV (the hold
// expired while the decode pool was slow or down, the transfer failed) is the proxy's problem,
// not the client's: the pair is redone (retries.kv_redo_attempts), as a retry.
Task<void> run_sequential(Call& call) {
  for (std::uint32_t redo = 0;; ++redo) {
    call.may_redo_kv = redo < call.g.config.retries.kv_redo_attempts;
    auto prefill = co_await run_prefill(call);
    if (!prefill) co_return;
    const std::string body = decode_body(call.members, prefill->kv_transfer_params);
    LegRequest decode;
    decode.role = Role::kDecode;
    decode.group = std::move(prefill->group);
    decode.prefill_node = prefill->node;
    decode.tried = call.migration.broken_decodes;
    call.decode_loads_remote_kv = true;
    const bool kv_lost = co_await run_decode(call, body, decode);
    call.decode_loads_remote_kv = false;
    if (!kv_lost) co_return;
    count_kv_redo(call);
    // The engines see the redo as a request of its own (vLLM keys its KV holds by request id).
    call.engine_request_id += "-redo" + std::to_string(call.kv_redos);
  }
}

// ---- parallel -------------------------------------------------------------------------------

// kFailedLate: the prefill call failed after the decode had begun streaming to the client (its
// KV had arrived): the prefill node is blamed, the decode goes on.
enum class PrefillEnd { kPending, kOk, kFailed, kFailedLate, kRefused };

// The prefill half of a parallel pair. Returns only if it failed or refused the request (which
// cancels the decode: it would wait for KV that never comes); on success its lease is released
// at once (the prefill's work is done: the node's speed is learned), and it waits to be
// cancelled when the decode ends.
Task<int> prefill_leg(Call& call, Leg& leg, std::string body, PrefillEnd& end,
                      std::optional<http::Response>& refusal, std::uint64_t events_before) {
  co_await asio::this_coro::throw_if_cancelled(false);
  auto answer = co_await prefill_once(call, leg, std::move(body));
  // Cancelled because the decode ended first: not the prefill node's failure, and the call's
  // error stays the decode's.
  if (!answer && co_await leg_cancelled()) co_return 0;
  const bool failed = !answer || engine_failed(answer->status, answer->body);
  if (failed) count_engine_failure(call, leg.node, answer);
  const bool decode_streams = call.events > events_before;  // this pair's decode, not an earlier
  if (failed && !decode_streams) {
    call.error = answer ? leg.node.spec.name + " answered " + std::to_string(answer->status)
                        : leg.node.spec.name + ": " + answer.error().to_string();
    end = PrefillEnd::kFailed;
    co_return 0;
  }
  if (!failed && answer->status != 200) {
    end = PrefillEnd::kRefused;
    refusal = std::move(*answer);
    co_return 0;
  }
  end = failed ? PrefillEnd::kFailedLate : PrefillEnd::kOk;
  leg.lease.release(failed ? Outcome::kFailure : Outcome::kSuccess);
  // A cancellation may have arrived while the send was in a phase that ignores it; waiting
  // now would never be cancelled again.
  if (co_await leg_cancelled()) co_return 1;
  auto executor = co_await asio::this_coro::executor;
  asio::steady_timer forever(executor, asio::steady_timer::time_point::max());
  (void)co_await forever.async_wait(kAsTuple);
  co_return 1;
}

Task<LegResult> decode_leg(Call& call, Leg& leg, std::string body) {
  co_return co_await decode_once(call, leg, std::move(body));
}

Bootstrap bootstrap_of(Call& call, const NodeEntry& prefill) {
  Bootstrap bootstrap{prefill.host, prefill.bootstrap_port, call.g.random64() >> 1};
  if (bootstrap.host.find(':') != std::string::npos) bootstrap.host = "[" + bootstrap.host + "]";
  return bootstrap;
}

Task<void> run_parallel(Call& call) {
  using namespace asio::experimental::awaitable_operators;
  LegRequest prefill_request;
  prefill_request.role = Role::kPrefill;
  std::vector<std::uint32_t> tried_decode = call.migration.broken_decodes;
  const std::uint32_t attempts =
      std::max(call.g.config.retries.prefill_attempts, call.g.config.retries.decode_attempts);
  for (std::uint32_t attempt = 0; attempt < attempts; ++attempt) {
    if (attempt > 0) call.prefill_retries++;
    prefill_request.attempt = attempt;
    auto prefill = co_await next_leg(call, prefill_request);
    if (!prefill) {
      if (attempt > 0 && prefill.error().code == ErrorCode::kUnavailable) break;
      co_await answer_no_node(call, prefill.error());
      co_return;
    }
    // A fresh pair: never the failed decode, and in the new prefill's group.
    LegRequest decode_request;
    decode_request.role = Role::kDecode;
    decode_request.attempt = attempt;
    decode_request.tried = tried_decode;
    decode_request.group = prefill->placement.group;
    decode_request.prefill_node = prefill->id();
    auto decode = co_await next_leg(call, decode_request);
    if (!decode) {
      if (attempt > 0 && decode.error().code == ErrorCode::kUnavailable) break;
      co_await answer_no_node(call, decode.error());
      co_return;
    }
    const std::string body = bootstrap_body(call.members, bootstrap_of(call, prefill->node));
    PrefillEnd prefill_end = PrefillEnd::kPending;
    std::optional<http::Response> refusal;
    call.decode_lease = &decode->lease;
    // A decode whose KV never arrives (the bootstrap failed or timed out: vLLM and omni-sim
    // answer 500) fails the pair, not the request: it is retried as a fresh pair.
    call.decode_loads_remote_kv = true;
    call.may_redo_kv = attempt + 1 < attempts;
    // Named first: GCC 12 mishandles temporaries inside a co_await expression.
    const std::uint64_t events_before = call.events;
    auto both = decode_leg(call, *decode, body) ||
                prefill_leg(call, *prefill, body, prefill_end, refusal, events_before);
    auto winner = co_await std::move(both);
    call.decode_lease = nullptr;
    call.decode_loads_remote_kv = false;
    if (prefill_end == PrefillEnd::kFailedLate) call.g.metrics.prefill_errors->inc();
    if (prefill_end == PrefillEnd::kFailed) {
      call.g.metrics.prefill_errors->inc();
      call.g.metrics.cancelled_legs->inc();
      prefill->lease.release(Outcome::kFailure);
    } else if (prefill_end == PrefillEnd::kPending) {
      call.g.metrics.cancelled_legs->inc();  // the decode ended first: the prefill was cancelled
    }
    if (winner.index() == 1 && prefill_end == PrefillEnd::kRefused) {
      // The prefill refused the request itself: its answer is the client's; nobody failed.
      prefill->lease.release(Outcome::kSuccess);
      decode->lease.release(Outcome::kNeutral);
      call.g.metrics.cancelled_legs->inc();
      if (!call.writer.started() && !call.client_gone) {
        co_await relay_refusal(call, refusal->status, refusal->headers, std::move(refusal->body));
      }
      co_return;
    }
    if (winner.index() == 1) {
      // The prefill failed and the decode was cancelled; the decode node is not to blame.
      decode->lease.release(Outcome::kNeutral);
      // The decode already answered (a continuation's stream is open but has its answer only
      // once this pair's decode sent events).
      const bool answered =
          call.writer.started() && (!call.stream_open || call.events > events_before);
      if (answered || call.client_gone) co_return;
      prefill_request.tried.push_back(prefill->id());
      continue;
    }
    const LegResult decode_result = std::get<0>(winner);
    decode->lease.release(decode_result.node_outcome);
    if (decode_result.end == LegEnd::kDone) co_return;
    if (decode_result.end == LegEnd::kKvLost) {
      count_kv_redo(call);
    } else {
      call.g.metrics.decode_errors->inc();
    }
    tried_decode.push_back(decode->id());
  }
  co_await answer_error(call, 502, "every prefill/decode pair failed: " + call.error,
                        RequestOutcome::kUpstreamError, "BadGatewayError");
}

// ---- the request ----------------------------------------------------------------------------

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

// The client's id (checked by the head screen: visible ASCII, at most 256 bytes) is for logs
// and echoed back; the engines get an id of ours, unique per call, so that two clients sending
// one id can never share (or free) each other's KV on an engine. It keeps the client's id as a
// prefix so that engine logs can still be searched by it (vLLM suffixes its own ids the same way).
void name_the_call(Call& call) {
  auto given_id = call.request.headers.get("X-Request-Id");
  if (given_id && !given_id->empty()) {
    call.request_id = std::string(*given_id);
    call.engine_request_id = call.request_id + "-" + call.g.new_request_id().substr(0, 16);
  } else {
    call.request_id = call.g.new_request_id();
    call.engine_request_id = call.request_id;
  }
}

// A streamed request that may be continued elsewhere if its decode breaks mid-stream gets a
// splice (migration.hpp); the engines' body as it is now is what every continuation extends.
void arm_migration(Call& call) {
  if (!call.info.stream || call.g.config.migration_max_attempts == 0) return;
  call.migration.blocker = migration_blocker(call.members, engine_api(call));
  if (!call.migration.blocker.empty()) return;
  call.migration.splice.emplace(call.g.config.limits.migration_text_bytes);
  // A token-id prompt continues on the generated ids, exactly: the engines are asked for them
  // (vLLM's return_token_ids), and they are hidden from a client that did not ask.
  if (engine_api(call) != Api::kCompletions || !prompt_is_token_ids(call.members)) return;
  bool client_asked = false;
  for (const JsonMember& m : call.members) {
    client_asked = client_asked || (m.key == "return_token_ids" && m.value == "true");
  }
  if (!client_asked) {
    call.request.body = edit_members(call.members, {JsonEdit{"return_token_ids", "true"}});
    call.members = detail::scan_valid_object(call.request.body);
  }
  call.migration.splice->track_token_ids(!client_asked);
}

// The continuation of a stream that broke: the original request with everything sent so far
// (text, tokens) as its prompt's end, under a request id of its own. False: it cannot be built
// (a token-id prompt whose engine sent no token ids, and no tokenizer); the stream then ends
// with an error event.
bool prepare_continuation(Call& call) {
  MigrationState& m = call.migration;
  if (m.count == 0) {
    m.origin_body = call.request.body;
    m.origin_members = detail::scan_valid_object(m.origin_body);
    m.origin_info = call.info;
    m.origin_engine_id = call.engine_request_id;
  }
  const StreamSplice& splice = *m.splice;
  SentSoFar sent;
  sent.text = splice.text();
  sent.tokens = splice.tokens();
  if (auto ids = splice.token_ids()) {  // the engine's own ids: exact
    sent.tokens = ids->size();
    sent.ids = std::move(*ids);
  } else if (auto tokenizer = call.g.prompts->tokenizer()) {
    // The proxy's own count of the sent text stands for the engine's when its events carried
    // none, and a token-id prompt continues on the sent text's ids.
    if (auto encoded = tokenizer->encode(sent.text)) {
      if (!splice.usage_counted()) sent.tokens = encoded->size();
      sent.ids = std::move(*encoded);
    }
  }
  auto body = continuation_body(m.origin_members, engine_api(call), sent);
  if (!body) {
    call.error += "; not continued elsewhere: " + body.error().message;
    return false;
  }
  ++m.count;
  m.splice->continue_elsewhere(sent.tokens, call.prompt.tokens);
  call.request.body = std::move(*body);
  call.members = detail::scan_valid_object(call.request.body);
  call.info.prompt_tokens = m.origin_info.prompt_tokens + sent.tokens;
  call.info.max_tokens =
      m.origin_info.max_tokens > sent.tokens ? m.origin_info.max_tokens - sent.tokens : 1;
  call.engine_request_id = m.origin_engine_id + "-m" + std::to_string(m.count);
  return true;
}

Task<void> run_mode(Call& call) {
  switch (call.g.config.pd_mode) {
    case PdMode::kSequential: co_await run_sequential(call); break;
    case PdMode::kParallel: co_await run_parallel(call); break;
    case PdMode::kAggregated: {
      LegRequest whole;
      whole.tried = call.migration.broken_decodes;
      (void)co_await run_decode(call, call.request.body, whole);
      break;
    }
  }
}

// Whether a decode node other than those that broke this request's stream is configured: a
// continuation without one would end the same way after a useless prefill.
bool another_decode_exists(const Call& call) {
  const std::vector<std::string>& broken = call.migration.broken_names;
  for (const NodeEntry& node : call.g.directory.all()) {
    if (node.spec.role != Role::kDecode) continue;
    if (std::find(broken.begin(), broken.end(), node.spec.name) == broken.end()) return true;
  }
  return false;
}

// Runs the request, then its continuations while its stream breaks mid-way and attempts are
// left; each continuation is counted by what broke the stream before it and how it ended. A
// stream that could not be continued ends with an error event that says what broke it first.
Task<void> run_with_migration(Call& call) {
  co_await run_mode(call);
  while (call.migration.pending) {
    call.migration.pending = false;
    const auto cause = static_cast<std::size_t>(call.migration.cause);
    const std::string broke = call.error;
    if (!another_decode_exists(call)) {
      call.error = broke + "; not continued elsewhere: no other decode node";
      call.g.metrics.migrations[cause][1]->inc();
      break;
    }
    if (!prepare_continuation(call)) {
      call.g.metrics.migrations[cause][1]->inc();
      break;
    }
    co_await run_mode(call);
    const bool completed =
        !call.migration.pending && !call.stream_open && call.outcome == RequestOutcome::kSuccess;
    if (call.stream_open && !call.migration.pending) {
      call.error = broke + "; the continuation failed: " + call.error;
    }
    call.g.metrics.migrations[cause][completed ? 0 : 1]->inc();
  }
  co_await end_open_stream(call);
}

// X-Omni-Explain: 1 is honoured for operators only, as /admin/* is: with an admin token
// configured, the request carries it in X-Omni-Admin-Token; without one, it comes from a
// local client.
bool may_explain(const Gateway::Impl::Authority& authority, const http::Request& request) {
  const auto explain = request.headers.get("X-Omni-Explain");
  if (!explain || *explain != "1") return false;
  if (authority.access.admin.empty()) return is_local_client(request);
  const auto token = request.headers.get("X-Omni-Admin-Token");
  return token && authority.access.admin.accepts(*token);
}

// The request's traffic class: its tenant (by its key), priority and band; a tenant over one of
// its limits is refused here with 429 and a Retry-After from its token bucket. False: answered.
Task<bool> classify_traffic(Call& call) {
  const std::shared_ptr<const Gateway::Impl::Authority> authority = call.g.authority.load();
  const TrafficRules& rules = authority->traffic;
  auto classified = rules.classify(call.request.headers, call.info.priority);
  if (!classified) {
    // A bad priority names its field; an unknown tenant in the tenant header names none.
    const std::string& message = classified.error().message;
    const bool priority = message.starts_with(rules.priority_header());
    co_await answer_error(call, 400, message, RequestOutcome::kClientError, "BadRequestError",
                          priority ? "priority" : "");
    co_return false;
  }
  call.traffic = *classified;
  call.explain = may_explain(*authority, call.request);
  call.tenant_name = rules.tenant_name(call.traffic.tenant);
  call.band_name = rules.band_name(call.traffic.band);
  call.class_counter = authority->class_counter(call.traffic.band, call.traffic.tenant);
  if (call.traffic.clamped) {
    if (auto child = call.g.metrics.priority_clamped->with({call.tenant_name})) (*child)->inc();
  }
  if (call.traffic.tenant == 0) co_return true;
  std::optional<TenantRefusal> refusal;
  {
    std::lock_guard lock(call.g.tenants.mu);
    refusal = call.g.tenants.limiter.admit(call.traffic.tenant, call.info.prompt_tokens,
                                           call.g.clock.now());
  }
  if (refusal) {
    if (auto child = call.g.metrics.tenant_rejected->with({call.tenant_name, refusal->reason})) {
      (*child)->inc();
    }
    const auto seconds = std::chrono::ceil<std::chrono::seconds>(refusal->retry_after).count();
    call.retry_after_s = static_cast<std::uint64_t>(std::max<std::int64_t>(seconds, 1));
    co_await answer_error(call, 429, refusal->message, RequestOutcome::kRejected, "RateLimitError");
    co_return false;
  }
  call.tenant_slot.emplace(call.g, call.traffic.tenant);
  co_return true;
}

Task<void> serve(Call& call) {
  co_await asio::this_coro::throw_if_cancelled(false);
  ChatBridge chat;  // --chat-to-completions; the legs reach it through call.entry.chat
  BadRequest bad;
  auto info = inspect_request(call.request.body, call.api, &bad);
  if (!info) {
    co_await answer_error(call, 400, bad.message, RequestOutcome::kClientError, "BadRequestError",
                          bad.param);
    co_return;
  }
  call.info = *info;
  if (!co_await take_proxy_owned_fields(call)) co_return;
  if (!chat.begin(call)) read_prompt(call);  // a converted chat request has its ids already
  bound_max_tokens(call);
  if (!co_await classify_traffic(call)) co_return;
  // The body is final now: cut it into members once; every leg rebuilds its body from them.
  call.members = detail::scan_valid_object(call.request.body);
  arm_migration(call);
  // The prefix lookup itself happens in the scheduler, with the placement.
  call.life.mark(Stage::kTokenized, call.g.clock.now());
  call.life.mark(Stage::kPrefixMatched, call.g.clock.now());
  co_await run_with_migration(call);
}

}  // namespace

Task<void> handle_generate(Gateway::Impl& g, http::Request& request, http::ResponseWriter& writer,
                           Api api) {
  // On the heap, not in the frame: Asio recycles coroutine frames of up to 1 KiB per thread,
  // and a larger frame costs an aligned allocation and a free on every request.
  const auto owned = std::make_unique<Call>(g, request, writer, api);
  Call& call = *owned;
  call.id = g.new_id();
  call.wall = std::chrono::system_clock::now();
  call.bytes_in = request.body.size();
  call.life.mark(Stage::kReceived, g.clock.now());
  if (g.config.timeouts.request > Duration::zero()) {
    call.deadline =
        std::chrono::steady_clock::now() +
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(g.config.timeouts.request);
  }
  name_the_call(call);
  call.entry.request_id = call.request_id;
  call.entry.route = std::string(request.path());
  call.entry.life = &call.life;
  call.entry.received = *call.life.at(Stage::kReceived);
  g.inflight.add(call.id, &call.entry);
  co_await serve(call);
  g.inflight.remove(call.id);
  finish_call(call);
}

}  // namespace omni::proxy
