// HTTP/1.1 server on Boost.Asio + Beast, one coroutine per connection.
//
//   Server::start() ─ N I/O threads, one acceptor
//        │ accept (bounded: past max_connections a client gets 503 and is closed)
//        ▼
//   connection coroutine ── read head (header_timeout, max_header_bytes)
//        │                  read body (body_timeout, max_body_bytes)
//        │                  Handler(request, writer) ── writer.send() or streamed chunks
//        │                  keep-alive: wait for the next request (idle_timeout)
//        ▼
//   stop(): stop accepting → in-flight requests finish within shutdown_grace → the rest are
//           cancelled → threads joined.
//
// Malformed requests get 400, oversized heads 431, oversized bodies 413, slow clients 408,
// unknown methods and transfer codings 501; the connection is then closed cleanly. Handlers
// never see them (ServerHooks::on_refused does). Framing follows RFC 9112 strictly (see
// request_parse.hpp): a request whose length two parsers could read differently is refused,
// never served as two messages.
//
// At max_connections the server closes its oldest idle connection (waiting for a request,
// no byte received) to take the new one, as nginx does; only when none is idle does the new
// client get 503, so idle keep-alive clients cannot lock probes out.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "omni/common/clock.hpp"
#include "omni/common/result.hpp"
#include "omni/http/task.hpp"
#include "omni/http/tls.hpp"
#include "omni/http/types.hpp"

namespace omni::http {

using namespace std::chrono_literals;

// How a handler answers. Exactly one of: send(), or begin_stream() + write_chunk()* +
// end_stream(). Every call returns an error once the client has gone away; the handler
// should then return. Threading: used only from the handler's coroutine.
class ResponseWriter {
 public:
  virtual ~ResponseWriter() = default;
  // A complete response, framed by Content-Length.
  virtual Task<Status> send(Response response) = 0;
  // A chunked response: the status line and headers are written (and flushed) now.
  virtual Task<Status> begin_stream(int status, Headers headers) = 0;
  // One chunk, handed to the socket at once (no coalescing: SSE needs every event out as it
  // comes). What a slow client has not taken yet waits in a per-stream backlog of at most
  // ServerOptions::stream_backlog_bytes, written out in the background, so the handler can
  // go on reading its source; only past that bound does write_chunk() wait for the client.
  virtual Task<Status> write_chunk(std::string_view data) = 0;
  // The terminating chunk; returns once the whole stream has been written (or failed, e.g. a
  // client slower than write_timeout). After it the connection may serve the next request.
  virtual Task<Status> end_stream() = 0;
  // Whether the status line has been written.
  virtual bool started() const noexcept = 0;

  // Client-close notification while the handler waits for something else (an engine, a
  // queue), so that it can give up at once instead of noticing at its next write. `on_gone`
  // runs on the handler's thread, at most once, if the client closes the connection (or it
  // breaks) before unwatch_close(); never inline. Returns false when it cannot tell: not
  // supported, or bytes of a next (pipelined) request are already waiting, which a close
  // would hide. A client that half-closes after its request counts as gone (as in nginx).
  // Not while writing: unwatch first. One watch at a time.
  virtual bool watch_close(std::function<void()> on_gone);
  virtual void unwatch_close();
};

// Called once per well-formed request. If it returns without answering, the server answers
// 500. It must not throw: exceptions escaping it are logged, answered with 500 if possible,
// and close the connection.
using Handler = std::function<Task<void>(Request& request, ResponseWriter& writer)>;

// A response the server sent (or a connection it refused) without a handler answering it.
struct RefusedRequest {
  int status = 0;
  std::string_view reason;  // why, in words
  std::string_view remote;  // "127.0.0.1:53412"
  // From the request head; kUnknown and empty when the head was never parsed.
  Method method = Method::kUnknown;
  std::string_view target;
  const Headers* headers = nullptr;  // null when the head was never parsed
  Duration elapsed{};                // from the first byte of the request (or the accept)
};

// Optional callbacks into the application; each runs on the connection's I/O thread and must
// not block. Set before start().
struct ServerHooks {
  // Runs once a request head is parsed, before its body is read and before any
  // "100 Continue": a Response returned is sent instead (with Connection: close), so a client
  // refused on its head alone (authentication) never gets to send a body. `head` has no body.
  std::function<std::optional<Response>(const Request& head)> screen_head;
  // Runs for every response the server sends on its own (400, 408, 413, 431, 501, 503 at the
  // connection cap, 500 for a handler that answered nothing, a screened head), so that they
  // reach the access log and metrics like handled requests.
  std::function<void(const RefusedRequest&)> on_refused;
};

struct ServerOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;  // 0: an ephemeral port, see Server::port()
  unsigned io_threads = 1;
  std::size_t max_connections = 10'000;
  std::size_t max_header_bytes = 16 * 1024;
  std::size_t max_body_bytes = 16 * 1024 * 1024;
  Duration header_timeout = 10s;  // the whole request head (slow-loris bound)
  Duration body_timeout = 60s;    // the whole request body
  Duration idle_timeout = 60s;    // keep-alive wait for the next request
  Duration write_timeout = 30s;   // each write to the client
  // Per stream: bytes a slow client has not read yet that the server keeps before
  // write_chunk() waits (backpressure on the handler). Lets a handler finish reading its
  // source (an engine) while the client catches up.
  std::size_t stream_backlog_bytes = 256 * 1024;
  Duration shutdown_grace = 10s;  // how long stop() lets in-flight requests finish
  std::string server_name = "omni";
  // HTTPS: every connection shakes hands with the certificate current when it was accepted
  // (tls.hpp), within header_timeout. A client speaking plain HTTP gets a plain 400 and is
  // closed; a failed handshake is closed. Both reach ServerHooks::on_refused with the reason.
  // Null: plain HTTP.
  std::shared_ptr<TlsCertificate> tls;
};

// Counters since start; a consistent-enough snapshot for metrics (each field is atomic).
struct ServerStats {
  std::uint64_t connections_accepted = 0;
  std::uint64_t connections_rejected = 0;  // over max_connections
  std::uint64_t connections_active = 0;
  std::uint64_t requests = 0;      // handed to the handler
  std::uint64_t bad_requests = 0;  // 400/413/431/501 answered by the server itself
  std::uint64_t timeouts = 0;      // 408 or a write timeout
  std::uint64_t screened = 0;      // answered by ServerHooks::screen_head
  std::uint64_t idle_shed = 0;     // idle connections closed to make room at the cap
  std::uint64_t abandoned = 0;     // the client left before the handler answered: closed
};

class Server {
 public:
  Server(ServerOptions options, Handler handler, ServerHooks hooks = {});
  ~Server();  // stop() if still running
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds, listens and starts the I/O threads. Errors: kInvalidArgument (bad options),
  // kIo (bind/listen failed, e.g. address in use).
  Status start();
  // The bound port (useful with port 0). Valid after a successful start().
  std::uint16_t port() const noexcept;
  // Graceful shutdown; blocks until every thread has exited. Idempotent, thread-safe.
  void stop();
  // Blocks until stop() has completed (called from another thread or a signal handler).
  void wait();
  ServerStats stats() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Dispatch by exact path, then by method: an unknown path is 404, a known path with another
// method is 405 with an Allow header. Both answered in the OpenAI error format.
class Router {
 public:
  Router& add(Method method, std::string path, Handler handler);
  // The Handler to give to Server.
  Handler handler() const;

 private:
  struct Route {
    Method method;
    std::string path;
    Handler handler;
  };
  std::shared_ptr<std::vector<Route>> routes_ = std::make_shared<std::vector<Route>>();
};

}  // namespace omni::http
