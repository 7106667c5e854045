// Active health checks: one thread with its own event loop probes GET /health on every node
// each interval and reports to the scheduler, which takes failing nodes out and re-admits
// them (a passively ejected node gets a trial request once its probe succeeds).
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "gateway_impl.hpp"

namespace omni::proxy {
namespace {

namespace asio = boost::asio;

Task<void> probe_loop(Gateway::Impl& g, asio::io_context& io) {
  http::ClientOptions options;
  options.connect_timeout = g.config.health.timeout;
  options.read_timeout = g.config.health.timeout;
  options.write_timeout = g.config.health.timeout;
  http::Client client(io.get_executor(), options);
  asio::steady_timer timer(io);
  while (!g.health_stop.load()) {
    const DispatcherSnapshot snapshot = g.dispatcher->snapshot();
    for (const NodeStatus& node : snapshot.nodes) {
      if (node.removed || g.health_stop.load()) continue;
      auto entry = g.directory.find(node.spec.name);
      if (!entry) continue;
      http::Request probe;
      probe.method = http::Method::kGet;
      probe.target = "/health";
      const http::Endpoint to{entry->host, entry->port};
      auto answer = co_await client.send(to, std::move(probe));
      g.dispatcher->probe(node.id, answer && answer->status == 200);
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
