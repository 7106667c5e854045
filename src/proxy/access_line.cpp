// The end of a call: one JSON access-log line with every stage's timestamp, and the metrics.
#include <fmt/format.h>
#include <boost/json.hpp>

#include "call.hpp"
#include "omni/log/log.hpp"

namespace omni::proxy {
namespace {

namespace json = boost::json;

double ms(Duration d) { return std::chrono::duration<double, std::milli>(d).count(); }
double seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

std::array<double, kWaitCauses> waits_ms(const WaitTimes& waited) {
  std::array<double, kWaitCauses> out{};
  for (std::size_t cause = 0; cause < kWaitCauses; ++cause) out[cause] = ms(waited[cause]);
  return out;
}

std::string access_line(const Call& call, Duration e2e) {
  json::object line;
  line["ts"] = iso_time(call.wall);
  line["request_id"] = call.request_id;
  line["engine_request_id"] = call.engine_request_id;
  line["remote"] = call.request.remote;
  line["route"] = call.request.path();
  line["pd_mode"] = pd_mode_name(call.g.config.pd_mode);
  line["status"] = call.status;
  line["outcome"] = outcome_name(call.outcome);
  line["stream"] = call.info.stream;
  line["prompt_tokens_estimate"] = call.info.prompt_tokens;
  line["max_tokens"] = call.info.max_tokens;
  line["band"] = call.band_name;
  line["queue_wait_ms"] = waits_json(waits_ms(call.waited));
  line["priority"] = call.traffic.priority;
  if (!call.tenant_name.empty()) line["tenant"] = call.tenant_name;
  line["output_events"] = call.life.output_tokens();
  line["prefill_node"] = call.prefill_node;
  line["decode_node"] = call.decode_node;
  line["prefill_retries"] = call.prefill_retries;
  line["decode_retries"] = call.decode_retries;
  line["kv_redos"] = call.kv_redos;
  line["migrations"] = call.migration.count;
  if (call.migration.count > 0) {
    // Every decode node that streamed part of the answer, in order.
    json::array legs;
    for (const std::string& node : call.migration.decode_legs) legs.emplace_back(node);
    line["decode_legs"] = std::move(legs);
    line["migration_cause"] = migration_cause_name(call.migration.cause);
  }
  line["bytes_in"] = call.bytes_in;
  line["bytes_out"] = call.bytes_out;
  line["e2e_ms"] = ms(e2e);
  if (auto ttft = call.life.ttft()) line["ttft_ms"] = ms(*ttft);
  if (auto tpot = call.life.tpot()) line["tpot_ms"] = ms(*tpot);
  // Every stage reached, in ms since the request was received (monotonic clock).
  json::object stages;
  const TimePoint received = *call.life.at(Stage::kReceived);
  for (std::size_t s = 0; s < kStageCount; ++s) {
    const auto stage = static_cast<Stage>(s);
    if (auto at = call.life.at(stage)) stages[stage_name(stage)] = ms(*at - received);
  }
  line["stages_ms"] = std::move(stages);
  if (!call.error.empty()) line["error"] = call.error;
  std::string text = json::serialize(line);
  text.push_back('\n');
  return text;
}

// Client-controlled text (targets, header values) as it may appear in a log line: visible
// ASCII kept, every other byte written as \xNN, so no raw control byte or invalid UTF-8 ever
// reaches the JSON or a terminal.
std::string log_safe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  static constexpr char kHex[] = "0123456789abcdef";
  for (const char c : text) {
    const auto b = static_cast<unsigned char>(c);
    if (b >= 0x20 && b < 0x7f && b != '\\') {
      out.push_back(c);
    } else {
      out += "\\x";
      out.push_back(kHex[b >> 4]);
      out.push_back(kHex[b & 0xf]);
    }
  }
  return out;
}

std::string plain_line(const PlainRequestLog& entry) {
  json::object line;
  line["ts"] = iso_time(entry.wall);
  if (!entry.request_id.empty()) line["request_id"] = log_safe(entry.request_id);
  line["remote"] = entry.remote;
  if (!entry.method.empty()) line["method"] = entry.method;
  line["route"] = log_safe(entry.target.substr(0, entry.target.find('?')));
  line["status"] = entry.status;
  line["outcome"] = entry.outcome;
  line["bytes_out"] = entry.bytes_out;
  line["e2e_ms"] = ms(entry.elapsed);
  if (!entry.reason.empty()) line["error"] = entry.reason;
  std::string text = json::serialize(line);
  text.push_back('\n');
  return text;
}

}  // namespace

