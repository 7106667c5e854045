#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include "omni/benchstat/summary.hpp"

namespace omni::benchstat {
namespace {

RequestRecord ok_record(double ttft, double e2e, std::uint32_t out, std::vector<double> itl = {},
                        std::uint32_t in = 100) {
  RequestRecord r;
  r.ok = true;
  r.http_status = 200;
  r.ttft_s = ttft;
  r.e2e_s = e2e;
  r.output_tokens = out;
  r.input_tokens = in;
  r.itl_s = std::move(itl);
  return r;
}

RequestRecord failed(ErrorKind kind, int status) {
  RequestRecord r;
  r.error = kind;
  r.http_status = status;
  return r;
}

TEST(Percentile, InterpolatesLikeNumpy) {
  std::vector<double> v = {4, 1, 3, 2};  // numpy.percentile([1,2,3,4], q)
  EXPECT_DOUBLE_EQ(percentile(v, 50), 2.5);
  EXPECT_DOUBLE_EQ(percentile(v, 90), 3.7);
  EXPECT_DOUBLE_EQ(percentile(v, 99), 3.97);
  EXPECT_DOUBLE_EQ(percentile(v, 0), 1.0);
  EXPECT_DOUBLE_EQ(percentile(v, 100), 4.0);
  std::vector<double> one = {7};
  EXPECT_DOUBLE_EQ(percentile(one, 99), 7.0);
}

TEST(Slo, ParsesDurationsAndRejectsJunk) {
  auto slo = parse_slo("ttft=2s,tpot=80ms,e2e=1m");
  ASSERT_TRUE(slo.ok()) << slo.error().to_string();
  EXPECT_DOUBLE_EQ(*slo->ttft_s, 2.0);
  EXPECT_DOUBLE_EQ(*slo->tpot_s, 0.08);
  EXPECT_DOUBLE_EQ(*slo->e2e_s, 60.0);
  EXPECT_TRUE(parse_slo("")->empty());
  EXPECT_FALSE(parse_slo("ttft=2").ok());  // a unit is required
  EXPECT_FALSE(parse_slo("latency=2s").ok());
  EXPECT_FALSE(parse_slo("ttft").ok());
  EXPECT_FALSE(parse_slo("ttft=0s").ok());
}

TEST(Summary, AggregatesAsVllmDoes) {
  std::vector<RequestRecord> records = {
      ok_record(0.1, 1.1, 11, {0.1, 0.1}),  // TPOT 0.1
      ok_record(0.3, 0.3, 1),               // single token: no TPOT, counts as 0 for goodput
      ok_record(2.5, 4.5, 5, {0.5}),        // TPOT 0.5; misses the TTFT SLO
      failed(ErrorKind::kHttpStatus, 503),
      failed(ErrorKind::kTimeout, 0),
  };
  auto slo = *parse_slo("ttft=2s,tpot=200ms");
  Summary s = summarize(records, 10.0, slo);
  EXPECT_EQ(s.completed, 3u);
  EXPECT_EQ(s.failed, 2u);
  EXPECT_EQ(s.total_output_tokens, 17u);
  EXPECT_EQ(s.total_input_tokens, 300u);
  EXPECT_DOUBLE_EQ(s.request_throughput, 0.3);
  EXPECT_DOUBLE_EQ(s.output_token_throughput, 1.7);
  EXPECT_DOUBLE_EQ(s.total_token_throughput, 31.7);
  ASSERT_TRUE(s.goodput.has_value());
  EXPECT_DOUBLE_EQ(*s.goodput, 0.2);
  EXPECT_EQ(s.ttft.count, 3u);
  EXPECT_DOUBLE_EQ(s.ttft.p50, 0.3);
  EXPECT_EQ(s.tpot.count, 2u);
  EXPECT_DOUBLE_EQ(s.tpot.mean, 0.3);
  EXPECT_EQ(s.itl.count, 3u);  // every gap of every request, pooled
  EXPECT_DOUBLE_EQ(s.itl.max, 0.5);
  EXPECT_EQ(s.errors_by_kind.at("http_status"), 1u);
  EXPECT_EQ(s.errors_by_kind.at("timeout"), 1u);
  EXPECT_EQ(s.errors_by_status.at("503"), 1u);
  EXPECT_EQ(s.errors_by_status.size(), 1u);
  EXPECT_FALSE(s.prefix_cache_hit_rate.has_value());
  EXPECT_FALSE(summarize(records, 10.0).goodput.has_value());
}

TEST(Summary, PrefixCacheHitRateWhenAnyRequestReportsIt) {
  std::vector<RequestRecord> records = {ok_record(0.1, 0.2, 2, {}, 1000),
                                        ok_record(0.1, 0.2, 2, {}, 1000)};
  records[0].cached_tokens = 500;  // vLLM omits cached_tokens when it is 0
  Summary s = summarize(records, 1.0);
  ASSERT_TRUE(s.prefix_cache_hit_rate.has_value());
  EXPECT_DOUBLE_EQ(*s.prefix_cache_hit_rate, 0.25);
}

TEST(Summary, JsonCarriesTheSharedSchema) {
  std::vector<RequestRecord> records = {ok_record(0.1, 1.1, 11, {0.1}),
                                        failed(ErrorKind::kConnect, 0)};
  Summary s = summarize(records, 2.0, *parse_slo("ttft=1s"));
  auto doc = boost::json::parse(to_json(s, R"({"seed":1})")).as_object();
  EXPECT_EQ(doc.at("completed").as_int64(), 1);
  EXPECT_EQ(doc.at("failed").as_int64(), 1);
  EXPECT_DOUBLE_EQ(doc.at("duration_s").to_number<double>(), 2.0);
  for (const char* key : {"ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"}) {
    const auto& stat = doc.at(key).as_object();
    for (const char* field : {"mean", "p50", "p90", "p99"})
      EXPECT_TRUE(stat.contains(field)) << key << field;
  }
  EXPECT_DOUBLE_EQ(doc.at("ttft_ms").at("p50").to_number<double>(), 100.0);
  EXPECT_DOUBLE_EQ(doc.at("request_throughput").to_number<double>(), 0.5);
  EXPECT_DOUBLE_EQ(doc.at("output_token_throughput").to_number<double>(), 5.5);
  EXPECT_DOUBLE_EQ(doc.at("goodput").to_number<double>(), 0.5);
  EXPECT_TRUE(doc.at("prefix_cache_hit_rate").is_null());
  EXPECT_EQ(doc.at("errors").at("by_kind").at("connect").as_int64(), 1);
  EXPECT_EQ(doc.at("config").at("seed").as_int64(), 1);
  // No samples: null statistics, not zeros that would look like measurements.
  auto empty = boost::json::parse(to_json(summarize({}, 0.0))).as_object();
  EXPECT_TRUE(empty.at("ttft_ms").at("mean").is_null());
}

TEST(Summary, RecordLineIsJsonWithEscapedMessage) {
  RequestRecord r = failed(ErrorKind::kServerError, 200);
  r.error_message = "bad \"quote\"\n";
  auto doc = boost::json::parse(record_json_line(r)).as_object();
  EXPECT_EQ(doc.at("error").as_string(), "server_error");
  EXPECT_EQ(doc.at("error_message").as_string(), "bad \"quote\"\n");
  EXPECT_TRUE(doc.at("ttft_ms").is_null());
  auto good =
      boost::json::parse(record_json_line(ok_record(0.25, 1.0, 4, {0.25, 0.25}))).as_object();
  EXPECT_DOUBLE_EQ(good.at("tpot_ms").to_number<double>(), 250.0);
  EXPECT_EQ(good.at("itl_ms").as_array().size(), 2u);
}

TEST(Summary, TableNamesEveryMetric) {
  std::vector<RequestRecord> records = {ok_record(0.1, 1.1, 11, {0.1}),
                                        failed(ErrorKind::kHttpStatus, 500)};
  const std::string table = format_table(summarize(records, 2.0));
  for (const char* needle : {"Successful requests:", "Mean TTFT (ms):", "P99 TPOT (ms):",
                             "Median ITL (ms):", "http_status:", "HTTP 500:"}) {
    EXPECT_NE(table.find(needle), std::string::npos) << needle;
  }
}

TEST(Compare, PrintsRatiosSideBySide) {
  std::vector<RequestRecord> fast = {ok_record(0.1, 1.0, 10)};
  std::vector<RequestRecord> slow = {ok_record(0.2, 2.0, 10)};
  auto text =
      compare_results(to_json(summarize(fast, 1.0)), to_json(summarize(slow, 1.0)), "base", "new");
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("base"), std::string::npos);
  EXPECT_NE(text->find("ttft_ms.p50"), std::string::npos);
  // TTFT doubled: the ratio column says 2.000 on that row.
  const auto row = text->find("ttft_ms.p50");
  const auto eol = text->find('\n', row);
  EXPECT_NE(text->substr(row, eol - row).find("2.000"), std::string::npos) << *text;
  EXPECT_FALSE(compare_results("{}", to_json(summarize(fast, 1.0))).ok());
  EXPECT_FALSE(compare_results("nope", "nope").ok());
}

}  // namespace
}  // namespace omni::benchstat
