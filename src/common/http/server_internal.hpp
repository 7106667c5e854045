// State shared by the pieces of the HTTP server (server.cpp, server_connection.cpp,
// server_writer.cpp). Private to omni_http.
#pragma once

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_set>

#include "omni/http/server.hpp"

namespace omni::http::detail {

class Connection;

struct ServerCounters {
  std::atomic<std::uint64_t> connections_accepted{0};
  std::atomic<std::uint64_t> connections_rejected{0};
  std::atomic<std::uint64_t> connections_active{0};
  std::atomic<std::uint64_t> requests{0};
  std::atomic<std::uint64_t> bad_requests{0};
  std::atomic<std::uint64_t> timeouts{0};
  std::atomic<std::uint64_t> screened{0};
  std::atomic<std::uint64_t> idle_shed{0};
  std::atomic<std::uint64_t> abandoned{0};
  // Connections waiting for a request with no byte received (sheddable at the cap), and
  // sheds requested but not yet carried out.
  std::atomic<std::uint64_t> idle{0};
  std::atomic<std::uint64_t> sheds_pending{0};
};

// What every connection of one Server reads. Options and handler are immutable once the
// server has started; the counters and `stopping` are atomics, the rest is behind drain_mutex.
struct ServerCore {
  ServerCore(ServerOptions opts, Handler h, ServerHooks k)
      : options(std::move(opts)), handler(std::move(h)), hooks(std::move(k)) {}

  const ServerOptions options;
  const Handler handler;
  const ServerHooks hooks;
  ServerCounters counters;
  std::atomic<bool> stopping{false};

  // Called once per connection that counted as active, when it ends.
  void connection_closed() {
    if (counters.connections_active.fetch_sub(1, std::memory_order_acq_rel) == 1 &&
        stopping.load(std::memory_order_acquire)) {
      const std::lock_guard lock(drain_mutex);
      drained.notify_all();
    }
  }

  std::mutex drain_mutex;
  std::condition_variable drained;
};

// One I/O thread: its io_context and the connections it runs. `connections` is touched only
// on that thread; it is declared before `io` so that it outlives coroutine frames destroyed
// along with the io_context.
struct Worker {
  std::unordered_set<Connection*> connections;
  // Idle connections (see ServerCounters::idle), oldest first; touched on this thread only.
  std::list<Connection*> idle;
  std::atomic<std::size_t> idle_count{0};  // idle.size(), for the acceptor's choice
  // Concurrency hint 1: exactly one thread runs this context, which lets Asio skip the
  // multi-thread wake-up logic; posts from other threads (stop) are still safe.
  boost::asio::io_context io{1};
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> guard;
  std::thread thread;
};

}  // namespace omni::http::detail
