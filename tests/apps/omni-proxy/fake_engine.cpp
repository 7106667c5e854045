// omni-fake-engine: a small vLLM-compatible engine for omni-proxy's integration tests.
//
// It speaks enough of the OpenAI API (completions, chat, SSE, /v1/models, /health), the
// NixlConnector handshake (a request with kv_transfer_params.do_remote_decode answers as a
// prefill with kv_transfer_params for the decode) and SGLang's bootstrap fields, and can be
// told to fail, stall, or die. --record FILE appends one JSON line per request received (and
// one per stream the client abandoned) so tests can check exactly what the proxy sent.
#include <unistd.h>
#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <memory>
#include <mutex>

#include "omni/config/cli.hpp"
#include "omni/http/server.hpp"
#include "omni/http/sse.hpp"

namespace {

namespace asio = boost::asio;
namespace json = boost::json;
namespace http = omni::http;
using omni::Duration;
using omni::Task;
using namespace std::chrono_literals;

struct FakeConfig {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  std::string model = "fake-model";
  unsigned io_threads = 1;
  Duration token_delay = 0s;      // between streamed tokens
  Duration stall = 0s;            // before answering a generation request
  int fail_status = 0;            // answer every generation request with this status
  unsigned fail_after = 0;        // ... only after this many good ones (0: from the start)
  bool no_kv_params = false;      // a prefill answers kv_transfer_params: null
  bool unhealthy = false;         // /health answers 503
  unsigned die_after_events = 0;  // _exit(1) after streaming this many events in total
  std::optional<std::string> record;
  std::optional<std::string> port_file;  // write the bound port here once listening
  std::optional<std::string> api_key;    // as vLLM's --api-key: /v1/* needs Bearer <key>
  // HTTPS, as vLLM's --ssl-certfile/--ssl-keyfile/--ssl-ca-certs with --ssl-cert-reqs 2.
  std::optional<std::string> tls_cert_file;
  std::optional<std::string> tls_key_file;
  std::optional<std::string> tls_client_ca_file;  // client certificates required
};

void describe(omni::config::Schema<FakeConfig>& s) {
  s.field("host", &FakeConfig::host, "Address");
  s.field("port", &FakeConfig::port, "Port (0: ephemeral)");
  s.field("model", &FakeConfig::model, "Served model name");
  s.field("io_threads", &FakeConfig::io_threads, "I/O threads").range(1, 64);
  s.field("token_delay", &FakeConfig::token_delay, "Delay between streamed tokens");
  s.field("stall", &FakeConfig::stall, "Delay before answering a generation request");
  s.field("fail_status", &FakeConfig::fail_status, "Answer generation requests with this status");
  s.field("fail_after", &FakeConfig::fail_after, "Fail only after this many requests");
  s.field("no_kv_params", &FakeConfig::no_kv_params, "Prefill answers kv_transfer_params null");
  s.field("unhealthy", &FakeConfig::unhealthy, "/health answers 503");
  s.field("die_after_events", &FakeConfig::die_after_events,
          "Exit after streaming this many events");
  s.field("record", &FakeConfig::record, "Append one JSON line per request to this file");
  s.field("port_file", &FakeConfig::port_file, "Write the bound port to this file");
  s.field("api_key", &FakeConfig::api_key,
          "Require Authorization: Bearer KEY on /v1/* (vLLM's --api-key)");
  s.field("tls_cert_file", &FakeConfig::tls_cert_file, "Serve HTTPS with this certificate chain");
  s.field("tls_key_file", &FakeConfig::tls_key_file, "The key of tls_cert_file");
  s.field("tls_client_ca_file", &FakeConfig::tls_client_ca_file,
          "Require client certificates this CA signed");
}

struct Engine {
  FakeConfig cfg;
  std::atomic<unsigned> requests{0};
  std::atomic<unsigned> events{0};
  std::mutex record_mu;

