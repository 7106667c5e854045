#include "server_connection.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/error.hpp>
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

// A TLS record header opening a handshake: content type 22, protocol major version 3. No HTTP
// request starts with byte 0x16.
template <class Buffer>
bool looks_like_tls(const Buffer& buffer) {
  if (buffer.size() < 2) return false;
  const auto* bytes = static_cast<const unsigned char*>(buffer.data().data());
  return bytes[0] == 0x16 && bytes[1] == 0x03;
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
  request_started_ = std::chrono::steady_clock::now();
  try {
    if (mode_ == Mode::kReject) {
      report_refused(503, "the server is at its connection limit and no connection is idle");
      co_await answer_error(503, "server is at its connection limit");
    } else if (!core_.options.tls || co_await start_tls()) {
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
  leave_idle();
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
      report_refused(rejection_.status, rejection_.message);
      co_await answer_error(rejection_.status, rejection_.message);
      co_return;
    }
    if (screened_) {
      core_.counters.screened.fetch_add(1, std::memory_order_relaxed);
      Response answer = std::move(*screened_);
      screened_.reset();
      report_refused(answer.status, "refused on its head");
      co_await answer_refusal(std::move(answer));
      co_return;
    }
    if (!co_await handle_request()) {
      if (!force_closed_) co_await linger_close();
      co_return;
    }
  }
}

// One request: its head (read_head), the checks that need only the head (method, the
// application's screen), then its body (read_body). A refusal leaves rejection_ set.
Task<Connection::ReadResult> Connection::read_request(bool first) {
  busy_ = false;
  head_parsed_ = false;
  screened_.reset();
  parser_.emplace();
  configure_parser(*parser_,
                   ParseLimits{core_.options.max_header_bytes, core_.options.max_body_bytes});
  if (const ReadResult head = co_await read_head(first); head != ReadResult::kRequest) {
    co_return head;
  }
  busy_ = true;
  if (const auto rejection = check_head(*parser_)) co_return refuse(*rejection);
  parser_->move_head_into(request_);
  request_.remote = remote_;
  head_parsed_ = true;
  if (core_.hooks.screen_head) {
    screened_ = core_.hooks.screen_head(request_);
    if (screened_) co_return ReadResult::kRequest;
  }
  if (const ReadResult body = co_await read_body(); body != ReadResult::kRequest) co_return body;
  parser_->move_body_into(request_);
  co_return ReadResult::kRequest;
}

// Reads and parses the request head. The head is parsed here with parser.put() on the
// connection's buffer rather than with http::async_read_header: the composed operation
// costs a measurable share of a small request (see bench/http_echo), and doing it by hand
// also gives the two deadlines their meaning: silence before the first byte is idleness
// (plain close), a head still incomplete at header_timeout after it is a slow client (408).
Task<Connection::ReadResult> Connection::read_head(bool first) {
  bool started = buffer_.size() > 0;
  if (started) {
    request_started_ = std::chrono::steady_clock::now();
  } else {
    enter_idle();
  }
  set_deadline(started || first ? core_.options.header_timeout : core_.options.idle_timeout);
  for (;;) {
    if (buffer_.size() > 0) {
      error_code ec;
      buffer_.consume(parser_->put(buffer_.data(), ec));
      if (!ec && parser_->is_header_done()) break;
      if (ec && ec != http::error::need_more) co_return read_failed(ec);
    }
    const auto space = buffer_.prepare(kReadChunk);
    std::tuple<error_code, std::size_t> got;
    if (tls_) {
      got = co_await tls_->async_read_some(space, kAwait);
    } else {
      got = co_await socket_.async_read_some(space, kAwait);
    }
    auto [ec, n] = got;
    if (ec && started) co_return read_failed(ec);
    if (ec) {
      leave_idle();
      clear_deadline();
      co_return ReadResult::kClosed;  // idle, shed, closed or stopped between requests
    }
    buffer_.commit(n);
    if (!started && !tls_ && looks_like_tls(buffer_)) {
      // A TLS client on a plain port: an HTTP answer would be garbage to it. Close, and say why.
      leave_idle();
      clear_deadline();
      core_.counters.bad_requests.fetch_add(1, std::memory_order_relaxed);
      report_refused(0, "a TLS handshake sent to a plain HTTP port");
      co_return ReadResult::kClosed;
    }
    if (!started) {
      started = true;
      leave_idle();
      request_started_ = std::chrono::steady_clock::now();
      set_deadline(core_.options.header_timeout);
    }
  }
  clear_deadline();
  co_return ReadResult::kRequest;
}

