// Flags generated from a schema: precedence, messages, --help, --print-config.
#include "omni/config/cli.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "test_schema.hpp"

namespace omni::config::testing {
namespace {

using ::testing::HasSubstr;

class ConfigCli : public ::testing::Test {
 protected:
  Result<CommandLine<ServerConfig>> parse(std::vector<std::string> args) {
    args.insert(args.begin(), "omni-test");
    std::vector<const char*> argv;
    for (const auto& arg : args) argv.push_back(arg.c_str());
    output_.str("");
    return parse_command_line(static_cast<int>(argv.size()), argv.data(), server_schema(),
                              "omni-test: a test binary", output_);
  }

  std::string write_file(const std::string& name, const std::string& text) {
    const auto dir = std::filesystem::path(::testing::TempDir()) / "omni_config_cli_test";
    std::filesystem::create_directories(dir);
    const auto file = dir / name;
    std::ofstream(file) << text;
    return file.string();
  }

  std::ostringstream output_;
};

TEST_F(ConfigCli, NoArgumentsGiveTheDefaults) {
  auto result = parse({});
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_FALSE(result->exit_now);
  EXPECT_EQ(result->config, ServerConfig{});
}

TEST_F(ConfigCli, FlagsOverrideTheFileWhichOverridesDefaults) {
  const std::string file =
      write_file("precedence.yaml", "listen:\n  port: 9000\nio_threads: 4\nmode: safe\n");
  auto result = parse({"--io-threads", "8", "--config", file, "--header-timeout=2s"});
  ASSERT_TRUE(result.ok()) << result.error().message;
  const ServerConfig& c = result->config;
  EXPECT_EQ(c.io_threads, 8u);            // flag beats file
  EXPECT_EQ(c.listen.port, 9000);         // file beats default
  EXPECT_EQ(c.mode, Mode::kSafe);         // file beats default
  EXPECT_EQ(c.header_timeout, 2s);        // flag beats default
  EXPECT_EQ(c.listen.host, "127.0.0.1");  // default
}

TEST_F(ConfigCli, EveryKindOfFieldHasAFlag) {
  auto result = parse({"--listen-host",
                       "::1",
                       "--max-body-bytes",
                       "1MiB",
                       "--mode",
                       "debug",
                       "--ratio",
                       "0.25",
                       "--tls",
                       "--offset=-5",
                       "--tag",
                       "x",
                       "--deadline",
                       "1m",
                       "--endpoints",
                       "a:1,b:2",
                       "--endpoints",
                       "c:3",
                       "--backoff",
                       "5ms, 10ms",
                       "--poll",
                       "2s"});
  ASSERT_TRUE(result.ok()) << result.error().message;
  const ServerConfig& c = result->config;
  EXPECT_EQ(c.listen.host, "::1");
  EXPECT_EQ(c.max_body_bytes, 1u << 20);
  EXPECT_EQ(c.mode, Mode::kDebug);
  EXPECT_DOUBLE_EQ(c.ratio, 0.25);
  EXPECT_TRUE(c.tls);
  EXPECT_EQ(c.offset, -5);
  EXPECT_EQ(c.tag, "x");
  EXPECT_EQ(c.deadline, Duration{60s});
  EXPECT_EQ(c.endpoints, (std::vector<std::string>{"a:1", "b:2", "c:3"}));
  EXPECT_EQ(c.backoff, (std::vector<Duration>{5ms, 10ms}));
  EXPECT_EQ(c.poll, 2000ms);
}

TEST_F(ConfigCli, BoolFlagsTakeAnOptionalValue) {
  const std::string file = write_file("tls.yaml", "tls: true\n");
  auto result = parse({"--config", file, "--tls=false"});
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_FALSE(result->config.tls);
}

TEST_F(ConfigCli, BadValuesReadLikeYamlErrors) {
  auto result = parse({"--header-timeout=abc"});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(result.error().message,
            "header_timeout: expected a duration such as '250ms', '10s', '1.5m' or '2h', got "
            "'abc' (from --header-timeout)");
  auto from_yaml = load_yaml(server_schema(), "header_timeout: abc");
  ASSERT_FALSE(from_yaml.ok());
  EXPECT_EQ(from_yaml.error().message,
            "header_timeout: expected a duration such as '250ms', '10s', '1.5m' or '2h', got "
            "'abc' (line 1, column 17)");
}

TEST_F(ConfigCli, FlagValuesAreValidatedAndAllErrorsCollected) {
  const std::string file = write_file("bad.yaml", "listen:\n  prot: 1\n");
  auto result =
      parse({"--config", file, "--listen-port", "0", "--mode", "turbo", "--backoff", "1ms,abc"});
  ASSERT_FALSE(result.ok());
  const std::string& message = result.error().message;
  EXPECT_THAT(message, HasSubstr("4 configuration errors:"));
  EXPECT_THAT(message,
              HasSubstr("listen.prot: unknown key (did you mean 'port'?) (" + file + ":2:3)"));
  EXPECT_THAT(message, HasSubstr("listen.port: must be in 1..65535, got 0"));
  EXPECT_THAT(message, HasSubstr("mode: unknown value 'turbo', expected one of: fast, safe, "
                                 "debug (from --mode)"));
  EXPECT_THAT(message, HasSubstr("backoff: item 1: expected a duration"));
}

TEST_F(ConfigCli, UnknownFlagsAndMissingFilesAreErrors) {
  auto unknown = parse({"--listen-prot", "80"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, ErrorCode::kInvalidArgument);
  EXPECT_THAT(unknown.error().message, HasSubstr("--listen-prot"));

  auto missing = parse({"--config", "/nonexistent/omni.yaml"});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
}

TEST_F(ConfigCli, HelpListsEveryFlagWithDocAndDefault) {
  auto result = parse({"--help"});
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_TRUE(result->exit_now);
  const std::string help = output_.str();
  EXPECT_THAT(help, HasSubstr("omni-test: a test binary"));
  EXPECT_THAT(help, HasSubstr("--config"));
  EXPECT_THAT(help, HasSubstr("--print-config"));
  EXPECT_THAT(help, HasSubstr("--listen-port"));
  EXPECT_THAT(help, HasSubstr("TCP port [1..65535] (default: 8000)"));
  EXPECT_THAT(help, HasSubstr("--header-timeout"));
  EXPECT_THAT(help, HasSubstr("(default: 10s)"));
  EXPECT_THAT(help, HasSubstr("--io-threads"));
  EXPECT_THAT(help, ::testing::Not(HasSubstr("--pools")));  // lists of sections: YAML only
}

TEST_F(ConfigCli, PrintConfigWritesTheEffectiveConfig) {
  auto result = parse({"--print-config", "--io-threads", "3", "--tag", "t"});
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_TRUE(result->exit_now);
  auto reloaded = load_yaml(server_schema(), output_.str());
  ASSERT_TRUE(reloaded.ok()) << reloaded.error().message;
  EXPECT_EQ(*reloaded, result->config);
  EXPECT_EQ(reloaded->io_threads, 3u);
}

TEST_F(ConfigCli, AddFlagsWorksBesideABinarysOwnFlags) {
  ServerConfig cfg;
  CLI::App app("custom");
  bool dry_run = false;
  app.add_flag("--dry-run", dry_run, "Do nothing");
  FlagSet<ServerConfig> flags = add_flags(app, server_schema(), cfg);
  std::vector<const char*> argv{"custom", "--dry-run", "--listen-port", "1234"};
  app.parse(static_cast<int>(argv.size()), argv.data());
  ASSERT_TRUE(flags.apply().ok());
  EXPECT_TRUE(dry_run);
  EXPECT_EQ(cfg.listen.port, 1234);
}

struct Clashing {
  std::string config = "x";
};

TEST_F(ConfigCli, AClashingKeyIsReportedNotThrown) {
  Schema<Clashing> schema;
  schema.field("config", &Clashing::config, "Clashes with --config");
  std::vector<const char*> argv{"clash"};
  auto result = parse_command_line(1, argv.data(), schema, "clash", output_);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::kInternal);
  EXPECT_THAT(result.error().message, HasSubstr("--config"));
}

}  // namespace
}  // namespace omni::config::testing
