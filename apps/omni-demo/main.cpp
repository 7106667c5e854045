// omni-demo: what `make run` starts until omni-proxy and omni-sim exist. A small server built
// only from the common runtime (HTTP server and client, SSE, metrics, logging, config) that
// checks itself through its own client, then serves until SIGINT/SIGTERM.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <csignal>
#include <iostream>
#include <optional>
#include <string>

#include "instrument.hpp"
#include "omni/config/cli.hpp"
#include "omni/config/http_server_config.hpp"
#include "omni/config/runtime.hpp"
#include "omni/log/log.hpp"
#include "routes.hpp"
#include "self_check.hpp"
#include "server_metrics.hpp"

namespace omni::demo {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

struct DemoConfig {
  config::HttpServerConfig server = [] {
    config::HttpServerConfig c;
    c.port = 8080;
    return c;
  }();
  config::LogConfig log;
  std::optional<std::string> access_log;  // a file path, or "-" for standard output
  bool self_check = true;
  Duration serve_for = 0s;  // 0: until SIGINT or SIGTERM
};

void describe(config::Schema<DemoConfig>& s) {
  s.section("server", &DemoConfig::server, config::describe_http_server);
  s.section("log", &DemoConfig::log, config::describe_log);
  s.field("access_log", &DemoConfig::access_log,
          "Write one JSON line per request to this file (\"-\": standard output)")
      .non_empty();
  s.field("self_check", &DemoConfig::self_check,
          "Call the demo's own routes through the HTTP client at start-up");
  s.field("serve_for", &DemoConfig::serve_for, "Stop after this long; 0s: until SIGINT/SIGTERM")
      .min(0s);
}

log::LogOptions log_options(const config::LogConfig& cfg) {
  log::LogOptions options;
  options.level = cfg.level;
  options.format = cfg.format;
  options.file = cfg.file.value_or("");
  return options;
}

Result<std::unique_ptr<log::AccessLogWriter>> open_access_log(const DemoConfig& cfg) {
  if (!cfg.access_log) return std::unique_ptr<log::AccessLogWriter>();
  if (*cfg.access_log == "-") return log::AccessLogWriter::to_stdout();
  return log::AccessLogWriter::open_file(*cfg.access_log);
}

// Waits for a signal, the serve_for deadline or the self-check's failure, then stops.
int serve(const DemoConfig& cfg, http::Server& server) {
  asio::io_context io;
  int exit_code = 0;
  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int signal) {
    if (!ec) log::get("demo")->info("signal {}: shutting down", signal);
    io.stop();
  });
  asio::steady_timer deadline(io);
  if (cfg.serve_for > 0s) {
    deadline.expires_after(cfg.serve_for);
    deadline.async_wait([&](const boost::system::error_code& ec) {
      if (!ec) io.stop();
    });
  }
  http::Client client(io.get_executor());
  if (cfg.self_check) {
    asio::co_spawn(
        io,
        [&]() -> Task<void> {
          // Named, not a temporary in the co_await expression: GCC 12 miscompiles those.
          const http::Endpoint self{"127.0.0.1", server.port()};
          Status status = co_await self_check(client, self, std::cout);
          std::cout.flush();
          if (!status) {
            log::get("demo")->error("self-check failed: {}", status.error().message);
            exit_code = 1;
            io.stop();
          }
        },
        asio::detached);
  }
  io.run();
  server.stop();
  return exit_code;
}

int run(const DemoConfig& cfg) {
  if (Status s = log::init(log_options(cfg.log)); !s) {
    std::cerr << "omni-demo: " << s.error().message << "\n";
    return 2;
  }
  auto access_log = open_access_log(cfg);
  if (!access_log) {
    std::cerr << "omni-demo: access_log: " << access_log.error().message << "\n";
    return 2;
  }
  metrics::Registry registry;
  auto instrumentation = Instrumentation::create(registry, access_log->get());
  if (!instrumentation) {
    std::cerr << "omni-demo: metrics: " << instrumentation.error().message << "\n";
    return 2;
  }
  http::ServerOptions options = config::to_server_options(cfg.server);
  options.server_name = "omni-demo";
  http::Server server(options, make_routes(registry, **instrumentation).handler());
  if (Status s = export_server_stats(registry, server); !s) {
    std::cerr << "omni-demo: metrics: " << s.error().message << "\n";
    return 2;
  }
  if (Status s = server.start(); !s) {
    std::cerr << "omni-demo: cannot listen on " << cfg.server.host << ":" << cfg.server.port << ": "
              << s.error().message << "\n";
    return 1;
  }
  std::cout << "omni-demo: the common runtime on http://" << cfg.server.host << ":" << server.port()
            << " (omni-proxy and omni-sim are not built yet; they will replace "
            << "this demo in `make run`)\n"
            << "  try: curl -sN 'http://" << cfg.server.host << ":" << server.port()
            << "/v1/demo/stream?events=5&interval_ms=200'\n";
  std::cout.flush();
  return serve(cfg, server);
}

}  // namespace
}  // namespace omni::demo

int main(int argc, char** argv) {
  omni::config::Schema<omni::demo::DemoConfig> schema;
  omni::demo::describe(schema);
  auto cli = omni::config::parse_command_line(
      argc, argv, schema, "omni-demo: the common runtime serving a demo API (make run)");
  if (!cli) {
    std::cerr << "omni-demo: " << cli.error().message << "\n";
    return 2;
  }
  if (cli->exit_now) return 0;
  return omni::demo::run(cli->config);
}