  void record(const json::object& line) {
    if (!cfg.record) return;
    std::lock_guard lock(record_mu);
    if (std::FILE* f = std::fopen(cfg.record->c_str(), "a")) {
      const std::string text = json::serialize(line) + "\n";
      std::fwrite(text.data(), 1, text.size(), f);
      std::fclose(f);
    }
  }
  void count_event() {
    const unsigned n = ++events;
    if (cfg.die_after_events != 0 && n >= cfg.die_after_events) ::_exit(1);
  }
};

http::Response json_response(int status, const json::value& body) {
  http::Response response;
  response.status = status;
  response.headers.add("Content-Type", "application/json");
  response.body = json::serialize(body);
  return response;
}

Task<void> sleep_for(Duration d) {
  if (d <= Duration::zero()) co_return;
  asio::steady_timer timer(co_await asio::this_coro::executor);
  timer.expires_after(d);
  (void)co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
}

// Waits `d`; true if the client closed the connection meanwhile.
Task<bool> stall_unless_gone(http::ResponseWriter& writer, Duration d) {
  if (d <= Duration::zero()) co_return false;
  auto timer = std::make_shared<asio::steady_timer>(co_await asio::this_coro::executor);
  timer->expires_after(d);
  auto gone = std::make_shared<bool>(false);
  const bool watching = writer.watch_close([timer, gone] {
    *gone = true;
    timer->cancel();
  });
  (void)co_await timer->async_wait(asio::as_tuple(asio::use_awaitable));
  if (watching) writer.unwatch_close();
  co_return *gone;
}

std::string choice_text(bool chat, const std::string& id, const std::string& model, int index,
                        const std::string& piece, const char* finish) {
  json::object chunk;
  chunk["id"] = (chat ? "chatcmpl-" : "cmpl-") + id;
  chunk["object"] = chat ? "chat.completion.chunk" : "text_completion";
  chunk["created"] = 1767225600;
  chunk["model"] = model;
  json::object choice;
  choice["index"] = 0;
  if (chat) {
    json::object delta;
    delta["content"] = piece;
    choice["delta"] = std::move(delta);
  } else {
    choice["text"] = piece;
  }
  choice["finish_reason"] = finish ? json::value(finish) : json::value(nullptr);
  chunk["choices"] = json::array{std::move(choice)};
  (void)index;
  return json::serialize(chunk);
}

Task<void> generate(Engine& e, http::Request& request, http::ResponseWriter& writer, bool chat) {
  boost::system::error_code ec;
  json::value parsed = json::parse(request.body, ec);
  if (ec || !parsed.is_object()) {
    http::Response bad = http::error_response(400, "bad json");
    (void)co_await writer.send(std::move(bad));
    co_return;
  }
  json::object& body = parsed.get_object();
  const std::string rid(request.headers.get("X-Request-Id").value_or("none"));
  const unsigned n = ++e.requests;
  json::object line;
  line["event"] = "request";
  line["path"] = request.path();
  line["x_request_id"] = rid;
  line["body"] = body;
  line["raw"] = request.body;
  line["port"] = e.cfg.port;
  // What reached the engine besides the body: trace context, forwarding, credentials.
  for (const char* name : {"traceparent", "tracestate", "X-Forwarded-For", "Authorization"}) {
    if (auto value = request.headers.get(name)) line[name] = std::string(*value);
  }
  e.record(line);

  // A stall ends early when the caller (the proxy) closes the connection: recorded, so tests
  // can see that a client leaving the proxy cancelled the engine call.
  if (co_await stall_unless_gone(writer, e.cfg.stall)) {
    json::object gone;
    gone["event"] = "client_gone";
    gone["x_request_id"] = rid;
    gone["sent"] = 0;
    gone["during"] = "stall";
    e.record(gone);
    co_return;
  }
  if (e.cfg.fail_status != 0 && n > e.cfg.fail_after) {
    http::Response failed =
        http::error_response(e.cfg.fail_status, "injected failure", "InternalServerError");
    (void)co_await writer.send(std::move(failed));
    co_return;
  }
  const json::value* kv = body.if_contains("kv_transfer_params");
  const bool is_prefill = kv && kv->is_object() &&
                          kv->get_object().if_contains("do_remote_decode") &&
                          kv->get_object().at("do_remote_decode") == json::value(true);
  std::int64_t tokens = 16;
  if (const json::value* m = body.if_contains("max_tokens"); m && m->is_int64())
    tokens = m->get_int64();
  if (const json::value* m = body.if_contains("max_completion_tokens"); m && m->is_int64())
    tokens = m->get_int64();
  const bool stream = body.if_contains("stream") && body.at("stream") == json::value(true);
  const std::string model = e.cfg.model;

  if (!stream) {
    json::object answer;
    answer["id"] = (chat ? "chatcmpl-" : "cmpl-") + rid;
    answer["object"] = chat ? "chat.completion" : "text_completion";
    answer["model"] = model;
    std::string text;
    for (std::int64_t i = 0; i < tokens; ++i) text += " tok" + std::to_string(i);
    json::object choice;
    choice["index"] = 0;
    if (chat) {
      choice["message"] = json::object{{"role", "assistant"}, {"content", text}};
    } else {
      choice["text"] = text;
    }
    choice["finish_reason"] = "length";
    answer["choices"] = json::array{std::move(choice)};
    answer["usage"] = json::object{
        {"prompt_tokens", 5}, {"completion_tokens", tokens}, {"total_tokens", 5 + tokens}};
    if (is_prefill && !e.cfg.no_kv_params) {
      answer["kv_transfer_params"] =
          json::object{{"do_remote_prefill", true},
                       {"do_remote_decode", false},
                       {"remote_block_ids", json::array{json::array{1, 2, 3}}},
                       {"remote_engine_id", "fake-" + std::to_string(e.cfg.port)},
                       {"remote_request_id", "cmpl-" + rid + "-0"},
                       {"remote_host", "127.0.0.1"},
                       {"remote_port", e.cfg.port},
                       {"tp_size", 1}};
    } else {
      answer["kv_transfer_params"] = nullptr;
    }
    http::Response response = json_response(200, answer);
    (void)co_await writer.send(std::move(response));
    co_return;
  }
  http::SseWriter sse(writer);
  http::Headers extra;
  if (!co_await sse.begin(std::move(extra))) co_return;
  for (std::int64_t i = 0; i < tokens; ++i) {
    const char* finish = i + 1 == tokens ? "length" : nullptr;
    const std::string chunk = choice_text(chat, rid, model, 0, " tok" + std::to_string(i), finish);
    if (!co_await sse.send_data(chunk)) {
      json::object gone;
      gone["event"] = "client_gone";
      gone["x_request_id"] = rid;
      gone["sent"] = i;
      e.record(gone);
      co_return;
    }
    e.count_event();
    co_await sleep_for(e.cfg.token_delay);
  }
  (void)co_await sse.send_data("[DONE]");
  (void)co_await sse.end();
}

http::Handler make_routes(Engine& e) {
  http::Router router;
  router.add(http::Method::kPost, "/v1/completions",
             [&e](http::Request& r, http::ResponseWriter& w) -> Task<void> {
               co_await generate(e, r, w, false);
             });
  router.add(http::Method::kPost, "/v1/chat/completions",
             [&e](http::Request& r, http::ResponseWriter& w) -> Task<void> {
               co_await generate(e, r, w, true);
             });
  router.add(http::Method::kGet, "/v1/models",
             [&e](http::Request&, http::ResponseWriter& w) -> Task<void> {
               json::object model{{"id", e.cfg.model}, {"object", "model"}, {"owned_by", "vllm"}};
               http::Response response = json_response(
                   200, json::object{{"object", "list"}, {"data", json::array{model}}});
               (void)co_await w.send(std::move(response));
             });
  router.add(http::Method::kGet, "/health",
             [&e](http::Request&, http::ResponseWriter& w) -> Task<void> {
               http::Response response;
               response.status = e.cfg.unhealthy ? 503 : 200;
               (void)co_await w.send(std::move(response));
             });
  // vLLM's --api-key guards /v1/* (and nothing else) with a 401.
  return [&e, routes = router.handler()](http::Request& r, http::ResponseWriter& w) -> Task<void> {
    if (e.cfg.api_key && r.path().starts_with("/v1/") &&
        r.headers.get("Authorization").value_or("") != "Bearer " + *e.cfg.api_key) {
      http::Response refused = json_response(401, json::object{{"error", "Unauthorized"}});
      (void)co_await w.send(std::move(refused));
      co_return;
    }
    co_await routes(r, w);
  };
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  omni::config::Schema<FakeConfig> schema;
  describe(schema);
  auto cli =
      omni::config::parse_command_line(argc, argv, schema, "omni-fake-engine: a test engine");
  if (!cli) {
    std::cerr << cli.error().message << "\n";
    return 2;
  }
  if (cli->exit_now) return 0;
  Engine engine;
  engine.cfg = cli->config;
  http::ServerOptions options;
  options.host = engine.cfg.host;
  options.port = engine.cfg.port;
  options.io_threads = engine.cfg.io_threads;
  options.shutdown_grace = 1s;
  if (engine.cfg.tls_cert_file && engine.cfg.tls_key_file) {
    auto tls = http::TlsCertificate::load(*engine.cfg.tls_cert_file, *engine.cfg.tls_key_file,
                                          engine.cfg.tls_client_ca_file.value_or(""));
    if (!tls) {
      std::cerr << "fake engine: " << tls.error().message << "\n";
      return 2;
    }
    options.tls = *tls;
  }
  http::Server server(options, make_routes(engine));
  if (auto s = server.start(); !s) {
    std::cerr << "fake engine: " << s.error().message << "\n";
    return 1;
  }
  engine.cfg.port = server.port();
  if (engine.cfg.port_file) {
    const std::string tmp = *engine.cfg.port_file + ".tmp";
    if (std::FILE* f = std::fopen(tmp.c_str(), "w")) {
      std::fprintf(f, "%u\n", static_cast<unsigned>(server.port()));
      std::fclose(f);
      std::rename(tmp.c_str(), engine.cfg.port_file->c_str());
    }
  }
  asio::io_context io;
  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code&, int) { io.stop(); });
  io.run();
  server.stop();
  return 0;
}