void log_plain_request(Gateway::Impl& g, const PlainRequestLog& entry) {
  g.metrics.responses->count(route_label(entry.target.substr(0, entry.target.find('?'))),
                             entry.status);
  if (g.access_log.enabled()) g.access_log.write(plain_line(entry));
}

void log_refused(Gateway::Impl& g, const http::RefusedRequest& refused) {
  PlainRequestLog entry;
  entry.wall = std::chrono::system_clock::now() -
               std::chrono::duration_cast<std::chrono::system_clock::duration>(refused.elapsed);
  if (refused.headers) {
    if (auto id = refused.headers->get("X-Request-Id")) entry.request_id = *id;
  }
  entry.remote = refused.remote;
  if (refused.method != http::Method::kUnknown) entry.method = http::method_name(refused.method);
  entry.target = refused.target;
  entry.status = refused.status;
  entry.outcome = "refused";
  entry.reason = refused.reason;
  entry.elapsed = refused.elapsed;
  if (refused.status == 0) {
    // No HTTP was spoken (a TLS handshake failed): an access-log line and a counter, and the
    // reason in the log at most once per interval.
    entry.outcome = "tls_handshake_failed";
    g.metrics.tls_handshake_failures->inc();
    if (g.access_log.enabled()) g.access_log.write(plain_line(entry));
    if (auto line = g.request_events.note(
            "TLS handshakes failed",
            std::string(refused.reason) + " (client " + log_safe(refused.remote) + ")",
            g.clock.now())) {
      log::get("proxy")->warn("{}", *line);
    }
    return;
  }
  if (refused.headers == nullptr) {
    // Refused before the request line was read: no route to file it under.
    g.metrics.responses->count(RouteLabel::kUnparsed, refused.status);
    if (g.access_log.enabled()) g.access_log.write(plain_line(entry));
    return;
  }
  log_plain_request(g, entry);
}

namespace {

// The request's events worth an operator's attention, one log line per kind and interval
// (ThrottledEvents): failures the proxy could not hide, retries, KV redos, migrations.
void say_request_events(const Call& call) {
  Gateway::Impl& g = call.g;
  const TimePoint now = g.clock.now();
  auto say = [&](bool warn, std::string_view kind, const std::string& detail) {
    auto line = g.request_events.note(kind, detail, now);
    if (!line) return;
    if (warn) {
      log::get("proxy")->warn("{}", *line);
    } else {
      log::get("proxy")->info("{}", *line);
    }
  };
  switch (call.outcome) {
    case RequestOutcome::kUpstreamError:
    case RequestOutcome::kStreamError:
    case RequestOutcome::kTimeout:
    case RequestOutcome::kRejected:
      say(true, fmt::format("requests failed ({})", outcome_name(call.outcome)),
          fmt::format("request {} got {}: {}", log_safe(call.request_id), call.status,
                      log_safe(call.error)));
      break;
    default: break;
  }
  const std::uint32_t retries = call.prefill_retries + call.decode_retries;
  if (retries > 0) {
    say(false, "requests retried on another node",
        fmt::format("request {}: {} prefill and {} decode retries, served by {}",
                    log_safe(call.request_id), call.prefill_retries, call.decode_retries,
                    call.decode_node.empty() ? "none" : call.decode_node));
  }
  if (call.kv_redos > 0) {
    say(false, "requests prefilled again after lost KV",
        fmt::format("request {}: {} redo(s)", log_safe(call.request_id), call.kv_redos));
  }
  if (call.migration.count > 0) {
    say(false, "streams continued on another engine",
        fmt::format("request {}: {} continuation(s), cause {}", log_safe(call.request_id),
                    call.migration.count, migration_cause_name(call.migration.cause)));
  }
}

}  // namespace

