// omni::http::Client over https against omni::http::Server with TLS, on loopback, with
// certificates a test CA makes: the server verified (chain, host), keep-alive and streams as in
// plain mode, mutual TLS, and the failures a misconfiguration gives.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <exception>
#include <optional>
#include <string>

#include "omni/http/client.hpp"
#include "omni/http/server.hpp"
#include "omni/http/sse.hpp"
#include "omni/http/tls.hpp"
#include "testing/test_pki.hpp"

namespace omni::http {
namespace {

namespace asio = boost::asio;

template <class T>
T run(asio::io_context& io, Task<T> task) {
  std::optional<T> out;
  std::exception_ptr error;
  asio::co_spawn(
      io, [&]() -> Task<void> { out.emplace(co_await std::move(task)); },
      [&](std::exception_ptr e) { error = e; });
  io.restart();
  io.run();
  if (error) std::rethrow_exception(error);
  return std::move(*out);
}

std::string temp_dir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return ::testing::TempDir() + "omni_tls_client_" + info->name();
}

class TlsClient : public ::testing::Test {
 protected:
  TlsClient() : pki_(temp_dir()) {
    pki_.issue("server", "IP:127.0.0.1");
    pki_.issue("elsewhere", "DNS:elsewhere.test");
    pki_.issue("client", "DNS:operator.test");
  }

  // A server with `certificate`'s pair; `client_ca` non-empty: client certificates required.
  void start(const std::string& certificate, const std::string& client_ca = {}) {
    Router router;
    router.add(Method::kGet, "/hello", [](Request&, ResponseWriter& w) -> Task<void> {
      Response r;
      r.body = "hello over TLS";
      (void)co_await w.send(std::move(r));
    });
    router.add(Method::kGet, "/events", [](Request&, ResponseWriter& w) -> Task<void> {
      SseWriter sse(w);
      if (!(co_await sse.begin())) co_return;
      for (int i = 0; i < 50; ++i) {
        if (!(co_await sse.send_data("{\"i\":" + std::to_string(i) + "}"))) co_return;
      }
      (void)co_await sse.send_data("[DONE]");
      (void)co_await sse.end();
    });
    ServerOptions options;
    if (!certificate.empty()) {
      auto tls = TlsCertificate::load(pki_.path(certificate + ".pem"),
                                      pki_.path(certificate + ".key"), client_ca);
      ASSERT_TRUE(tls.ok()) << tls.error().to_string();
      options.tls = *tls;
    }
    server_ = std::make_unique<Server>(options, router.handler());
    ASSERT_TRUE(server_->start().ok());
  }
  void TearDown() override {
    if (server_) server_->stop();
  }

  Endpoint https() const { return Endpoint{"127.0.0.1", server_->port(), /*tls=*/true}; }
  ClientOptions trusting(TlsClientFiles files) const {
    ClientOptions options;
    auto tls = TlsClientConfig::load(files);
    EXPECT_TRUE(tls.ok()) << tls.error().to_string();
    if (tls.ok()) options.tls = *tls;
    return options;
  }
  ClientOptions trusting_the_ca() const { return trusting({.ca_file = pki_.path("ca.pem")}); }

  Result<Response> get(Client& client, const Endpoint& to, const std::string& target = "/hello") {
    Request request;
    request.target = target;
    return run(io_, client.send(to, std::move(request)));
  }

