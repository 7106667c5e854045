#include "server_connection.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <cstdio>
#include <exception>

namespace omni::http::detail {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using boost::system::error_code;
constexpr auto kAwait = asio::as_tuple(asio::use_awaitable);

constexpr std::size_t kReadChunk = 16 * 1024;
// After the server decides to close, it stops sending and reads (and drops) what the client
// still sends, briefly, so that the kernel does not answer unread bytes with a reset that
// could destroy the response before the client read it.
constexpr Duration kLingerTime = std::chrono::seconds(1);
constexpr std::size_t kLingerMaxBytes = 256 * 1024;
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

std::string describe(const Connection::Socket& socket) {
  error_code ec;
  const auto endpoint = socket.remote_endpoint(ec);
  if (ec) return {};
  const auto address = endpoint.address();
  const std::string host = address.is_v6() ? "[" + address.to_string() + "]" : address.to_string();
  return host + ":" + std::to_string(endpoint.port());
}

bool is_disconnect(const error_code& ec) {
  return ec == http::error::end_of_stream || ec == http::error::need_more ||
         ec == http::error::partial_message || ec == asio::error::eof ||
         ec == asio::error::connection_reset || ec == asio::error::operation_aborted ||
         ec == asio::error::bad_descriptor || ec == asio::error::broken_pipe;
}

}  // namespace

Connection::Connection(ServerCore& core, Worker& worker, Socket socket, Mode mode)
    : core_(core),
      worker_(worker),
      socket_(std::move(socket)),
      mode_(mode),
      remote_(describe(socket_)),
      watchdog_(socket_.get_executor(), socket_) {
  head_.reserve(512);
  // The writer tries each write synchronously first (write_now.hpp); it must never block.
  error_code ignored;
  socket_.non_blocking(true, ignored);
}

Task<void> Connection::serve(std::shared_ptr<Connection> self) { co_await self->run(); }

Task<void> Connection::run() {
  worker_.connections.insert(this);
  try {
    if (mode_ == Mode::kReject) {
      co_await answer_error(503, "server is at its connection limit");
    } else {
      co_await serve_requests();
    }
  } catch (const std::exception& e) {
    // Cancellation by stop() lands here; anything else is a bug worth a line on stderr.
    if (!force_closed_)
      std::fprintf(stderr, "omni http: connection %s failed: %s\n", remote_.c_str(), e.what());
  } catch (...) {
    std::fprintf(stderr, "omni http: connection %s failed\n", remote_.c_str());
  }
  close();
  watchdog_.disarm();
  worker_.connections.erase(this);
  if (mode_ == Mode::kServe) core_.connection_closed();
}

Task<void> Connection::serve_requests() {
  bool first = true;
  while (!stopping()) {
    const ReadResult result = co_await read_request(first);
    first = false;
    if (result == ReadResult::kClosed) co_return;
    if (result == ReadResult::kRejected) {
      // Timeouts are counted where they are detected; everything else here is bad input.
      if (rejection_.status != 408)
        core_.counters.bad_requests.fetch_add(1, std::memory_order_relaxed);
      co_await answer_error(rejection_.status, rejection_.message);
      co_return;
    }
    if (!co_await handle_request()) {
      if (!force_closed_) co_await linger_close();
      co_return;
    }
  }
}

// Reads and parses the request head. The head is parsed here with parser.put() on the
// connection's buffer rather than with http::async_read_header: the composed operation
// costs a measurable share of a small request (see bench/http_echo), and doing it by hand
// also gives the two deadlines their meaning: silence before the first byte is idleness
// (plain close), a head still incomplete at header_timeout after it is a slow client (408).
Task<Connection::ReadResult> Connection::read_request(bool first) {
  busy_ = false;
  parser_.emplace();
  configure_parser(*parser_,
                   ParseLimits{core_.options.max_header_bytes, core_.options.max_body_bytes});
  bool started = buffer_.size() > 0;
  set_deadline(started || first ? core_.options.header_timeout : core_.options.idle_timeout);
  for (;;) {
    if (buffer_.size() > 0) {
      error_code ec;
      buffer_.consume(parser_->put(buffer_.data(), ec));
      if (!ec && parser_->is_header_done()) break;
      if (ec && ec != http::error::need_more) co_return read_failed(ec);
    }
    auto [ec, n] = co_await socket_.async_read_some(buffer_.prepare(kReadChunk), kAwait);
    if (ec && started) co_return read_failed(ec);
    if (ec) {
      clear_deadline();
      co_return ReadResult::kClosed;  // idle, closed or stopped between requests
    }
    buffer_.commit(n);
    if (!started) {
      started = true;
      set_deadline(core_.options.header_timeout);
    }
  }
  clear_deadline();
  busy_ = true;
  if (const auto rejection = check_head(*parser_)) {
    rejection_ = *rejection;
    co_return ReadResult::kRejected;
  }
  // A small body usually arrives with its head: parse what is buffered before reading more
  // (http::async_read would post its completion when the buffer alone sufficed).
  while (!parser_->is_done() && buffer_.size() > 0) {
    error_code ec;
    buffer_.consume(parser_->put(buffer_.data(), ec));
    if (ec == http::error::need_more) break;
    if (ec) co_return read_failed(ec);
  }
  if (parser_->is_done()) co_return ReadResult::kRequest;
  co_return co_await read_body();
}

