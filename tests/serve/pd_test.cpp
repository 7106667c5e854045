// PD disaggregation between two omni-serve instances in process: vLLM's NixlConnector params,
// the KV block transfer over the side channel, greedy output identical token for token to
// the aggregated instance's, holds freed when pulled or when their lease expires, a stale
// pull answered as vLLM's kv_load_failure_policy says, and a prefill peer that dies mid-transfer
// (a clear error, no blocks left on the decode side). Gauges are published after each step,
// so the tests poll them.
#include <gtest/gtest.h>

#include <thread>

#include "serve_testing.hpp"

namespace omni::serve {
namespace {

using namespace testing;

constexpr const char* kNixl = R"({"kv_connector":"NixlConnector","kv_role":"kv_both"})";

ServeConfig pd_config(const std::string& transfer = kNixl) {
  ServeConfig c = micro_config();
  c.kv_transfer_config = transfer;
  return c;
}

std::string body_of(const std::vector<int>& prompt, int max_tokens, const std::string& params) {
  return "{\"prompt\":" + tokens_json(prompt) + ",\"max_tokens\":" + std::to_string(max_tokens) +
         ",\"temperature\":0,\"ignore_eos\":true,\"return_token_ids\":true" +
         (params.empty() ? "" : ",\"kv_transfer_params\":" + params) + "}";
}

// The prefill leg as a router runs it: its kv_transfer_params for the decode leg.
std::string prefill(std::uint16_t port, const std::vector<int>& prompt) {
  const Reply r =
      post(port, "/v1/completions",
           body_of(prompt, 1, R"({"do_remote_decode":true,"do_remote_prefill":false})"));
  EXPECT_EQ(r.status, 200) << r.body;
  const json::value j = r.json();
  EXPECT_EQ(j.at("choices").as_array().at(0).at("finish_reason").as_string(), "length");
  return json::serialize(j.at("kv_transfer_params"));
}

TEST(Pd, GreedyOutputIsTheAggregatedInstancesTokenForToken) {
  Server aggregated(micro_config());
  Server p(pd_config()), d(pd_config());
  for (const int n : {3, 9, 22, 40}) {  // one block, several, GEMM-sized prompts
    const std::vector<int> prompt = prompt_of(n, n);
    const std::string want = greedy(aggregated.port, prompt, 16);
    const std::string params = prefill(p.port, prompt);
    const json::value pj = json::parse(params);
    EXPECT_TRUE(pj.at("do_remote_prefill").as_bool());
    EXPECT_EQ(pj.at("remote_block_ids").as_array().at(0).as_array().size(),
              static_cast<std::size_t>((n + 3) / 4));
    EXPECT_EQ(pj.at("remote_port").as_int64(), p.service->kv_transfer_port());
    EXPECT_EQ(pj.at("remote_num_tokens").as_int64(), n);
    const Reply r = post(d.port, "/v1/completions", body_of(prompt, 16, params));
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(json::serialize(r.json().at("choices").as_array().at(0).at("token_ids")), want)
        << "prompt of " << n;
  }
  // The prefill side freed every hold once pulled; both sides hold no blocks.
  EXPECT_TRUE(eventually([&] {
    return metric(p.port, "omni_sim_kv_holds ") == 0 &&
           metric(p.port, "vllm:kv_cache_usage_perc") == 0 &&
           metric(d.port, "vllm:kv_cache_usage_perc") == 0;
  }));
  EXPECT_EQ(metric(p.port, "omni_sim_kv_holds_total{outcome=\"pulled\"}"), 4);
  EXPECT_GT(metric(d.port, "omni_serve_kv_transfer_bytes_total{direction=\"received\"}"), 0);
  EXPECT_EQ(metric(d.port, "omni_serve_kv_transfers_total{side=\"decode\",outcome=\"fetched\"}"),
            4);
}

TEST(Pd, TheDecodeSidePullsOnlyWhatItsPrefixCacheLacks) {
  Server p(pd_config()), d(pd_config());
  const std::vector<int> prompt = prompt_of(24, 3);  // 6 blocks
  const std::string first = post(d.port, "/v1/completions", body_of(prompt, 4, "")).body;
  const double before =
      metric(d.port, "omni_serve_kv_transfer_bytes_total{direction=\"received\"}");
  const std::string params = prefill(p.port, prompt);
  const Reply r = post(d.port, "/v1/completions", body_of(prompt, 4, params));
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(json::serialize(r.json().at("choices").as_array().at(0).at("token_ids")),
            json::serialize(json::parse(first).at("choices").as_array().at(0).at("token_ids")));
  // Blocks 0..4 hit locally (the last prompt token's block is always pulled): one block of
  // 4 cache layers x 4 rows x 80 floats, and the last hidden state (64 floats).
  const double pulled =
      metric(d.port, "omni_serve_kv_transfer_bytes_total{direction=\"received\"}") - before;
  EXPECT_EQ(pulled, 1 * 4 * 4 * 80 * 4 + 64 * 4);
}

TEST(Pd, AnExpiredLeaseFreesTheBlocksAndAStalePullFails) {
  const std::string short_lease = R"({"kv_connector":"NixlConnector","kv_role":"kv_both",)"
                                  R"("kv_connector_extra_config":{"kv_lease_duration":1.0}})";
  Server p(pd_config(short_lease)), d(pd_config());
  const std::vector<int> prompt = prompt_of(10, 7);
  const std::string params = prefill(p.port, prompt);
  EXPECT_TRUE(eventually([&] { return metric(p.port, "omni_sim_kv_holds ") == 1; }, 0.5));
  EXPECT_GT(metric(p.port, "vllm:kv_cache_usage_perc"), 0);
  EXPECT_TRUE(eventually([&] {
    return metric(p.port, "omni_sim_kv_holds ") == 0 &&
           metric(p.port, "vllm:kv_cache_usage_perc") == 0;
  }));
  EXPECT_EQ(metric(p.port, "omni_sim_kv_holds_total{outcome=\"expired\"}"), 1);
  const Reply r = post(d.port, "/v1/completions", body_of(prompt, 4, params));
  EXPECT_EQ(r.status, 500);
  EXPECT_NE(r.body.find("no KV held"), std::string::npos) << r.body;
  EXPECT_TRUE(eventually([&] { return metric(d.port, "vllm:kv_cache_usage_perc") == 0; }));
  EXPECT_EQ(metric(d.port, "omni_sim_kv_load_failures_total{reason=\"not_held\",action=\"fail\"}"),
            1);
  // kv_load_failure_policy "recompute": the decode instance computes the prompt itself.
  Server r2(pd_config(R"({"kv_connector":"NixlConnector","kv_role":"kv_both",)"
                      R"("kv_load_failure_policy":"recompute"})"));
  const Reply again = post(r2.port, "/v1/completions", body_of(prompt, 4, params));
  EXPECT_EQ(again.status, 200);
  EXPECT_EQ(json::serialize(again.json().at("choices").as_array().at(0).at("token_ids")),
            greedy(p.port, prompt, 4));
}

// A prefill "instance" that answers the pull with a good head, sends part of the blocks and
// dies.
struct DyingPrefill {
  int fd = -1;
  std::uint16_t port = 0;
  std::thread thread;
  DyingPrefill() {
    fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    listen(fd, 4);
    socklen_t len = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    thread = std::thread([this] {
      const int c = accept(fd, nullptr, nullptr);
      if (c < 0) return;
      char buf[4096];
      recv(c, buf, sizeof buf, 0);  // the READ
      // HEAD: ok, 4 layers, 1280-byte pages, 3 blocks, 64 hidden floats; then 1000 bytes.
      std::string head;
      auto u32 = [&](std::uint32_t v) {
        for (int i = 0; i < 4; ++i) head += static_cast<char>((v >> (8 * i)) & 0xff);
      };
      u32(0);
      u32(4);
      u32(1280);
      u32(0);
      u32(3);
      u32(64);
      head += std::string(1000, 'x');
      send(c, head.data(), head.size(), MSG_NOSIGNAL);
      close(c);
    });
  }
  ~DyingPrefill() {
    thread.join();
    close(fd);
  }
};

TEST(Pd, APrefillPeerThatDiesMidTransferIsAClearErrorAndLeaksNothing) {
  Server d(pd_config());
  DyingPrefill dead;
  const std::vector<int> prompt = prompt_of(10, 8);  // 3 blocks of 4
  const std::string params =
      R"({"do_remote_prefill":true,"do_remote_decode":false,"remote_block_ids":[[7,8,9]],)"
      R"("remote_engine_id":"gone","remote_request_id":"cmpl-x-0-00000000",)"
      R"("remote_host":"127.0.0.1","remote_port":)" +
      std::to_string(dead.port) + R"(,"tp_size":1,"remote_num_tokens":10})";
  const Reply r = post(d.port, "/v1/completions", body_of(prompt, 4, params));
  EXPECT_EQ(r.status, 500);
  EXPECT_NE(r.body.find("died mid-transfer"), std::string::npos) << r.body;
  EXPECT_TRUE(eventually([&] {
    return metric(d.port, "vllm:kv_cache_usage_perc") == 0 &&
           metric(d.port, "omni_serve_kv_staged_bytes") == 0 &&
           metric(d.port, "vllm:num_requests_running") == 0 &&
           metric(d.port, "vllm:num_requests_waiting") == 0;
  }));
  // Params that do not describe the prompt are refused before anything is pulled.
  const Reply bad = post(d.port, "/v1/completions",
                         body_of(prompt, 4,
                                 R"({"do_remote_prefill":true,"remote_block_ids":[[1]],)"
                                 R"("remote_engine_id":"e","remote_request_id":"r",)"
                                 R"("remote_host":"127.0.0.1","remote_port":1})"));
  EXPECT_EQ(bad.status, 400);
}

}  // namespace
}  // namespace omni::serve
