// Router dispatch without sockets: a recording ResponseWriter and a local io_context.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <optional>

#include "omni/http/server.hpp"

namespace omni::http {
namespace {

class RecordingWriter final : public ResponseWriter {
 public:
  Task<Status> send(Response response) override {
    sent = std::move(response);
    co_return ok_status();
  }
  Task<Status> begin_stream(int, Headers) override {
    co_return make_error(ErrorCode::kUnsupported, "test");
  }
  Task<Status> write_chunk(std::string_view) override {
    co_return make_error(ErrorCode::kUnsupported, "test");
  }
  Task<Status> end_stream() override { co_return make_error(ErrorCode::kUnsupported, "test"); }
  bool started() const noexcept override { return sent.has_value(); }

  std::optional<Response> sent;
};

// A handler that answers with its own name, so the test can see which one ran.
Handler named(std::string name) {
  return [name](Request&, ResponseWriter& writer) -> Task<void> {
    Response response;
    response.body = name;
    (void)co_await writer.send(std::move(response));
  };
}

Response call(const Handler& handler, Method method, std::string target) {
  boost::asio::io_context io;
  Request request;
  request.method = method;
  request.target = std::move(target);
  RecordingWriter writer;
  boost::asio::co_spawn(io, handler(request, writer), boost::asio::detached);
  io.run();
  EXPECT_TRUE(writer.sent.has_value());
  return writer.sent.value_or(Response{});
}

Router sample() {
  Router router;
  router.add(Method::kGet, "/v1/models", named("list"))
      .add(Method::kPost, "/v1/completions", named("complete"))
      .add(Method::kGet, "/v1/completions", named("describe"));
  return router;
}

TEST(Router, DispatchesByExactPathAndMethod) {
  const Handler handler = sample().handler();
  EXPECT_EQ(call(handler, Method::kGet, "/v1/models").body, "list");
  EXPECT_EQ(call(handler, Method::kPost, "/v1/completions").body, "complete");
  EXPECT_EQ(call(handler, Method::kGet, "/v1/completions").body, "describe");
}

TEST(Router, IgnoresTheQueryButNotPathSuffixes) {
  const Handler handler = sample().handler();
  EXPECT_EQ(call(handler, Method::kGet, "/v1/models?limit=3").body, "list");
  EXPECT_EQ(call(handler, Method::kGet, "/v1/models/x").status, 404);
  EXPECT_EQ(call(handler, Method::kGet, "/v1/model").status, 404);
}

TEST(Router, UnknownPathIs404InTheOpenAIErrorFormat) {
  const Response response = call(sample().handler(), Method::kGet, "/nope");
  EXPECT_EQ(response.status, 404);
  EXPECT_EQ(response.headers.get("Content-Type"), "application/json");
  EXPECT_NE(response.body.find("\"code\":404"), std::string::npos);
  EXPECT_NE(response.body.find("/nope"), std::string::npos);
}

TEST(Router, OtherMethodOnAKnownPathIs405WithAllow) {
  const Handler handler = sample().handler();
  const Response response = call(handler, Method::kDelete, "/v1/completions");
  EXPECT_EQ(response.status, 405);
  EXPECT_EQ(response.headers.get("Allow"), "POST, GET");
  EXPECT_NE(response.body.find("\"code\":405"), std::string::npos);
  EXPECT_EQ(call(handler, Method::kPost, "/v1/models").headers.get("Allow"), "GET");
}

TEST(Router, HeadFallsBackToGet) {
  EXPECT_EQ(call(sample().handler(), Method::kHead, "/v1/models").body, "list");
  EXPECT_EQ(call(sample().handler(), Method::kHead, "/v1/completions").body, "describe");
}

TEST(Router, HandlerOutlivesTheRouter) {
  Handler handler;
  {
    Router router;
    router.add(Method::kGet, "/", named("root"));
    handler = router.handler();
  }
  EXPECT_EQ(call(handler, Method::kGet, "/").body, "root");
}

}  // namespace
}  // namespace omni::http
