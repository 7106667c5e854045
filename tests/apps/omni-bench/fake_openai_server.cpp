// A deliberately unreliable OpenAI-compatible server for omni-bench's integration tests.
//
//   fake-openai-server --behaviours ok,http500,cut --itl-ms 2 --stall-ms 5000
//
// Request k (in arrival order) gets behaviour k mod len(list):
//   ok           streams max_tokens chunks, a usage chunk with cached_tokens, then [DONE]
//   http500      a 500 with the OpenAI error body, before any stream
//   cut          one chunk, then the connection is dropped mid-stream
//   garbage      a data event that is not JSON
//   stall        nothing for --stall-ms after the response head
//   error_event  one chunk, an in-stream {"error": ...} event, then [DONE]
//   no_done      a clean end of stream without [DONE]
// cached_tokens counts the prompt's leading 512-token blocks this server has seen before (an
// infinite prefix cache), so prefix sharing in a replayed trace shows up in the results.
// Prints "listening on 127.0.0.1:PORT" once ready; stops on SIGINT/SIGTERM.
#include <CLI/CLI.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <csignal>
#include <iostream>
#include <mutex>
#include <unordered_set>

#include "omni/http/server.hpp"
#include "omni/http/sse.hpp"

namespace {

namespace asio = boost::asio;
using omni::Task;
namespace http = omni::http;

struct FakeConfig {
  std::vector<std::string> behaviours{"ok"};
  int itl_ms = 2;
  int stall_ms = 5000;
};

struct Prompt {
  std::vector<std::int64_t> tokens;  // empty for chat
  std::int64_t max_tokens = 16;
};

Prompt parse_prompt(const std::string& body) {
  Prompt p;
  boost::system::error_code ec;
  auto doc = boost::json::parse(body, ec);
  if (ec || !doc.is_object()) return p;
  const auto& obj = doc.get_object();
  if (const auto* m = obj.if_contains("max_tokens"); m != nullptr && m->is_int64())
    p.max_tokens = m->get_int64();
  if (const auto* prompt = obj.if_contains("prompt"); prompt != nullptr && prompt->is_array()) {
    for (const auto& t : prompt->get_array()) p.tokens.push_back(t.is_int64() ? t.get_int64() : 0);
  }
  return p;
}

// An infinite prefix cache over 512-token blocks, keyed by the chained block contents.
class PrefixCache {
 public:
  std::int64_t lookup_and_insert(const std::vector<std::int64_t>& tokens) {
    std::lock_guard lock(mutex_);
    std::size_t chain = 0;
    std::int64_t cached = 0;
    bool hit = true;
    for (std::size_t start = 0; start + 512 <= tokens.size(); start += 512) {
      for (std::size_t i = start; i < start + 512; ++i)
        chain = chain * 1000003u ^ static_cast<std::size_t>(tokens[i]);
      const bool seen = !seen_.insert(chain).second;
      hit = hit && seen;
      if (hit) cached += 512;
    }
    return cached;
  }

 private:
  std::mutex mutex_;
  std::unordered_set<std::size_t> seen_;
};

Task<void> sleep_ms(int ms) {
  asio::steady_timer timer(co_await asio::this_coro::executor, std::chrono::milliseconds(ms));
  co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
}

std::string text_chunk(bool chat) {
  return chat
             ? R"({"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" tok"},"finish_reason":null}]})"
             : R"({"id":"cmpl-1","object":"text_completion","choices":[{"index":0,"text":" tok","finish_reason":null}]})";
}

