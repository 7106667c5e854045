// The two HTTP-layer seams omni-proxy's request path relies on, tested on loopback:
// - ResponseWriter::watch_close(): a handler waiting for something else learns at once that
//   its client closed the connection (and is not fooled by pipelined bytes);
// - ResponseStream::next(): chunks already received come out together (the SSE relay then
//   writes them to its client in one write), in order, and nothing received is held back.
#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "omni/http/client.hpp"
#include "omni/http/server.hpp"

namespace omni::http {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds limit = 5000ms) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

// What the watching handler saw.
struct Watched {
  std::atomic<bool> answered{false};  // watch_close() returned
  std::atomic<bool> watching{false};  // ... and it returned true
  std::atomic<bool> gone{false};
};

// A handler that watches its client for up to `wait`, then answers 200.
Handler watching_handler(std::shared_ptr<Watched> seen, Duration wait = 3s) {
  return [seen, wait](Request&, ResponseWriter& writer) -> Task<void> {
    auto timer = std::make_shared<asio::steady_timer>(co_await asio::this_coro::executor);
    timer->expires_after(wait);
    const bool watching = writer.watch_close([seen, timer] {
      seen->gone = true;
      timer->cancel();
    });
    seen->watching = watching;
    seen->answered = true;
    (void)co_await timer->async_wait(asio::as_tuple(asio::use_awaitable));
    writer.unwatch_close();
    Response response;
    response.status = 200;
    response.body = "ok";
    (void)co_await writer.send(std::move(response));
  };
}

std::string post_bytes() { return "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}"; }

TEST(HttpCloseWatch, AClientThatClosesIsNoticedWhileTheHandlerWaits) {
  auto seen = std::make_shared<Watched>();
  Server server(ServerOptions{}, watching_handler(seen));
  ASSERT_TRUE(server.start().ok());
  asio::io_context io;
  tcp::socket socket(io);
  socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), server.port()));
  asio::write(socket, asio::buffer(post_bytes()));
  ASSERT_TRUE(eventually([&] { return seen->answered.load(); }));
  EXPECT_TRUE(seen->watching.load());
  const auto closed_at = std::chrono::steady_clock::now();
  socket.close();
  ASSERT_TRUE(eventually([&] { return seen->gone.load(); }, 2000ms));
  EXPECT_LT(std::chrono::steady_clock::now() - closed_at, 1s);
  server.stop();
}

TEST(HttpCloseWatch, AClientThatStaysIsNotReportedGone) {
  auto seen = std::make_shared<Watched>();
  Server server(ServerOptions{}, watching_handler(seen));
  ASSERT_TRUE(server.start().ok());
  asio::io_context io;
  tcp::socket socket(io);
  socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), server.port()));
  asio::write(socket, asio::buffer(post_bytes()));
  ASSERT_TRUE(eventually([&] { return seen->answered.load(); }));
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE(seen->gone.load());
  socket.close();  // lets the handler end now rather than after its 3 s
  server.stop();
}

TEST(HttpCloseWatch, PipelinedBytesAreNotAClose) {
  auto seen = std::make_shared<Watched>();
  Server server(ServerOptions{}, watching_handler(seen, 300ms));
  ASSERT_TRUE(server.start().ok());
  asio::io_context io;
  tcp::socket socket(io);
  socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), server.port()));
  // The next request arrives with the first (pipelined): the watch cannot tell a close any
  // more, so it declines, and nothing is reported.
  const std::string two = post_bytes() + post_bytes();
  asio::write(socket, asio::buffer(two));
  ASSERT_TRUE(eventually([&] { return seen->answered.load(); }));
  EXPECT_FALSE(seen->watching.load());
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(seen->gone.load());
  server.stop();
}

// A server that writes `events` SSE events as separate chunks, back to back.
Handler burst_handler(int events) {
  return [events](Request&, ResponseWriter& writer) -> Task<void> {
    Headers headers;
    headers.add("Content-Type", "text/event-stream");
    if (!co_await writer.begin_stream(200, std::move(headers))) co_return;
    for (int i = 0; i < events; ++i) {
      const std::string event = "data: " + std::to_string(i) + "\n\n";
      if (!co_await writer.write_chunk(event)) co_return;
    }
    (void)co_await writer.end_stream();
  };
}

TEST(HttpStreamCoalescing, ChunksAlreadyReceivedComeOutTogetherInOrder) {
  constexpr int kEvents = 3000;
  Server server(ServerOptions{}, burst_handler(kEvents));
  ASSERT_TRUE(server.start().ok());
  asio::io_context io;
  std::promise<std::pair<std::string, int>> done;
  asio::co_spawn(
      io,
      [&]() -> Task<void> {
        Client client(co_await asio::this_coro::executor);
        Request request;
        request.method = Method::kGet;
        request.target = "/events";
        // Named: GCC 12 destroys temporaries inside a co_await expression wrongly.
        const Endpoint to{"127.0.0.1", server.port()};
        auto opened = co_await client.open(to, std::move(request));
        if (!opened) {
          done.set_value({"open failed: " + opened.error().to_string(), 0});
          co_return;
        }
        // Let the whole burst arrive before reading, so that reads find many chunks.
        asio::steady_timer pause(co_await asio::this_coro::executor, 200ms);
        (void)co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
        std::string all;
        int pieces = 0;
        for (;;) {
          auto piece = co_await (*opened)->next();
          if (!piece) {
            done.set_value({"read failed: " + piece.error().to_string(), pieces});
            co_return;
          }
          if (!*piece) break;
          all += **piece;
          ++pieces;
        }
        done.set_value({std::move(all), pieces});
      },
      asio::detached);
  io.run();
  auto [all, pieces] = done.get_future().get();
  std::string want;
  for (int i = 0; i < kEvents; ++i) want += "data: " + std::to_string(i) + "\n\n";
  EXPECT_EQ(all, want);
  // ~30 KB in 16 KiB pieces: a handful of pieces, not one per chunk.
  EXPECT_LE(pieces, 20);
  server.stop();
}

}  // namespace
}  // namespace omni::http
