// What the adversarial probe of issue 16 found in the proxy's pure pieces: client-supplied PD
// fields, engine transfer parameters leaking back, admission of unbounded generations, and
// authentication decided on the request head.
#include <gtest/gtest.h>

#include "auth.hpp"
#include "omni/proxy/rewrite.hpp"

namespace omni::proxy {
namespace {

TEST(ProxyOwnedFields, EveryPdFieldAndEngineIdIsFound) {
  auto info = inspect_request(
      R"({"prompt":"x","kv_transfer_params":{"remote_host":"10.0.0.9"},"bootstrap_host":"h",)"
      R"("bootstrap_port":1,"bootstrap_room":2,"rid":"r","request_id":"q","nested":{"bootstrap_host":1}})",
      Api::kCompletions);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(proxy_owned_field_names(info->proxy_owned_fields),
            "kv_transfer_params,bootstrap_host,bootstrap_port,bootstrap_room,request_id,rid");
  auto clean =
      inspect_request(R"({"prompt":"x","nested":{"kv_transfer_params":1}})", Api::kCompletions);
  ASSERT_TRUE(clean.ok());
  EXPECT_EQ(clean->proxy_owned_fields, 0u) << "only top-level members belong to the protocol";
}

TEST(ProxyOwnedFields, StrippingKeepsEverythingElseByteForByte) {
  auto stripped = strip_proxy_owned(
      R"({"prompt": "x", "kv_transfer_params": {"do_remote_prefill": true}, "temperature": 0.70,)"
      R"( "bootstrap_room": 5, "extra": {"bootstrap_room": 5}})");
  ASSERT_TRUE(stripped.ok());
  EXPECT_EQ(*stripped, R"({"prompt":"x","temperature":0.70,"extra":{"bootstrap_room": 5}})");
}

TEST(HideTransferParams, AnEnginesParametersNeverReachTheClient) {
  const std::string leaked =
      R"({"id":"cmpl-1","choices":[],"kv_transfer_params":{"remote_host":"10.0.0.5","remote_port":5600}})";
  auto hidden = hide_transfer_params(leaked);
  ASSERT_TRUE(hidden);
  EXPECT_EQ(*hidden, R"({"id":"cmpl-1","choices":[],"kv_transfer_params":null})");
  EXPECT_FALSE(hide_transfer_params(R"({"id":"c","kv_transfer_params":null})"));
  EXPECT_FALSE(hide_transfer_params(R"({"id":"c"})"));
  EXPECT_TRUE(hide_transfer_params(R"({"kv_transfer_params":"10.0.0.5:5600"})"))
      << "any non-null value is the engine's business";
}

TEST(UnboundedGenerations, NullOrAbsentMaxTokensIsFlaggedAsVllmReadsIt) {
  auto completions_absent = inspect_request(R"({"prompt":"x"})", Api::kCompletions);
  auto completions_null = inspect_request(R"({"prompt":"x","max_tokens":null})", Api::kCompletions);
  auto chat_absent = inspect_request(R"({"messages":[]})", Api::kChatCompletions);
  auto chat_bounded =
      inspect_request(R"({"messages":[],"max_completion_tokens":9})", Api::kChatCompletions);
  auto chat_null_but_completion = inspect_request(
      R"({"messages":[],"max_tokens":null,"max_completion_tokens":9})", Api::kChatCompletions);
  ASSERT_TRUE(completions_absent && completions_null && chat_absent && chat_bounded &&
              chat_null_but_completion);
  EXPECT_FALSE(completions_absent->max_tokens_unbounded);  // vLLM's default of 16
  EXPECT_EQ(completions_absent->max_tokens, 16u);
  EXPECT_TRUE(completions_null->max_tokens_unbounded);
  EXPECT_TRUE(chat_absent->max_tokens_unbounded);
  EXPECT_FALSE(chat_bounded->max_tokens_unbounded);
  EXPECT_FALSE(chat_null_but_completion->max_tokens_unbounded);
  EXPECT_EQ(chat_null_but_completion->max_tokens, 9u);
}

http::Request head(std::string path, std::vector<std::pair<std::string, std::string>> fields,
                   std::string remote = "127.0.0.1:40000") {
  http::Request r;
  r.target = std::move(path);
  r.remote = std::move(remote);
  for (auto& [name, value] : fields) r.headers.add(name, value);
  return r;
}

int status_of(const std::optional<http::Response>& answer) { return answer ? answer->status : 0; }

TEST(ScreenRequestHead, KeysGuardEveryV1RouteAndTheTokenGuardsAdmin) {
  AccessRules rules;
  rules.api_keys = Credentials({"k1", "k2"});
  rules.admin = Credentials({"root"});
  EXPECT_EQ(screen_request_head(rules, head("/v1/models", {}))->status, 401);
  EXPECT_EQ(
      screen_request_head(rules, head("/v1/completions", {{"Authorization", "Bearer k3"}}))->status,
      401);
  EXPECT_FALSE(
      screen_request_head(rules, head("/v1/completions", {{"Authorization", "bearer k2"}})));
  EXPECT_EQ(
      screen_request_head(rules, head("/admin/nodes", {{"Authorization", "Bearer k1"}}))->status,
      401);
  EXPECT_FALSE(
      screen_request_head(rules, head("/admin/nodes", {{"Authorization", "Bearer root"}})));
  EXPECT_FALSE(screen_request_head(rules, head("/health", {})));
  const auto twice = screen_request_head(
      rules,
      head("/v1/completions", {{"Authorization", "Bearer k1"}, {"authorization", "Bearer x"}}));
  ASSERT_TRUE(twice);
  EXPECT_EQ(twice->status, 400);
  EXPECT_EQ(screen_request_head(rules, head("/health", {{"X-Request-Id", "bad id"}}))->status, 400);
  EXPECT_EQ(screen_request_head(rules, head("/health", {{"X-Request-Id", std::string(257, 'a')}}))
                ->status,
            400);
  EXPECT_FALSE(
      screen_request_head(rules, head("/health", {{"X-Request-Id", std::string(256, 'a')}})));
}

TEST(ScreenRequestHead, ClientRoutesOpenWhenNoKeyIsConfigured) {
  const AccessRules open;
  EXPECT_FALSE(screen_request_head(open, head("/v1/completions", {}, "10.1.2.3:5")));
  EXPECT_FALSE(screen_request_head(open, head("/v1/models", {}, "10.1.2.3:5")));
  EXPECT_FALSE(screen_request_head(open, head("/health", {}, "10.1.2.3:5")));
  EXPECT_FALSE(screen_request_head(open, head("/admin/reload", {})));
}

TEST(ScreenRequestHead, WithoutATokenOperatorRoutesAnswerLocalClientsOnly) {
  const AccessRules rules;
  for (const char* path :
       {"/admin/reload", "/admin/nodes/x/drain", "/admin", "/metrics", "/dashboard"}) {
    SCOPED_TRACE(path);
    EXPECT_EQ(status_of(screen_request_head(rules, head(path, {}, "127.0.0.1:1"))), 0);
    EXPECT_EQ(status_of(screen_request_head(rules, head(path, {}, "127.9.9.9:1"))), 0);
    EXPECT_EQ(status_of(screen_request_head(rules, head(path, {}, "[::1]:1"))), 0);
    EXPECT_EQ(status_of(screen_request_head(rules, head(path, {}, "[::ffff:127.0.0.1]:1"))), 0);
    EXPECT_EQ(status_of(screen_request_head(rules, head(path, {}, "10.1.2.3:1"))), 403);
    EXPECT_EQ(status_of(screen_request_head(rules, head(path, {}, "[2001:db8::1]:1"))), 403);
    EXPECT_EQ(status_of(screen_request_head(rules, head(path, {}, "[::ffff:10.0.0.1]:1"))), 403);
    EXPECT_EQ(status_of(screen_request_head(rules, head(path, {}, ""))), 403);
    // Relayed by a proxy on this host: the client is somewhere else.
    for (const char* relayed : {"X-Forwarded-For", "Forwarded", "X-Real-IP"}) {
      EXPECT_EQ(status_of(screen_request_head(rules, head(path, {{relayed, "198.51.100.1"}}))),
                403);
    }
  }
  const auto refused = screen_request_head(rules, head("/metrics", {}, "10.1.2.3:1"));
  ASSERT_TRUE(refused);
  EXPECT_NE(refused->body.find("--admin-listen"), std::string::npos) << refused->body;
}

TEST(ScreenRequestHead, WithATokenAdminNeedsItEverywhereAndMetricsOffHost) {
  AccessRules rules;
  rules.admin = Credentials({"root"});
  const std::pair<std::string, std::string> token{"Authorization", "Bearer root"};
  EXPECT_EQ(status_of(screen_request_head(rules, head("/admin/nodes", {}))), 401);
  EXPECT_EQ(status_of(screen_request_head(rules, head("/admin/nodes", {token}, "10.1.2.3:1"))), 0);
  EXPECT_EQ(status_of(screen_request_head(rules, head("/metrics", {}))), 0);
  EXPECT_EQ(status_of(screen_request_head(rules, head("/metrics", {}, "10.1.2.3:1"))), 401);
  EXPECT_EQ(status_of(screen_request_head(rules, head("/metrics", {token}, "10.1.2.3:1"))), 0);
}

TEST(ScreenRequestHead, AnAdminListenerTakesOperatorRoutesOffTheTrafficPort) {
  AccessRules rules;
  rules.admin_listener = true;
  // The traffic listener lets them through to its router, which has no such route (404).
  EXPECT_FALSE(screen_request_head(rules, head("/metrics", {}, "10.1.2.3:1"), Listener::kTraffic));
  // The admin listener: whoever reaches it may scrape and administer, unless a token is set.
  EXPECT_FALSE(screen_request_head(rules, head("/metrics", {}, "10.1.2.3:1"), Listener::kAdmin));
  EXPECT_FALSE(
      screen_request_head(rules, head("/admin/drain", {}, "10.1.2.3:1"), Listener::kAdmin));
  rules.admin = Credentials({"root"});
  EXPECT_EQ(status_of(screen_request_head(rules, head("/admin/drain", {}), Listener::kAdmin)), 401);
  EXPECT_EQ(status_of(screen_request_head(
                rules, head("/admin/drain", {{"Authorization", "Bearer root"}}), Listener::kAdmin)),
            0);
  EXPECT_FALSE(screen_request_head(rules, head("/metrics", {}, "10.1.2.3:1"), Listener::kAdmin));
}

TEST(IsLocalClient, LoopbackPeersThatWereNotRelayed) {
  EXPECT_TRUE(is_local_client(head("/", {}, "127.0.0.1:80")));
  EXPECT_TRUE(is_local_client(head("/", {}, "[::1]:80")));
  EXPECT_FALSE(is_local_client(head("/", {}, "192.168.1.1:80")));
  EXPECT_FALSE(is_local_client(head("/", {}, "not-an-address:80")));
  EXPECT_FALSE(is_local_client(head("/", {{"x-forwarded-for", "127.0.0.1"}}, "127.0.0.1:80")));
}

TEST(Credentials, AcceptOnlyTheExactSecrets) {
  const Credentials keys({"secret", "another"});
  EXPECT_TRUE(keys.accepts("secret"));
  EXPECT_TRUE(keys.accepts("another"));
  EXPECT_FALSE(keys.accepts("secre"));
  EXPECT_FALSE(keys.accepts("secret "));
  EXPECT_FALSE(keys.accepts(""));
  EXPECT_TRUE(Credentials().empty());
}

}  // namespace
}  // namespace omni::proxy
