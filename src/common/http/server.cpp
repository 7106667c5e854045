// Server: the acceptor, the I/O threads and the shutdown gate. Connections live in
// server_connection.cpp, the response framing in server_writer.cpp.
//
// Threading model: one io_context per I/O thread (concurrency hint 1), and the single
// acceptor hands each accepted socket to the next context round-robin. A connection then
// lives on one thread for its whole life, so its state needs no strand or lock, and with
// io_threads = 1 (the benchmark) everything runs on one thread with no cross-thread hand-off
// at all. One shared io_context run by N threads would need a strand per connection and
// contend on the scheduler's lock.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstdio>
#include <vector>

#include "server_connection.hpp"

namespace omni::http {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;
using detail::Connection;
using detail::Worker;

// Set on I/O threads: stop() called from one of them must not join itself.
thread_local const void* current_server = nullptr;

// Time left to connections that were force-closed to unwind before the threads stop.
constexpr auto kForceCloseWait = std::chrono::seconds(1);

Status validate(const ServerOptions& o) {
  auto bad = [](std::string what) {
    return Status(make_error(ErrorCode::kInvalidArgument, std::move(what)));
  };
  if (o.io_threads == 0) return bad("io_threads: must be at least 1");
  if (o.max_connections == 0) return bad("max_connections: must be at least 1");
  if (o.max_header_bytes == 0) return bad("max_header_bytes: must be positive");
  for (const auto& [name, value] : {std::pair{"header_timeout", o.header_timeout},
                                    {"body_timeout", o.body_timeout},
                                    {"idle_timeout", o.idle_timeout},
                                    {"write_timeout", o.write_timeout}}) {
    if (value <= Duration::zero()) return bad(std::string(name) + ": must be positive");
  }
  if (o.shutdown_grace < Duration::zero()) return bad("shutdown_grace: must not be negative");
  return ok_status();
}

}  // namespace

struct Server::Impl {
  Impl(ServerOptions options, Handler handler, ServerHooks hooks)
      : core(std::move(options), std::move(handler), std::move(hooks)) {}

  Status open_acceptor();
  Task<void> accept_loop();
  void accepted(Connection::Socket socket, Worker& worker);
  // At the cap: whether an idle connection can make room, and the request that it does.
  bool shed_idle_connection();
  void stop_blocking();
  bool wait_drained(Duration limit);
  template <class F>
  void on_every_connection(F action);

  detail::ServerCore core;
  std::mutex lifecycle_mutex;
  std::condition_variable stopped_cv;
  bool started = false;
  bool stopped = false;
  std::mutex stopper_mutex;
  std::thread stopper;  // runs stop() when it was called from an I/O thread
  std::uint16_t port = 0;
  std::size_t next_worker = 0;  // acceptor thread only
  // Declared last: destroyed first, while everything their coroutines touch still exists.
  std::vector<std::unique_ptr<Worker>> workers;
  std::optional<tcp::acceptor> acceptor;
};

Status Server::Impl::open_acceptor() {
  const auto& o = core.options;
  error_code ec;
  const auto address = asio::ip::make_address(o.host, ec);
  if (ec) return make_error(ErrorCode::kInvalidArgument, "host: not an IP address: " + o.host);
  const tcp::endpoint endpoint(address, o.port);
  const std::string where = o.host + ":" + std::to_string(o.port);
  acceptor.emplace(workers.front()->io);
  if (acceptor->open(endpoint.protocol(), ec); ec)
    return make_error(ErrorCode::kIo, "open " + where + ": " + ec.message());
  if (acceptor->set_option(tcp::acceptor::reuse_address(true), ec); ec) {
    return make_error(ErrorCode::kIo, "setsockopt " + where + ": " + ec.message());
  }
  if (acceptor->bind(endpoint, ec); ec)
    return make_error(ErrorCode::kIo, "bind " + where + ": " + ec.message());
  if (acceptor->listen(asio::socket_base::max_listen_connections, ec); ec) {
    return make_error(ErrorCode::kIo, "listen " + where + ": " + ec.message());
  }
  port = acceptor->local_endpoint(ec).port();
  return ok_status();
}

Task<void> Server::Impl::accept_loop() {
  asio::steady_timer backoff(acceptor->get_executor());
  for (;;) {
    Worker& worker = *workers[next_worker++ % workers.size()];
    auto [ec, socket] =
        co_await acceptor->async_accept(worker.io, asio::as_tuple(asio::use_awaitable));
    if (core.stopping.load() || !acceptor->is_open()) co_return;
    if (ec) {
      // Out of file descriptors and the like: pause instead of spinning on the error.
      std::fprintf(stderr, "omni http: accept failed: %s\n", ec.message().c_str());
      backoff.expires_after(std::chrono::milliseconds(50));
      co_await backoff.async_wait(asio::as_tuple(asio::use_awaitable));
      continue;
    }
    accepted(std::move(socket), worker);
  }
}

void Server::Impl::accepted(Connection::Socket socket, Worker& worker) {
  error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  auto mode = Connection::Mode::kServe;
  if (core.counters.connections_active.load() >= core.options.max_connections &&
      !shed_idle_connection()) {
    core.counters.connections_rejected.fetch_add(1, std::memory_order_relaxed);
    mode = Connection::Mode::kReject;
  } else {
    core.counters.connections_accepted.fetch_add(1, std::memory_order_relaxed);
    core.counters.connections_active.fetch_add(1, std::memory_order_acq_rel);
  }
  auto connection = std::make_shared<Connection>(core, worker, std::move(socket), mode);
  auto slot = connection->cancellation_slot();
  asio::co_spawn(worker.io, Connection::serve(std::move(connection)),
                 asio::bind_cancellation_slot(slot, asio::detached));
}