// Reads the body by hand too: what is buffered first (a small body usually arrives with its
// head, and http::async_read would post its completion when the buffer alone sufficed),
// then the socket, never holding more than max_buffered_body_bytes() unparsed, so a chunk
// header line or a trailer section without end cannot grow the connection's memory.
Task<Connection::ReadResult> Connection::read_body() {
  if (!parser_->is_done() && expects_continue(*parser_)) {
    begin_write();
    auto [ec, n] = co_await asio::async_write(
        socket_, asio::buffer(kContinue.data(), kContinue.size()), kAwait);
    if (end_write(ec)) co_return ReadResult::kClosed;
  }
  const std::size_t cap = max_buffered_body_bytes(
      ParseLimits{core_.options.max_header_bytes, core_.options.max_body_bytes});
  bool deadline_set = false;
  for (;;) {
    while (!parser_->is_done() && buffer_.size() > 0) {
      error_code ec;
      const std::size_t used = parser_->put(buffer_.data(), ec);
      buffer_.consume(used);
      if (ec == http::error::need_more || (!ec && used == 0)) break;
      if (ec) co_return read_failed(ec);
    }
    if (parser_->is_done()) break;
    if (buffer_.size() >= cap) co_return read_failed(http::error::buffer_overflow);
    if (!deadline_set) {
      set_deadline(core_.options.body_timeout);
      deadline_set = true;
    }
    const std::size_t room = std::min(kReadChunk, cap - buffer_.size());
    const auto space = buffer_.prepare(room);
    std::tuple<error_code, std::size_t> got;
    if (tls_) {
      got = co_await tls_->async_read_some(space, kAwait);
    } else {
      got = co_await socket_.async_read_some(space, kAwait);
    }
    auto [ec, n] = got;
    if (ec) co_return read_failed(ec);
    buffer_.commit(n);
  }
  if (deadline_set) clear_deadline();
  co_return ReadResult::kRequest;
}

Connection::ReadResult Connection::read_failed(const error_code& ec) {
  const bool timed_out = watchdog_.expired();
  clear_deadline();
  if (timed_out) {
    core_.counters.timeouts.fetch_add(1, std::memory_order_relaxed);
    return refuse(Rejection{408, "timed out reading the request"});
  }
  if (is_disconnect(ec) || force_closed_) return ReadResult::kClosed;
  return refuse(classify_parse_error(*parser_, ec));
}

Connection::ReadResult Connection::refuse(Rejection rejection) {
  rejection_ = rejection;
  return ReadResult::kRejected;
}

// Runs the handler for the parsed request; true when the connection may carry another one.
Task<bool> Connection::handle_request() {
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
    if (!threw && writer_.peer_gone()) {
      // The client closed (or half-closed) its connection while the handler waited, and the
      // handler gave up on it: there is nobody to answer, and a 500 would contradict what
      // the handler logged. Close quietly.
      core_.counters.abandoned.fetch_add(1, std::memory_order_relaxed);
      co_return false;
    }
    if (threw)
      writer_.reset(RequestInfo{request_.method == Method::kHead, parser_->version(), false});
    const std::string_view reason =
        threw ? "the request handler failed" : "the request handler sent no response";
    report_refused(500, reason);
    (void)co_await writer_.send(error_response(500, reason));
  }
  co_return !threw && writer_.reusable() && !stopping();
}

