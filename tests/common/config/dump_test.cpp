// dump_yaml() round-trips, describe_markdown() documents every key.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "omni/config/config.hpp"
#include "test_schema.hpp"

namespace omni::config::testing {
namespace {

using ::testing::HasSubstr;

ServerConfig unusual_config() {
  ServerConfig c;
  c.listen = {"::1", 65535};
  c.io_threads = 256;
  c.header_timeout = 1500us;
  c.max_body_bytes = 4097;
  c.mode = Mode::kDebug;
  c.ratio = 1.0 / 3.0;
  c.tls = true;
  c.offset = -128;
  c.tag = "a: b # not a comment";
  c.deadline = 59min;
  c.endpoints = {"true", "~", "null", "x, y", "-"};
  c.backoff = {};
  c.poll = 3ms;
  c.pools = {PoolConfig{"prefill", {"p:1"}, 100}, PoolConfig{"decode", {"d:1", "d:2"}, 2}};
  c.min_batch = 3;
  c.max_batch = 3;
  return c;
}

TEST(ConfigDump, RoundTripsTheDefaults) {
  const std::string yaml = dump_yaml(server_schema(), ServerConfig{});
  auto loaded = load_yaml(server_schema(), yaml);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message << "\n" << yaml;
  EXPECT_EQ(*loaded, ServerConfig{});
}

TEST(ConfigDump, RoundTripsUnusualValues) {
  const ServerConfig original = unusual_config();
  ASSERT_TRUE(validate(server_schema(), original).ok());
  const std::string yaml = dump_yaml(server_schema(), original);
  auto loaded = load_yaml(server_schema(), yaml);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message << "\n" << yaml;
  EXPECT_EQ(*loaded, original) << yaml;
}

TEST(ConfigDump, WritesReadableUnits) {
  const std::string yaml = dump_yaml(server_schema(), ServerConfig{});
  EXPECT_THAT(yaml, HasSubstr("listen:\n  host: 127.0.0.1\n  port: 8000\n"));
  EXPECT_THAT(yaml, HasSubstr("header_timeout: 10s\n"));
  EXPECT_THAT(yaml, HasSubstr("max_body_bytes: 16MiB\n"));
  EXPECT_THAT(yaml, HasSubstr("mode: fast\n"));
  EXPECT_THAT(yaml, HasSubstr("tag: ~\n"));
  EXPECT_THAT(yaml, HasSubstr("backoff: [100ms, 1s]\n"));
  EXPECT_THAT(yaml, HasSubstr("poll: 250ms\n"));
  EXPECT_THAT(yaml, HasSubstr("pools: []\n"));
}

TEST(ConfigMarkdown, DocumentsEveryKey) {
  const std::string table = describe_markdown(server_schema());
  for (const char* key : {"listen.host",
                          "listen.port",
                          "io_threads",
                          "header_timeout",
                          "max_body_bytes",
                          "mode",
                          "ratio",
                          "tls",
                          "offset",
                          "tag",
                          "deadline",
                          "endpoints",
                          "backoff",
                          "poll",
                          "pools",
                          "pools[].name",
                          "pools[].endpoints",
                          "pools[].weight",
                          "min_batch",
                          "max_batch"}) {
    EXPECT_THAT(table, HasSubstr("| `" + std::string(key) + "` |")) << key;
  }
  EXPECT_THAT(table, HasSubstr("| Key | Flag | Type | Default | Description |"));
  EXPECT_THAT(table, HasSubstr("| `listen.port` | `--listen-port` | integer | `8000` | "
                               "TCP port (1..65535) |"));
  EXPECT_THAT(table, HasSubstr("| `header_timeout` | `--header-timeout` | duration | `10s` | "
                               "Deadline for a request head (>= 1ms) |"));
  EXPECT_THAT(table, HasSubstr("| `mode` | `--mode` | enum: fast \\| safe \\| debug | `fast` |"));
  EXPECT_THAT(table, HasSubstr("| `tag` | `--tag` | string, optional | `none` |"));
  EXPECT_THAT(table, HasSubstr("| `tls` | `--tls, --no-tls` | bool | `false` |"));
  EXPECT_THAT(table, HasSubstr("| `backoff` | `--backoff` | list of duration | `[100ms, 1s]` |"));
  // Items of a list of sections exist only in YAML: no flag, defaults of a fresh item.
  EXPECT_THAT(table, HasSubstr("| `pools[].weight` |  | integer | `1` |"));
}

}  // namespace
}  // namespace omni::config::testing
