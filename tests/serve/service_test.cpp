// omni-serve on one instance, in process over loopback, on a micro model: continuous batching
// (concurrent requests give the answers they give alone), prefix caching with vLLM's hashes and
// the engine's own KV events (prompt and decode-time blocks), preemption by recompute, vLLM's
// errors, and a client that goes away freeing its blocks.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <thread>

#include "omni/kvcache/block_hash.hpp"
#include "omni/kvcache/zmq_subscriber.hpp"
#include "serve_testing.hpp"

namespace omni::serve {
namespace {

using namespace testing;

TEST(Serve, ConcurrentRequestsGiveTheirSequentialAnswers) {
  Server s(micro_config());
  std::vector<std::vector<int>> prompts;
  for (int i = 0; i < 6; ++i) prompts.push_back(prompt_of(3 + 5 * i, i));
  std::vector<std::string> alone;
  for (const auto& p : prompts) alone.push_back(greedy(s.port, p, 12));
  std::vector<std::string> together(prompts.size());
  std::vector<std::thread> clients;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    clients.emplace_back([&, i] { together[i] = greedy(s.port, prompts[i], 12); });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(together, alone);
  EXPECT_GT(metric(s.port, "vllm:generation_tokens_total"), 140);
}

// The hashes an engine with PYTHONHASHSEED=0 publishes for `tokens` (block size 4).
std::vector<std::uint64_t> event_hashes(const std::vector<std::uint32_t>& tokens) {
  kvcache::BlockHasher h(kvcache::HashAlgo::kSha256, 4,
                         kvcache::none_hash(kvcache::HashAlgo::kSha256, "0"));
  std::vector<std::uint64_t> out;
  for (const auto& b : h.hash_all(tokens)) out.push_back(kvcache::event_int(b));
  return out;
}

TEST(Serve, PrefixCachingWithVllmHashesAndTheEnginesKvEvents) {
  ::setenv("PYTHONHASHSEED", "0", 1);
  ServeConfig c = micro_config();
  c.kv_events_config = R"({"enable_kv_cache_events":true,"endpoint":"tcp://127.0.0.1:*"})";
  c.enable_prompt_tokens_details = true;
  Server s(c);
  kvcache::ZmqSubscriberConfig sc;
  sc.endpoint = s.service->kv_events_endpoint();
  auto sub = kvcache::ZmqEventSubscriber::start(sc);
  ASSERT_TRUE(sub.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // ZeroMQ's slow joiner
  const std::vector<int> prompt = prompt_of(20, 1);             // 5 full blocks of 4
  const std::string body = "{\"prompt\":" + tokens_json(prompt) +
                           ",\"max_tokens\":8,\"temperature\":0,\"ignore_eos\":true,"
                           "\"return_token_ids\":true}";
  const Reply first = post(s.port, "/v1/completions", body);
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_TRUE(first.json().at("usage").at("prompt_tokens_details").is_null());
  std::vector<std::uint32_t> all(prompt.begin(), prompt.end());
  const json::value first_json = first.json();
  for (const auto& t : first_json.at("choices").as_array().at(0).at("token_ids").as_array()) {
    all.push_back(static_cast<std::uint32_t>(t.as_int64()));
  }
  // The same prompt again: every block but the one holding the last prompt token is a hit.
  const Reply again = post(s.port, "/v1/completions", body);
  ASSERT_EQ(again.status, 200);
  EXPECT_EQ(again.json().at("usage").at("prompt_tokens_details").at("cached_tokens").as_int64(),
            16);
  EXPECT_EQ(json::serialize(again.json().at("choices").as_array().at(0).at("token_ids")),
            json::serialize(first.json().at("choices").as_array().at(0).at("token_ids")));
  // A next turn that starts with the prompt and the first 4 generated tokens hits a
  // decode-time block too.
  std::vector<int> turn(all.begin(), all.begin() + 24);
  for (int t : prompt_of(6, 9)) turn.push_back(t);
  const Reply third =
      post(s.port, "/v1/completions", "{\"prompt\":" + tokens_json(turn) + ",\"max_tokens\":2}");
  ASSERT_EQ(third.status, 200);
  EXPECT_EQ(third.json().at("usage").at("prompt_tokens_details").at("cached_tokens").as_int64(),
            24);
  EXPECT_GT(metric(s.port, "vllm:prefix_cache_hits_total"), 39);
  // Events: the prompt's blocks at the first prefill, then the decode-time block (tokens
  // 20..23, full once the 4th output token is computed), parented on the prompt's last block.
  const std::vector<std::uint64_t> want = event_hashes(all);
  std::vector<std::uint64_t> stored;
  std::vector<std::optional<std::uint64_t>> parents;
  while (auto b = (*sub)->next(std::chrono::milliseconds(500))) {
    for (const auto& e : b->batch.events) {
      if (const auto* bs = std::get_if<kvcache::BlockStored>(&e)) {
        for (const auto& h : bs->block_hashes) stored.push_back(std::get<std::uint64_t>(h));
        parents.push_back(bs->parent_block_hash
                              ? std::optional(std::get<std::uint64_t>(*bs->parent_block_hash))
                              : std::nullopt);
        EXPECT_EQ(bs->block_size, 4u);
        EXPECT_EQ(bs->medium, std::optional<std::string>("GPU"));
      }
    }
  }
  ASSERT_GE(stored.size(), 6u);
  EXPECT_EQ(std::vector<std::uint64_t>(stored.begin(), stored.begin() + 6),
            std::vector<std::uint64_t>(want.begin(), want.begin() + 6));
  ASSERT_GE(parents.size(), 2u);
  EXPECT_FALSE(parents[0].has_value());
  EXPECT_EQ(parents[1], want[4]);
  ::unsetenv("PYTHONHASHSEED");
}

TEST(Serve, PreemptionByRecomputeKeepsTheAnswers) {
  ServeConfig c = micro_config();
  c.num_gpu_blocks_override = 24;  // 96 tokens: four 40-token requests cannot all fit
  c.max_model_len = 64;
  Server s(c);
  std::vector<std::vector<int>> prompts;
  for (int i = 0; i < 4; ++i) prompts.push_back(prompt_of(10, 20 + i));
  std::vector<std::string> alone;
  for (const auto& p : prompts) alone.push_back(greedy(s.port, p, 30));
  std::vector<std::string> together(prompts.size());
  std::vector<std::thread> clients;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    clients.emplace_back([&, i] { together[i] = greedy(s.port, prompts[i], 30); });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(together, alone);
  // Four clients may still come one after the other on a fast machine; n = 4 in one request
  // puts four sequences into the same steps: 4 x 40 tokens in a 96-token cache preempt,
  // whatever the timing, and each choice is still the answer its prompt gives alone.
  const Reply four = post(s.port, "/v1/completions",
                          "{\"prompt\":" + tokens_json(prompts[0]) +
                              ",\"max_tokens\":30,\"temperature\":0,\"ignore_eos\":true,"
                              "\"return_token_ids\":true,\"n\":4}");
  ASSERT_EQ(four.status, 200) << four.body;
  const json::value four_json = four.json();
  const auto& choices = four_json.at("choices").as_array();
  ASSERT_EQ(choices.size(), 4u);
  for (const auto& choice : choices) EXPECT_EQ(json::serialize(choice.at("token_ids")), alone[0]);
  EXPECT_GT(metric(s.port, "vllm:num_preemptions_total"), 0);
  EXPECT_TRUE(eventually([&] { return metric(s.port, "vllm:kv_cache_usage_perc") == 0; }));
}

TEST(Serve, BadRequestsAreAnsweredAsVllmDoes) {
  ServeConfig c = micro_config();
  c.max_model_len = 32;
  c.max_in_flight = 2;
  Server s(c);
  auto error_of = [&](const std::string& body) {
    const Reply r = post(s.port, "/v1/completions", body);
    const json::value j = r.json();
    return std::to_string(r.status) + " " +
           (j.is_object() ? std::string(j.at("error").at("message").as_string()) : r.body);
  };
  const std::string long_prompt = tokens_json(prompt_of(40, 1));
  EXPECT_EQ(error_of("{\"prompt\":" + long_prompt + "}"),
            "400 This model's maximum context length is 32 tokens. However, your request has 40 "
            "input tokens. Please reduce the length of the input messages.");
  EXPECT_EQ(error_of(R"({"prompt":[1,2,3],"max_tokens":30})").substr(0, 45),
            "400 This model's maximum context length is 32");
  EXPECT_EQ(error_of(R"({"prompt":[1,2,3],"temperature":-0.5})"),
            "400 temperature must be non-negative, got -0.5.");
  EXPECT_EQ(error_of(R"({"prompt":[1,2,3],"top_p":2})"), "400 top_p must be in (0, 1], got 2.0.");
  EXPECT_EQ(error_of(R"({"prompt":[1,2,3],"model":"nope"})"),
            "404 The model `nope` does not exist.");
  EXPECT_EQ(error_of(R"({"prompt":[1,2,3],"n":3,"temperature":1})").substr(0, 31),
            "503 the engine's queue is full ");
  EXPECT_EQ(error_of(R"({"prompt":[1,2,512]})"), "400 Token id 512 is out of vocabulary");
  EXPECT_EQ(error_of(R"({"prompt":[1,2,3],"prompt_logprobs":1})"),
            "501 prompt_logprobs is not supported by omni-serve");
  EXPECT_EQ(http(s.port, "POST", "/v1/completions", R"({"prompt":[1]})", "text/plain").status, 400);
  EXPECT_EQ(post(s.port, "/detokenize", R"({"tokens":[1,2,999999]})").status, 400);
  EXPECT_EQ(http(s.port, "GET", "/health").status, 200);
  EXPECT_EQ(post(s.port, "/v1/completions", R"({"prompt":[1,2,3],"max_tokens":2})").status, 200);
}

TEST(Serve, AClientThatGoesAwayFreesItsBlocks) {
  Server s(micro_config());
  const int fd = connect_to(s.port);
  ASSERT_GE(fd, 0);
  const std::string body = "{\"prompt\":" + tokens_json(prompt_of(30, 2)) +
                           ",\"max_tokens\":200,\"ignore_eos\":true,\"stream\":true}";
  const std::string req =
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
      "application/json\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  char buf[4096];
  ASSERT_GT(recv(fd, buf, sizeof buf, 0), 0);  // the stream has started
  EXPECT_TRUE(eventually([&] { return metric(s.port, "vllm:kv_cache_usage_perc") > 0; }));
  close(fd);
  EXPECT_TRUE(eventually([&] {
    return metric(s.port, "vllm:kv_cache_usage_perc") == 0 &&
           metric(s.port, "vllm:num_requests_running") == 0;
  }));
  EXPECT_GE(metric(s.port,
                   "vllm:request_success_total{model_name=\"micro\",engine=\"0\","
                   "finished_reason=\"abort\"}"),
            1);
}

TEST(Serve, StreamingMatchesTheWholeAnswer) {
  Server s(micro_config());
  const std::vector<int> prompt = prompt_of(7, 4);
  const std::string whole = greedy(s.port, prompt, 10);
  const Reply r =
      post(s.port, "/v1/completions",
           "{\"prompt\":" + tokens_json(prompt) +
               ",\"max_tokens\":10,\"temperature\":0,\"ignore_eos\":true,\"stream\":true,"
               "\"return_token_ids\":true,\"stream_options\":{\"include_usage\":true}}");
  ASSERT_EQ(r.status, 200);
  std::vector<std::int64_t> ids;
  std::size_t at = 0;
  int usage = 0;
  while ((at = r.body.find("data: ", at)) != std::string::npos) {
    const auto end = r.body.find("\n\n", at);
    const std::string data = r.body.substr(at + 6, end - at - 6);
    at = end;
    if (data == "[DONE]") break;
    const json::value v = json::parse(data);
    if (v.at("choices").as_array().empty()) {
      usage = static_cast<int>(v.at("usage").at("completion_tokens").as_int64());
      continue;
    }
    const json::value& tok = v.at("choices").as_array().at(0).at("token_ids");
    if (tok.is_array()) {
      for (const auto& t : tok.as_array()) ids.push_back(t.as_int64());
    }
  }
  std::string streamed = "[";
  for (std::size_t i = 0; i < ids.size(); ++i) streamed += (i ? "," : "") + std::to_string(ids[i]);
  EXPECT_EQ(streamed + "]", whole);
  EXPECT_EQ(usage, 10);
}

}  // namespace
}  // namespace omni::serve
