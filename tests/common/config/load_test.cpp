// Loading YAML through a schema: defaults, every field kind, and the errors users will see.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "omni/config/config.hpp"
#include "test_schema.hpp"

namespace omni::config::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

Result<ServerConfig> load(const std::string& yaml) { return load_yaml(server_schema(), yaml); }

std::string error_of(const std::string& yaml) {
  auto result = load(yaml);
  EXPECT_FALSE(result.ok()) << yaml;
  if (result.ok()) return {};
  EXPECT_EQ(result.error().code, ErrorCode::kInvalidArgument);
  return result.error().message;
}

TEST(ConfigLoad, EmptyDocumentsGiveTheDefaults) {
  for (const char* yaml : {"", "{}", "# only a comment\n", "~"}) {
    auto result = load(yaml);
    ASSERT_TRUE(result.ok()) << yaml << ": " << result.error().message;
    EXPECT_EQ(*result, ServerConfig{}) << yaml;
  }
}

TEST(ConfigLoad, ParsesEveryFieldKind) {
  auto result = load(R"(
listen:
  host: 0.0.0.0
  port: 9000
io_threads: 4
header_timeout: 250ms
max_body_bytes: 512KiB
mode: safe
ratio: 0.75
tls: yes
offset: -3
tag: blue
deadline: 1.5m
endpoints: [a:1, b:2]
backoff:
  - 10ms
  - 2s
poll: 1s
pools:
  - name: prefill
    endpoints: [p1:80, p2:80]
    weight: 3
  - name: decode
    endpoints: [d1:80]
min_batch: 2
max_batch: 2
)");
  ASSERT_TRUE(result.ok()) << result.error().message;
  const ServerConfig& c = *result;
  EXPECT_EQ(c.listen.host, "0.0.0.0");
  EXPECT_EQ(c.listen.port, 9000);
  EXPECT_EQ(c.io_threads, 4u);
  EXPECT_EQ(c.header_timeout, 250ms);
  EXPECT_EQ(c.max_body_bytes, 512u * 1024);
  EXPECT_EQ(c.mode, Mode::kSafe);
  EXPECT_DOUBLE_EQ(c.ratio, 0.75);
  EXPECT_TRUE(c.tls);
  EXPECT_EQ(c.offset, -3);
  EXPECT_EQ(c.tag, "blue");
  EXPECT_EQ(c.deadline, Duration{90s});
  EXPECT_EQ(c.endpoints, (std::vector<std::string>{"a:1", "b:2"}));
  EXPECT_EQ(c.backoff, (std::vector<Duration>{10ms, 2s}));
  EXPECT_EQ(c.poll, 1000ms);
  ASSERT_EQ(c.pools.size(), 2u);
  EXPECT_EQ(c.pools[0], (PoolConfig{"prefill", {"p1:80", "p2:80"}, 3}));
  EXPECT_EQ(c.pools[1], (PoolConfig{"decode", {"d1:80"}, 1}));  // weight from PoolConfig{}
  EXPECT_EQ(c.min_batch, 2u);
}

TEST(ConfigLoad, UnsetKeysKeepTheirDefaults) {
  auto result = load("listen:\n  port: 1234\n");
  ASSERT_TRUE(result.ok());
  ServerConfig expected;
  expected.listen.port = 1234;
  EXPECT_EQ(*result, expected);
}

TEST(ConfigLoad, NullClearsOptionalsAndLists) {
  auto result = load("tag: ~\ndeadline: null\nbackoff:\n");
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->tag, std::nullopt);
  EXPECT_EQ(result->deadline, std::nullopt);
  EXPECT_TRUE(result->backoff.empty());
}

TEST(ConfigLoad, RangeViolationsNameTheKey) {
  EXPECT_EQ(error_of("listen:\n  port: 0\n"), "listen.port: must be in 1..65535, got 0");
  EXPECT_EQ(error_of("io_threads: 300"), "io_threads: must be in 1..256, got 300");
  EXPECT_EQ(error_of("header_timeout: 500us"), "header_timeout: must be at least 1ms, got 500us");
  EXPECT_EQ(error_of("deadline: 2h"), "deadline: must be at most 1h, got 2h");
  EXPECT_EQ(error_of("ratio: 1.5"), "ratio: must be in 0..1, got 1.5");
  EXPECT_EQ(error_of("backoff: [5ms, 0s]"), "backoff[1]: must be at least 1ms, got 0s");
  EXPECT_EQ(error_of("listen:\n  host: ''\n"), "listen.host: must not be empty");
}

