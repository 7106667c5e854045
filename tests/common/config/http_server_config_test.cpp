// HttpServerConfig's defaults must be omni::http::ServerOptions' defaults, field for field.
#include "omni/config/http_server_config.hpp"

#include <gtest/gtest.h>

namespace omni::config {
namespace {

TEST(ConfigHttpServer, DefaultsMatchServerOptions) {
  const http::ServerOptions expected;
  const http::ServerOptions converted = to_server_options(HttpServerConfig{});
  EXPECT_EQ(converted.host, expected.host);
  EXPECT_EQ(converted.port, expected.port);
  EXPECT_EQ(converted.io_threads, expected.io_threads);
  EXPECT_EQ(converted.max_connections, expected.max_connections);
  EXPECT_EQ(converted.max_header_bytes, expected.max_header_bytes);
  EXPECT_EQ(converted.max_body_bytes, expected.max_body_bytes);
  EXPECT_EQ(converted.header_timeout, expected.header_timeout);
  EXPECT_EQ(converted.body_timeout, expected.body_timeout);
  EXPECT_EQ(converted.idle_timeout, expected.idle_timeout);
  EXPECT_EQ(converted.write_timeout, expected.write_timeout);
  EXPECT_EQ(converted.shutdown_grace, expected.shutdown_grace);
  EXPECT_EQ(converted.server_name, expected.server_name);
}

TEST(ConfigHttpServer, ConvertsEveryFieldAndKeepsTheServerName) {
  HttpServerConfig cfg;
  cfg.host = "0.0.0.0";
  cfg.port = 8080;
  cfg.io_threads = 3;
  cfg.max_connections = 7;
  cfg.max_header_bytes = 2048;
  cfg.max_body_bytes = 4096;
  cfg.header_timeout = 1s;
  cfg.body_timeout = 2s;
  cfg.idle_timeout = 3s;
  cfg.write_timeout = 4s;
  cfg.shutdown_grace = 5s;
  http::ServerOptions base;
  base.server_name = "omni-sim";
  const http::ServerOptions out = to_server_options(cfg, base);
  EXPECT_EQ(out.host, "0.0.0.0");
  EXPECT_EQ(out.port, 8080);
  EXPECT_EQ(out.io_threads, 3u);
  EXPECT_EQ(out.max_connections, 7u);
  EXPECT_EQ(out.max_header_bytes, 2048u);
  EXPECT_EQ(out.max_body_bytes, 4096u);
  EXPECT_EQ(out.header_timeout, 1s);
  EXPECT_EQ(out.body_timeout, 2s);
  EXPECT_EQ(out.idle_timeout, 3s);
  EXPECT_EQ(out.write_timeout, 4s);
  EXPECT_EQ(out.shutdown_grace, 5s);
  EXPECT_EQ(out.server_name, "omni-sim");
}

}  // namespace
}  // namespace omni::config
