// Flags generated from a schema: precedence, messages, --help, --print-config.
#include "omni/config/cli.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "omni/common/version.hpp"
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

TEST_F(ConfigCli, BoolFlagsHaveANoForm) {
  const std::string file = write_file("tls_on.yaml", "tls: true\n");
  auto off = parse({"--config", file, "--no-tls"});
  ASSERT_TRUE(off.ok()) << off.error().message;
  EXPECT_FALSE(off->config.tls);
  auto on = parse({"--tls"});
  ASSERT_TRUE(on.ok()) << on.error().message;
  EXPECT_TRUE(on->config.tls);
  auto last_wins = parse({"--no-tls", "--tls"});
  ASSERT_TRUE(last_wins.ok()) << last_wins.error().message;
  EXPECT_TRUE(last_wins->config.tls);
  auto double_negative = parse({"--config", file, "--no-tls=false"});
  ASSERT_TRUE(double_negative.ok()) << double_negative.error().message;
  EXPECT_TRUE(double_negative->config.tls);
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
  EXPECT_EQ(unknown.error().message, "unknown flag --listen-prot (did you mean --listen-port?)");

  auto missing = parse({"--config", "/nonexistent/omni.yaml"});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
}

TEST_F(ConfigCli, UnknownFlagsNameTheNearestKnownFlag) {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--io-thread=2"}, "unknown flag --io-thread (did you mean --io-threads?)"},
      {{"--no-tsl"}, "unknown flag --no-tsl (did you mean --no-tls?)"},
      {{"--print-confg"}, "unknown flag --print-confg (did you mean --print-config?)"},
      {{"--verison"}, "unknown flag --verison (did you mean --version?)"},
      {{"--zzzzzzzzzz"}, "unknown flag --zzzzzzzzzz (see --help)"},
      {{"-x"}, "unknown flag -x (see --help)"},
      {{"stray"}, "unexpected argument 'stray'"},
      {{"--mdoe", "safe", "--tag", "t", "--taggs", "--ratio", "0.5", "extra"},
       "3 command-line errors:\n"
       "  unknown flag --mdoe (did you mean --mode?)\n"
       "  unknown flag --taggs (did you mean --tag?)\n"
       "  unexpected argument 'extra'"},
  };
  for (const auto& [args, message] : cases) {
    auto result = parse(args);
    ASSERT_FALSE(result.ok()) << args.front();
    EXPECT_EQ(result.error().code, ErrorCode::kInvalidArgument);
    EXPECT_EQ(result.error().message, message);
  }
}

TEST_F(ConfigCli, VersionPrintsTheBinaryAndTheBuild) {
  auto result = parse({"--version"});
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_TRUE(result->exit_now);
  EXPECT_EQ(output_.str(), omni::version_line("omni-test") + "\n");
  EXPECT_THAT(output_.str(), ::testing::StartsWith("omni-test " + std::string(omni::version())));
  // Answered before the flags are validated, as --help is.
  auto with_bad_flag = parse({"--listen-port", "0", "--version"});
  ASSERT_TRUE(with_bad_flag.ok()) << with_bad_flag.error().message;
  EXPECT_TRUE(with_bad_flag->exit_now);
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
  EXPECT_THAT(help, HasSubstr("--no-tls"));
  EXPECT_THAT(help, HasSubstr("--version"));
  EXPECT_THAT(help, ::testing::Not(HasSubstr("--no-print-config")));
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

// A binary with a CLI::App of its own, as omni-cluster and omni-tokenize have.
class OwnApp : public ::testing::Test {
 protected:
  OwnApp() {
    app_.require_subcommand(1);
    auto* encode = app_.add_subcommand("encode", "Encode");
    encode->add_option("--tokenizer", tokenizer_, "Tokenizer")->required();
    encode->add_flag("--add-special-tokens", special_, "Add BOS");
    app_.add_subcommand("decode", "Decode");
  }

  std::optional<int> parse(std::vector<std::string> args) {
    args.insert(args.begin(), "/usr/bin/omni-own");
    std::vector<const char*> argv;
    for (const auto& arg : args) argv.push_back(arg.c_str());
    out_.str("");
    err_.str("");
    return parse_or_exit(app_, static_cast<int>(argv.size()), argv.data(), out_, err_);
  }

  CLI::App app_{"omni-own: a binary with its own flags"};
  std::string tokenizer_;
  bool special_ = false;
  std::ostringstream out_;
  std::ostringstream err_;
};

TEST_F(OwnApp, GoesOnWhenTheCommandLineIsGood) {
  EXPECT_EQ(parse({"encode", "--tokenizer", "t.json", "--add-special-tokens"}), std::nullopt);
  EXPECT_EQ(tokenizer_, "t.json");
  EXPECT_TRUE(special_);
  EXPECT_EQ(err_.str(), "");
}

TEST_F(OwnApp, UsageErrorsExitWithStatus2AndAHint) {
  EXPECT_EQ(parse({"encode", "--tokenizer", "t", "--add-special-token"}), 2);
  EXPECT_EQ(err_.str(),
            "omni-own: unknown flag --add-special-token (did you mean --add-special-tokens?)\n");
  EXPECT_EQ(parse({"encdoe", "--tokenizer", "t"}), 2);
  EXPECT_EQ(err_.str(), "omni-own: unknown subcommand 'encdoe' (did you mean 'encode'?)\n");
  // The mistyped flag, not the required one it leaves missing.
  EXPECT_EQ(parse({"encode", "--tokenzer", "t"}), 2);
  EXPECT_EQ(err_.str(), "omni-own: unknown flag --tokenzer (did you mean --tokenizer?)\n");
  EXPECT_EQ(parse({"encode"}), 2);  // a required flag missing
  EXPECT_THAT(err_.str(), HasSubstr("--tokenizer"));
  EXPECT_EQ(parse({}), 2);  // a subcommand missing
  EXPECT_THAT(err_.str(), ::testing::StartsWith("omni-own: "));
  EXPECT_EQ(out_.str(), "");
}

TEST_F(OwnApp, HelpAndVersionExitWithStatus0) {
  EXPECT_EQ(parse({"--version"}), 0);
  EXPECT_EQ(out_.str(), omni::version_line("omni-own") + "\n");
  EXPECT_EQ(parse({"--help"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("--version"));
  EXPECT_EQ(parse({"encode", "--help"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("--add-special-tokens"));
  EXPECT_EQ(err_.str(), "");
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
