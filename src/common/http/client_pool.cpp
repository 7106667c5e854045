// The client's connection management: resolve, connect, pool idle keep-alive connections,
// close them when unused for idle_timeout, and map socket errors to ErrorCodes.
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <sys/socket.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/error.hpp>
#include <cerrno>
#include <stdexcept>
#include <utility>

#include "client_impl.hpp"

namespace omni::http {
namespace detail {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
constexpr auto kAsTuple = asio::as_tuple(asio::use_awaitable);

ErrorCode code_of(const boost::system::error_code& ec) {
  if (ec == beast::error::timeout || ec == asio::error::timed_out) return ErrorCode::kTimeout;
  if (ec == asio::error::operation_aborted) return ErrorCode::kCancelled;
  if (ec == bhttp::error::header_limit || ec == bhttp::error::body_limit ||
      ec == bhttp::error::buffer_overflow) {
    return ErrorCode::kTooLarge;
  }
  // The server closed before answering: it is not (or no longer) available.
  if (ec == bhttp::error::end_of_stream) return ErrorCode::kUnavailable;
  if (ec.category() == bhttp::make_error_code(bhttp::error::end_of_stream).category()) {
    return ErrorCode::kProtocol;  // a malformed or truncated response
  }
  if (ec == asio::error::connection_refused || ec == asio::error::connection_reset ||
      ec == asio::error::connection_aborted || ec == asio::error::broken_pipe ||
      ec == asio::error::eof || ec == asio::error::host_unreachable ||
      ec == asio::error::network_unreachable || ec == asio::error::host_not_found ||
      ec == asio::error::host_not_found_try_again || ec == asio::error::not_connected) {
    return ErrorCode::kUnavailable;
  }
  // A TLS failure (handshake refused, stream cut): the server cannot be spoken to.
  if (ec.category() == asio::error::get_ssl_category() ||
      ec.category() == asio::ssl::error::get_stream_category()) {
    return ErrorCode::kUnavailable;
  }
  return ErrorCode::kIo;
}

// Whether a pooled connection still looks usable: the server has neither closed it nor sent
// anything unsolicited (a 408, say) while it sat idle. A cheap non-blocking peek; the retry
// in the exchange covers the race where the server closes it just after this check.
// A connection pooled moments ago skips the peek (a syscall per request under load): a server
// closes or times out a keep-alive connection after seconds of silence, not milliseconds, and
// a close in that window is the race the exchange's retry already covers.
constexpr auto kFreshlyPooled = std::chrono::milliseconds(100);

bool still_open(PooledConnection& connection) {
  if (std::chrono::steady_clock::now() - connection.idle_since < kFreshlyPooled) return true;
  char byte = 0;
  const auto fd = connection.socket.native_handle();
  const auto n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

// getaddrinfo cannot be interrupted, but the resolver can abandon it: a timer cancels the
// lookup after connect_timeout. Both share ownership of the resolver, since the timer's
// handler may run after this coroutine has moved on.
Task<Result<tcp::resolver::results_type>> resolve(const asio::any_io_executor& executor,
                                                  const Endpoint& to, Duration timeout) {
  auto resolver = std::make_shared<tcp::resolver>(executor);
  auto timed_out = std::make_shared<bool>(false);
  asio::steady_timer timer(executor);
  timer.expires_after(timeout);
  timer.async_wait([weak = std::weak_ptr<tcp::resolver>(resolver),
                    timed_out](const boost::system::error_code& ec) {
    if (ec) return;
    *timed_out = true;
    if (auto live = weak.lock()) live->cancel();
  });
  auto [ec, results] = co_await resolver->async_resolve(to.host, std::to_string(to.port), kAsTuple);
  timer.cancel();
  if (*timed_out) {
    co_return make_error(ErrorCode::kTimeout, to.to_string() + ": resolving: timed out");
  }
  if (ec) co_return error_from(ec, to, "resolving");
  co_return std::move(results);
}

// One connect attempt (closing whatever the socket held before), bounded by the watchdog.
Task<boost::system::error_code> connect_to(PooledConnection& connection, const tcp::endpoint& to,
                                           Duration timeout) {
  boost::system::error_code ignored;
  connection.socket.close(ignored);
  connection.watchdog.expires_after(timeout);
  auto [ec] = co_await connection.socket.async_connect(to, kAsTuple);
  co_return after_watchdog(ec, connection);
}

}  // namespace

Error error_from(const boost::system::error_code& ec, const Endpoint& to, std::string_view during) {
  std::string message = to.to_string();
  message += ": ";
  message += during;
  message += ": ";
  message += ec == beast::error::timeout ? std::string("timed out") : ec.message();
  return make_error(code_of(ec), std::move(message));
}

namespace {
IoExecutor unwrap(const asio::any_io_executor& executor) {
  if (const auto* io = executor.target<IoExecutor>()) return *io;
  throw std::invalid_argument("omni::http::Client: the executor must be an io_context's");
}
}  // namespace

ClientCore::ClientCore(asio::any_io_executor executor_in, ClientOptions options_in)
    : executor(std::move(executor_in)),
      io_executor(unwrap(executor)),
      options(std::move(options_in)),
      tls(options.tls) {}

Task<Result<ConnectionPtr>> ClientCore::acquire(const Endpoint& to, bool fresh_only) {
  expire_idle();
  if (!fresh_only) {
    auto found = idle.find(to);
    while (found != idle.end() && !found->second.empty()) {
      ConnectionPtr connection = std::move(found->second.back());
      found->second.pop_back();
      --idle_total;
      if (still_open(*connection)) co_return std::move(connection);
    }
  }
  co_return co_await connect(to);
}

Task<Result<ConnectionPtr>> ClientCore::connect(const Endpoint& to) {
  auto connection = std::make_unique<PooledConnection>(io_executor);
  boost::system::error_code ec;
  const asio::ip::address address = asio::ip::make_address(to.host, ec);
  if (!ec) {  // a numeric address: no lookup
    ec = co_await connect_to(*connection, tcp::endpoint(address, to.port), options.connect_timeout);
  } else {
    auto resolved = co_await resolve(executor, to, options.connect_timeout);
    if (!resolved.ok()) co_return std::move(resolved).error();
    // Each address in turn, each under connect_timeout; a timeout ends the attempt.
    ec = asio::error::host_not_found;
    for (const auto& entry : *resolved) {
      ec = co_await connect_to(*connection, entry.endpoint(), options.connect_timeout);
      if (!ec || ec == beast::error::timeout) break;
    }
  }
  connection->watchdog.disarm();
  if (ec) co_return error_from(ec, to, "connecting");
  // Requests and SSE events are small writes that must not wait for Nagle.
  connection->socket.set_option(tcp::no_delay(true), ec);
  // Requests are written synchronously first (write_now.hpp), which must never block.
  connection->socket.non_blocking(true, ec);
  if (to.tls) {
    Status shaken = co_await start_tls(*connection, to);
    if (!shaken) co_return std::move(shaken).error();
  }
  co_return std::move(connection);
}

Task<Status> ClientCore::start_tls(PooledConnection& connection, const Endpoint& to) {
  if (!tls) {
    auto loaded = TlsClientConfig::load({});
    if (!loaded) co_return std::move(loaded).error();
    tls = *loaded;
  }
  connection.tls_context = tls->current();
  connection.tls = std::make_unique<TlsStream>(connection.socket, *connection.tls_context);
  SSL* ssl = connection.tls->native_handle();
  boost::system::error_code not_an_address;
  asio::ip::make_address(to.host, not_an_address);
  if (not_an_address) {
    // SNI (SSL_set_tlsext_host_name, without the macro's C cast).
    SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
             const_cast<char*>(to.host.c_str()));
    SSL_set1_host(ssl, to.host.c_str());  // the certificate must name this host
  } else {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), to.host.c_str());
  }
  connection.watchdog.expires_after(options.connect_timeout);
  auto [raw_ec] = co_await connection.tls->async_handshake(asio::ssl::stream_base::client,
                                                           asio::as_tuple(asio::use_awaitable));
  const auto ec = after_watchdog(raw_ec, connection);
  connection.watchdog.disarm();
  if (!ec) co_return Status{};
  const long verified = SSL_get_verify_result(ssl);
  if (ec != beast::error::timeout && verified != X509_V_OK) {
    co_return make_error(ErrorCode::kUnavailable,
                         to.to_string() + ": TLS handshake: certificate verify failed: " +
                             X509_verify_cert_error_string(verified));
  }
  co_return error_from(ec, to, "TLS handshake");
}

