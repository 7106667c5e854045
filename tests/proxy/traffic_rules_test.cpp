#include "traffic_rules.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace omni::proxy {
namespace {

class TrafficRulesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = std::filesystem::temp_directory_path() /
          ("omni-traffic-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
           "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir);
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
  std::string keys(const std::string& name, const std::string& text) {
    const auto path = dir / name;
    std::ofstream(path) << text;
    return path.string();
  }
  TrafficConfig config() {
    TrafficConfig c;
    c.bands = {{"interactive", -1}, {"standard", 0}, {"batch", 100}};
    TenantConfig gold;
    gold.name = "gold";
    gold.api_keys_file = keys("gold", "# gold's keys\nsk-gold-1\nsk-gold-2\n");
    gold.weight = 4;
    gold.node_share = 0.8;
    gold.min_priority = -10;
    gold.default_priority = -1;
    TenantConfig free;
    free.name = "free";
    free.api_keys_file = keys("free", "sk-free\n");
    c.tenants = {gold, free};
    return c;
  }
  static http::Headers headers(std::string key, std::string priority = "") {
    http::Headers h;
    if (!key.empty()) h.add("Authorization", "Bearer " + key);
    if (!priority.empty()) h.add("X-Omni-Priority", priority);
    return h;
  }
  std::filesystem::path dir;
};

TEST_F(TrafficRulesTest, KeysNameTheirTenantAndTheTenantsDefaults) {
  auto rules = TrafficRules::load(config());
  ASSERT_TRUE(rules.ok()) << rules.error().message;
  EXPECT_EQ(rules->keys().size(), 3u);
  EXPECT_EQ(rules->tenant_of("sk-gold-2"), 1u);
  EXPECT_EQ(rules->tenant_of("sk-free"), 2u);
  EXPECT_EQ(rules->tenant_of("sk-other"), 0u);
  auto gold = rules->classify(headers("sk-gold-1"), std::nullopt);
  ASSERT_TRUE(gold.ok());
  EXPECT_EQ(gold->tenant, 1u);
  EXPECT_EQ(gold->weight, 4.0);
  EXPECT_EQ(gold->node_share, 0.8);
  EXPECT_EQ(gold->priority, -1) << "the tenant's default";
  EXPECT_EQ(gold->band, 0);
  EXPECT_EQ(rules->tenant_name(1), "gold");
  EXPECT_EQ(rules->band_name(2), "batch");
}

TEST_F(TrafficRulesTest, TheHeaderWinsAndNobodyRaisesThemselvesPastTheirLimit) {
  auto rules = TrafficRules::load(config());
  ASSERT_TRUE(rules.ok());
  auto header = rules->classify(headers("sk-gold-1", " 50 "), -5);
  ASSERT_TRUE(header.ok());
  EXPECT_EQ(header->priority, 50);
  EXPECT_EQ(header->band, 2);
  auto body = rules->classify(headers("sk-gold-1"), -5);
  EXPECT_EQ(body->priority, -5);
  EXPECT_FALSE(body->clamped);
  auto greedy = rules->classify(headers("sk-gold-1"), -50);
  EXPECT_EQ(greedy->priority, -10);
  EXPECT_TRUE(greedy->clamped);
  auto free = rules->classify(headers("sk-free", "-3"), std::nullopt);
  EXPECT_EQ(free->priority, 0) << "free's min_priority is the default 0";
  EXPECT_TRUE(free->clamped);
  EXPECT_EQ(free->band, 1);
  auto anonymous = rules->classify(headers(""), -1);
  EXPECT_EQ(anonymous->tenant, 0u);
  EXPECT_EQ(anonymous->priority, 0);
  EXPECT_TRUE(anonymous->clamped);
}

TEST_F(TrafficRulesTest, ATenantHeaderNamesTheTenantOfRequestsWithoutATenantKey) {
  TrafficConfig c = config();
  c.tenant_header = "X-Tenant";
  TenantConfig batch;
  batch.name = "batch";  // named by the header only: no key file
  batch.weight = 0.5;
  c.tenants.push_back(batch);
  auto rules = TrafficRules::load(c);
  ASSERT_TRUE(rules.ok()) << rules.error().message;
  http::Headers h = headers("");
  h.add("X-Tenant", "batch");
  auto named = rules->classify(h, std::nullopt);
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->tenant, 3u);
  EXPECT_EQ(named->weight, 0.5);
  http::Headers keyed = headers("sk-gold-1");
  keyed.add("X-Tenant", "batch");
  EXPECT_EQ(rules->classify(keyed, std::nullopt)->tenant, 1u) << "a tenant's key wins";
  http::Headers unknown = headers("");
  unknown.add("X-Tenant", "nobody");
  auto refused = rules->classify(unknown, std::nullopt);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("X-Tenant names no configured tenant"), std::string::npos);
}

TEST_F(TrafficRulesTest, BadHeadersAndKeyFilesAreErrors) {
  auto rules = TrafficRules::load(config());
  ASSERT_TRUE(rules.ok());
  for (const char* bad : {"high", "1.5", "", "2147483648", "-2147483649", "1 2", "0x10"}) {
    http::Headers h = headers("sk-gold-1");
    h.add("X-Omni-Priority", bad);
    auto result = rules->classify(h, std::nullopt);
    ASSERT_FALSE(result.ok()) << "'" << bad << "'";
    EXPECT_NE(result.error().message.find("X-Omni-Priority"), std::string::npos);
  }
  TrafficConfig twice = config();
  twice.tenants[1].api_keys_file = keys("dup", "sk-gold-1\n");
  auto dup = TrafficRules::load(twice);
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.error().message.find("listed twice"), std::string::npos);
  TrafficConfig missing = config();
  missing.tenants[0].api_keys_file = (dir / "nope").string();
  auto gone = TrafficRules::load(missing);
  ASSERT_FALSE(gone.ok());
  EXPECT_NE(gone.error().message.find("tenant 'gold'"), std::string::npos);
}

}  // namespace
}  // namespace omni::proxy
