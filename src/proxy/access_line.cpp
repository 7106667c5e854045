// The end of a call: one JSON access-log line with every stage's timestamp, and the metrics.
#include <boost/json.hpp>

#include "call.hpp"

namespace omni::proxy {
namespace {

namespace json = boost::json;

double ms(Duration d) { return std::chrono::duration<double, std::milli>(d).count(); }
double seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

std::string iso_time(std::chrono::system_clock::time_point wall) {
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(wall.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(micros / 1'000'000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  const auto n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return std::string(buf, n) + "." + std::to_string(1'000'000 + micros % 1'000'000).substr(1) + "Z";
}

std::string access_line(const Call& call, Duration e2e) {
  json::object line;
  line["ts"] = iso_time(call.wall);
  line["request_id"] = call.request_id;
  line["remote"] = call.request.remote;
  line["route"] = call.request.path();
  line["pd_mode"] = pd_mode_name(call.g.config.pd_mode);
  line["status"] = call.status;
  line["outcome"] = outcome_name(call.outcome);
  line["stream"] = call.info.stream;
  line["prompt_tokens_estimate"] = call.info.prompt_tokens;
  line["max_tokens"] = call.info.max_tokens;
  line["output_events"] = call.life.output_tokens();
  line["prefill_node"] = call.prefill_node;
  line["decode_node"] = call.decode_node;
  line["prefill_retries"] = call.prefill_retries;
  line["decode_retries"] = call.decode_retries;
  line["bytes_in"] = call.request.body.size();
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

}  // namespace

void finish_call(Call& call) {
  Gateway::Impl& g = call.g;
  call.life.mark(Stage::kDone, g.clock.now());
  const Duration e2e = *call.life.at(Stage::kDone) - *call.life.at(Stage::kReceived);
  const auto route = static_cast<std::size_t>(call.api == Api::kCompletions ? RouteId::kCompletions
                                                                             : RouteId::kChatCompletions);
  g.metrics.requests[route][static_cast<std::size_t>(call.outcome)]->inc();
  g.metrics.e2e->observe(seconds(e2e));
  if (auto ttft = call.life.ttft()) g.metrics.ttft->observe(seconds(*ttft));
  if (auto tpot = call.life.tpot()) g.metrics.tpot->observe(seconds(*tpot));
  for (std::size_t s = 0; s + 1 < kStageCount; ++s) {
    if (auto spent = call.life.time_in(static_cast<Stage>(s))) {
      g.metrics.stage_seconds[s]->observe(seconds(*spent));
    }
  }
  if (g.access_log.enabled()) g.access_log.write(access_line(call, e2e));
}

}  // namespace omni::proxy