TEST(ConfigLoad, NarrowingIsAnErrorWithThePosition) {
  EXPECT_EQ(error_of("listen:\n  port: 70000\n"),
            "listen.port: value 70000 does not fit in uint16 (0..65535) (line 2, column 9)");
  EXPECT_EQ(error_of("offset: 200"),
            "offset: value 200 does not fit in int8 (-128..127) (line 1, column 9)");
  EXPECT_EQ(error_of("io_threads: -2"),
            "io_threads: expected a non-negative integer, got '-2' (line 1, column 13)");
}

TEST(ConfigLoad, TypeErrorsSayWhatWasExpectedAndFound) {
  EXPECT_EQ(error_of("io_threads: many"),
            "io_threads: expected an integer, got 'many' (line 1, column 13)");
  EXPECT_EQ(error_of("io_threads: [1, 2]"),
            "io_threads: expected an integer, got a list (line 1, column 13)");
  EXPECT_EQ(error_of("tls: {a: 1}"),
            "tls: expected a boolean (true/false), got a mapping (line 1, column 6)");
  EXPECT_EQ(error_of("endpoints: a,b"),
            "endpoints: expected a list of string, got 'a,b' (line 1, column 12)");
  EXPECT_EQ(error_of("listen: 80"),
            "listen: expected a mapping of keys, got '80' (line 1, column 9)");
  EXPECT_EQ(error_of("- a\n- b\n"), "expected a mapping of keys, got a list (line 1, column 1)");
  EXPECT_THAT(error_of("header_timeout: 10"),
              HasSubstr("header_timeout: expected a duration with a unit, got '10'"));
  EXPECT_THAT(error_of("max_body_bytes: 16 parsecs"),
              HasSubstr("max_body_bytes: unknown size unit"));
}

TEST(ConfigLoad, BadEnumNameListsTheChoices) {
  EXPECT_EQ(error_of("mode: turbo"),
            "mode: unknown value 'turbo', expected one of: fast, safe, debug (line 1, column 7)");
}

TEST(ConfigLoad, ErrorsInsideListsOfSectionsCarryTheirIndex) {
  const std::string yaml = R"(
pools:
  - name: a
    endpoints: [x:1]
  - name: b
    endpoints: ['', y:2]
    weight: 0
  - name: c
    endpoints: [[nested]]
  - name: ''
    endpoints: []
)";
  const std::string message = error_of(yaml);
  EXPECT_THAT(message, HasSubstr("pools[1].endpoints[0]: must not be empty"));
  EXPECT_THAT(message, HasSubstr("pools[1].weight: must be in 1..100, got 0"));
  EXPECT_THAT(message, HasSubstr("pools[2].endpoints[0]: expected a string, got a list"));
  EXPECT_THAT(message, HasSubstr("pools[3].name: must not be empty"));
  EXPECT_THAT(message, HasSubstr("pools[3].endpoints: must not be empty"));
  EXPECT_THAT(message, StartsWith("5 configuration errors:"));
}

TEST(ConfigLoad, UnknownKeysSuggestTheClosestKnownKey) {
  EXPECT_EQ(error_of("listen:\n  prot: 80\n"),
            "listen.prot: unknown key (did you mean 'port'?) (line 2, column 3)");
  EXPECT_EQ(error_of("io_thread: 2"),
            "io_thread: unknown key (did you mean 'io_threads'?) (line 1, column 1)");
  EXPECT_EQ(error_of("pools:\n  - nmae: x\n    endpoints: [a:1]\n"),
            "pools[0].nmae: unknown key (did you mean 'name'?) (line 2, column 5)");
  EXPECT_EQ(error_of("listen:\n  zzzzzz: 1\n"),
            "listen.zzzzzz: unknown key (known keys: host, port) (line 2, column 3)");
}

TEST(ConfigLoad, DuplicateKeysAreErrors) {
  EXPECT_EQ(error_of("io_threads: 1\nio_threads: 2\n"),
            "io_threads: duplicate key (line 2, column 1)");
}

