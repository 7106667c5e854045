#include "omni/proxy/config.hpp"

#include <gtest/gtest.h>

#include "omni/config/config.hpp"

namespace omni::proxy {
namespace {

Result<ProxyConfig> load(std::string_view yaml) {
  config::Schema<ProxyConfig> schema;
  describe(schema);
  return config::load_yaml(schema, yaml);
}

TEST(ProxyConfig, FlagEndpointsAndYamlNodesMakeOneNodeList) {
  auto cfg = load(R"(
pd_mode: parallel
bootstrap_port: 9000
prefill_endpoints: ["127.0.0.1:1", "127.0.0.1:1"]
prefill_nodes: [{endpoint: "10.0.0.2:2", group: g2, bootstrap_port: 7000}]
decode_nodes: [{endpoint: "[::1]:3", group: g2}]
)");
  ASSERT_TRUE(cfg.ok()) << cfg.error().message;
  const auto nodes = node_entries(*cfg);
  ASSERT_EQ(nodes.size(), 3u);  // the duplicate endpoint counts once
  EXPECT_EQ(nodes[0].spec, (NodeSpec{"127.0.0.1:1", Role::kPrefill, ""}));
  EXPECT_EQ(nodes[0].bootstrap_port, 9000);
  EXPECT_EQ(nodes[1].spec, (NodeSpec{"10.0.0.2:2", Role::kPrefill, "g2"}));
  EXPECT_EQ(nodes[1].bootstrap_port, 7000);
  EXPECT_EQ(nodes[2].spec, (NodeSpec{"[::1]:3", Role::kDecode, "g2"}));
  EXPECT_EQ(nodes[2].host, "::1");
  EXPECT_EQ(nodes[2].port, 3);
}

TEST(ProxyConfig, AggregatedUsesOnlyTheDecodePool) {
  auto cfg =
      load("pd_mode: aggregated\ndecode_endpoints: [\"h:1\"]\nprefill_endpoints: [\"h:2\"]\n");
  ASSERT_TRUE(cfg.ok()) << cfg.error().message;
  const auto nodes = node_entries(*cfg);
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0].spec.role, Role::kDecode);
}

TEST(ProxyConfig, RejectsWhatCannotServe) {
  auto no_decode = load("prefill_endpoints: [\"h:1\"]\n");
  ASSERT_FALSE(no_decode.ok());
  EXPECT_NE(no_decode.error().message.find("no decode endpoint"), std::string::npos);
  auto no_prefill = load("decode_endpoints: [\"h:1\"]\n");
  ASSERT_FALSE(no_prefill.ok());
  EXPECT_NE(no_prefill.error().message.find("needs prefill endpoints"), std::string::npos);
  auto bad_endpoint = load("decode_endpoints: [\"nope\"]\npd_mode: aggregated\n");
  ASSERT_FALSE(bad_endpoint.ok());
  EXPECT_NE(bad_endpoint.error().message.find("decode_endpoints"), std::string::npos);
  auto bad_policy = load("decode_endpoints: [\"h:1\"]\npd_mode: aggregated\npolicy: best\n");
  ASSERT_FALSE(bad_policy.ok());
  EXPECT_NE(bad_policy.error().message.find("unknown policy"), std::string::npos);
  auto bad_mode = load("decode_endpoints: [\"h:1\"]\npd_mode: both\n");
  EXPECT_FALSE(bad_mode.ok());
}

}  // namespace
}  // namespace omni::proxy
