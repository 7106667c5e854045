// HTTP/1.1 client on Boost.Asio + Beast with a keep-alive connection pool per endpoint.
//
// Two ways to call:
//   send()  — the whole response, body included (bounded by max_body_bytes);
//   open()  — the status and headers, then the body piece by piece as it arrives, for
//             relaying streams (SSE) without buffering them.
// Every connect, write and read has a timeout; every failure is a Result error, never an
// exception: kTimeout, kUnavailable (connect refused / reset), kProtocol (malformed response),
// kTooLarge (limits), kCancelled. An https Endpoint is spoken over TLS, the server's
// certificate verified (chain, validity, host name or IP address); a failed handshake is
// kUnavailable with OpenSSL's reason ("certificate verify failed: ...").
//
// Threading: a Client belongs to one executor (one I/O thread); call it only from coroutines
// running there. Give each I/O thread its own Client, as Envoy gives each worker its own pools.
// The executor must be an io_context's (io.get_executor(), or a coroutine's executor spawned
// on one): the sockets are bound to it directly, which spares every read and write the
// type-erased executor's copies. Anything else is std::invalid_argument.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "omni/common/clock.hpp"
#include "omni/common/result.hpp"
#include "omni/http/task.hpp"
#include "omni/http/tls.hpp"
#include "omni/http/types.hpp"

namespace omni::http {

using namespace std::chrono_literals;

struct Endpoint {
  std::string host;
  std::uint16_t port = 0;
  bool tls = false;  // https: the connection is TLS, the server verified (ClientOptions::tls)

  std::string to_string() const;  // "host:port" ("[::1]:8000" for IPv6 literals)
  // Parses "host:port" or "[v6]:port", also written as a URL without a path: "http://host:port",
  // "https://[v6]:port/" (tls set). kInvalidArgument with the reason otherwise.
  static Result<Endpoint> parse(std::string_view text);
  friend bool operator==(const Endpoint&, const Endpoint&) = default;
};

struct ClientOptions {
  Duration connect_timeout = 2s;
  Duration write_timeout = 10s;
  Duration read_timeout = 60s;  // the longest silence allowed while reading a response
  std::size_t max_header_bytes = 64 * 1024;
  std::size_t max_body_bytes = 64 * 1024 * 1024;
  std::size_t max_idle_per_endpoint = 64;  // pooled keep-alive connections kept per endpoint
  Duration idle_timeout = 30s;             // a pooled connection unused this long is closed
  // Leave a pooled connection's timeout timer pending between requests: it is then re-armed
  // about once per timeout instead of armed and cancelled once per request. For long-running
  // servers, whose io_context never runs out of work anyway: with it, io_context::run()
  // returns only once the pooled connections' timers have lapsed (up to read_timeout after
  // the last request) or the Client is destroyed.
  bool keep_timers_armed = false;
  // How https endpoints are verified (and the client certificate, if any); null: against the
  // system's trust store, loaded at the first https connection.
  std::shared_ptr<TlsClientConfig> tls;
};

// A response whose body is still arriving. Destroying it before the end closes the
// connection (it cannot be reused mid-body); reading to the end returns it to the pool.
class ResponseStream {
 public:
  virtual ~ResponseStream() = default;
  virtual int status() const noexcept = 0;
  virtual const Headers& headers() const noexcept = 0;
  // The next piece of the body as soon as it arrives (chunk boundaries are not preserved);
  // std::nullopt once the body is complete.
  virtual Task<Result<std::optional<std::string>>> next() = 0;
};

// Lets code outside a client call end it early (a proxy whose own client went away): abort()
// cancels the socket operation in flight, so the call fails at once (its connection is closed,
// never pooled), and a call started after abort() fails before it sends anything. Cheaper than
// running the call as a cancellable child coroutine. Single-threaded: call abort() on the
// executor the client call runs on, and keep the Abort alive until that call has returned.
class Abort {
 public:
  void abort() {
    aborted_ = true;
    if (cancel_) cancel_();
  }
  bool aborted() const noexcept { return aborted_; }
  // For the client: what abort() does while an operation runs (empty: none runs).
  void on_abort(std::function<void()> cancel) { cancel_ = std::move(cancel); }

 private:
  bool aborted_ = false;
  std::function<void()> cancel_;
};

class Client {
 public:
  explicit Client(boost::asio::any_io_executor executor, ClientOptions options = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Sends `request` (Host and Content-Length are filled in) and reads the whole response.
  // `abort`, when given, can end the call early (kCancelled).
  Task<Result<Response>> send(const Endpoint& to, Request request, Abort* abort = nullptr);
  // Sends `request` and returns once the response head has arrived. `abort` covers the
  // stream's reads too, so it must outlive the stream.
  Task<Result<std::unique_ptr<ResponseStream>>> open(const Endpoint& to, Request request,
                                                     Abort* abort = nullptr);
  // Closes every pooled idle connection.
  void close_idle();
  // Pooled idle connections, all endpoints together.
  std::size_t idle_connections() const noexcept;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace omni::http
