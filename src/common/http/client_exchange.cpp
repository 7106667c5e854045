// One request/response exchange: write the request, read the head (retrying once on a fresh
// connection when a pooled one turns out to be dead), then the body — whole for send(), piece
// by piece for open().
#include <algorithm>
#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/error.hpp>
#include <limits>
#include <string>
#include <utility>

#include "client_impl.hpp"
#include "write_now.hpp"

namespace omni::http::detail {
namespace {

namespace asio = boost::asio;
constexpr auto kAsTuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t kBodyReadBytes = 16 * 1024;
// Interim responses skipped before the final one; more means a broken or hostile server.
constexpr int kMaxInterimResponses = 8;

// One socket read takes what the connection's buffer has room for, within these bounds.
constexpr std::size_t kMinReadBytes = 512;
constexpr std::size_t kMaxReadBytes = 64 * 1024;

// need_buffer: the caller's body buffer is full, which is how a piece ends.
boost::system::error_code parsed(const boost::system::error_code& ec) {
  return ec == bhttp::error::need_buffer ? boost::system::error_code{} : ec;
}

std::unique_ptr<ResponseParser> make_parser(const ClientOptions& options, bool head_request,
                                            std::uint64_t body_limit) {
  auto parser = std::make_unique<ResponseParser>();
  parser->header_limit(static_cast<std::uint32_t>(
      std::min<std::size_t>(options.max_header_bytes, std::numeric_limits<std::uint32_t>::max())));
  parser->body_limit(body_limit);
  parser->skip(head_request);  // a response to HEAD has headers only, whatever they announce
  return parser;
}

// The failures that mean "a pooled connection was already dead": only these, and only before
// any byte of the response, make a retry safe (the server cannot have acted on the request).
bool means_stale_connection(const boost::system::error_code& ec) {
  return ec == bhttp::error::end_of_stream || ec == asio::error::eof ||
         ec == asio::error::connection_reset || ec == asio::error::connection_aborted ||
         ec == asio::error::broken_pipe || ec == asio::error::not_connected;
}

Task<boost::system::error_code> read_head(PooledConnection& connection, ResponseParser& parser,
                                          Duration timeout) {
  while (!parser.is_header_done()) {
    auto ec = co_await read_some(connection, parser, timeout);
    if (ec) co_return ec;
  }
  co_return boost::system::error_code{};
}

// A 1xx head other than 101 Switching Protocols (100 Continue, 103 Early Hints, ...) is
// interim: RFC 9110 section 15.2 lets the client ignore it and wait for the final response.
// Beast parses it as a complete body-less message, so the caller needs a fresh parser.
bool is_interim(const ResponseParser& parser) {
  const int status = parser.status();
  return status >= 100 && status < 200 && status != 101;
}

Error too_many_interim(const Endpoint& to) {
  return make_error(ErrorCode::kProtocol,
                    to.to_string() + ": reading the response head: more than " +
                        std::to_string(kMaxInterimResponses) + " interim (1xx) responses");
}

}  // namespace

// Beast's http::async_read_some, by hand: parse what is buffered, read from the socket only if
// the parser needs more. Beast's composed operation costs a share of a small exchange, and it
// posts its completion (a scheduler round trip) whenever the buffer alone sufficed, which is
// the common case for a body that arrived with its head.
Task<boost::system::error_code> read_some(PooledConnection& connection, ResponseParser& parser,
                                          Duration timeout) {
  auto& buffer = connection.buffer;
  boost::system::error_code ec;
  if (buffer.size() > 0) {
    buffer.consume(parser.put(buffer.data(), ec));
    if (ec != bhttp::error::need_more) co_return parsed(ec);
  }
  connection.watchdog.expires_after(timeout);
  for (;;) {
    const std::size_t room =
        std::min(kMaxReadBytes, std::max(kMinReadBytes, buffer.capacity() - buffer.size()));
    boost::system::error_code read_ec;
    std::size_t n = 0;
    const auto space = buffer.prepare(room);
    if (connection.tls) {
      auto [tls_ec, tls_n] = co_await connection.tls->async_read_some(space, kAsTuple);
      // A server that closes without close_notify: for HTTP the same as a plain close.
      read_ec = tls_ec == asio::ssl::error::stream_truncated ? asio::error::eof : tls_ec;
      n = tls_n;
    } else {
      auto [plain_ec, plain_n] = co_await connection.socket.async_read_some(space, kAsTuple);
      read_ec = plain_ec;
      n = plain_n;
    }
    buffer.commit(n);
    if (read_ec == asio::error::eof) {
      // The server closed: the end of a close-delimited body, or a truncated response.
      if (!parser.got_some()) co_return bhttp::error::end_of_stream;
      boost::system::error_code eof_ec;
      parser.put_eof(eof_ec);
      co_return eof_ec;
    }
    if (read_ec) co_return after_watchdog(read_ec, connection);
    buffer.consume(parser.put(buffer.data(), ec));
    if (ec != bhttp::error::need_more) co_return parsed(ec);
  }
}

Error aborted_error(const Endpoint& to) {
  return make_error(ErrorCode::kCancelled, to.to_string() + ": the call was aborted");
}

Task<Result<Exchange>> start_exchange(ClientCore& impl, const Endpoint& to, const WireRequest& wire,
                                      std::uint64_t body_limit, Abort* abort) {
  const bool head_request = wire.head_request;
  for (int attempt = 0;; ++attempt) {
    if (abort && abort->aborted()) co_return aborted_error(to);
    auto acquired = co_await impl.acquire(to, /*fresh_only=*/attempt > 0);
    if (!acquired.ok()) co_return std::move(acquired).error();
    ConnectionPtr connection = std::move(*acquired);
    // A connect is not covered: it is bounded by connect_timeout, and the check above and
    // the one below catch an abort that came meanwhile.
    if (abort && abort->aborted()) co_return aborted_error(to);
    const AbortBinding bound(abort, *connection);
    const bool may_retry = connection->reused && attempt == 0;

    const std::array<asio::const_buffer, 2> pieces{asio::buffer(wire.head),
                                                   asio::buffer(wire.body)};
    beast::buffers_suffix<std::array<asio::const_buffer, 2>> rest(pieces);
    boost::system::error_code write_ec;
    if (connection->tls) {
      connection->watchdog.expires_after(impl.options.write_timeout);
      auto [raw_write_ec, written] = co_await asio::async_write(*connection->tls, rest, kAsTuple);
      write_ec = after_watchdog(raw_write_ec, *connection);
    } else if (!write_now(connection->socket, rest, write_ec)) {
      connection->watchdog.expires_after(impl.options.write_timeout);
      auto [raw_write_ec, written] = co_await asio::async_write(connection->socket, rest, kAsTuple);
      write_ec = after_watchdog(raw_write_ec, *connection);
    }
    if (write_ec && abort && abort->aborted()) co_return aborted_error(to);
    if (write_ec) {
      if (may_retry && means_stale_connection(write_ec)) continue;
      co_return error_from(write_ec, to, "writing the request");
    }

    std::unique_ptr<ResponseParser> parser;
    boost::system::error_code read_ec;
    int interim = 0;
    for (;;) {
      parser = make_parser(impl.options, head_request, body_limit);
      read_ec = co_await read_head(*connection, *parser, impl.options.read_timeout);
      if (read_ec || !is_interim(*parser)) break;
      if (++interim > kMaxInterimResponses) co_return too_many_interim(to);
    }
    if (read_ec && abort && abort->aborted()) co_return aborted_error(to);
    if (read_ec) {
      // An interim response means the server has seen the request: no retry after one.
      const bool nothing_received =
          interim == 0 && !parser->got_some() && connection->buffer.size() == 0;
      if (may_retry && nothing_received && means_stale_connection(read_ec)) continue;
      co_return error_from(read_ec, to, "reading the response head");
    }
    co_return Exchange{std::move(connection), std::move(parser)};
  }
}

void copy_head(ResponseParser& parser, int& status, Headers& headers) {
  status = parser.status();
  headers = std::move(parser.headers());
}

void finish_exchange(ClientCore& impl, const Endpoint& to, Exchange& exchange) {
  // Bytes past the end of the response mean the server is confused or pipelining: the
  // connection cannot be trusted with another request. After 101 Switching Protocols it no
  // longer speaks HTTP at all.
  const bool switched = exchange.parser->status() == 101;
  if (!switched && exchange.parser->keep_alive() && exchange.connection->buffer.size() == 0) {
    impl.release(to, std::move(exchange.connection));
  }
  exchange.connection.reset();
}

Task<Result<Response>> read_whole(ClientCore& impl, const Endpoint& to, Exchange exchange,
                                  Abort* abort) {
  const AbortBinding bound(abort, *exchange.connection);
  Response response;
  copy_head(*exchange.parser, response.status, response.headers);
  std::string& body = response.body;
  // body_limit has bounded an announced length already. Growing by exactly what is still
  // due keeps a small answer from paying for (and zeroing) a whole read-sized buffer.
  const auto announced = exchange.parser->content_length();
  if (announced) body.reserve(static_cast<std::size_t>(*announced));
  while (!exchange.parser->is_done()) {
    // Read straight into the body: grow it, lend the spare room to the parser, trim.
    const std::size_t used = body.size();
    std::size_t grow = std::max(body.capacity() - used, kBodyReadBytes);
    if (announced) grow = std::max<std::size_t>(static_cast<std::size_t>(*announced) - used, 1);
    body.resize(used + grow);
    auto& target = exchange.parser->body();
    target.data = body.data() + used;
    target.size = body.size() - used;
    auto ec = co_await read_some(*exchange.connection, *exchange.parser, impl.options.read_timeout);
    body.resize(body.size() - target.size);
    target.data = nullptr;
    if (ec && abort && abort->aborted()) co_return aborted_error(to);
    if (ec) co_return error_from(ec, to, "reading the response body");
  }
  finish_exchange(impl, to, exchange);
  co_return std::move(response);
}

}  // namespace omni::http::detail