TEST(ConfigLoad, DashedKeysReadAsUnderscores) {
  // vLLM's config files write keys as its flags are spelled.
  auto result = load("io-threads: 4\nheader-timeout: 2s\nmax-body-bytes: 1MiB\nmin_batch: 2\n");
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->io_threads, 4u);
  EXPECT_EQ(result->header_timeout, 2s);
  EXPECT_EQ(result->max_body_bytes, 1u << 20);
  EXPECT_EQ(result->min_batch, 2u);
  // Errors name the key as the schema spells it, or as written when it is unknown.
  EXPECT_EQ(error_of("io-threads: 0"), "io_threads: must be in 1..256, got 0");
  EXPECT_EQ(error_of("io-thread: 2"),
            "io-thread: unknown key (did you mean 'io_threads'?) (line 1, column 1)");
}

TEST(ConfigLoad, AKeyWrittenBothWaysIsADuplicate) {
  EXPECT_EQ(error_of("io_threads: 1\nio-threads: 2\n"),
            "io_threads: duplicate key (also written as 'io_threads') (line 2, column 1)");
}

TEST(ConfigLoad, CollectsEveryErrorAtOnce) {
  const std::string message = error_of(R"(
listen:
  prot: 80
io_threads: many
mode: turbo
ratio: 2
)");
  EXPECT_THAT(message, StartsWith("4 configuration errors:\n"));
  EXPECT_THAT(message, HasSubstr("\n  listen.prot: unknown key (did you mean 'port'?)"));
  EXPECT_THAT(message, HasSubstr("\n  io_threads: expected an integer, got 'many'"));
  EXPECT_THAT(message, HasSubstr("\n  mode: unknown value 'turbo'"));
  EXPECT_THAT(message, HasSubstr("\n  ratio: must be in 0..1, got 2"));
}

TEST(ConfigLoad, SyntaxErrorsCarryLineAndColumn) {
  const std::string message = error_of("listen:\n  host: [a, b\nio_threads: 2\n");
  EXPECT_THAT(message, StartsWith("YAML syntax error: "));
  EXPECT_THAT(message, HasSubstr("(line 3, column"));
}

TEST(ConfigLoad, CrossFieldChecksRunOnValidFieldsOnly) {
  EXPECT_EQ(error_of("min_batch: 9\nmax_batch: 4\n"), "min_batch must not exceed max_batch");
  // A field that failed to parse keeps its default; the cross-field rule stays quiet rather
  // than reporting a combination the user never wrote.
  EXPECT_EQ(error_of("min_batch: 9\nmax_batch: lots\n"),
            "max_batch: expected an integer, got 'lots' (line 2, column 12)");
}

TEST(ConfigLoad, ValidatesStructsBuiltInCode) {
  ServerConfig cfg;
  EXPECT_TRUE(validate(server_schema(), cfg).ok());
  cfg.listen.port = 0;
  cfg.pools.push_back(PoolConfig{"p", {}, 1});
  Status status = validate(server_schema(), cfg);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.error().message, HasSubstr("listen.port: must be in 1..65535, got 0"));
  EXPECT_THAT(status.error().message, HasSubstr("pools[0].endpoints: must not be empty"));
}

TEST(ConfigLoad, StartsFromAGivenBase) {
  ServerConfig base;
  base.io_threads = 7;
  auto result = load_yaml(server_schema(), "tls: true", base);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->io_threads, 7u);
  EXPECT_TRUE(result->tls);
}

TEST(ConfigLoad, FilesNameThemselvesInErrors) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "omni_config_load_test";
  std::filesystem::create_directories(dir);
  const auto file = dir / "server.yaml";
  std::ofstream(file) << "listen:\n  port: 80\nio_threads: many\n";
  auto result = load_yaml_file(server_schema(), file);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().message,
            "io_threads: expected an integer, got 'many' (" + file.string() + ":3:13)");

  std::ofstream(file) << "listen:\n  port: 81\n";
  auto good = load_yaml_file(server_schema(), file);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(good->listen.port, 81);

  auto missing = load_yaml_file(server_schema(), dir / "absent.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_THAT(missing.error().message, HasSubstr("absent.yaml"));
}

}  // namespace
}  // namespace omni::config::testing
