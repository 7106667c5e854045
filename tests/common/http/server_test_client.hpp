// Test-side helpers for the HTTP server tests: a raw-bytes client on plain Asio sockets
// (Beast only parses what comes back), with every read bounded by a timeout, and a poll
// helper for server-side counters that settle asynchronously.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "omni/http/server.hpp"

namespace omni::http::testing {

namespace asio = boost::asio;
namespace beast_http = boost::beast::http;
using tcp = asio::ip::tcp;
using RawResponse = beast_http::response<beast_http::string_body>;
using namespace std::chrono_literals;

// Polls `condition` until it holds or `limit` passes; for effects that happen on the
// server's threads after the client has seen its answer (counters, closes).
inline bool eventually(const std::function<bool()>& condition,
                       std::chrono::milliseconds limit = 5000ms) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

class RawClient {
 public:
  explicit RawClient(std::uint16_t port) : socket_(io_) {
    boost::system::error_code ec;
    socket_.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
    EXPECT_FALSE(ec) << ec.message();
  }

  bool write(std::string_view bytes) {
    boost::system::error_code ec;
    asio::write(socket_, asio::buffer(bytes.data(), bytes.size()), ec);
    return !ec;
  }

  // One complete response, or nullopt if none arrived whole within `timeout`.
  std::optional<RawResponse> read_response(std::chrono::milliseconds timeout = 5000ms,
                                           bool head = false) {
    beast_http::response_parser<beast_http::string_body> parser;
    parser.skip(head);
    parser.body_limit(64 * 1024 * 1024);
    boost::system::error_code result = asio::error::timed_out;
    bool done = run_for(timeout, [&](bool& finished) {
      beast_http::async_read(socket_, buffer_, parser,
                             [&](boost::system::error_code ec, std::size_t) {
                               result = ec;
                               finished = true;
                             });
    });
    if (!done || result) return std::nullopt;
    return parser.release();
  }

  // Reads raw bytes until received() contains `needle`.
  bool read_until(std::string_view needle, std::chrono::milliseconds timeout = 5000ms) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (received_.find(needle) == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left <= 0ms || !read_some(left)) return false;
    }
    return true;
  }
  std::string& received() { return received_; }

  // Reads until the server closes the connection (EOF or reset); false if it is still open
  // after `timeout`. What arrived before the close is kept in received().
  bool wait_closed(std::chrono::milliseconds timeout = 5000ms) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left <= 0ms) return false;
      if (!read_some(left)) return !timed_out_;
    }
  }

  void close() {
    boost::system::error_code ignored;
    socket_.close(ignored);
  }
  // Half-closes: no more bytes from this side, but the client can still read.
  void shutdown_send() {
    boost::system::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
  }

 private:
  // Appends one read's worth to received_; false on error, close or timeout.
  bool read_some(std::chrono::milliseconds timeout) {
    if (buffer_.size() > 0) {  // bytes a response read already pulled in
      received_.append(static_cast<const char*>(buffer_.data().data()), buffer_.size());
      buffer_.clear();
      return true;
    }
    std::array<char, 4096> chunk{};
    boost::system::error_code result;
    std::size_t got = 0;
    timed_out_ = !run_for(timeout, [&](bool& finished) {
      socket_.async_read_some(asio::buffer(chunk),
                              [&](boost::system::error_code ec, std::size_t n) {
                                result = ec;
                                got = n;
                                finished = true;
                              });
    });
    if (timed_out_ || result) return false;
    received_.append(chunk.data(), got);
    return true;
  }

  // Starts an operation and runs the client's io_context until it completes or `timeout`
  // passes (then the operation is cancelled). True when it completed in time.
  template <class Start>
  bool run_for(std::chrono::milliseconds timeout, Start start) {
    bool finished = false;
    start(finished);
    io_.restart();
    io_.run_for(timeout);
    if (finished) return true;
    boost::system::error_code ignored;
    socket_.cancel(ignored);
    io_.restart();
    io_.run();
    return false;
  }

  asio::io_context io_;
  tcp::socket socket_;
  boost::beast::flat_buffer buffer_;
  std::string received_;
  bool timed_out_ = false;
};

// A started server for one test; stops in the destructor.
class RunningServer {
 public:
  RunningServer(ServerOptions options, Handler handler, ServerHooks hooks = {})
      : server_(std::move(options), std::move(handler), std::move(hooks)) {
    const Status started = server_.start();
    EXPECT_TRUE(started.ok()) << (started.ok() ? "" : started.error().to_string());
  }
  Server& operator*() { return server_; }
  Server* operator->() { return &server_; }
  std::uint16_t port() const { return server_.port(); }

 private:
  Server server_;
};

}  // namespace omni::http::testing
