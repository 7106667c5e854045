#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include <atomic>

#include <chrono>

#include "omni/http/server.hpp"
#include "omni/http/sse.hpp"
#include "omni/model/generate.hpp"
#include "omni/model/serve.hpp"
#include "omni/tokenizer/tokenizer.hpp"
#include "sim/request.hpp"
#include "sim/response.hpp"
#include "sim/text_codec.hpp"

namespace omni::model {
namespace json = boost::json;
using omni::Task;

namespace {

// sim::TextCodec over the model's tokenizer.json (the request parser tokenizes through it).
class TokenizerCodec final : public sim::TextCodec {
 public:
  explicit TokenizerCodec(std::shared_ptr<const tokenizer::Tokenizer> t) : t_(std::move(t)) {}
  std::vector<std::uint32_t> encode(std::string_view text) const override {
    auto ids = t_->encode(text);
    return ids ? *ids : std::vector<std::uint32_t>{};
  }
  std::vector<std::uint32_t> encode_with_special_tokens(std::string_view text) const override {
    auto ids = t_->encode(text, {true});
    return ids ? *ids : std::vector<std::uint32_t>{};
  }
  std::string decode(std::span<const std::uint32_t> tokens) const override {
    return t_->decode(tokens);
  }
  std::string token_text(std::uint32_t token) const override {
    return t_->decode(std::span<const std::uint32_t>(&token, 1));
  }
  std::uint32_t vocab_size() const override { return static_cast<std::uint32_t>(t_->vocab_size()); }
  std::span<const std::uint32_t> generatable() const override { return {}; }

 private:
  std::shared_ptr<const tokenizer::Tokenizer> t_;
};

sim::Usage usage_of(std::size_t prompt, std::size_t completion) {
  sim::Usage u;
  u.prompt_tokens = static_cast<std::uint32_t>(prompt);
  u.completion_tokens = static_cast<std::uint32_t>(completion);
  return u;
}
}  // namespace

struct ModelServer::Impl {
  const LoadedModel& model;
  Engine& engine;
  ServeOptions options;
  std::unique_ptr<sim::TextCodec> codec;
  bool real_tokenizer = false;
  sim::ModelLimits limits;
  std::unique_ptr<http::Server> server;
  // One request at a time. An atomic flag, not a mutex: the handler's coroutine may resume on
  // another I/O thread than the one that took it.
  std::atomic<bool> busy{false};
  std::uint64_t next_id = 1;
  std::int64_t created = 0;

  static http::Response json_response(int status, std::string body) {
    http::Response r;
    r.status = status;
    r.headers.set("Content-Type", "application/json");
    r.body = std::move(body);
    return r;
  }

  Task<void> models(http::Request&, http::ResponseWriter& w) {
    const std::string name = limits.served_names[0];
    co_await w.send(json_response(
        200, "{\"object\":\"list\",\"data\":[{\"id\":" + sim::json_quote(name) +
                 ",\"object\":\"model\",\"created\":" + std::to_string(created) +
                 ",\"owned_by\":\"omni\",\"root\":" + sim::json_quote(name) +
                 ",\"parent\":null,\"max_model_len\":" + std::to_string(limits.max_model_len) +
                 "}]}"));
  }

