// One accepted TCP connection: a coroutine that reads requests, runs the handler and writes
// responses, plus the ResponseWriter it hands to the handler. Private to omni_http.
//
// Timeouts use a per-connection watchdog (socket_watchdog.hpp) instead of beast::tcp_stream's
// expiry: tcp_stream closes the socket when its timer fires, which would make the 408 for a
// slow request head impossible, and it re-arms a timer for every operation. Here setting a
// deadline is one clock read, and the watchdog cancels (not closes) the socket's pending
// operation once the deadline has passed.
#pragma once

#include <array>
#include <boost/asio/basic_waitable_timer.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/buffers_suffix.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/system/error_code.hpp>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <string>

#include "request_parse.hpp"
#include "server_internal.hpp"
#include "socket_watchdog.hpp"

namespace omni::http::detail {

using WriteBuffers = std::array<boost::asio::const_buffer, 3>;

// What the writer needs to know about the request it answers.
struct RequestInfo {
  bool head = false;        // HEAD: headers only
  unsigned version = 11;    // 10 or 11
  bool keep_alive = false;  // the client allows another request on this connection
};

class ConnectionWriter final : public ResponseWriter {
 public:
  explicit ConnectionWriter(Connection& connection) : connection_(connection) {}

  void reset(const RequestInfo& info) noexcept {
    info_ = info;
    state_ = State::kNone;
    peer_gone_ = false;
    backlog_.clear();
    flush_error_ = {};
    unwatch_close();
  }
  Task<Status> send(Response response) override;
  Task<Status> begin_stream(int status, Headers headers) override;
  Task<Status> write_chunk(std::string_view data) override;
  Task<Status> end_stream() override;
  bool started() const noexcept override { return state_ != State::kNone; }

  // The response went out whole and the connection may carry another request.
  bool reusable() const noexcept { return state_ == State::kDone && keep_alive_; }

  bool watch_close(std::function<void()> on_gone) override;
  void unwatch_close() override;
  // A close watch saw the client close (or half-close) its connection during this request.
  bool peer_gone() const noexcept { return peer_gone_; }

 private:
  struct CloseWatch;  // shared with the pending wait, which may complete after an unwatch
  void arm_close_watch(const std::shared_ptr<CloseWatch>& watch);

  enum class State { kNone, kStreaming, kDone, kFailed };

  // Writes the status line and headers into the connection's head buffer.
  void build_head(int status, const Headers& headers, std::optional<std::size_t> length);
  // A write's buffers, advanced past what the socket has taken.
  using Pending = boost::beast::buffers_suffix<WriteBuffers>;
  Task<boost::system::error_code> write_rest(Pending& rest);
  // Records a write's outcome in state_.
  Status finish_write(boost::system::error_code ec);
  Status misuse(std::string_view what) const;

  // A stream's bytes the kernel did not take at once: appended to backlog_, written out by
  // one background flush at a time (sending_ holds what its async_write has in flight).
  void queue(const Pending& rest);
  void start_flush();
  static Task<void> flush(std::shared_ptr<Connection> owner, ConnectionWriter* self);
  Task<void> wait_for_flush(std::size_t at_most);
  std::size_t backlog() const noexcept { return backlog_.size() + sending_.size(); }

  Connection& connection_;
  RequestInfo info_;
  std::string backlog_;
  std::string sending_;
  bool flushing_ = false;
  boost::system::error_code flush_error_;
  std::optional<boost::asio::basic_waitable_timer<
      std::chrono::steady_clock, boost::asio::wait_traits<std::chrono::steady_clock>,
      IoExecutor>>
      flushed_;  // cancelled whenever a flush write completes: wakes a waiting writer
  State state_ = State::kNone;
  bool keep_alive_ = false;
  bool chunked_ = false;
  std::array<char, 24> chunk_size_{};
  std::shared_ptr<CloseWatch> close_watch_;
  bool peer_gone_ = false;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // Bound to the io_context's own executor type, not any_io_executor: the type-erased
  // executor's copies showed up in the request path's profile.
  using Socket = TcpSocket;
  enum class Mode { kServe, kReject };

