#include <gtest/gtest.h>

#include "omni/config/cli.hpp"
#include "sim/sim_config.hpp"

namespace omni::sim {
namespace {

Result<config::CommandLine<SimConfig>> parse(std::vector<const char*> args) {
  args.insert(args.begin(), "omni-sim");
  config::Schema<SimConfig> schema;
  describe(schema);
  std::ostringstream out;
  return config::parse_command_line(static_cast<int>(args.size()), args.data(), schema, "test",
                                    out);
}

TEST(SimConfig, VllmFlagNames) {
  auto cli = parse({"--host",
                    "0.0.0.0",
                    "--port",
                    "0",
                    "--model",
                    "m",
                    "--served-model-name",
                    "a,b",
                    "--max-num-seqs",
                    "8",
                    "--max-num-batched-tokens",
                    "512",
                    "--block-size",
                    "32",
                    "--num-gpu-blocks-override",
                    "100",
                    "--tensor-parallel-size",
                    "2",
                    "--data-parallel-size",
                    "2",
                    "--enable-expert-parallel",
                    "--prefix-caching-hash-algo",
                    "xxhash",
                    "--speed",
                    "10",
                    "--seed",
                    "3"});
  ASSERT_TRUE(cli) << cli.error().message;
  const SimConfig& c = cli->config;
  EXPECT_EQ(c.host, "0.0.0.0");
  EXPECT_EQ(c.port, 0);
  EXPECT_EQ(served_names(c), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(c.max_num_seqs, 8u);
  EXPECT_EQ(c.block_size, 32u);
  EXPECT_EQ(c.num_gpu_blocks_override, 100u);
  EXPECT_TRUE(c.enable_expert_parallel);
  EXPECT_EQ(c.prefix_caching_hash_algo, "xxhash");
  EXPECT_EQ(c.speed, 10.0);
}

TEST(SimConfig, BadValuesAreReported) {
  EXPECT_FALSE(parse({"--prefix-caching-hash-algo", "md5"}));
  EXPECT_FALSE(parse({"--speed", "0"}));
  EXPECT_FALSE(parse({"--port", "70000"}));
}

TEST(SimConfig, KvEventsConfigIsVllmJson) {
  auto off = parse_kv_events_config(std::nullopt);
  ASSERT_TRUE(off);
  EXPECT_FALSE(*off);
  auto disabled = parse_kv_events_config(std::string(R"({"enable_kv_cache_events":false})"));
  ASSERT_TRUE(disabled);
  EXPECT_FALSE(*disabled);
  auto on = parse_kv_events_config(std::string(
      R"({"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:6000","topic":"kv","replay_endpoint":"tcp://*:6001","buffer_steps":5})"));
  ASSERT_TRUE(on);
  ASSERT_TRUE(*on);
  EXPECT_EQ((*on)->endpoint, "tcp://*:6000");
  EXPECT_EQ((*on)->topic, "kv");
  EXPECT_EQ((*on)->replay_endpoint, "tcp://*:6001");
  EXPECT_EQ((*on)->buffer_steps, 5u);
  EXPECT_FALSE(parse_kv_events_config(std::string("not json")));
}

TEST(SimConfig, KvTransferConfig) {
  auto c = parse_kv_transfer_config(std::string(
      R"({"kv_connector":"NixlConnector","kv_role":"kv_both","engine_id":"e1","kv_connector_extra_config":{"kv_lease_duration":12}})"));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->connector, "NixlConnector");
  EXPECT_EQ(c->engine_id, "e1");
  EXPECT_EQ(c->lease_seconds, 12.0);
}

TEST(SimConfig, EngineSetupGuessesTheProfileFromTheModel) {
  SimConfig cfg;
  cfg.model = "deepseek-ai/DeepSeek-R1";
  auto s = engine_setup(cfg, true);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_TRUE(s->config.emit_kv_events);
  cfg.model = "no-such-model";
  auto bad = engine_setup(cfg, false);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("--model-profile"), std::string::npos);
}

TEST(SimConfig, KvLoadFailurePolicy) {
  auto d = parse_kv_transfer_config(
      std::string(R"({"kv_connector":"NixlConnector","kv_role":"kv_both"})"));
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->recompute_on_load_failure);  // omni-sim's default
  auto fail = parse_kv_transfer_config(std::string(R"({"kv_load_failure_policy":"fail"})"));
  ASSERT_TRUE(fail);
  EXPECT_FALSE(fail->recompute_on_load_failure);
  auto bad = parse_kv_transfer_config(std::string(R"({"kv_load_failure_policy":"retry"})"));
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("recompute or fail"), std::string::npos);
}

TEST(SimConfig, WithoutALayoutTheSmallestOneThatFitsIsPicked) {
  SimConfig cfg;  // DeepSeek-V3 on h800: one device holds no context
  auto s = engine_setup(cfg, false);
  ASSERT_TRUE(s) << s.error().message;
  ASSERT_TRUE(s->picked);
  const engine::CostModel cost(s->model, s->hardware, s->layout, s->mtp);
  EXPECT_GE(cost.kv_capacity_tokens(), s->config.max_model_len);
  EXPECT_GT(s->layout.devices(), 1u);
  EXPECT_TRUE(s->layout.ep);
  // One step smaller does not fit (the pick is the smallest).
  engine::ParallelLayout smaller = s->layout;
  if (smaller.dp > 1) {
    smaller.dp /= 2;
  } else {
    smaller.tp /= 2;
  }
  EXPECT_LT(engine::CostModel(s->model, s->hardware, smaller, s->mtp).kv_capacity_tokens(),
            s->config.max_model_len);
  // A layout the user gave is kept, fitting or not (vLLM's refusal follows at start).
  cfg.tensor_parallel_size = 1;
  auto given = engine_setup(cfg, false);
  ASSERT_TRUE(given);
  EXPECT_FALSE(given->picked);
  EXPECT_EQ(given->layout.devices(), 1u);
  cfg.tensor_parallel_size.reset();
  cfg.num_gpu_blocks_override = 100;
  EXPECT_FALSE(engine_setup(cfg, false)->picked);
}

TEST(SimConfig, FaultAndSglangFlags) {
  auto cli = parse({"--disaggregation-bootstrap-port", "0", "--enable-prompt-tokens-details",
                    "--fault-hang-rate", "0.5", "--fault-stall-after-tokens", "3",
                    "--fault-crash-after-tokens", "7", "--fault-stream-error-rate", "1",
                    "--fault-stream-error-after-tokens", "2", "--fault-unresponsive",
                    "--fault-bootstrap-never-connects"});
  ASSERT_TRUE(cli) << cli.error().message;
  const SimConfig& c = cli->config;
  EXPECT_EQ(c.disaggregation_bootstrap_port, std::optional<std::uint16_t>(0));
  EXPECT_TRUE(c.enable_prompt_tokens_details);
  EXPECT_EQ(c.fault_hang_rate, 0.5);
  EXPECT_EQ(c.fault_stall_after_tokens, 3u);
  EXPECT_EQ(c.fault_crash_after_tokens, 7u);
  EXPECT_EQ(c.fault_stream_error_after_tokens, 2u);
  EXPECT_TRUE(c.fault_unresponsive);
  EXPECT_TRUE(c.fault_bootstrap_never_connects);
}

}  // namespace
}  // namespace omni::sim
