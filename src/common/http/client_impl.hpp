// Private to the HTTP client: the connection, the pool (ClientCore) and the exchange
// helpers shared by client_pool.cpp and client_exchange.cpp. Beast appears here, never in
// the public header.
#pragma once

#include <algorithm>
#include <boost/asio/error.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "omni/http/client.hpp"
#include "response_parse.hpp"
#include "socket_watchdog.hpp"

namespace omni::http::detail {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;

using TlsStream = boost::asio::ssl::stream<TcpSocket&>;

// One TCP connection to one endpoint, with the bytes read past the last parsed message; TLS
// over it for an https endpoint. Every connect, handshake, write and read is bounded by the
// watchdog (see socket_watchdog.hpp), which cancels the socket's operation and so the TLS one
// above it.
struct PooledConnection {
  explicit PooledConnection(const IoExecutor& executor)
      : socket(executor), watchdog(executor, socket) {
    // Beast reads at most the buffer's free capacity (512 bytes while it is small): room for
    // 16 KiB lets one read take a burst of SSE events, which the stream then hands out as one
    // piece (fewer reads here, fewer writes to the client).
    buffer.reserve(kReadBufferBytes);
  }
  static constexpr std::size_t kReadBufferBytes = 16 * 1024;

  TcpSocket socket;
  std::shared_ptr<boost::asio::ssl::context> tls_context;  // what `tls` was made from
  std::unique_ptr<TlsStream> tls;  // over socket (declared after it: destroyed first); null: plain
  ConnectionWatchdog watchdog;     // after the socket: destroyed first
  beast::flat_buffer buffer;
  std::chrono::steady_clock::time_point idle_since;
  bool reused = false;  // it has completed an exchange before, so the server may have closed it
};
using ConnectionPtr = std::unique_ptr<PooledConnection>;

// An operation the watchdog cancelled fails with operation_aborted: that is a timeout.
inline boost::system::error_code after_watchdog(const boost::system::error_code& ec,
                                                const PooledConnection& connection) {
  if (ec == boost::asio::error::operation_aborted && connection.watchdog.expired()) {
    return beast::error::timeout;
  }
  return ec;
}

// A request ready for the wire: the request line and header fields (ending in the blank
// line), then the body.
struct WireRequest {
  std::string head;
  std::string body;
  bool head_request = false;  // its response has headers only, whatever they announce
};

// "<endpoint>: <during>: <what happened>", with the ErrorCode the failure deserves.
Error error_from(const boost::system::error_code& ec, const Endpoint& to, std::string_view during);

}  // namespace omni::http::detail

namespace omni::http::detail {

// The pool of idle keep-alive connections, per endpoint. Shared (shared_ptr) with every live
// ResponseStream so that a stream may outlive its Client: after shutdown() connections are
// no longer pooled, only closed.
//
// Idle expiry is lazy: every acquire() and release() first closes the connections idle for
// longer than idle_timeout. A timer would do it sooner but would also count as pending work
// on the executor, so io_context::run() would not return while anything sat in the pool.
// Connections the server closed meanwhile are caught by the check in acquire() instead.
struct ClientCore {
  // Throws std::invalid_argument unless `executor_in` is an io_context's.
  explicit ClientCore(boost::asio::any_io_executor executor_in, ClientOptions options_in);

  // A pooled connection (most recently used first) or, if none or `fresh_only`, a new one.
  Task<Result<ConnectionPtr>> acquire(const Endpoint& to, bool fresh_only);
  Task<Result<ConnectionPtr>> connect(const Endpoint& to);
  // The TLS handshake of a fresh connection to an https endpoint, under connect_timeout.
  Task<Status> start_tls(PooledConnection& connection, const Endpoint& to);
  // Back into the pool after a complete keep-alive exchange; closed if the pool is full.
  void release(const Endpoint& to, ConnectionPtr connection);
  void close_idle();
  void shutdown();
  std::size_t idle_count() const noexcept { return idle_total; }

  boost::asio::any_io_executor executor;
  IoExecutor io_executor;  // the same, unwrapped: what the sockets are bound to
  ClientOptions options;
  // Per endpoint, oldest first: expiry pops from the front, reuse takes from the back.
  struct EndpointHash {
    std::size_t operator()(const Endpoint& e) const noexcept {
      return std::hash<std::string>{}(e.host) * 31 + e.port;
    }
  };
  std::unordered_map<Endpoint, std::deque<ConnectionPtr>, EndpointHash> idle;
  std::size_t idle_total = 0;
  bool closed = false;
  // https endpoints: options.tls, or the system trust store once the first one is reached.
  std::shared_ptr<TlsClientConfig> tls;

 private:
  void expire_idle();
};

// A request written and its response head read; the body is still on the connection.
struct Exchange {
  ConnectionPtr connection;
  std::unique_ptr<ResponseParser> parser;
};

// While alive, an Abort given to a call cancels `connection`'s operations (abort() then
// completes them at once with operation_aborted).
class AbortBinding {
 public:
  AbortBinding(Abort* abort, PooledConnection& connection) : abort_(abort) {
    if (abort_) {
      abort_->on_abort([&connection] {
        boost::system::error_code ignored;
        connection.socket.cancel(ignored);
      });
    }
  }
  ~AbortBinding() {
    if (abort_) abort_->on_abort(nullptr);
  }
  AbortBinding(const AbortBinding&) = delete;
  AbortBinding& operator=(const AbortBinding&) = delete;

 private:
  Abort* abort_;
};
Error aborted_error(const Endpoint& to);

// Writes `wire` and reads the response head. A reused connection that fails before any
// response byte is replaced once by a fresh one; any other failure is final. An aborted
// call (`abort`) fails with kCancelled.
Task<Result<Exchange>> start_exchange(ClientCore& impl, const Endpoint& to, const WireRequest& wire,
                                      std::uint64_t body_limit, Abort* abort);
// One socket read at most (none if buffered bytes suffice), parsed into the parser's body
// buffer; every read under `timeout`, so it bounds silence rather than the whole response.
Task<boost::system::error_code> read_some(PooledConnection& connection, ResponseParser& parser,
                                          Duration timeout);
// The rest of the body into a Response (bounded by the parser's body limit).
Task<Result<Response>> read_whole(ClientCore& impl, const Endpoint& to, Exchange exchange,
                                  Abort* abort);
void copy_head(ResponseParser& parser, int& status, Headers& headers);
// The response is complete: pool the connection if it may serve another request.
void finish_exchange(ClientCore& impl, const Endpoint& to, Exchange& exchange);

}  // namespace omni::http::detail