  Task<void> completions(http::Request& req, http::ResponseWriter& w) {
    auto parsed =
        sim::parse_generation_request(req.body, sim::Endpoint::kCompletions, limits, *codec);
    if (auto* err = std::get_if<sim::ApiError>(&parsed)) {
      co_await w.send(err->response());
      co_return;
    }
    auto& g = std::get<sim::GenerationRequest>(parsed);
    GenerateOptions go;
    go.max_tokens = static_cast<int>(g.max_tokens);
    go.eos_token_id = model.config.eos_token_id;
    go.temperature = 1.0;  // vLLM's default
    boost::system::error_code ec;
    const auto body = json::parse(req.body, ec);
    if (!ec && body.is_object()) {
      const auto& o = body.as_object();
      if (const auto* t = o.if_contains("temperature"); t && t->is_number())
        go.temperature = t->to_number<double>();
      if (const auto* t = o.if_contains("ignore_eos"); t && t->is_bool())
        go.ignore_eos = t->as_bool();
    }
    if (g.seed) go.seed = static_cast<std::uint64_t>(*g.seed);
    while (busy.exchange(true, std::memory_order_acquire)) {  // wait for the running request
      boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor);
      timer.expires_after(std::chrono::milliseconds(1));
      co_await timer.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
    }
    struct Release {
      std::atomic<bool>& flag;
      ~Release() { flag.store(false, std::memory_order_release); }
    } release{busy};
    Session session(engine, go);
    std::vector<std::int32_t> prompt(g.prompt_tokens.begin(), g.prompt_tokens.end());
    sim::ResponseContext ctx{sim::Endpoint::kCompletions, "cmpl-" + std::to_string(next_id++),
                             std::chrono::duration_cast<std::chrono::seconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count(),
                             g.model, ""};
    auto first = session.prefill(prompt);
    if (!first) {
      co_await w.send(sim::bad_request(first.error().message).response());
      co_return;
    }
    auto out_ids = [&]() {
      std::vector<std::uint32_t> ids(session.output().begin(), session.output().end());
      return ids;
    };
    if (!g.stream) {
      while (!session.done()) {
        if (auto t = session.next(); !t) {
          co_await w.send(sim::internal_error(t.error().message).response());
          co_return;
        }
      }
      const auto ids = out_ids();
      const sim::Usage usage = usage_of(prompt.size(), ids.size());
      co_await w.send(json_response(
          200,
          sim::format_response(ctx, codec->decode(ids), session.finish_reason(), usage,
                               sim::TokenIds{g.prompt_tokens, ids, g.return_token_ids}, "null")));
      co_return;
    }
    http::SseWriter sse(w);
    if (!(co_await sse.begin())) co_return;
    std::string sent_text;
    std::size_t sent_tokens = 0;
    bool first_chunk = true;
    for (;;) {
      const auto ids = out_ids();
      std::string text = codec->decode(ids);
      std::string delta;
      // Hold back an incomplete UTF-8 character (decoded as U+FFFD) until its bytes arrive.
      const bool incomplete = !session.done() && text.size() >= 3 &&
                              text.compare(text.size() - 3, 3, "\xEF\xBF\xBD") == 0;
      if (!incomplete && text.size() >= sent_text.size() &&
          text.compare(0, sent_text.size(), sent_text) == 0) {
        delta = text.substr(sent_text.size());
        sent_text = text;
      }
      const std::vector<std::uint32_t> fresh(ids.begin() + static_cast<std::ptrdiff_t>(sent_tokens),
                                             ids.end());
      sent_tokens = ids.size();
      const sim::TokenIds tids{first_chunk ? std::span<const std::uint32_t>(g.prompt_tokens)
                                           : std::span<const std::uint32_t>(),
                               fresh, g.return_token_ids};
      first_chunk = false;
      const std::string finish = session.done() ? session.finish_reason() : "";
      if (!(co_await sse.send_data(sim::format_chunk(ctx, delta, finish, std::nullopt, tids,
                                                     session.done() && !g.include_usage))))
        co_return;
      if (session.done()) break;
      if (auto t = session.next(); !t) {
        co_await sse.send_data(
            sim::format_stream_error(t.error().message, "InternalServerError", 500));
        break;
      }
    }
    if (g.include_usage) {
      co_await sse.send_data(sim::format_usage_chunk(ctx, usage_of(prompt.size(), sent_tokens)));
    }
    co_await sse.send_data("[DONE]");
    co_await sse.end();
  }
};

ModelServer::ModelServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ModelServer::~ModelServer() { stop(); }

Result<std::unique_ptr<ModelServer>> ModelServer::create(const LoadedModel& model, Engine& engine,
                                                         ServeOptions options) {
  auto impl = std::unique_ptr<Impl>(
      new Impl{model, engine, options, nullptr, false, {}, nullptr, {}, 1, 0});
  if (!model.tokenizer_path.empty()) {
    auto tok = tokenizer::Tokenizer::load(model.tokenizer_path);
    if (!tok) return std::move(tok).error();
    impl->codec = std::make_unique<TokenizerCodec>(*tok);
    impl->real_tokenizer = true;
  } else {
    impl->codec = sim::make_builtin_codec();
  }
  impl->limits.served_names = {options.served_model_name.empty() ? model.name
                                                                 : options.served_model_name};
  impl->limits.max_model_len =
      static_cast<std::uint32_t>(engine.cache().num_pages() * engine.cache().page_size());
  impl->created = std::chrono::duration_cast<std::chrono::seconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  Impl* self = impl.get();
  http::Router router;
  router.add(http::Method::kGet, "/health",
             [](http::Request&, http::ResponseWriter& w) -> Task<void> {
               http::Response r;
               co_await w.send(std::move(r));
             });
  router.add(http::Method::kGet, "/v1/models",
             [self](http::Request& r, http::ResponseWriter& w) -> Task<void> {
               return self->models(r, w);
             });
  router.add(http::Method::kPost, "/v1/completions",
             [self](http::Request& r, http::ResponseWriter& w) -> Task<void> {
               return self->completions(r, w);
             });
  http::ServerOptions so;
  so.host = options.host;
  so.port = options.port;
  so.io_threads = options.io_threads;
  so.server_name = "omni-serve";
  impl->server = std::make_unique<http::Server>(so, router.handler());
  return std::unique_ptr<ModelServer>(new ModelServer(std::move(impl)));
}

Status ModelServer::start() { return impl_->server->start(); }
std::uint16_t ModelServer::port() const noexcept { return impl_->server->port(); }
void ModelServer::stop() {
  if (impl_ && impl_->server) impl_->server->stop();
}

}  // namespace omni::model
