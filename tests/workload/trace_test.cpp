#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "omni/workload/trace.hpp"

namespace omni::workload {
namespace {

std::unique_ptr<Workload> from_text(std::string text, TraceFormat format,
                                    TraceOptions options = {}) {
  return make_trace_workload(std::make_unique<std::istringstream>(std::move(text)), format,
                             options);
}

std::vector<RequestSpec> drain(Workload& w) {
  std::vector<RequestSpec> out;
  while (true) {
    auto next = w.next();
    EXPECT_TRUE(next.ok()) << next.error().to_string();
    if (!next.ok() || !next->has_value()) return out;
    out.push_back(std::move(**next));
  }
}

TEST(MooncakeLine, ParsesEveryField) {
  auto row = parse_mooncake_line(
      R"({"timestamp": 40, "input_length": 1000, "output_length": 7, "hash_ids": [3, 9]})");
  ASSERT_TRUE(row.ok()) << row.error().to_string();
  EXPECT_EQ(row->timestamp_ms, 40.0);
  EXPECT_EQ(row->input_length, 1000u);
  EXPECT_EQ(row->output_length, 7u);
  EXPECT_EQ(row->hash_ids, (std::vector<std::uint64_t>{3, 9}));
}

TEST(MooncakeLine, RejectsMalformedLines) {
  EXPECT_FALSE(parse_mooncake_line("not json").ok());
  EXPECT_FALSE(parse_mooncake_line("[1,2]").ok());
  EXPECT_FALSE(parse_mooncake_line(R"({"input_length": 1, "output_length": 1})").ok());
  EXPECT_FALSE(
      parse_mooncake_line(R"({"timestamp": -1, "input_length": 1, "output_length": 1})").ok());
  EXPECT_FALSE(
      parse_mooncake_line(R"({"timestamp": 0, "input_length": -5, "output_length": 1})").ok());
  EXPECT_FALSE(
      parse_mooncake_line(R"({"timestamp": 0, "input_length": 1.5, "output_length": 1})").ok());
  EXPECT_FALSE(parse_mooncake_line(
                   R"({"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [-1]})")
                   .ok());
  EXPECT_FALSE(
      parse_mooncake_line(R"({"timestamp": 0, "input_length": 9999999999, "output_length": 1})")
          .ok());
  auto error = parse_mooncake_line(R"({"timestamp": 0, "output_length": 1})");
  ASSERT_FALSE(error.ok());
  EXPECT_NE(error.error().message.find("input_length"), std::string::npos);
}

TEST(AzureLine, ParsesTimestampAndLengths) {
  auto row = parse_azure_line("2023-11-16 18:17:03.9799600,4808,10\r");
  ASSERT_TRUE(row.ok()) << row.error().to_string();
  // 2023-11-16 is day 19677 since 1970-01-01.
  EXPECT_DOUBLE_EQ(row->timestamp_s, 19677.0 * 86400 + 18 * 3600 + 17 * 60 + 3 + 0.97996);
  EXPECT_EQ(row->context_tokens, 4808u);
  EXPECT_EQ(row->generated_tokens, 10u);
}

TEST(AzureLine, RejectsMalformedLines) {
  EXPECT_FALSE(parse_azure_line("2023-11-16 18:17:03,1").ok());
  EXPECT_FALSE(parse_azure_line("2023-11-16 18:17:03,1,2,3").ok());
  EXPECT_FALSE(parse_azure_line("2023-13-16 18:17:03,1,2").ok());
  EXPECT_FALSE(parse_azure_line("2023-11-16 18:17:03.x,1,2").ok());
  EXPECT_FALSE(parse_azure_line("2023-11-16 18:17:03,-1,2").ok());
  EXPECT_FALSE(parse_azure_line("yesterday,1,2").ok());
}

TEST(MooncakeWorkload, ArrivalsAreSecondsFromTheFirstLine) {
  auto w = from_text(
      "{\"timestamp\": 1000, \"input_length\": 600, \"output_length\": 5, \"hash_ids\": [0, 1]}\n"
      "\n"
      "{\"timestamp\": 3500, \"input_length\": 512, \"output_length\": 2, \"hash_ids\": [0]}\n",
      TraceFormat::kMooncake);
  auto specs = drain(*w);
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].index, 0u);
  EXPECT_EQ(specs[0].arrival_s, 0.0);
  EXPECT_EQ(specs[0].hash_ids, (std::vector<std::uint64_t>{0, 1}));
  EXPECT_EQ(specs[0].max_output_tokens, 5u);
  EXPECT_EQ(specs[1].index, 1u);
  EXPECT_DOUBLE_EQ(specs[1].arrival_s, 2.5);
  EXPECT_EQ(specs[1].input_tokens, 512u);
}

TEST(MooncakeWorkload, NormalisesIdsToTheLength) {
  auto w = from_text(
      "{\"timestamp\": 0, \"input_length\": 100, \"output_length\": 1, \"hash_ids\": [4, 5, 6]}\n"
      "{\"timestamp\": 0, \"input_length\": 1100, \"output_length\": 1, \"hash_ids\": [4]}\n"
      "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 1}\n",
      TraceFormat::kMooncake);
  auto specs = drain(*w);
  ASSERT_EQ(specs.size(), 3u);
  EXPECT_EQ(specs[0].hash_ids, (std::vector<std::uint64_t>{4}));
  EXPECT_EQ(specs[1].hash_ids,
            (std::vector<std::uint64_t>{4, kGeneratedIdBase, kGeneratedIdBase + 1}));
  EXPECT_EQ(specs[2].hash_ids,
            (std::vector<std::uint64_t>{kGeneratedIdBase + 2, kGeneratedIdBase + 3}));
}

