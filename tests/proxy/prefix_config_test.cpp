// The scheduling part of omni-proxy's configuration: the default policy, policy names, the
// engines' KV-event endpoints (YAML per node or the flag's ENGINE=ZMQ pairs), hashing settings.
#include <gtest/gtest.h>

#include "omni/config/config.hpp"
#include "omni/proxy/config.hpp"

namespace omni::proxy {
namespace {

Result<ProxyConfig> load(std::string_view yaml) {
  config::Schema<ProxyConfig> schema;
  describe(schema);
  return config::load_yaml(schema, yaml);
}

TEST(ProxyPrefixConfig, DefaultsAreOmniWithAnIndexAndNoEvents) {
  auto cfg = load("prefill_endpoints: [\"h:1\"]\ndecode_endpoints: [\"h:2\"]\n");
  ASSERT_TRUE(cfg.ok()) << cfg.error().message;
  EXPECT_EQ(cfg->policy, "omni");
  EXPECT_EQ(cfg->block_size, 16u);
  EXPECT_EQ(cfg->hash_algo, "sha256");
  EXPECT_TRUE(cfg->prefix_index.enabled);
  EXPECT_FALSE(cfg->send_token_ids);
  for (const NodeEntry& node : node_entries(*cfg)) {
    EXPECT_FALSE(node.kv_events_endpoint);
    EXPECT_FALSE(node.spec.kv_events);
  }
}

TEST(ProxyPrefixConfig, KvEventEndpointsFromTheFlagPairsAndFromYamlNodes) {
  auto cfg = load(R"(
prefill_endpoints: ["127.0.0.1:1", "127.0.0.1:2"]
prefill_nodes: [{endpoint: "10.0.0.3:3", kv_events_endpoint: "tcp://10.0.0.3:5557"}]
decode_endpoints: ["127.0.0.1:4"]
kv_events_endpoints: ["127.0.0.1:2=tcp://127.0.0.1:6000"]
)");
  ASSERT_TRUE(cfg.ok()) << cfg.error().message;
  const auto nodes = node_entries(*cfg);
  ASSERT_EQ(nodes.size(), 4u);
  EXPECT_FALSE(nodes[0].kv_events_endpoint);
  EXPECT_EQ(nodes[1].kv_events_endpoint, "tcp://127.0.0.1:6000");
  EXPECT_TRUE(nodes[1].spec.kv_events);
  EXPECT_EQ(nodes[2].kv_events_endpoint, "tcp://10.0.0.3:5557");
  EXPECT_TRUE(nodes[2].spec.kv_events);
  EXPECT_FALSE(nodes[3].spec.kv_events);
}

TEST(ProxyPrefixConfig, BadSchedulingSettingsAreRejectedAtLoad) {
  const std::string pools = "prefill_endpoints: [\"h:1\"]\ndecode_endpoints: [\"h:2\"]\n";
  auto unknown = load(pools + "policy: fastest\n");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("omni-anchor"), std::string::npos)
      << unknown.error().message;
  EXPECT_TRUE(load(pools + "policy: sglang-cache-aware\n").ok());
  EXPECT_FALSE(load(pools + "hash_algo: md5\n").ok());
  EXPECT_FALSE(load(pools + "kv_events_endpoints: [\"h:1\"]\n").ok());            // no '='
  EXPECT_FALSE(load(pools + "kv_events_endpoints: [\"h:9=tcp://h:1\"]\n").ok());  // not an engine
  EXPECT_TRUE(load(pools + "kv_events_endpoints: [\"h:1=tcp://h:5557\"]\n").ok());
  EXPECT_FALSE(load(pools + "send_token_ids: true\n").ok());  // needs a tokenizer
  EXPECT_FALSE(load(pools + "block_size: 0\n").ok());
}

}  // namespace
}  // namespace omni::proxy