void ClientCore::release(const Endpoint& to, ConnectionPtr connection) {
  expire_idle();
  if (closed || options.max_idle_per_endpoint == 0) return;  // destroying it closes it
  connection->reused = true;
  connection->idle_since = std::chrono::steady_clock::now();
  if (options.keep_timers_armed) {
    connection->watchdog.idle();
  } else {
    connection->watchdog.disarm();
  }
  auto& queue = idle[to];
  if (queue.size() >= options.max_idle_per_endpoint) {
    queue.pop_front();  // the oldest is the likeliest to be closed by the server soon
    --idle_total;
  }
  queue.push_back(std::move(connection));
  ++idle_total;
}

void ClientCore::close_idle() {
  idle.clear();
  idle_total = 0;
}

void ClientCore::shutdown() {
  closed = true;
  close_idle();
}

void ClientCore::expire_idle() {
  if (idle_total == 0) return;
  const auto now = std::chrono::steady_clock::now();
  for (auto it = idle.begin(); it != idle.end();) {
    auto& queue = it->second;
    while (!queue.empty() && now - queue.front()->idle_since >= options.idle_timeout) {
      queue.pop_front();
      --idle_total;
    }
    it = queue.empty() ? idle.erase(it) : std::next(it);
  }
}

}  // namespace detail
}  // namespace omni::http
