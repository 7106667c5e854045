// Test helpers for the HTTP client: a raw-socket loopback server whose every byte is scripted
// by the test, a one-shot Signal, and a runner that drives one coroutine to completion.
//
// Everything runs on one io_context in the test's thread: the client and the scripted server
// interleave at co_await points, so no locks are needed.
#pragma once

#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "omni/http/client.hpp"

namespace omni::http::testing {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
inline constexpr auto kAsTuple = asio::as_tuple(asio::use_awaitable);

// Runs `task` on `io` until it completes; fails the test if that takes over 10 s. Leaves
// other work (a listening server, say) pending, so it can be called again.
inline void run_task(asio::io_context& io, Task<void> task) {
  bool done = false;
  std::exception_ptr failure;
  asio::co_spawn(io, std::move(task), [&](std::exception_ptr e) {
    failure = e;
    done = true;
  });
  io.restart();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done && std::chrono::steady_clock::now() < deadline) {
    io.run_one_for(std::chrono::milliseconds(50));
  }
  if (failure) std::rethrow_exception(failure);
  ASSERT_TRUE(done) << "the test coroutine did not finish within 10 s";
}

// Runs `io` until `condition` holds, at most 10 s.
template <class Condition>
void run_until(asio::io_context& io, Condition condition) {
  io.restart();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!condition() && std::chrono::steady_clock::now() < deadline) {
    io.run_one_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(condition()) << "condition not reached within 10 s";
}

inline Task<void> sleep_for(std::chrono::milliseconds delay) {
  asio::steady_timer timer(co_await asio::this_coro::executor, delay);
  co_await timer.async_wait(kAsTuple);
}

// A one-shot event: wait() completes once set() has been called (before or after).
class Signal {
 public:
  explicit Signal(asio::io_context& io) : timer_(io, asio::steady_timer::time_point::max()) {}
  void set() {
    set_ = true;
    timer_.cancel();
  }
  Task<void> wait() {
    while (!set_) co_await timer_.async_wait(kAsTuple);
  }

 private:
  asio::steady_timer timer_;
  bool set_ = false;
};

class ScriptServer;

// One accepted connection, as the script sees it.
struct ScriptConn {
  ScriptConn(tcp::socket s, ScriptServer& owner, int i)
      : socket(std::move(s)), server(owner), index(i) {}

  // One request: the head, then a Content-Length body if announced. nullopt at EOF.
  Task<std::optional<std::string>> read_request();
  Task<bool> write(std::string_view bytes) {
    auto [ec, n] = co_await asio::async_write(socket, asio::buffer(bytes), kAsTuple);
    co_return !ec;
  }
  // Whether the peer has closed: reads until EOF (true) or an error/unexpected byte (false).
  Task<bool> peer_closed() {
    char byte = 0;
    auto [ec, n] = co_await socket.async_read_some(asio::buffer(&byte, 1), kAsTuple);
    co_return ec == asio::error::eof;
  }
  void close() {
    boost::system::error_code ignored;
    socket.shutdown(tcp::socket::shutdown_both, ignored);
    socket.close(ignored);
  }

  tcp::socket socket;
  ScriptServer& server;
  int index;  // 0 for the first accepted connection
  int requests = 0;
  std::string buffer;
};

// Accepts on 127.0.0.1 (ephemeral port) and runs `script` for every connection.
class ScriptServer {
 public:
  using Script = std::function<Task<void>(ScriptConn&)>;

  ScriptServer(asio::io_context& io, Script script)
      : acceptor_(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)),
        script_(std::move(script)) {
    asio::co_spawn(io, accept_loop(), asio::detached);
  }
  ~ScriptServer() {
    boost::system::error_code ignored;
    acceptor_.close(ignored);
  }

  Endpoint endpoint() const { return Endpoint{"127.0.0.1", acceptor_.local_endpoint().port()}; }
  int connections() const { return connections_; }
  // Every request read by any connection, in order.
  std::vector<std::string> requests;
  // Requests read per connection index.
  std::vector<int> requests_per_connection;

 private:
  Task<void> accept_loop() {
    for (;;) {
      auto [ec, socket] = co_await acceptor_.async_accept(kAsTuple);
      if (ec) co_return;
      socket.set_option(tcp::no_delay(true));
      auto conn = std::make_shared<ScriptConn>(std::move(socket), *this, connections_++);
      requests_per_connection.push_back(0);
      asio::co_spawn(acceptor_.get_executor(), serve(conn), asio::detached);
    }
  }
  Task<void> serve(std::shared_ptr<ScriptConn> conn) { co_await script_(*conn); }

  tcp::acceptor acceptor_;
  Script script_;
  int connections_ = 0;
};

inline Task<std::optional<std::string>> ScriptConn::read_request() {
  auto [ec, head_end] =
      co_await asio::async_read_until(socket, asio::dynamic_buffer(buffer), "\r\n\r\n", kAsTuple);
  if (ec) co_return std::nullopt;
  std::string request = buffer.substr(0, head_end);
  buffer.erase(0, head_end);
  std::size_t body_bytes = 0;
  std::string lower = request;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (auto at = lower.find("\r\ncontent-length:"); at != std::string::npos) {
    body_bytes = std::stoul(lower.substr(at + 17));
  }
  if (buffer.size() < body_bytes) {
    auto [body_ec, n] =
        co_await asio::async_read(socket, asio::dynamic_buffer(buffer),
                                  asio::transfer_exactly(body_bytes - buffer.size()), kAsTuple);
    if (body_ec) co_return std::nullopt;
  }
  request += buffer.substr(0, body_bytes);
  buffer.erase(0, body_bytes);
  ++requests;
  server.requests.push_back(request);
  ++server.requests_per_connection[static_cast<std::size_t>(index)];
  co_return request;
}

// A complete response with a Content-Length body.
inline std::string ok_response(std::string_view body, std::string_view extra_headers = {}) {
  return "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" +
         std::string(extra_headers) + "\r\n" + std::string(body);
}

// Serves every request on a connection with `body`, keeping the connection alive.
inline ScriptServer::Script serve_forever(std::string body) {
  return [body](ScriptConn& conn) -> Task<void> {
    while (co_await conn.read_request()) {
      if (!co_await conn.write(ok_response(body))) co_return;
    }
  };
}

}  // namespace omni::http::testing