std::string decision_receipt(const Call& call) {
  std::string out =
      "band=" + call.band_name + "; priority=" + std::to_string(call.traffic.priority);
  if (!call.tenant_name.empty()) out += "; tenant=" + call.tenant_name;
  if (!call.prefill_node.empty()) out += "; prefill=" + call.prefill_node;
  if (!call.decode_node.empty()) out += "; decode=" + call.decode_node;
  std::string waits;
  for (std::size_t cause = 0; cause < kWaitCauses; ++cause) {
    if (call.waited[cause] <= Duration::zero()) continue;
    if (!waits.empty()) waits += ",";
    waits += fmt::format("{}:{:.3f}", wait_cause_name(static_cast<WaitCause>(cause)),
                         ms(call.waited[cause]));
  }
  return out + "; queue_wait_ms=" + (waits.empty() ? "0" : waits);
}

void finish_call(Call& call) {
  Gateway::Impl& g = call.g;
  call.life.mark(Stage::kDone, g.clock.now());
  if (call.tenant_slot) {
    // A streamed answer's tokens are its events; a whole answer is charged its max_tokens bound
    // (the proxy does not parse the engine's usage), nothing when it failed.
    const std::uint64_t completion = call.info.stream ? call.life.output_tokens()
                                     : call.outcome == RequestOutcome::kSuccess
                                         ? call.info.max_tokens
                                         : 0;
    call.tenant_slot->finish(completion);
  }
  if (call.class_counter) call.class_counter->inc();
  const Duration e2e = *call.life.at(Stage::kDone) - *call.life.at(Stage::kReceived);
  const auto route = static_cast<std::size_t>(
      call.api == Api::kCompletions ? RouteId::kCompletions : RouteId::kChatCompletions);
  g.metrics.requests[route][static_cast<std::size_t>(call.outcome)]->inc();
  g.metrics.responses->count(
      call.api == Api::kCompletions ? RouteLabel::kCompletions : RouteLabel::kChatCompletions,
      call.status);
  g.metrics.e2e->observe(seconds(e2e));
  if (auto ttft = call.life.ttft()) g.metrics.ttft->observe(seconds(*ttft));
  if (auto tpot = call.life.tpot()) g.metrics.tpot->observe(seconds(*tpot));
  for (std::size_t s = 0; s + 1 < kStageCount; ++s) {
    if (auto spent = call.life.time_in(static_cast<Stage>(s))) {
      g.metrics.stage_seconds[s]->observe(seconds(*spent));
    }
  }
  if (g.access_log.enabled()) g.access_log.write(access_line(call, e2e));
  say_request_events(call);
  RoutingDecision decision;
  decision.wall = call.wall;
  decision.request_id = call.request_id;
  decision.route = std::string(call.request.path());
  decision.prefill_node = call.prefill_node;
  decision.decode_node = call.decode_node;
  decision.status = call.status;
  decision.outcome = outcome_name(call.outcome);
  decision.retries = call.prefill_retries + call.decode_retries;
  decision.migrations = call.migration.count;
  if (auto ttft = call.life.ttft()) decision.ttft_ms = ms(*ttft);
  decision.e2e_ms = ms(e2e);
  decision.band = call.band_name;
  decision.tenant = call.tenant_name;
  decision.priority = call.traffic.priority;
  decision.waited_ms = waits_ms(call.waited);
  g.decisions.add(std::move(decision));
}

}  // namespace omni::proxy
