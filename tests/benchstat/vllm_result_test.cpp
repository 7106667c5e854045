// `vllm bench serve --save-result` files: vLLM's keys and values (calculate_metrics), the
// file name, and the model-time scaling; compare over several columns with directions.
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include "omni/benchstat/summary.hpp"
#include "omni/benchstat/vllm_result.hpp"

namespace omni::benchstat {
namespace {

RequestRecord ok_record(double start, double ttft, double e2e, std::uint32_t out,
                        std::vector<double> itl) {
  RequestRecord r;
  r.ok = true;
  r.http_status = 200;
  r.start_s = start;
  r.ttft_s = ttft;
  r.e2e_s = e2e;
  r.output_tokens = out;
  r.input_tokens = 100;
  r.itl_s = std::move(itl);
  return r;
}

TEST(VllmResult, KeysAndValuesAsCalculateMetrics) {
  std::vector<RequestRecord> records = {ok_record(0.0, 0.1, 0.5, 3, {0.2, 0.2}),
                                        ok_record(0.2, 0.3, 1.3, 3, {0.5, 0.5})};
  RequestRecord bad;
  bad.error = ErrorKind::kHttpStatus;
  bad.http_status = 500;
  bad.error_message = "HTTP 500: boom";
  records.push_back(bad);
  Slo slo;
  slo.ttft_s = 0.2;
  const Summary s = summarize(records, 2.0, slo);
  VllmResultOptions o;
  o.date = "20261201-120000";
  o.model_id = "deepseek-ai/DeepSeek-V3";
  o.num_prompts = 3;
  o.metadata = {{"tp", "8"}};
  o.request_rate = 4.0;
  o.burstiness = 0.5;
  o.max_concurrency = 8;
  o.percentiles = {50, 99.9};
  o.percentile_metrics = {"ttft", "tpot", "itl", "e2el"};
  o.omni_results_json = to_json(s);
  const auto doc = boost::json::parse(to_vllm_json(records, s, o)).as_object();
  EXPECT_EQ(doc.at("date").as_string(), "20261201-120000");
  EXPECT_EQ(doc.at("backend").as_string(), "openai");
  EXPECT_EQ(doc.at("tp").as_string(), "8");
  EXPECT_EQ(doc.at("request_rate").to_number<double>(), 4.0);
  EXPECT_EQ(doc.at("max_concurrency").as_int64(), 8);
  EXPECT_EQ(doc.at("completed").as_int64(), 2);
  EXPECT_EQ(doc.at("failed").as_int64(), 1);
  EXPECT_DOUBLE_EQ(doc.at("duration").to_number<double>(), 2.0);
  EXPECT_DOUBLE_EQ(doc.at("request_goodput").to_number<double>(), 0.5);  // one of two within 200 ms
  EXPECT_DOUBLE_EQ(doc.at("output_throughput").to_number<double>(), 3.0);
  EXPECT_DOUBLE_EQ(doc.at("mean_ttft_ms").to_number<double>(), 200.0);
  EXPECT_DOUBLE_EQ(doc.at("median_ttft_ms").to_number<double>(), 200.0);
  EXPECT_DOUBLE_EQ(doc.at("std_ttft_ms").to_number<double>(), 100.0);  // numpy's population std
  EXPECT_NEAR(doc.at("p99.9_ttft_ms").to_number<double>(), 299.8, 1e-9);
  EXPECT_DOUBLE_EQ(doc.at("p50_itl_ms").to_number<double>(), 350.0);
  EXPECT_DOUBLE_EQ(doc.at("mean_tpot_ms").to_number<double>(), (200.0 + 500.0) / 2);
  EXPECT_DOUBLE_EQ(doc.at("median_e2el_ms").to_number<double>(), 900.0);
  EXPECT_EQ(doc.at("latencies").as_array().size(), 3u);
  // Peaks: request 1 sends its tokens at 0.1, 0.3, 0.5 s, request 2 at 0.5, 1.0, 1.5 s.
  EXPECT_DOUBLE_EQ(doc.at("max_output_tokens_per_s").to_number<double>(), 4.0);
  EXPECT_EQ(doc.at("max_concurrent_requests").as_int64(), 2);
  EXPECT_FALSE(doc.contains("ttfts"));  // only with --save-detailed, as vLLM
  EXPECT_EQ(doc.at("omni_bench").as_object().at("schema").as_string(), "omni-bench-results/1");
  o.detailed = true;
  const auto detailed = boost::json::parse(to_vllm_json(records, s, o)).as_object();
  EXPECT_EQ(detailed.at("ttfts").as_array().size(), 3u);
  EXPECT_EQ(detailed.at("errors").as_array()[2].as_string(), "HTTP 500: boom");
}

TEST(VllmResult, EmptyListsAreZeroAsNumpysOrZero) {
  const Summary s = summarize({}, 1.0);
  const auto doc = boost::json::parse(to_vllm_json({}, s, {})).as_object();
  EXPECT_EQ(doc.at("request_rate").as_string(), "inf");
  EXPECT_EQ(doc.at("p99_ttft_ms").to_number<double>(), 0.0);
  EXPECT_TRUE(doc.at("request_goodput").is_null());
  EXPECT_FALSE(doc.contains("mean_e2el_ms"));  // not a default percentile metric
}

TEST(VllmResult, FileNameAndOptionParsing) {
  VllmResultOptions o;
  o.date = "20261201-120000";
  o.model_id = "deepseek-ai/DeepSeek-V3";
  EXPECT_EQ(vllm_result_filename(o), "openai-infqps-DeepSeek-V3-20261201-120000.json");
  o.label = "sim";
  o.request_rate = 10;
  o.max_concurrency = 4;
  EXPECT_EQ(vllm_result_filename(o), "sim-10.0qps-concurrency4-DeepSeek-V3-20261201-120000.json");
  EXPECT_EQ(python_float(0.5), "0.5");
  EXPECT_EQ(*parse_metric_percentiles("50,90,99.9"), (std::vector<double>{50, 90, 99.9}));
  EXPECT_FALSE(parse_metric_percentiles("101").ok());
  EXPECT_FALSE(parse_percentile_metrics("ttft,speed").ok());
}

TEST(ModelTime, ScalesEveryTime) {
  std::vector<RequestRecord> records = {ok_record(1.0, 0.1, 0.5, 3, {0.2, 0.2})};
  scale_times(records, 20);
  EXPECT_DOUBLE_EQ(records[0].start_s, 20.0);
  EXPECT_DOUBLE_EQ(records[0].ttft_s, 2.0);
  EXPECT_DOUBLE_EQ(records[0].e2e_s, 10.0);
  EXPECT_DOUBLE_EQ(records[0].itl_s[1], 4.0);
  Summary s = summarize(records, 40.0);
  s.server_speed = 20;
  const auto doc = boost::json::parse(to_json(s)).as_object();
  EXPECT_EQ(doc.at("time_base").as_string(), "model");
  EXPECT_EQ(doc.at("server_speed").to_number<double>(), 20.0);
  EXPECT_NE(format_table(s).find("model time"), std::string::npos);
}

TEST(Compare, LabelsDirectionsAndMultiPolicyArrays) {
  const std::string fast =
      to_json(summarize(std::vector<RequestRecord>{ok_record(0, 0.1, 1.0, 10, {})}, 1.0),
              R"({"tool":"omni-cluster","policy":"cache-aware"})");
  const std::string slow =
      to_json(summarize(std::vector<RequestRecord>{ok_record(0, 0.2, 2.0, 10, {})}, 1.0),
              R"({"tool":"omni-cluster","policy":"round-robin"})");
  const ResultsFile files[] = {{"cluster.json", "[" + slow + "," + fast + "]"}};
  auto text = compare_results(files);
  ASSERT_TRUE(text.ok()) << text.error().message;
  // Columns are labelled by the policies; TTFT halved is "lower" and better.
  EXPECT_NE(text->find("round-robin"), std::string::npos);
  EXPECT_NE(text->find("cache-aware"), std::string::npos);
  const auto row = text->find("ttft_ms.p50");
  const std::string line = text->substr(row, text->find('\n', row) - row);
  EXPECT_NE(line.find("lower"), std::string::npos) << line;
  EXPECT_NE(line.find("0.500 better"), std::string::npos) << line;
  const auto tput = text->find("request_throughput");
  EXPECT_NE(text->substr(tput, text->find('\n', tput) - tput).find("higher"), std::string::npos);
  // Explicit labels, one per column; a wrong count is refused.
  const std::string labels[] = {"before", "after"};
  auto labelled = compare_results(files, labels);
  ASSERT_TRUE(labelled.ok());
  EXPECT_NE(labelled->find("after/before"), std::string::npos) << *labelled;
  EXPECT_FALSE(compare_results(files, std::span<const std::string>(labels, 1)).ok());
  const ResultsFile one[] = {{"a.json", fast}};
  EXPECT_FALSE(compare_results(one).ok());
}

}  // namespace
}  // namespace omni::benchstat
