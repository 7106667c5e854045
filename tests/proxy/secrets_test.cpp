// Where the proxy's secrets come from (secrets.hpp) and that they never show in a dump.
#include "secrets.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include "omni/config/config.hpp"

namespace omni::proxy {
namespace {

class SecretFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("omni-secrets-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const auto path = dir_ / name;
    std::ofstream(path) << text;
    return path.string();
  }
  EnvLookup env(std::map<std::string, std::string> values = {}) {
    return [values = std::move(values)](std::string_view name) -> std::optional<std::string> {
      auto it = values.find(std::string(name));
      if (it == values.end()) return std::nullopt;
      return it->second;
    };
  }

  std::filesystem::path dir_;
};

TEST_F(SecretFiles, AKeyFileIsOneKeyPerLineWithCommentsAndBlanks) {
  const auto keys = read_key_file(write("keys", "# team A\n  alpha \n\n\tbeta\r\n#gamma\n"));
  ASSERT_TRUE(keys.ok()) << keys.error().message;
  EXPECT_EQ(*keys, (std::vector<std::string>{"alpha", "beta"}));
}

TEST_F(SecretFiles, AFileWithoutAKeyOrMissingIsAnErrorNamingIt) {
  const std::string empty = write("empty", "# nothing here\n\n");
  const auto none = read_key_file(empty);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find(empty), std::string::npos);
  EXPECT_NE(none.error().message.find("no key"), std::string::npos);
  const auto missing = read_key_file((dir_ / "absent").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
}

TEST_F(SecretFiles, ClientKeysAddUpFromEverySource) {
  ProxyConfig config;
  config.api_keys = {"flag"};
  config.api_keys_file = write("keys", "file1\nfile2\n");
  const auto secrets = load_secrets(config, env({{"OMNI_API_KEYS", " env1 , env2,"}}));
  ASSERT_TRUE(secrets.ok()) << secrets.error().message;
  EXPECT_EQ(secrets->api_keys,
            (std::vector<std::string>{"flag", "file1", "file2", "env1", "env2"}));
  EXPECT_FALSE(secrets->admin_token);
  EXPECT_FALSE(secrets->engine_api_key);
}

TEST_F(SecretFiles, ATokenComesFromItsFileThenTheEnvironmentThenTheConfig) {
  // On the heap: GCC 12 warns falsely (maybe-uninitialized) about the optionals of a local one.
  auto config = std::make_unique<ProxyConfig>();
  config->admin_token.emplace("from-config");
  config->engine_api_key.emplace("engine-config");
  auto secrets = load_secrets(*config, env());
  ASSERT_TRUE(secrets.ok());
  EXPECT_EQ(secrets->admin_token, "from-config");
  EXPECT_EQ(secrets->engine_api_key, "engine-config");
  secrets = load_secrets(*config, env({{"OMNI_ADMIN_TOKEN", "from-env\n"}}));
  ASSERT_TRUE(secrets.ok());
  EXPECT_EQ(secrets->admin_token, "from-env");
  config->admin_token_file = write("admin", "from-file\n");
  config->engine_api_key_file = write("engine", "# vLLM --api-key\nengine-file\n");
  secrets = load_secrets(*config, env({{"OMNI_ADMIN_TOKEN", "from-env"}}));
  ASSERT_TRUE(secrets.ok());
  EXPECT_EQ(secrets->admin_token, "from-file");
  EXPECT_EQ(secrets->engine_api_key, "engine-file");
}

TEST_F(SecretFiles, AmbiguousOrEmptyTokensAreRefused) {
  ProxyConfig config;
  config.admin_token_file = write("admin", "one\ntwo\n");
  EXPECT_FALSE(load_secrets(config, env()).ok());
  config.admin_token_file.reset();
  EXPECT_FALSE(load_secrets(config, env({{"OMNI_ADMIN_TOKEN", "  "}})).ok());
  EXPECT_FALSE(load_secrets(config, env({{"OMNI_API_KEYS", " , "}})).ok());
  config.api_keys_file = (dir_ / "absent").string();
  EXPECT_FALSE(load_secrets(config, env()).ok());
}

TEST(SecretRedaction, PrintConfigAndHelpNeverShowASecret) {
  config::Schema<ProxyConfig> schema;
  describe(schema);
  auto config = std::make_unique<ProxyConfig>();  // on the heap: see above
  config->decode_endpoints = {"127.0.0.1:1"};
  config->api_keys = {"sk-live-123", "sk-live-456"};
  config->admin_token.emplace("admin-789");
  config->engine_api_key.emplace("engine-000");
  const std::string yaml = config::dump_yaml(schema, *config);
  for (const char* secret : {"sk-live-123", "sk-live-456", "admin-789", "engine-000"}) {
    EXPECT_EQ(yaml.find(secret), std::string::npos) << yaml;
  }
  EXPECT_NE(yaml.find("api_keys: <redacted>"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("admin_token: <redacted>"), std::string::npos) << yaml;
  // Unset secrets print as unset, so an operator can tell "none" from "hidden".
  const std::string empty = config::dump_yaml(schema, ProxyConfig{});
  EXPECT_EQ(empty.find("<redacted>"), std::string::npos) << empty;
}

TEST(SecretFlags, TheFlagsThatCarryASecretAreFound) {
  const char* argv[] = {
      "omni-proxy", "--api-keys",       "a,b", "--admin-token=x", "--api-keys-file",
      "f",          "--engine-api-key", "k"};
  EXPECT_EQ(secret_flags_given(8, argv),
            (std::vector<std::string>{"--api-keys", "--admin-token", "--engine-api-key"}));
}

}  // namespace
}  // namespace omni::proxy
