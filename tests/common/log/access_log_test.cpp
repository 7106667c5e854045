#include "omni/log/access_log.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "json_lines.hpp"

namespace omni::log {
namespace {

using namespace std::chrono;
using namespace std::chrono_literals;

using testing::lines_of;
using testing::parse_object;

std::string format_line(const AccessRecord& record, std::size_t max_field_bytes = 4096) {
  std::string out;
  AccessLogWriter::format(record, max_field_bytes, out);
  return out;
}

AccessRecord sample_record() {
  AccessRecord r;
  r.time = sys_days{2024y / May / 1} + 12h + 3min + 4s + 123456us + 789ns;
  r.request_id = "r-1";
  r.remote = "127.0.0.1:51234";
  r.method = "POST";
  r.path = "/v1/chat/completions";
  r.status = 200;
  r.bytes_in = 512;
  r.bytes_out = 9876;
  r.duration = 1234567891ns;
  return r;
}

TEST(AccessLogFormat, ExactLineWithRequiredFieldsOnly) {
  EXPECT_EQ(format_line(sample_record()),
            "{\"ts\":\"2024-05-01T12:03:04.123456Z\",\"request_id\":\"r-1\","
            "\"remote\":\"127.0.0.1:51234\",\"method\":\"POST\",\"path\":\"/v1/chat/completions\","
            "\"status\":200,\"bytes_in\":512,\"bytes_out\":9876,\"duration_ms\":1234.568}\n");
}

TEST(AccessLogFormat, OptionalFieldsAppearWhenSet) {
  AccessRecord r = sample_record();
  r.upstream = "engine-0";
  r.error = "timeout";
  r.user_agent = "curl/8.0";
  const auto object = parse_object(format_line(r));
  EXPECT_EQ(object.at("upstream").as_string(), "engine-0");
  EXPECT_EQ(object.at("error").as_string(), "timeout");
  EXPECT_EQ(object.at("user_agent").as_string(), "curl/8.0");
  EXPECT_EQ(object.at("status").as_int64(), 200);
  EXPECT_EQ(object.size(), 12u);
}

TEST(AccessLogFormat, DurationHasThreeDecimals) {
  AccessRecord r = sample_record();
  const std::pair<Duration, const char*> cases[] = {
      {0ns, "0.000"},   {499ns, "0.000"}, {500ns, "0.001"},       {1ms, "1.000"},
      {5s, "5000.000"}, {-3ms, "0.000"},  {12345678ns, "12.346"},
  };
  for (const auto& [duration, text] : cases) {
    r.duration = duration;
    EXPECT_NE(format_line(r).find(std::string("\"duration_ms\":") + text + "}"), std::string::npos)
        << text << " in " << format_line(r);
  }
}

TEST(AccessLogFormat, EscapesQuotesBackslashesAndControlCharacters) {
  AccessRecord r = sample_record();
  r.path = "/a\"b\\c\n\r\t\b\f\x01\x1f\x7f";
  const std::string line = format_line(r);
  EXPECT_NE(line.find(R"("path":"/a\"b\\c\n\r\t\b\f\u0001\u001f)"
                      "\x7f\""),
            std::string::npos)
      << line;
  EXPECT_EQ(parse_object(line).at("path").as_string(), r.path);
  EXPECT_EQ(line.find('\n'), line.size() - 1);  // one physical line
}

TEST(AccessLogFormat, KeepsValidUtf8AndReplacesInvalidBytes) {
  AccessRecord r = sample_record();
  const std::string valid = "h\xc3\xa9llo \xe2\x9c\x93 \xf0\x9f\x98\x80";  // héllo ✓ 😀
  r.user_agent = valid;
  EXPECT_NE(format_line(r).find(valid), std::string::npos);  // raw, not \u-escaped
  EXPECT_EQ(parse_object(format_line(r)).at("user_agent").as_string(), valid);

  const std::string replacement = "\xef\xbf\xbd";  // U+FFFD
  const std::pair<std::string, std::string> invalid[] = {
      {"a\xff"
       "b",
       "a" + replacement + "b"},
      {"\xc3", replacement},                                                        // truncated
      {"\xc0\xaf", replacement + replacement},                                      // overlong '/'
      {"\xed\xa0\x80", replacement + replacement + replacement},                    // surrogate
      {"\xf4\x90\x80\x80", replacement + replacement + replacement + replacement},  // > U+10FFFF
  };
  for (const auto& [input, decoded] : invalid) {
    r.user_agent = input;
    EXPECT_EQ(parse_object(format_line(r)).at("user_agent").as_string(), decoded);
  }
}

TEST(AccessLogFormat, CutsLongFieldsAtCharacterBoundaries) {
  AccessRecord r = sample_record();
  const std::string long_path(10'000, 'a');
  r.path = long_path;
  EXPECT_EQ(parse_object(format_line(r, 16)).at("path").as_string(), std::string(16, 'a') + "...");
  const std::string accents = "\xc3\xa9\xc3\xa9\xc3\xa9";  // ééé, 2 bytes each
  r.path = accents;
  EXPECT_EQ(parse_object(format_line(r, 5)).at("path").as_string(), "\xc3\xa9\xc3\xa9...");
  EXPECT_EQ(parse_object(format_line(r, 6)).at("path").as_string(), accents);
}

TEST(AccessLogWriter, OpenFileFailsOnABadPath) {
  auto writer = AccessLogWriter::open_file("/nonexistent-omni-dir/access.log");
  ASSERT_FALSE(writer.ok());
  EXPECT_EQ(writer.error().code, ErrorCode::kIo);
  EXPECT_FALSE(AccessLogWriter::open_file(std::filesystem::temp_directory_path().string()).ok());
  EXPECT_FALSE(std::filesystem::exists("/nonexistent-omni-dir"));
}

TEST(AccessLogWriter, ConcurrentWritersProduceWholeLines) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 500;
  constexpr std::size_t kLines = std::size_t{kThreads} * kPerThread;
  const auto path = std::filesystem::temp_directory_path() /
                    ("omni_access_test_" + std::to_string(::getpid()) + ".log");
  std::filesystem::remove(path);
  {
    auto writer = AccessLogWriter::open_file(path.string());
    ASSERT_TRUE(writer.ok()) << writer.error().to_string();
    std::vector<std::thread> threads;
    threads.reserve(kThreads);
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kPerThread; ++i) {
          AccessRecord r = sample_record();
          const std::string id = std::to_string(t) + "-" + std::to_string(i);
          const std::string agent(static_cast<std::size_t>(50 + i % 300), 'x');  // vary lengths
          r.request_id = id;
          r.user_agent = agent;
          EXPECT_TRUE(writer.value()->write(r).ok());
        }
      });
    }
    for (auto& thread : threads) thread.join();
    EXPECT_EQ(writer.value()->stats().lines, std::uint64_t{kLines});
  }
  std::ifstream in(path);
  std::string contents((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(path);
  const auto lines = lines_of(contents);
  ASSERT_EQ(lines.size(), kLines);
  std::set<std::string> ids;
  for (const auto& line : lines) {
    ids.insert(std::string(parse_object(line).at("request_id").as_string()));
  }
  EXPECT_EQ(ids.size(), kLines);
}

TEST(AccessLogWriter, BuffersUntilFullOrFlushedAndFlushesOnDestruction) {
  std::ostringstream out;
  {
    AccessLogWriter writer(make_stream_sink(out), {.max_field_bytes = 4096, .buffer_bytes = 1000});
    ASSERT_TRUE(writer.write(sample_record()).ok());
    EXPECT_EQ(out.str(), "");
    ASSERT_TRUE(writer.flush().ok());
    EXPECT_EQ(lines_of(out.str()).size(), 1u);
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(writer.write(sample_record()).ok());
    const std::size_t written = lines_of(out.str()).size();
    EXPECT_GT(written, 1u);   // the buffer filled up and went out
    EXPECT_LT(written, 11u);  // but not line by line
  }
  EXPECT_EQ(lines_of(out.str()).size(), 11u);
}

TEST(AccessLogWriter, UnbufferedWritesEachLineAtOnce) {
  std::ostringstream out;
  AccessLogWriter writer(make_stream_sink(out));
  ASSERT_TRUE(writer.write(sample_record()).ok());
  EXPECT_EQ(out.str(), format_line(sample_record()));
}

class FailingSink final : public AccessLogSink {
 public:
  Status write(std::string_view) override { return make_error(ErrorCode::kIo, "disk full"); }
};

TEST(AccessLogWriter, SinkErrorsAreReturnedAndCounted) {
  AccessLogWriter writer(std::make_unique<FailingSink>());
  Status status = writer.write(sample_record());
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code, ErrorCode::kIo);
  EXPECT_EQ(writer.stats().lines, 1u);
  EXPECT_EQ(writer.stats().dropped, 1u);
}

}  // namespace
}  // namespace omni::log