Task<Connection::ReadResult> Connection::read_body() {
  if (expects_continue(*parser_)) {
    begin_write();
    auto [ec, n] = co_await asio::async_write(
        socket_, asio::buffer(kContinue.data(), kContinue.size()), kAwait);
    if (end_write(ec)) co_return ReadResult::kClosed;
  }
  set_deadline(core_.options.body_timeout);
  auto [ec, n] = co_await http::async_read(socket_, buffer_, *parser_, kAwait);
  if (ec) co_return read_failed(ec);
  clear_deadline();
  co_return ReadResult::kRequest;
}

Connection::ReadResult Connection::read_failed(const error_code& ec) {
  const bool timed_out = watchdog_.expired();
  clear_deadline();
  if (timed_out) {
    core_.counters.timeouts.fetch_add(1, std::memory_order_relaxed);
    rejection_ = Rejection{408, "timed out reading the request"};
    return ReadResult::kRejected;
  }
  if (is_disconnect(ec) || force_closed_) return ReadResult::kClosed;
  rejection_ = classify_parse_error(ec);
  return ReadResult::kRejected;
}

// Runs the handler for the parsed request; true when the connection may carry another one.
Task<bool> Connection::handle_request() {
  to_request(*parser_, request_);
  request_.remote = remote_;
  writer_.reset(
      RequestInfo{request_.method == Method::kHead, parser_->version(), parser_->keep_alive()});
  core_.counters.requests.fetch_add(1, std::memory_order_relaxed);
  bool threw = false;
  try {
    co_await core_.handler(request_, writer_);
  } catch (const std::exception& e) {
    threw = true;
    if (!force_closed_)
      std::fprintf(stderr, "omni http: handler for %s threw: %s\n", request_.target.c_str(),
                   e.what());
  } catch (...) {
    threw = true;
    if (!force_closed_)
      std::fprintf(stderr, "omni http: handler for %s threw\n", request_.target.c_str());
  }
  writer_.unwatch_close();  // a watch the handler left behind must not outlive it
  if (force_closed_) co_return false;
  if (!writer_.started()) {
    if (threw)
      writer_.reset(RequestInfo{request_.method == Method::kHead, parser_->version(), false});
    (void)co_await writer_.send(error_response(
        500, threw ? "the request handler failed" : "the request handler sent no response"));
  }
  co_return !threw && writer_.reusable() && !stopping();
}

Task<void> Connection::answer_error(int status, std::string_view message) {
  writer_.reset(RequestInfo{false, 11, false});
  busy_ = true;
  (void)co_await writer_.send(error_response(status, message));
  co_await linger_close();
}

Task<void> Connection::linger_close() {
  error_code ec;
  socket_.shutdown(Socket::shutdown_send, ec);
  if (ec) co_return;
  busy_ = false;  // stop() may cut the linger short
  if (stopping()) co_return;
  set_deadline(kLingerTime);
  std::size_t drained = 0;
  while (drained < kLingerMaxBytes) {
    buffer_.clear();
    auto [rec, n] = co_await socket_.async_read_some(buffer_.prepare(kReadChunk), kAwait);
    if (rec) break;
    drained += n;
  }
  clear_deadline();
}

error_code Connection::end_write(error_code ec) noexcept {
  const bool timed_out = watchdog_.expired();
  clear_deadline();
  if (ec && timed_out) {
    core_.counters.timeouts.fetch_add(1, std::memory_order_relaxed);
    ec = asio::error::timed_out;
  }
  return ec;
}

void Connection::close() noexcept {
  error_code ignored;
  socket_.close(ignored);
}

void Connection::on_stop_requested() {
  if (busy_) return;
  error_code ignored;
  socket_.cancel(ignored);
}

void Connection::force_close() {
  force_closed_ = true;
  cancel_.emit(asio::cancellation_type::terminal);
  close();
}


}  // namespace omni::http::detail