Task<void> stream_ok(http::SseWriter& sse, const Prompt& p, bool chat, std::int64_t cached,
                     int itl_ms) {
  const std::string chunk = text_chunk(chat);
  for (std::int64_t i = 0; i < std::max<std::int64_t>(p.max_tokens, 1); ++i) {
    if (i > 0) co_await sleep_ms(itl_ms);
    if (!co_await sse.send_data(chunk)) co_return;
  }
  const std::string usage =
      R"({"id":"cmpl-1","choices":[],"usage":{"prompt_tokens":)" + std::to_string(p.tokens.size()) +
      ",\"completion_tokens\":" + std::to_string(p.max_tokens) +
      ",\"prompt_tokens_details\":{\"cached_tokens\":" + std::to_string(cached) + "}}}";
  if (!co_await sse.send_data(usage)) co_return;
  if (!co_await sse.send_data("[DONE]")) co_return;
  (void)co_await sse.end();
}

class FakeServer {
 public:
  explicit FakeServer(FakeConfig config) : config_(std::move(config)) {}

  Task<void> handle(http::Request& request, http::ResponseWriter& writer) {
    const std::string behaviour = config_.behaviours[next_++ % config_.behaviours.size()];
    const bool chat = request.path().ends_with("/chat/completions");
    const Prompt prompt = parse_prompt(request.body);
    if (behaviour == "http500") {
      http::Response response =
          http::error_response(500, "the engine is on fire", "InternalServerError");
      (void)co_await writer.send(std::move(response));
      co_return;
    }
    http::SseWriter sse(writer);
    if (!co_await sse.begin()) co_return;
    if (behaviour == "ok") {
      const std::int64_t cached = cache_.lookup_and_insert(prompt.tokens);
      co_await stream_ok(sse, prompt, chat, cached, config_.itl_ms);
    } else if (behaviour == "cut") {
      (void)co_await sse.send_data(text_chunk(chat));
      // Returning without end(): the server closes the connection mid-body.
    } else if (behaviour == "garbage") {
      (void)co_await sse.send_data("this is not json");
      (void)co_await sse.send_data("[DONE]");
      (void)co_await sse.end();
    } else if (behaviour == "stall") {
      co_await sleep_ms(config_.stall_ms);
      (void)co_await sse.end();
    } else if (behaviour == "error_event") {
      (void)co_await sse.send_data(text_chunk(chat));
      (void)co_await sse.send_data(
          R"({"error": {"message": "generation failed", "type": "InternalServerError", "param": null, "code": 500}})");
      (void)co_await sse.send_data("[DONE]");
      (void)co_await sse.end();
    } else {  // no_done
      (void)co_await sse.send_data(text_chunk(chat));
      (void)co_await sse.end();
    }
  }

 private:
  FakeConfig config_;
  std::size_t next_ = 0;  // one I/O thread: no lock needed
  PrefixCache cache_;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("fake-openai-server: an unreliable OpenAI-compatible server for tests");
  FakeConfig config;
  app.add_option("--behaviours", config.behaviours, "Behaviour per request, cycled")
      ->delimiter(',');
  app.add_option("--itl-ms", config.itl_ms, "Gap between streamed chunks");
  app.add_option("--stall-ms", config.stall_ms, "How long 'stall' stays silent");
  CLI11_PARSE(app, argc, argv);
  for (const auto& b : config.behaviours) {
    static const std::vector<std::string> known = {"ok",    "http500",     "cut",    "garbage",
                                                   "stall", "error_event", "no_done"};
    if (std::find(known.begin(), known.end(), b) == known.end()) {
      std::cerr << "unknown behaviour " << b << "\n";
      return 2;
    }
  }
  FakeServer fake(config);
  http::Router router;
  auto handler = [&fake](http::Request& r, http::ResponseWriter& w) { return fake.handle(r, w); };
  router.add(http::Method::kPost, "/v1/completions", handler);
  router.add(http::Method::kPost, "/v1/chat/completions", handler);
  http::ServerOptions options;
  options.shutdown_grace = std::chrono::milliseconds(200);
  http::Server server(options, router.handler());
  if (auto started = server.start(); !started) {
    std::cerr << started.error().to_string() << "\n";
    return 1;
  }
  std::cout << "listening on 127.0.0.1:" << server.port() << std::endl;
  asio::io_context io;
  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code&, int) { server.stop(); });
  io.run();
  server.wait();
  return 0;
}