Task<void> Connection::answer_error(int status, std::string_view message) {
  co_await answer_refusal(error_response(status, message));
}

Task<void> Connection::answer_refusal(Response response) {
  writer_.reset(RequestInfo{head_parsed_ && request_.method == Method::kHead, 11, false});
  busy_ = true;
  (void)co_await writer_.send(std::move(response));
  co_await linger_close();
}

void Connection::report_refused(int status, std::string_view reason) {
  if (!core_.hooks.on_refused) return;
  RefusedRequest refused;
  refused.status = status;
  refused.reason = reason;
  refused.remote = remote_;
  if (head_parsed_) {
    refused.method = request_.method;
    refused.target = request_.target;
    refused.headers = &request_.headers;
  } else if (parser_ && !parser_->target().empty()) {
    // Refused while the head was parsed (framing, size): what the parser has read of it.
    refused.method = parser_->method();
    refused.target = parser_->target();
    refused.headers = &parser_->headers();
  }
  refused.elapsed = std::chrono::steady_clock::now() - request_started_;
  core_.hooks.on_refused(refused);
}

void Connection::enter_idle() {
  if (idle_) return;
  idle_position_ = worker_.idle.insert(worker_.idle.end(), this);
  idle_ = true;
  worker_.idle_count.fetch_add(1, std::memory_order_relaxed);
  core_.counters.idle.fetch_add(1, std::memory_order_relaxed);
}

void Connection::leave_idle() noexcept {
  if (!idle_) return;
  worker_.idle.erase(idle_position_);
  idle_ = false;
  worker_.idle_count.fetch_sub(1, std::memory_order_relaxed);
  core_.counters.idle.fetch_sub(1, std::memory_order_relaxed);
}

void Connection::shed() {
  if (!idle_) return;
  leave_idle();
  core_.counters.idle_shed.fetch_add(1, std::memory_order_relaxed);
  error_code ignored;
  socket_.cancel(ignored);  // the pending read ends; the connection closes without a word
}

Task<void> Connection::linger_close() {
  error_code ec;
  if (tls_) {
    // close_notify, without waiting for the client's: the socket is non-blocking, so this
    // sends the alert and returns (the TCP linger below reads whatever comes back).
    error_code ignored;
    tls_->shutdown(ignored);
  }
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

Task<bool> Connection::start_tls() {
  // A TLS client speaks first, with a handshake record (content type 22); anything else is
  // plain HTTP sent to an HTTPS port, answered in plain HTTP as nginx does.
  set_deadline(core_.options.header_timeout);
  char first = 0;
  auto [pec, pn] = co_await socket_.async_receive(asio::buffer(&first, 1),
                                                  asio::socket_base::message_peek, kAwait);
  if (pec || pn == 0) {
    clear_deadline();
    co_return false;  // closed (or timed out) before saying anything: nothing to report
  }
  if (first != 0x16) {
    clear_deadline();
    core_.counters.bad_requests.fetch_add(1, std::memory_order_relaxed);
    report_refused(400, "plain HTTP sent to the HTTPS port");
    co_await answer_error(400, "this port speaks HTTPS: plain HTTP was sent to it");
    co_return false;
  }
  const auto context = core_.options.tls->current();
  tls_ = std::make_unique<TlsStream>(socket_, *context);
  tls_context_ = context;
  auto [ec] = co_await tls_->async_handshake(asio::ssl::stream_base::server, kAwait);
  const bool timed_out = watchdog_.expired();
  clear_deadline();
  if (ec) {
    if (timed_out) core_.counters.timeouts.fetch_add(1, std::memory_order_relaxed);
    report_refused(0,
                   timed_out ? "TLS handshake timed out" : "TLS handshake failed: " + ec.message());
    tls_.reset();
    co_return false;
  }
  co_return true;
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
