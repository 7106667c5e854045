// Active health checks: one thread with its own event loop probes GET /health on every node
// each interval and reports to the scheduler, which takes failing nodes out and re-admits
// them (a passively ejected node gets a trial request once its probe succeeds). When
// health.engine_metrics is on, it also reads each healthy engine's GET /metrics for the load
// the engine itself reports (running, waiting, KV-cache usage: the llm-d and SGLang policies
// weigh them) and hands it to the scheduler.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cmath>
#include <cstdlib>
#include <string>
#include <unordered_map>

#include "gateway_impl.hpp"
#include "omni/log/log.hpp"

namespace omni::proxy {
namespace {

namespace asio = boost::asio;

// One sample's value: the last field of a Prometheus text line. Malformed: nullopt.
std::optional<double> sample_value(std::string_view line) {
  const auto space = line.find_last_of(' ');
  if (space == std::string_view::npos) return std::nullopt;
  const std::string text(line.substr(space + 1));
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !std::isfinite(value) || value < 0) return std::nullopt;
  return value;
}

bool is_sample_of(std::string_view line, std::string_view name) {
  return line.starts_with(name) && line.size() > name.size() &&
         (line[name.size()] == '{' || line[name.size()] == ' ');
}

// vLLM's gauges, summed over their label sets (one per engine core / model); KV usage: the most
// used one.
EngineLoad engine_load(std::string_view text) {
  double running = 0, waiting = 0, kv = 0;
  while (!text.empty()) {
    const auto eol = text.find('\n');
    const std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    if (line.empty() || line[0] == '#') continue;
    const auto value = sample_value(line);
    if (!value) continue;
    if (is_sample_of(line, "vllm:num_requests_running")) running += *value;
    if (is_sample_of(line, "vllm:num_requests_waiting")) waiting += *value;
    if (is_sample_of(line, "vllm:kv_cache_usage_perc")) kv = std::max(kv, *value);
  }
  constexpr double kMaxCount = 1e9;
  return {static_cast<std::uint32_t>(std::min(running, kMaxCount)),
          static_cast<std::uint32_t>(std::min(waiting, kMaxCount)), std::min(kv, 1.0)};
}

Task<void> scrape_load(Gateway::Impl& g, http::Client& client, const std::string& name,
                       const http::Endpoint& to) {
  http::Request request;
  request.method = http::Method::kGet;
  request.target = "/metrics";
  authorize_for_engines(g, request);
  auto answer = co_await client.send(to, std::move(request));
  if (!answer || answer->status != 200) co_return;
  const EngineLoad load = engine_load(answer->body);
  (void)g.dispatcher->post([name, load](Scheduler& s) { s.report_engine_load(name, load); });
}

// An engine's model list, when it was never fetched or is older than this: the catalog
// follows a reloaded or restarted engine within a minute.
constexpr Duration kModelsRefresh = std::chrono::seconds(60);

Task<void> refresh_models(Gateway::Impl& g, http::Client& client, const std::string& name,
                          const http::Endpoint& to) {
  const auto fetched = g.models.fetched_at(name);
  if (fetched && g.clock.now() - *fetched < kModelsRefresh) co_return;
  http::Request request;
  request.method = http::Method::kGet;
  request.target = "/v1/models";
  authorize_for_engines(g, request);
  auto answer = co_await client.send(to, std::move(request));
  if (!answer || answer->status != 200) co_return;
  if (auto list = parse_models(answer->body)) g.models.store(name, std::move(*list), g.clock.now());
}

// "node N: /health probe: <why>" when the reason differs from the last one logged for N.
void say_probe_failure(std::string& last, const std::string& name,
                       const Result<http::Response>& answer) {
  std::string why = answer ? "answered " + std::to_string(answer->status) : answer.error().message;
  if (why == last) return;
  log::get("proxy")->warn("node {}: /health probe: {}", name, why);
  last = std::move(why);
}

Task<void> probe_loop(Gateway::Impl& g, asio::io_context& io) {
  http::ClientOptions options;
  options.connect_timeout = g.config.health.timeout;
  options.read_timeout = g.config.health.timeout;
  options.write_timeout = g.config.health.timeout;
  options.tls = g.engine_tls;
  http::Client client(io.get_executor(), options);
  asio::steady_timer timer(io);
  // Why each failing node's last probe failed: a new reason is logged once, not every interval.
  std::unordered_map<std::string, std::string> failing;
  while (!g.health_stop.load()) {
    const DispatcherSnapshot snapshot = g.dispatcher->snapshot();
    for (const NodeStatus& node : snapshot.nodes) {
      if (node.removed || g.health_stop.load()) continue;
      auto entry = g.directory.find(node.spec.name);
      if (!entry) continue;
      http::Request probe;
      probe.method = http::Method::kGet;
      probe.target = "/health";
      authorize_for_engines(g, probe);
      const http::Endpoint to{entry->host, entry->port, entry->tls};
      auto answer = co_await client.send(to, std::move(probe));
      const bool healthy = answer && answer->status == 200;
      g.dispatcher->probe(node.id, healthy);
      if (!healthy) {
        say_probe_failure(failing[node.spec.name], node.spec.name, answer);
        continue;
      }
      failing.erase(node.spec.name);
      co_await refresh_models(g, client, node.spec.name, to);
      if (g.config.health.engine_metrics) co_await scrape_load(g, client, node.spec.name, to);
    }
    timer.expires_after(g.config.health.interval);
    (void)co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
  }
}

}  // namespace

void start_health_checks(Gateway::Impl& g) {
  if (g.config.health.interval <= Duration::zero()) return;
  g.health_stop = false;
  g.health_thread = std::thread([&g] {
    asio::io_context io;
    asio::co_spawn(io, probe_loop(g, io), asio::detached);
    // Polls so that stop is noticed within one probe interval at most.
    while (!g.health_stop.load()) {
      io.run_for(std::chrono::milliseconds(50));
      if (io.stopped()) io.restart();
    }
  });
}

void stop_health_checks(Gateway::Impl& g) {
  g.health_stop = true;
  if (g.health_thread.joinable()) g.health_thread.join();
}

}  // namespace omni::proxy
