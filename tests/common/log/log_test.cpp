#include "omni/log/log.hpp"

#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <vector>

#include "json_lines.hpp"

namespace omni::log {
namespace {

using testing::lines_of;
using testing::parse_object;

std::string field(const boost::json::object& object, const char* key) {
  const auto* value = object.if_contains(key);
  if (value == nullptr || !value->is_string()) return "<missing>";
  return std::string(value->as_string());
}

// Each test installs its own capture stream; afterwards nothing may point at it.
class LogTest : public ::testing::Test {
 protected:
  void capture(Format format, Level level = Level::kTrace) {
    LogOptions options;
    options.format = format;
    options.level = level;
    options.stream = &out_;
    ASSERT_TRUE(init(options).ok());
  }
  void TearDown() override {
    LogOptions options;
    options.sink = std::make_shared<spdlog::sinks::null_sink_mt>();
    ASSERT_TRUE(init(options).ok());
  }
  std::ostringstream out_;
};

TEST(ParseLevel, AcceptsEveryNameInAnyCase) {
  EXPECT_EQ(parse_level("trace").value(), Level::kTrace);
  EXPECT_EQ(parse_level("DEBUG").value(), Level::kDebug);
  EXPECT_EQ(parse_level("Info").value(), Level::kInfo);
  EXPECT_EQ(parse_level("warn").value(), Level::kWarn);
  EXPECT_EQ(parse_level("warning").value(), Level::kWarn);
  EXPECT_EQ(parse_level("error").value(), Level::kError);
  EXPECT_EQ(parse_level("critical").value(), Level::kCritical);
  EXPECT_EQ(parse_level("off").value(), Level::kOff);
  for (Level level : {Level::kTrace, Level::kDebug, Level::kInfo, Level::kWarn, Level::kError,
                      Level::kCritical, Level::kOff}) {
    EXPECT_EQ(parse_level(level_name(level)).value(), level);
  }
}

TEST(ParseLevel, RejectsUnknownNames) {
  for (const char* text : {"", "verbose", "inf", "info "}) {
    auto result = parse_level(text);
    ASSERT_FALSE(result.ok()) << text;
    EXPECT_EQ(result.error().code, ErrorCode::kInvalidArgument);
  }
}

TEST(ParseFormat, TextAndJsonOnly) {
  EXPECT_EQ(parse_format("text").value(), Format::kText);
  EXPECT_EQ(parse_format("JSON").value(), Format::kJson);
  EXPECT_FALSE(parse_format("xml").ok());
}

TEST_F(LogTest, JsonLinesParseWithTheExpectedFields) {
  capture(Format::kJson);
  auto logger = get("proxy");
  logger->info("hello {} \"quoted\" back\\slash\nnew line ü {}", "world", 42);
  logger->error("second");
  const auto lines = lines_of(out_.str());
  ASSERT_EQ(lines.size(), 2u) << out_.str();

  const auto first = parse_object(lines[0]);
  EXPECT_EQ(field(first, "level"), "info");
  EXPECT_EQ(field(first, "logger"), "proxy");
  EXPECT_EQ(field(first, "msg"), "hello world \"quoted\" back\\slash\nnew line ü 42");
  EXPECT_TRUE(
      std::regex_match(field(first, "ts"), std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z)")))
      << field(first, "ts");
  EXPECT_EQ(first.if_contains("request_id"), nullptr);
  EXPECT_EQ(field(parse_object(lines[1]), "level"), "error");
}

TEST_F(LogTest, LevelFiltersLines) {
  capture(Format::kJson, Level::kWarn);
  auto logger = get("router");
  logger->debug("no");
  logger->info("no");
  logger->warn("yes");
  logger->critical("yes");
  const auto lines = lines_of(out_.str());
  ASSERT_EQ(lines.size(), 2u) << out_.str();
  EXPECT_EQ(field(parse_object(lines[0]), "level"), "warn");
  EXPECT_EQ(field(parse_object(lines[1]), "level"), "critical");
}

TEST_F(LogTest, RequestIdBecomesAFieldInJson) {
  capture(Format::kJson);
  RequestLogger request(get("proxy"), "req-42");
  request.info("upstream {} answered {}", "engine-0", 200);
  const auto lines = lines_of(out_.str());
  ASSERT_EQ(lines.size(), 1u);
  const auto object = parse_object(lines[0]);
  EXPECT_EQ(field(object, "request_id"), "req-42");
  EXPECT_EQ(field(object, "msg"), "upstream engine-0 answered 200");
}

TEST_F(LogTest, TextFormatCarriesTimeLevelLoggerAndRequestPrefix) {
  capture(Format::kText);
  RequestLogger(get("sched"), "abc").warn("queue {} full", "q1");
  const auto lines = lines_of(out_.str());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(std::regex_match(
      lines[0], std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z warning sched: )"
                           R"(request_id=abc queue q1 full)")))
      << lines[0];
}

TEST_F(LogTest, RequestLoggerSkipsFilteredLevels) {
  capture(Format::kJson, Level::kError);
  RequestLogger request(get("proxy"), "r");
  request.debug("hidden");
  request.info("hidden");
  request.error("shown");
  EXPECT_EQ(lines_of(out_.str()).size(), 1u);
}

TEST(RequestPrefix, SanitisesClientSuppliedIds) {
  EXPECT_EQ(request_prefix("abc-123"), "request_id=abc-123 ");
  EXPECT_EQ(request_prefix("a b\"c\\d\n\xc3\xa9"), "request_id=a_b_c_d___ ");
  EXPECT_EQ(request_prefix(""), "request_id=- ");
  EXPECT_EQ(request_prefix(std::string(500, 'x')).size(), std::string("request_id= ").size() + 128);
}

TEST_F(LogTest, InitRetargetsLoggersHandedOutEarlier) {
  auto logger = get("early");
  capture(Format::kJson);
  logger->info("to the first stream");
  std::ostringstream second;
  LogOptions options;
  options.format = Format::kJson;
  options.stream = &second;
  ASSERT_TRUE(init(options).ok());
  logger->info("to the second stream");
  EXPECT_EQ(lines_of(out_.str()).size(), 1u);
  ASSERT_EQ(lines_of(second.str()).size(), 1u);
  EXPECT_EQ(field(parse_object(lines_of(second.str())[0]), "msg"), "to the second stream");
}

TEST_F(LogTest, GetReturnsOneLoggerPerName) {
  EXPECT_EQ(get("same"), get("same"));
  EXPECT_NE(get("same"), get("other"));
  EXPECT_EQ(get("same")->name(), "same");
}

TEST_F(LogTest, WritesToAFileAndBadPathsAreErrors) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("omni_log_test_" + std::to_string(::getpid()) + ".log");
  std::filesystem::remove(path);
  LogOptions options;
  options.format = Format::kJson;
  options.file = path.string();
  ASSERT_TRUE(init(options).ok());
  get("file")->info("into the file");

  capture(Format::kJson);  // closes the file sink
  // Missing directories are not created; a path under a regular file or a directory itself
  // cannot be opened.
  for (const std::string& bad_path :
       {std::string("/nonexistent-omni-dir/sub/x.log"), path.string() + "/x.log",
        std::filesystem::temp_directory_path().string()}) {
    options.file = bad_path;
    Status bad = init(options);
    ASSERT_FALSE(bad.ok()) << bad_path;
    EXPECT_EQ(bad.error().code, ErrorCode::kIo);
  }
  EXPECT_FALSE(std::filesystem::exists("/nonexistent-omni-dir"));
  get("file")->info("still to the capture stream");
  EXPECT_EQ(lines_of(out_.str()).size(), 1u);

  std::ifstream in(path);
  std::string contents((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(path);
  const auto lines = lines_of(contents);
  ASSERT_EQ(lines.size(), 1u) << contents;
  EXPECT_EQ(field(parse_object(lines[0]), "msg"), "into the file");
}

}  // namespace
}  // namespace omni::log
