// omni-proxy-load: N concurrent clients sending requests to one endpoint, for the integration
// tests (1,000 concurrent streams, engines killed under load) and the benchmarks (latency
// percentiles, requests/s). Prints one JSON summary line.
#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <iostream>
#include <map>

#include "omni/config/cli.hpp"
#include "omni/http/client.hpp"
#include "omni/http/sse.hpp"

namespace {

namespace asio = boost::asio;
namespace http = omni::http;
using omni::Task;
using namespace std::chrono_literals;

struct LoadConfig {
  std::string target = "127.0.0.1:8000";
  std::string path = "/v1/completions";
  std::string body = R"({"model":"m","prompt":"hello","max_tokens":4})";
  bool stream = false;  // read the answer as SSE and check it ends with [DONE]
  unsigned concurrency = 16;
  unsigned requests = 100;       // in total
  omni::Duration duration = 0s;  // if set: run this long instead of a request count
  omni::Duration timeout = 60s;
};

void describe(omni::config::Schema<LoadConfig>& s) {
  s.field("target", &LoadConfig::target, "host:port");
  s.field("path", &LoadConfig::path, "Request path");
  s.field("body", &LoadConfig::body, "JSON body");
  s.field("stream", &LoadConfig::stream, "Read SSE streams");
  s.field("concurrency", &LoadConfig::concurrency, "Concurrent clients").range(1, 20000);
  s.field("requests", &LoadConfig::requests, "Requests in total");
  s.field("duration", &LoadConfig::duration, "Run this long instead (0s: count requests)");
  s.field("timeout", &LoadConfig::timeout, "Per-read timeout");
}

struct Stats {
  std::map<int, unsigned> status;
  unsigned transport_errors = 0;
  unsigned complete_streams = 0;  // ended with data: [DONE]
  unsigned error_events = 0;      // in-stream error events
  std::uint64_t events = 0;
  std::vector<double> latency_us;
  unsigned started = 0;
};

Task<void> one(http::Client& client, const http::Endpoint& to, const LoadConfig& cfg,
               Stats& stats) {
  http::Request request;
  request.method = http::Method::kPost;
  request.target = cfg.path;
  request.headers.add("Content-Type", "application/json");
  request.body = cfg.body;
  const auto start = std::chrono::steady_clock::now();
  if (!cfg.stream) {
    auto answer = co_await client.send(to, std::move(request));
    if (!answer) {
      ++stats.transport_errors;
      co_return;
    }
    ++stats.status[answer->status];
  } else {
    auto opened = co_await client.open(to, std::move(request));
    if (!opened) {
      ++stats.transport_errors;
      co_return;
    }
    ++stats.status[(*opened)->status()];
    http::SseReader reader(**opened);
    bool done = false;
    for (;;) {
      auto event = co_await reader.next();
      if (!event) {
        ++stats.transport_errors;
        break;
      }
      if (!*event) break;
      ++stats.events;
      if ((*event)->data == "[DONE]") done = true;
      if ((*event)->data.find("\"error\"") != std::string::npos) ++stats.error_events;
    }
    if (done) ++stats.complete_streams;
  }
  stats.latency_us.push_back(
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
}

Task<void> worker(http::Client& client, http::Endpoint to, const LoadConfig& cfg, Stats& stats,
                  std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    if (cfg.duration > 0s) {
      if (std::chrono::steady_clock::now() >= deadline) co_return;
    } else if (stats.started >= cfg.requests) {
      co_return;
    }
    ++stats.started;
    co_await one(client, to, cfg, stats);
  }
}

double percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto index = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(index, v.size() - 1)];
}

}  // namespace

int main(int argc, char** argv) {
  omni::config::Schema<LoadConfig> schema;
  describe(schema);
  auto cli = omni::config::parse_command_line(argc, argv, schema, "omni-proxy-load: a load client");
  if (!cli) {
    std::cerr << cli.error().message << "\n";
    return 2;
  }
  if (cli->exit_now) return 0;
  const LoadConfig cfg = cli->config;
  auto to = http::Endpoint::parse(cfg.target);
  if (!to) {
    std::cerr << to.error().message << "\n";
    return 2;
  }
  asio::io_context io;
  http::ClientOptions options;
  options.read_timeout = cfg.timeout;
  options.max_idle_per_endpoint = cfg.concurrency;
  http::Client client(io.get_executor(), options);
  Stats stats;
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + cfg.duration;
  for (unsigned i = 0; i < cfg.concurrency; ++i) {
    asio::co_spawn(io, worker(client, *to, cfg, stats, deadline), asio::detached);
  }
  io.run();
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  boost::json::object out;
  boost::json::object statuses;
  for (const auto& [code, n] : stats.status) statuses[std::to_string(code)] = n;
  out["status"] = std::move(statuses);
  out["transport_errors"] = stats.transport_errors;
  out["complete_streams"] = stats.complete_streams;
  out["error_events"] = stats.error_events;
  out["events"] = stats.events;
  out["requests"] = stats.latency_us.size();
  out["seconds"] = elapsed;
  out["requests_per_second"] = static_cast<double>(stats.latency_us.size()) / elapsed;
  out["events_per_second"] = static_cast<double>(stats.events) / elapsed;
  out["p50_us"] = percentile(stats.latency_us, 0.50);
  out["p99_us"] = percentile(stats.latency_us, 0.99);
  std::cout << boost::json::serialize(out) << std::endl;
  return 0;
}