  Connection(ServerCore& core, Worker& worker, Socket socket, Mode mode);

  // The whole life of the connection; owns it through `self`. Never throws.
  static Task<void> serve(std::shared_ptr<Connection> self);

  // stop(): an idle connection (between requests, or lingering) closes now; a busy one
  // finishes its request and then closes. Runs on the connection's thread.
  void on_stop_requested();
  // stop() after the grace period: cancels whatever the coroutine awaits and closes.
  void force_close();
  // The server is at its connection cap: an idle connection (no request in progress) closes
  // quietly to make room. Runs on the connection's thread.
  void shed();
  boost::asio::cancellation_slot cancellation_slot() { return cancel_.slot(); }

  // For the writer, which awaits async_write on socket() itself (an extra coroutine frame
  // per write measurably costs throughput): begin_write() arms the write deadline,
  // end_write() clears it and turns a cancellation by the watchdog into timed_out.
  Socket& socket() noexcept { return socket_; }
  // The TLS layer over socket(), or null for plain HTTP.
  using TlsStream = boost::asio::ssl::stream<Socket&>;
  TlsStream* tls() noexcept { return tls_.get(); }
  void begin_write() { set_deadline(core_.options.write_timeout); }
  boost::system::error_code end_write(boost::system::error_code ec) noexcept;
  std::string& head_buffer() noexcept { return head_; }
  // Bytes received past the current request (a pipelined next one).
  bool has_buffered_input() const noexcept { return buffer_.size() > 0; }
  const ServerOptions& options() const noexcept { return core_.options; }
  bool stopping() const noexcept { return core_.stopping.load(std::memory_order_relaxed); }

 private:
  enum class ReadResult { kRequest, kClosed, kRejected };

  Task<void> run();
  Task<void> serve_requests();
  Task<ReadResult> read_request(bool first);
  Task<ReadResult> read_head(bool first);
  Task<ReadResult> read_body();
  ReadResult read_failed(const boost::system::error_code& ec);
  ReadResult refuse(Rejection rejection);
  Task<bool> handle_request();
  Task<void> answer_error(int status, std::string_view message);
  // Sends a response of the server's own, then closes.
  Task<void> answer_refusal(Response response);
  void report_refused(int status, std::string_view reason);
  // While waiting for a request with no byte received, the connection is sheddable.
  void enter_idle();
  void leave_idle() noexcept;
  Task<void> linger_close();
  // HTTPS: the handshake, under header_timeout; false when the connection must close (a
  // plain-HTTP client was answered 400, or the handshake failed: both reported).
  Task<bool> start_tls();
  void close() noexcept;

  void set_deadline(Duration timeout) { watchdog_.expires_after(timeout); }
  void clear_deadline() noexcept { watchdog_.idle(); }

  ServerCore& core_;
  Worker& worker_;
  Socket socket_;
  Mode mode_;
  std::string remote_;
  boost::beast::flat_buffer buffer_;
  std::optional<RequestParser> parser_;
  Request request_;
  ConnectionWriter writer_{*this};
  std::string head_;
  Rejection rejection_;

  std::shared_ptr<boost::asio::ssl::context> tls_context_;  // the certificate tls_ shook hands with
  std::unique_ptr<TlsStream> tls_;    // over socket_; declared after it: destroyed first
  ConnectionWatchdog watchdog_;       // declared after socket_: destroyed first
  bool busy_ = false;                 // inside a request: stop() lets it finish
  bool head_parsed_ = false;          // request_ holds this request's head
  std::optional<Response> screened_;  // what screen_head answered instead of the handler
  std::list<Connection*>::iterator idle_position_;
  bool idle_ = false;
  std::chrono::steady_clock::time_point request_started_{};
  bool force_closed_ = false;
  boost::asio::cancellation_signal cancel_;
};

}  // namespace omni::http::detail