// nginx's answer to running out of connections: close the oldest idle one (a client between
// requests, or one that connected and sent nothing) instead of refusing the new client.
// Idle counts are read from other threads, so this is approximate by a connection or two;
// sheds_pending keeps one idle connection from being promised to two new ones.
bool Server::Impl::shed_idle_connection() {
  auto& c = core.counters;
  if (c.idle.load(std::memory_order_relaxed) <= c.sheds_pending.load(std::memory_order_relaxed)) {
    return false;
  }
  Worker* most_idle = workers.front().get();
  for (auto& worker : workers) {
    if (worker->idle_count.load(std::memory_order_relaxed) >
        most_idle->idle_count.load(std::memory_order_relaxed)) {
      most_idle = worker.get();
    }
  }
  c.sheds_pending.fetch_add(1, std::memory_order_relaxed);
  asio::post(most_idle->io, [w = most_idle, &c] {
    c.sheds_pending.fetch_sub(1, std::memory_order_relaxed);
    if (!w->idle.empty()) w->idle.front()->shed();
  });
  return true;
}

template <class F>
void Server::Impl::on_every_connection(F action) {
  for (auto& worker : workers) {
    asio::post(worker->io, [w = worker.get(), action] {
      // Copy first: the action may end a connection, which erases it from the set.
      const std::vector<Connection*> connections(w->connections.begin(), w->connections.end());
      for (Connection* c : connections) {
        if (w->connections.contains(c)) action(*c);
      }
    });
  }
}

bool Server::Impl::wait_drained(Duration limit) {
  std::unique_lock lock(core.drain_mutex);
  return core.drained.wait_for(lock, limit,
                               [this] { return core.counters.connections_active.load() == 0; });
}

void Server::Impl::stop_blocking() {
  std::unique_lock lock(lifecycle_mutex);
  if (!started || stopped) return;
  core.stopping.store(true);
  asio::post(workers.front()->io, [this] {
    error_code ignored;
    acceptor->close(ignored);
  });
  on_every_connection([](Connection& c) { c.on_stop_requested(); });
  if (!wait_drained(core.options.shutdown_grace)) {
    on_every_connection([](Connection& c) { c.force_close(); });
    (void)wait_drained(kForceCloseWait);
  }
  for (auto& worker : workers) {
    worker->guard.reset();
    worker->io.stop();
  }
  for (auto& worker : workers) {
    if (worker->thread.joinable()) worker->thread.join();
  }
  stopped = true;
  stopped_cv.notify_all();
}

Server::Server(ServerOptions options, Handler handler, ServerHooks hooks)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handler), std::move(hooks))) {}

Server::~Server() {
  stop();
  const std::lock_guard lock(impl_->stopper_mutex);
  if (impl_->stopper.joinable()) impl_->stopper.join();
}

Status Server::start() {
  Impl& impl = *impl_;
  const std::lock_guard lock(impl.lifecycle_mutex);
  if (impl.started)
    return make_error(ErrorCode::kInvalidArgument, "the server was already started");
  if (auto valid = validate(impl.core.options); !valid) return valid;
  if (!impl.core.handler) return make_error(ErrorCode::kInvalidArgument, "handler: must be set");
  for (unsigned i = 0; i < impl.core.options.io_threads; ++i)
    impl.workers.push_back(std::make_unique<Worker>());
  if (auto opened = impl.open_acceptor(); !opened) {
    impl.acceptor.reset();
    impl.workers.clear();
    return opened;
  }
  asio::co_spawn(impl.workers.front()->io, impl.accept_loop(), asio::detached);
  for (auto& worker : impl.workers) {
    worker->guard.emplace(worker->io.get_executor());
    worker->thread = std::thread([&io = worker->io, self = impl_.get()] {
      current_server = self;
      io.run();
    });
  }
  impl.started = true;
  return ok_status();
}

std::uint16_t Server::port() const noexcept { return impl_->port; }

void Server::stop() {
  Impl& impl = *impl_;
  if (current_server == &impl) {
    // Joining our own thread would deadlock (and so would waiting for lifecycle_mutex, which
    // a stop in progress holds while it waits for this thread): let a helper do it.
    if (impl.core.stopping.load()) return;
    const std::lock_guard lock(impl.stopper_mutex);
    if (!impl.stopper.joinable()) impl.stopper = std::thread([&impl] { impl.stop_blocking(); });
    return;
  }
  impl.stop_blocking();
}

void Server::wait() {
  std::unique_lock lock(impl_->lifecycle_mutex);
  if (!impl_->started) return;
  while (!impl_->stopped) impl_->stopped_cv.wait_for(lock, std::chrono::milliseconds(200));
}

ServerStats Server::stats() const noexcept {
  const auto& c = impl_->core.counters;
  ServerStats stats;
  stats.connections_accepted = c.connections_accepted.load();
  stats.connections_rejected = c.connections_rejected.load();
  stats.connections_active = c.connections_active.load();
  stats.requests = c.requests.load();
  stats.bad_requests = c.bad_requests.load();
  stats.timeouts = c.timeouts.load();
  stats.screened = c.screened.load();
  stats.idle_shed = c.idle_shed.load();
  stats.abandoned = c.abandoned.load();
  return stats;
}

}  // namespace omni::http
