// The runtime's shared pieces: HttpServerConfig and LogConfig embedded in a binary's config.
#include "omni/config/runtime.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "omni/config/config.hpp"

namespace omni::config {
namespace {

using ::testing::HasSubstr;

struct BinaryConfig {
  HttpServerConfig server;
  LogConfig log;
  friend bool operator==(const BinaryConfig&, const BinaryConfig&) = default;
};

void describe_binary(Schema<BinaryConfig>& s) {
  s.section("server", &BinaryConfig::server, describe_http_server);
  s.section("log", &BinaryConfig::log, describe_log);
}

const Schema<BinaryConfig>& schema() {
  static const Schema<BinaryConfig> instance = make_schema<BinaryConfig>(describe_binary);
  return instance;
}

TEST(ConfigRuntime, DefaultsAreValid) {
  auto result = load_yaml(schema(), "");
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(*result, BinaryConfig{});
}

TEST(ConfigRuntime, LoadsServerAndLogSettings) {
  auto result = load_yaml(schema(), R"(
server:
  host: 0.0.0.0
  port: 8080
  io_threads: 4
  max_connections: 100
  max_header_bytes: 32KiB
  max_body_bytes: 1GiB
  header_timeout: 5s
  body_timeout: 2m
  idle_timeout: 90s
  write_timeout: 10s
  shutdown_grace: 0s
log:
  level: warn
  format: json
  file: /var/log/omni.log
)");
  ASSERT_TRUE(result.ok()) << result.error().message;
  const BinaryConfig& c = *result;
  EXPECT_EQ(c.server.host, "0.0.0.0");
  EXPECT_EQ(c.server.port, 8080);
  EXPECT_EQ(c.server.io_threads, 4u);
  EXPECT_EQ(c.server.max_connections, 100u);
  EXPECT_EQ(c.server.max_header_bytes, 32u * 1024);
  EXPECT_EQ(c.server.max_body_bytes, 1u << 30);
  EXPECT_EQ(c.server.header_timeout, 5s);
  EXPECT_EQ(c.server.body_timeout, 120s);
  EXPECT_EQ(c.server.idle_timeout, 90s);
  EXPECT_EQ(c.server.write_timeout, 10s);
  EXPECT_EQ(c.server.shutdown_grace, 0s);
  EXPECT_EQ(c.log.level, LogLevel::kWarn);
  EXPECT_EQ(c.log.format, LogFormat::kJson);
  EXPECT_EQ(c.log.file, "/var/log/omni.log");
}

TEST(ConfigRuntime, RejectsUnsafeServerSettings) {
  auto result = load_yaml(schema(), R"(
server:
  io_threads: 0
  header_timeout: 0s
  max_header_bytes: 100
log:
  level: verbose
)");
  ASSERT_FALSE(result.ok());
  const std::string& message = result.error().message;
  EXPECT_THAT(message, HasSubstr("server.io_threads: must be in 1..1024, got 0"));
  EXPECT_THAT(message, HasSubstr("server.header_timeout: must be at least 1ms, got 0s"));
  EXPECT_THAT(message, HasSubstr("server.max_header_bytes: must be at least 1KiB, got 100"));
  EXPECT_THAT(message, HasSubstr("log.level: unknown value 'verbose', expected one of: trace, "
                                 "debug, info, warn, error, critical, off"));
}

TEST(ConfigRuntime, EveryLogLevelAndFormatRoundTrips) {
  for (const auto& [name, level] : log_level_names()) {
    for (const auto& [format_name, format] : log_format_names()) {
      BinaryConfig cfg;
      cfg.log.level = level;
      cfg.log.format = format;
      auto loaded = load_yaml(schema(), dump_yaml(schema(), cfg));
      ASSERT_TRUE(loaded.ok()) << name << "/" << format_name;
      EXPECT_EQ(*loaded, cfg);
    }
  }
}

}  // namespace
}  // namespace omni::config
