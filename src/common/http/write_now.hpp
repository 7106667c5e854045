// Writing a small message (a request, a response head and body, an SSE event) on a
// non-blocking socket: first as much as the kernel takes at once, synchronously — one sendmsg,
// nearly always all of it — and only what is left, if anything, with async_write.
//
// Why: Asio (before 1.28's immediate executors; Debian 12 has 1.26) never completes an async
// operation inline. A send that succeeds at once is still posted to the scheduler, which
// first polls the reactor again (an epoll_wait(0) when it has other work), and then resumes
// the coroutine through the awaitable machinery. On the proxy's request path that was two
// writes per request, each costing more than the sendmsg itself. nginx writes directly.
//
// The socket must be in non-blocking mode (socket.non_blocking(true)): would_block then means
// "the rest later", never a blocked thread.
#pragma once

#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/beast/core/buffers_suffix.hpp>
#include <cstddef>

namespace omni::http::detail {

// Sends what the socket takes now. Returns true when the write is over: everything was sent
// or `ec` holds the failure; false when `rest` (advanced past what was sent) must still go
// out asynchronously.
template <class Socket, class Buffers>
bool write_now(Socket& socket, boost::beast::buffers_suffix<Buffers>& rest,
               boost::system::error_code& ec) {
  if (!socket.non_blocking()) return false;  // a synchronous write could block the thread
  const std::size_t total = boost::asio::buffer_size(rest);
  const std::size_t sent = socket.write_some(rest, ec);
  if (ec == boost::asio::error::would_block || ec == boost::asio::error::try_again) {
    ec = {};
    return false;
  }
  if (ec) return true;
  rest.consume(sent);
  return sent == total;
}

}  // namespace omni::http::detail
