#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

#include "sim/pd.hpp"

namespace omni::sim {
namespace {

std::variant<PdRequest, ApiError> parse(std::string_view text) {
  return parse_pd_request(boost::json::parse(text).as_object());
}

TEST(Pd, ModesFromTheBooleans) {
  EXPECT_EQ(std::get<PdRequest>(parse_pd_request(std::nullopt)).mode, PdMode::kNone);
  EXPECT_EQ(
      std::get<PdRequest>(parse(R"({"do_remote_decode":true,"do_remote_prefill":false})")).mode,
      PdMode::kPrefillOnly);
  EXPECT_EQ(std::get<PdRequest>(parse(R"({"do_remote_decode":false})")).mode, PdMode::kNone);
}

TEST(Pd, PrefillParamsRoundTripIntoADecodeRequest) {
  PrefillParams p{{12, 13, 14}, "engine-a", "cmpl-x-0-abcd1234", "127.0.0.1", 8100, 1, 40};
  auto r = parse(format_prefill_params(p));
  ASSERT_TRUE(std::holds_alternative<PdRequest>(r));
  const PdRequest& d = std::get<PdRequest>(r);
  EXPECT_EQ(d.mode, PdMode::kRemotePrefill);
  EXPECT_EQ(d.remote.engine_id, "engine-a");
  EXPECT_EQ(d.remote.request_id, "cmpl-x-0-abcd1234");
  EXPECT_EQ(d.remote.port, 8100);
  EXPECT_EQ(d.remote.num_blocks, 3u);
  EXPECT_EQ(d.remote.num_tokens, 40u);
  // The flat list of older servers is accepted too.
  auto flat = parse(R"({"do_remote_prefill":true,"remote_block_ids":[1,2],"remote_engine_id":"e",
                        "remote_request_id":"r","remote_host":"h","remote_port":1})");
  EXPECT_EQ(std::get<PdRequest>(flat).remote.num_blocks, 2u);
}

TEST(Pd, InvalidParamsNameTheField) {
  auto missing = parse(R"({"do_remote_prefill":true,"remote_block_ids":[[1]],"remote_host":"h",
                           "remote_port":1,"remote_request_id":"r"})");
  ASSERT_TRUE(std::holds_alternative<ApiError>(missing));
  EXPECT_EQ(std::get<ApiError>(missing).status, 400);
  EXPECT_NE(std::get<ApiError>(missing).message.find("remote_engine_id"), std::string::npos);
  auto empty = parse(R"({"do_remote_prefill":true,"remote_block_ids":[[]],"remote_engine_id":"e",
                         "remote_request_id":"r","remote_host":"h","remote_port":1})");
  EXPECT_NE(std::get<ApiError>(empty).message.find("empty"), std::string::npos);
  auto port = parse(R"({"do_remote_prefill":true,"remote_block_ids":[[1]],"remote_engine_id":"e",
                        "remote_request_id":"r","remote_host":"h","remote_port":"x"})");
  EXPECT_NE(std::get<ApiError>(port).message.find("remote_port"), std::string::npos);
}

}  // namespace
}  // namespace omni::sim