  testing::TestPki pki_;
  std::unique_ptr<Server> server_;
  asio::io_context io_;
};

TEST_F(TlsClient, VerifiesTheServerAndKeepsTheConnectionAlive) {
  start("server");
  Client client(io_.get_executor(), trusting_the_ca());
  for (int i = 0; i < 5; ++i) {
    auto response = get(client, https());
    ASSERT_TRUE(response.ok()) << response.error().to_string();
    EXPECT_EQ(response->status, 200);
    EXPECT_EQ(response->body, "hello over TLS");
    EXPECT_EQ(client.idle_connections(), 1u);
  }
  EXPECT_EQ(server_->stats().connections_accepted, 1u);
}

TEST_F(TlsClient, RelaysAStreamPieceByPiece) {
  start("server");
  Client client(io_.get_executor(), trusting_the_ca());
  std::string body;
  const auto read_all = [&]() -> Task<Status> {
    Request request;
    request.target = "/events";
    auto stream = co_await client.open(https(), std::move(request));
    if (!stream) co_return std::move(stream).error();
    for (;;) {
      auto piece = co_await (*stream)->next();
      if (!piece) co_return std::move(piece).error();
      if (!*piece) co_return Status{};
      body += **piece;
    }
  };
  const Status read = run(io_, read_all());
  ASSERT_TRUE(read.ok()) << read.error().to_string();
  EXPECT_NE(body.find("data: {\"i\":0}"), std::string::npos);
  EXPECT_NE(body.find("data: {\"i\":49}"), std::string::npos);
  EXPECT_NE(body.find("data: [DONE]"), std::string::npos);
  EXPECT_EQ(client.idle_connections(), 1u);  // read to the end: pooled again
}

TEST_F(TlsClient, RefusesAServerItsTrustStoreDoesNotKnow) {
  start("server");
  Client client(io_.get_executor());  // the system trust store: the test CA is not in it
  auto response = get(client, https());
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(response.error().message.find("certificate verify failed"), std::string::npos)
      << response.error().message;
}

TEST_F(TlsClient, RefusesACertificateIssuedForAnotherHost) {
  start("elsewhere");
  Client client(io_.get_executor(), trusting_the_ca());
  auto response = get(client, https());
  ASSERT_FALSE(response.ok());
  EXPECT_NE(response.error().message.find("certificate verify failed"), std::string::npos)
      << response.error().message;
  EXPECT_NE(response.error().message.find("mismatch"), std::string::npos)
      << response.error().message;
}

TEST_F(TlsClient, PresentsItsCertificateWhenTheServerRequiresOne) {
  start("server", pki_.path("ca.pem"));
  Client anonymous(io_.get_executor(), trusting_the_ca());
  auto refused = get(anonymous, https());
  ASSERT_FALSE(refused.ok()) << "a client without a certificate got " << refused->status;
  EXPECT_EQ(refused.error().code, ErrorCode::kUnavailable) << refused.error().message;

  Client known(io_.get_executor(), trusting({.ca_file = pki_.path("ca.pem"),
                                             .cert_file = pki_.path("client.pem"),
                                             .key_file = pki_.path("client.key")}));
  auto response = get(known, https());
  ASSERT_TRUE(response.ok()) << response.error().to_string();
  EXPECT_EQ(response->status, 200);
}

TEST_F(TlsClient, HttpsToAPlainServerFailsCleanly) {
  start("");
  Client client(io_.get_executor(), trusting_the_ca());
  auto response = get(client, https());
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(response.error().message.find("TLS handshake"), std::string::npos)
      << response.error().message;
}

TEST_F(TlsClient, PlainHttpToATlsServerGetsA400) {
  start("server");
  Client client(io_.get_executor());
  auto response = get(client, Endpoint{"127.0.0.1", server_->port()});
  ASSERT_TRUE(response.ok()) << response.error().to_string();
  EXPECT_EQ(response->status, 400);
}

TEST(TlsClientConfig, NamesTheFileAtFault) {
  auto missing = TlsClientConfig::load({.ca_file = "/nonexistent/ca.pem"});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message.find("/nonexistent/ca.pem"), std::string::npos);
  auto half = TlsClientConfig::load({.cert_file = "/etc/hostname"});
  ASSERT_FALSE(half.ok());
  EXPECT_NE(half.error().message.find("both"), std::string::npos) << half.error().message;
  auto not_pem = TlsClientConfig::load({.ca_file = "/etc/hostname"});
  ASSERT_FALSE(not_pem.ok());
  EXPECT_NE(not_pem.error().message.find("no PEM CA certificate"), std::string::npos)
      << not_pem.error().message;
  auto system = TlsClientConfig::load({});
  ASSERT_TRUE(system.ok()) << system.error().to_string();
  EXPECT_NE((*system)->describe().find("system trust store"), std::string::npos);
}

}  // namespace
}  // namespace omni::http
