#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <cmath>
#include <limits>

#include "omni/workload/openai_request.hpp"
#include "omni/workload/pacing.hpp"

namespace omni::workload {
namespace {

RequestSpec spec_of(std::uint32_t tokens, std::uint32_t output, std::vector<std::uint64_t> ids) {
  RequestSpec spec;
  spec.input_tokens = tokens;
  spec.max_output_tokens = output;
  spec.hash_ids = std::move(ids);
  return spec;
}

TEST(RequestBody, CompletionsCarryTokenIdsAndStreamingOptions) {
  BodyOptions options;
  options.model = "m\"x";
  const RequestSpec spec = spec_of(600, 7, {1, 2});
  auto doc = boost::json::parse(request_body(spec, options)).as_object();
  EXPECT_EQ(doc.at("model").as_string(), "m\"x");
  const auto& prompt = doc.at("prompt").as_array();
  ASSERT_EQ(prompt.size(), 600u);
  const auto tokens = prompt_tokens(spec, options.prompt);
  for (std::size_t i = 0; i < tokens.size(); ++i) ASSERT_EQ(prompt[i].as_int64(), tokens[i]);
  EXPECT_EQ(doc.at("max_tokens").as_int64(), 7);
  EXPECT_TRUE(doc.at("stream").as_bool());
  EXPECT_TRUE(doc.at("stream_options").at("include_usage").as_bool());
  EXPECT_TRUE(doc.at("ignore_eos").as_bool());
}

TEST(RequestBody, ChatCarriesTextAndNoModelWhenUnset) {
  BodyOptions options;
  options.api = Api::kChat;
  options.ignore_eos = false;
  const RequestSpec spec = spec_of(3, 0, {5});
  auto doc = boost::json::parse(request_body(spec, options)).as_object();
  EXPECT_FALSE(doc.contains("model"));
  EXPECT_FALSE(doc.contains("ignore_eos"));
  const auto& message = doc.at("messages").as_array().at(0).as_object();
  EXPECT_EQ(message.at("role").as_string(), "user");
  EXPECT_EQ(message.at("content").as_string(), tokens_to_text(prompt_tokens(spec, options.prompt)));
  EXPECT_EQ(doc.at("max_completion_tokens").as_int64(), 1);  // at least one token is asked for
}

TEST(RequestBody, EndpointDecidesTheApi) {
  EXPECT_EQ(*api_of_endpoint("/v1/completions"), Api::kCompletions);
  EXPECT_EQ(*api_of_endpoint("/v1/chat/completions"), Api::kChat);
  EXPECT_FALSE(api_of_endpoint("/v1/embeddings").ok());
}

TEST(Pacer, TraceModeScalesArrivals) {
  Pacer pacer({PacingOptions::Mode::kTrace, 0.5, 1, 1}, 1);
  RequestSpec a, b, c;
  a.arrival_s = 0;
  b.arrival_s = 4;
  c.arrival_s = 3;  // never earlier than its predecessor
  EXPECT_DOUBLE_EQ(pacer.send_at(a), 0.0);
  EXPECT_DOUBLE_EQ(pacer.send_at(b), 2.0);
  EXPECT_DOUBLE_EQ(pacer.send_at(c), 2.0);
}

TEST(Pacer, RateModeIgnoresArrivalsAndKeepsTheRate) {
  Pacer pacer({PacingOptions::Mode::kRate, 1, 20, 1}, 9);
  RequestSpec spec;
  spec.arrival_s = 1e6;
  EXPECT_DOUBLE_EQ(pacer.send_at(spec), 0.0);
  double last = 0;
  const int n = 10000;
  for (int i = 1; i < n; ++i) {
    const double t = pacer.send_at(spec);
    EXPECT_GE(t, last);
    last = t;
  }
  EXPECT_NEAR((n - 1) / last, 20.0, 0.8);
}

TEST(Pacer, InfiniteRateAndBurstSendAtOnce) {
  RequestSpec spec;
  spec.arrival_s = 5;
  Pacer inf({PacingOptions::Mode::kRate, 1, std::numeric_limits<double>::infinity(), 1}, 1);
  Pacer burst({PacingOptions::Mode::kBurst, 1, 1, 1}, 1);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(inf.send_at(spec), 0.0);
    EXPECT_EQ(burst.send_at(spec), 0.0);
  }
}

}  // namespace
}  // namespace omni::workload