TEST(MooncakeWorkload, OutOfOrderTimestampsArriveWithTheirPredecessor) {
  auto w = from_text(
      "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1}\n"
      "{\"timestamp\": 900, \"input_length\": 1, \"output_length\": 1}\n"
      "{\"timestamp\": 400, \"input_length\": 1, \"output_length\": 1}\n",
      TraceFormat::kMooncake);
  auto specs = drain(*w);
  ASSERT_EQ(specs.size(), 3u);
  EXPECT_DOUBLE_EQ(specs[2].arrival_s, 0.9);
}

TEST(MooncakeWorkload, ReportsTheLineNumberOfAnError) {
  auto w = from_text("{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1}\n\n{oops}\n",
                     TraceFormat::kMooncake);
  ASSERT_TRUE(w->next().ok());
  auto bad = w->next();
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.error().message.rfind("line 3: ", 0), 0u) << bad.error().message;
  EXPECT_FALSE(w->next().ok());  // a failed trace stays failed
}

TEST(MooncakeWorkload, RefusesOverlongLines) {
  std::string huge(kMaxTraceLineBytes + 10, ' ');
  auto w = from_text(huge + "\n", TraceFormat::kMooncake);
  auto bad = w->next();
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kTooLarge);
}

TEST(AzureWorkload, NeedsTheHeaderAndOverlaysTheSystemPrompt) {
  const std::string csv =
      "TIMESTAMP,ContextTokens,GeneratedTokens\r\n"
      "2023-11-16 18:17:03.5,1500,10\r\n"
      "2023-11-16 18:17:04.0,300,8\r\n";
  auto w = from_text(csv, TraceFormat::kAzure, TraceOptions{.system_prompt_tokens = 1100});
  auto specs = drain(*w);
  ASSERT_EQ(specs.size(), 2u);
  // Two whole shared blocks (1100 rounded down to 1024), then fresh ids per request.
  const std::uint64_t s0 = kGeneratedIdBase, s1 = kGeneratedIdBase + 1;
  EXPECT_EQ(specs[0].hash_ids, (std::vector<std::uint64_t>{s0, s1, kGeneratedIdBase + 2}));
  EXPECT_EQ(specs[0].input_tokens, 1500u);
  EXPECT_EQ(specs[0].max_output_tokens, 10u);
  EXPECT_EQ(specs[1].hash_ids, (std::vector<std::uint64_t>{s0}));  // a short prompt: a prefix of it
  EXPECT_DOUBLE_EQ(specs[1].arrival_s, 0.5);

  auto headless = from_text("2023-11-16 18:17:03.5,1500,10\n", TraceFormat::kAzure);
  EXPECT_FALSE(headless->next().ok());
}

TEST(AzureWorkload, WithoutOverlayEveryBlockIsUnique) {
  auto w = from_text(
      "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 00:00:00,1024,1\n2023-11-16 "
      "00:00:01,1,1\n",
      TraceFormat::kAzure);
  auto specs = drain(*w);
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].hash_ids,
            (std::vector<std::uint64_t>{kGeneratedIdBase, kGeneratedIdBase + 1}));
  EXPECT_EQ(specs[1].hash_ids, (std::vector<std::uint64_t>{kGeneratedIdBase + 2}));
}

TEST(TraceFormat, ParsesNames) {
  EXPECT_EQ(*parse_trace_format("mooncake"), TraceFormat::kMooncake);
  EXPECT_EQ(*parse_trace_format("azure"), TraceFormat::kAzure);
  EXPECT_FALSE(parse_trace_format("csv").ok());
}

TEST(TraceFormat, DetectedFromTheFirstLine) {
  EXPECT_EQ(*detect_trace_format(R"({"timestamp":0,"input_length":5,"output_length":1})"),
            TraceFormat::kMooncake);
  EXPECT_EQ(*detect_trace_format("TIMESTAMP,ContextTokens,GeneratedTokens\r"), TraceFormat::kAzure);
  EXPECT_EQ(*detect_trace_format("\xef\xbb\xbfTIMESTAMP,ContextTokens,GeneratedTokens"),
            TraceFormat::kAzure);
  EXPECT_EQ(*detect_trace_format("2023-11-16 18:17:03.9799600,4808,10"), TraceFormat::kAzure);
  auto bad = detect_trace_format("id,prompt,answer");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("id,prompt,answer"), std::string::npos);
  EXPECT_EQ(trace_format_name(TraceFormat::kAzure), "azure");
}

TEST(TraceFile, FormatOfAFile) {
  const std::string path = ::testing::TempDir() + "/omni_detect.csv";
  {
    std::ofstream out(path);
    out << "\n  \nTIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.97,10,2\n";
  }
  EXPECT_EQ(*detect_trace_file_format(path), TraceFormat::kAzure);
  EXPECT_EQ(detect_trace_file_format("/nonexistent/t.jsonl").error().code, ErrorCode::kNotFound);
  std::remove(path.c_str());
}

TEST(TraceFile, MissingFileIsNotFound) {
  auto w = open_trace_workload("/nonexistent/trace.jsonl", TraceFormat::kMooncake);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace omni::workload
