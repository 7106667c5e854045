// The server's ResponseWriter: hand-written HTTP/1.1 framing (Content-Length or chunked),
// one gather write per call, so each call is on the socket when it returns.
#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_range.hpp>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <ctime>

#include "server_connection.hpp"
#include "write_now.hpp"

namespace omni::http::detail {
namespace {

namespace asio = boost::asio;

constexpr auto kAwait = asio::as_tuple(asio::use_awaitable);

// write_now() on a plain connection; over TLS every write goes through the TLS stream's async
// write (a synchronous SSL_write on a non-blocking socket could leave a record half sent).
template <class Buffers>
bool try_write_now(Connection& connection, boost::beast::buffers_suffix<Buffers>& rest,
                   boost::system::error_code& ec) {
  if (connection.tls()) return false;
  return write_now(connection.socket(), rest, ec);
}
using boost::system::error_code;
constexpr std::string_view kCrlf = "\r\n";
constexpr std::string_view kLastChunk = "0\r\n\r\n";

// The IMF-fixdate for the current second, formatted once per second per I/O thread.
std::string_view http_date() {
  struct Cache {
    std::time_t second = -1;
    std::array<char, 32> text{};
    std::size_t size = 0;
  };
  thread_local Cache cache;
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  if (now != cache.second) {
    static constexpr std::array<const char*, 7> kDays{"Sun", "Mon", "Tue", "Wed",
                                                      "Thu", "Fri", "Sat"};
    static constexpr std::array<const char*, 12> kMonths{"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                         "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    std::tm tm{};
    gmtime_r(&now, &tm);
    const int n =
        std::snprintf(cache.text.data(), cache.text.size(), "%s, %02d %s %04d %02d:%02d:%02d GMT",
                      kDays[static_cast<std::size_t>(tm.tm_wday) % 7], tm.tm_mday,
                      kMonths[static_cast<std::size_t>(tm.tm_mon) % 12], tm.tm_year + 1900,
                      tm.tm_hour, tm.tm_min, tm.tm_sec);
    cache.size = n > 0 ? static_cast<std::size_t>(n) : 0;
    cache.second = now;
  }
  return {cache.text.data(), cache.size};
}

// Framing and connection management belong to the server; a handler's copies are dropped.
bool server_owned(std::string_view name) {
  return iequals(name, "Content-Length") || iequals(name, "Transfer-Encoding") ||
         iequals(name, "Connection") || iequals(name, "Date") || iequals(name, "Server");
}

// A field that would split the head (header injection) is dropped rather than sent.
bool safe_field(std::string_view name, std::string_view value) {
  if (name.empty() || has_line_break(value)) return false;
  for (const char c : name) {
    if (c == '\r' || c == '\n' || c == ':' || c == ' ') return false;
  }
  return true;
}

bool has_no_body(int status) {
  return (status >= 100 && status < 200) || status == 204 || status == 304;
}

void append_number(std::string& out, std::size_t value) {
  std::array<char, 24> digits{};
  const auto result = std::to_chars(digits.data(), digits.data() + digits.size(), value);
  out.append(digits.data(), result.ptr);
}

asio::const_buffer view_buffer(std::string_view s) { return asio::buffer(s.data(), s.size()); }

}  // namespace
}  // namespace omni::http::detail

namespace omni::http {

// Writers other than the server's cannot tell.
bool ResponseWriter::watch_close(std::function<void()>) { return false; }
void ResponseWriter::unwatch_close() {}

}  // namespace omni::http

namespace omni::http::detail {

struct ConnectionWriter::CloseWatch {
  std::function<void()> on_gone;
  asio::cancellation_signal cancel;  // one per watch: a finished wait must not clear a new one
  char byte = 0;                     // the peek's buffer
  bool active = true;
};

bool ConnectionWriter::watch_close(std::function<void()> on_gone) {
  unwatch_close();
  if (connection_.has_buffered_input()) return false;
  auto watch = std::make_shared<CloseWatch>();
  watch->on_gone = std::move(on_gone);
  arm_close_watch(watch);
  close_watch_ = std::move(watch);
  return true;
}

// A peeking receive: it tries at once (one recv, no epoll_ctl, since the socket is already
// registered for reading), then waits for the socket to turn readable. 0 bytes (eof) or an
// error means the client closed or broke the connection; bytes are a next request, which is
// left in place and makes a later close undetectable, so the watch ends quietly.
void ConnectionWriter::arm_close_watch(const std::shared_ptr<CloseWatch>& watch) {
  connection_.socket().async_receive(
      asio::buffer(&watch->byte, 1), asio::socket_base::message_peek,
      asio::bind_cancellation_slot(
          watch->cancel.slot(), [this, watch](const boost::system::error_code& ec, std::size_t n) {
            // Inactive: unwatched, so `this` may be serving another request by now.
            if (!watch->active || ec == asio::error::operation_aborted) return;
            watch->active = false;
            if (!ec && n > 0) return;
            peer_gone_ = true;
            watch->on_gone();
          }));
}

void ConnectionWriter::unwatch_close() {
  if (!close_watch_) return;
  close_watch_->active = false;
  close_watch_->cancel.emit(asio::cancellation_type::all);
  close_watch_.reset();
}

void ConnectionWriter::build_head(int status, const Headers& headers,
                                  std::optional<std::size_t> length) {
  keep_alive_ = info_.keep_alive && !connection_.stopping();
  // HTTP/1.0 has no chunked encoding: such a stream is delimited by closing the connection.
  if (!length && info_.version < 11) keep_alive_ = false;
  std::string& out = connection_.head_buffer();
  out.clear();
  out.append("HTTP/1.1 ");
  append_number(out, static_cast<std::size_t>(status));
  out.push_back(' ');
  out.append(status_reason(status));
  out.append("\r\nServer: ").append(connection_.options().server_name);
  out.append("\r\nDate: ").append(http_date());
  if (length) {
    if (!has_no_body(status)) {
      out.append("\r\nContent-Length: ");
      append_number(out, *length);
    }
  } else if (info_.version >= 11) {
    out.append("\r\nTransfer-Encoding: chunked");
  }
  if (!keep_alive_) {
    out.append("\r\nConnection: close");
  } else if (info_.version < 11) {
    out.append("\r\nConnection: keep-alive");
  }
  for (const auto& [name, value] : headers) {
    if (server_owned(name) || !safe_field(name, value)) continue;
    out.append(kCrlf).append(name).append(": ").append(value);
  }
  out.append("\r\n\r\n");
}

Task<Status> ConnectionWriter::send(Response response) {
  if (state_ != State::kNone) co_return misuse("send() after the response was started");
  build_head(response.status, response.headers, response.body.size());
  const bool with_body = !info_.head && !has_no_body(response.status);
  const std::string_view body = with_body ? std::string_view(response.body) : std::string_view{};
  state_ = State::kStreaming;
  // Named, not a temporary: GCC 12 miscompiles array temporaries inside co_await.
  const WriteBuffers buffers{view_buffer(connection_.head_buffer()), view_buffer(body)};
  Pending rest(buffers);
  error_code ec;
  if (!try_write_now(connection_, rest, ec)) ec = co_await write_rest(rest);
  co_return finish_write(ec);
}

Task<Status> ConnectionWriter::begin_stream(int status, Headers headers) {
  if (state_ != State::kNone) co_return misuse("begin_stream() after the response was started");
  build_head(status, headers, std::nullopt);
  chunked_ = info_.version >= 11;
  state_ = State::kStreaming;
  const WriteBuffers buffers{view_buffer(connection_.head_buffer())};
  Pending rest(buffers);
  error_code ec;
  if (!try_write_now(connection_, rest, ec)) ec = co_await write_rest(rest);
  Status written = finish_write(ec);
  if (written.ok()) state_ = State::kStreaming;
  co_return written;
}

Task<Status> ConnectionWriter::write_chunk(std::string_view data) {
  if (state_ != State::kStreaming) co_return misuse("write_chunk() outside a stream");
  if (flush_error_) co_return finish_write(flush_error_);
  // An empty chunk would end the stream; HEAD streams carry no body at all.
  if (data.empty() || info_.head) co_return ok_status();
  std::string_view prefix;
  std::string_view suffix;
  if (chunked_) {
    const auto size = std::to_chars(chunk_size_.data(), chunk_size_.data() + chunk_size_.size() - 2,
                                    data.size(), 16);
    char* end = size.ptr;
    *end++ = '\r';
    *end++ = '\n';
    prefix =
        std::string_view(chunk_size_.data(), static_cast<std::size_t>(end - chunk_size_.data()));
    suffix = kCrlf;
  }
  const WriteBuffers buffers{view_buffer(prefix), view_buffer(data), view_buffer(suffix)};
  Pending rest(buffers);
  if (backlog() == 0) {
    error_code ec;
    if (try_write_now(connection_, rest, ec)) {
      Status written = finish_write(ec);
      if (written.ok()) state_ = State::kStreaming;
      co_return written;
    }
  }
  // Behind a slow client: keep the order, add to the backlog, wait only past its bound.
  queue(rest);
  start_flush();
  const std::size_t bound = connection_.options().stream_backlog_bytes;
  if (backlog() > bound) co_await wait_for_flush(bound);
  if (flush_error_) co_return finish_write(flush_error_);
  co_return ok_status();
}

Task<Status> ConnectionWriter::end_stream() {
  if (state_ != State::kStreaming) co_return misuse("end_stream() outside a stream");
  if (!chunked_ || info_.head) {
    if (backlog() > 0) co_await wait_for_flush(0);
    co_return finish_write(flush_error_);
  }
  const WriteBuffers buffers{view_buffer(kLastChunk)};
  Pending rest(buffers);
  if (backlog() > 0) {
    queue(rest);
    start_flush();
    co_await wait_for_flush(0);
    co_return finish_write(flush_error_);
  }
  error_code ec;
  if (!try_write_now(connection_, rest, ec)) ec = co_await write_rest(rest);
  co_return finish_write(ec);
}

void ConnectionWriter::queue(const Pending& rest) {
  for (const auto& buffer : boost::beast::buffers_range_ref(rest)) {
    backlog_.append(static_cast<const char*>(buffer.data()), buffer.size());
  }
}

void ConnectionWriter::start_flush() {
  if (flushing_ || backlog_.empty() || flush_error_) return;
  flushing_ = true;
  asio::co_spawn(connection_.socket().get_executor(), flush(connection_.shared_from_this(), this),
                 asio::detached);
}

// The background writer of a stream's backlog: one async_write at a time, each under the
// write deadline, until the backlog is empty or a write fails (the stream then fails at its
// next write_chunk or end_stream). `owner` keeps the connection, and so the writer, alive.
Task<void> ConnectionWriter::flush(std::shared_ptr<Connection> owner, ConnectionWriter* self) {
  while (!self->backlog_.empty() && !self->flush_error_) {
    self->sending_.swap(self->backlog_);
    self->backlog_.clear();
    owner->begin_write();
    std::tuple<boost::system::error_code, std::size_t> wrote;
    if (owner->tls()) {
      wrote = co_await asio::async_write(*owner->tls(), asio::buffer(self->sending_), kAwait);
    } else {
      wrote = co_await asio::async_write(owner->socket(), asio::buffer(self->sending_), kAwait);
    }
    auto [ec, n] = wrote;
    self->sending_.clear();
    self->flush_error_ = owner->end_write(ec);
    if (self->flushed_) self->flushed_->cancel();
  }
  self->flushing_ = false;
  if (self->flushed_) self->flushed_->cancel();
}

Task<void> ConnectionWriter::wait_for_flush(std::size_t at_most) {
  if (!flushed_) flushed_.emplace(connection_.socket().get_executor());
  while (backlog() > at_most && !flush_error_ && flushing_) {
    flushed_->expires_at(std::chrono::steady_clock::time_point::max());
    (void)co_await flushed_->async_wait(kAwait);
  }
}

// What the kernel did not take at once (write_now.hpp), under the write deadline.
Task<boost::system::error_code> ConnectionWriter::write_rest(Pending& rest) {
  connection_.begin_write();
  std::tuple<boost::system::error_code, std::size_t> wrote;
  if (connection_.tls()) {
    wrote = co_await asio::async_write(*connection_.tls(), rest, kAwait);
  } else {
    wrote = co_await asio::async_write(connection_.socket(), rest, kAwait);
  }
  auto [ec, n] = wrote;
  co_return connection_.end_write(ec);
}

// Every write finishes the response unless it is part of an open stream; the callers in a
// stream set kStreaming back after a successful chunk. Each method writes what it can at
// once itself (write_now) and calls a helper coroutine only for a remainder: no coroutine
// frame and no async operation for a write the kernel takes whole.
Status ConnectionWriter::finish_write(boost::system::error_code ec) {
  if (ec) {
    state_ = State::kFailed;
    keep_alive_ = false;
    return make_error(ec == asio::error::timed_out ? ErrorCode::kTimeout : ErrorCode::kIo,
                      "writing the response failed: " + ec.message());
  }
  state_ = State::kDone;
  return ok_status();
}

Status ConnectionWriter::misuse(std::string_view what) const {
  return make_error(ErrorCode::kInvalidArgument, std::string(what));
}

}  // namespace omni::http::detail
