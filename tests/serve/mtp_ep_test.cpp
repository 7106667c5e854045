// MTP speculative decoding and expert parallelism in omni-serve, in process on a micro model:
// greedy output identical with and without MTP (and with an oracle drafter whose drafts are all
// accepted), vLLM's spec-decode counters; expert parallelism over two ranks giving the same
// output as the model's own experts, before and after live rebalancing, with its loads and
// placement on /metrics and the admin route.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <mutex>

#include "serve/context.hpp"
#include "serve_testing.hpp"

namespace omni::serve {
namespace {

using namespace testing;

ServeConfig mtp_config(int k) {
  ServeConfig c = micro_config();
  c.speculative_config =
      R"({"method":"deepseek_mtp","num_speculative_tokens":)" + std::to_string(k) + "}";
  return c;
}

TEST(Mtp, GreedyOutputIsTheSameWithAndWithoutDrafts) {
  Server plain(micro_config());
  Server one(mtp_config(1)), two(mtp_config(2));
  for (const int n : {2, 11, 30}) {
    const std::vector<int> prompt = prompt_of(n, 40 + n);
    const std::string want = greedy(plain.port, prompt, 24);
    EXPECT_EQ(greedy(one.port, prompt, 24), want) << "k=1, prompt of " << n;
    EXPECT_EQ(greedy(two.port, prompt, 24), want) << "k=2, prompt of " << n;
  }
  EXPECT_GT(metric(one.port, "vllm:spec_decode_num_drafts_total"), 30);
  EXPECT_EQ(metric(one.port, "vllm:spec_decode_num_draft_tokens_total"),
            metric(one.port, "vllm:spec_decode_num_drafts_total"));
  EXPECT_GE(metric(two.port, "vllm:spec_decode_num_draft_tokens_total"),
            metric(two.port, "vllm:spec_decode_num_drafts_total"));
  EXPECT_GE(metric(one.port,
                   "vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name=\""
                   "micro\",engine=\"0\",position=\"0\"}"),
            0);
}

// An oracle drafter (the greedy continuation, known from a plain run): every draft is accepted,
// each decode step yields 1 + k tokens, and the output is unchanged.
TEST(Mtp, AcceptedDraftsGiveSeveralTokensPerStepAndTheSameOutput) {
  Server plain(micro_config());
  Server mtp(mtp_config(2));
  const std::vector<int> prompt = prompt_of(9, 3);
  const std::string want = greedy(plain.port, prompt, 30);
  std::vector<std::uint32_t> continuation;
  const json::value parsed = json::parse(want);
  for (const auto& t : parsed.as_array()) {
    continuation.push_back(static_cast<std::uint32_t>(t.as_int64()));
  }
  mtp.service->context().executor->set_draft_hook([&](Seq& seq) {
    const std::size_t next = seq.all.size() - seq.prompt.size();
    seq.drafts.clear();
    for (std::size_t i = 0; i < 2 && next + i < continuation.size(); ++i) {
      seq.drafts.push_back(continuation[next + i]);
    }
  });
  const double steps_before = metric(mtp.port, "omni_serve_engine_steps_total");
  EXPECT_EQ(greedy(mtp.port, prompt, 30), want);
  const double steps = metric(mtp.port, "omni_serve_engine_steps_total") - steps_before;
  EXPECT_LE(steps, 12);  // 1 prefill + ceil(29 / 3) decodes, instead of 30 steps
  const double drafted = metric(mtp.port, "vllm:spec_decode_num_draft_tokens_total");
  const double accepted = metric(mtp.port, "vllm:spec_decode_num_accepted_tokens_total");
  EXPECT_GT(drafted, 0);
  EXPECT_EQ(accepted, drafted);
  EXPECT_GT(metric(mtp.port,
                   "vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name=\""
                   "micro\",engine=\"0\",position=\"1\"}"),
            0);
  // Sampling with drafts runs too (rejection sampling; its tokens are the target's).
  const Reply sampled = post(mtp.port, "/v1/completions",
                             "{\"prompt\":" + tokens_json(prompt) +
                                 ",\"max_tokens\":12,\"temperature\":0.8,"
                                 "\"seed\":5,\"ignore_eos\":true}");
  EXPECT_EQ(sampled.status, 200);
  EXPECT_EQ(sampled.json().at("usage").at("completion_tokens").as_int64(), 12);
}

TEST(Mtp, AModelWithoutAnMtpLayerIsRefused) {
  ServeConfig c = mtp_config(1);
  c.speculative_config = R"({"method":"ngram","num_speculative_tokens":2})";
  EXPECT_FALSE(ServeService::create(c).ok());
  c.speculative_config = R"({"method":"deepseek_mtp","num_speculative_tokens":0})";
  EXPECT_FALSE(ServeService::create(c).ok());
}

ServeConfig ep_config() {
  ServeConfig c = micro_config();
  c.threads = 2;
  c.enable_expert_parallel = true;
  c.data_parallel_size = 2;
  c.enable_eplb = true;
  c.eplb_config = R"({"window_size":2,"step_interval":0,"num_redundant_experts":2,)"
                  R"("imbalance_threshold":100})";
  return c;
}

TEST(ExpertParallel, TheSameOutputAcrossRanksAndLiveRebalancing) {
  Server plain(micro_config());
  Server ep(ep_config());
  std::vector<std::vector<int>> prompts;
  for (int i = 0; i < 4; ++i) prompts.push_back(prompt_of(5 + 7 * i, 60 + i));
  std::vector<std::string> want;
  for (const auto& p : prompts) want.push_back(greedy(plain.port, p, 16));
  for (std::size_t i = 0; i < prompts.size(); ++i)
    EXPECT_EQ(greedy(ep.port, prompts[i], 16), want[i]);
  // The loads are live; a rebalance asked on the admin route is applied between steps.
  EXPECT_GT(metric(ep.port, "omni_serve_ep_rank_tokens_total{layer=\"0\",rank=\"1\"}"), 0);
  const Reply placed = post(ep.port, "/omni/v1/expert_placement/rebalance", "");
  ASSERT_EQ(placed.status, 200);
  const json::value before = placed.json().at("placement").at("phy2log");
  for (std::size_t i = 0; i < prompts.size(); ++i)
    EXPECT_EQ(greedy(ep.port, prompts[i], 16), want[i]);
  EXPECT_GE(metric(ep.port, "omni_serve_ep_rebalances_total"), 1);
  const Reply after = http(ep.port, "GET", "/omni/v1/expert_placement");
  ASSERT_EQ(after.status, 200);
  const json::value doc = after.json();
  EXPECT_GT(doc.at("moves").as_int64(), 0);
  EXPECT_NE(json::serialize(doc.at("placement").at("phy2log")), json::serialize(before));
  EXPECT_EQ(doc.at("placement").at("devices").as_int64(), 2);
  // Every expert still has a copy; the redundant slots hold extra ones.
  EXPECT_EQ(metric(ep.port, "omni_serve_ep_expert_copies{layer=\"0\",expert=\"7\"}") >= 1, true);
}

TEST(ExpertParallel, AnInitialPlanFromAFile) {
  const std::filesystem::path plan = micro_model_dir().parent_path() / "plan.json";
  {
    // 2 devices x 5 slots: experts 0..7 and copies of 0 and 1, as `omni-placement plan` writes.
    std::ofstream out(plan);
    out << R"({"devices":2,"experts":8,"slots_per_device":[5,5],)"
        << R"("phy2log":[[0,2,4,6,1,1,3,5,7,0],[0,2,4,6,1,1,3,5,7,0]]})";
  }
  ServeConfig c = ep_config();
  c.enable_eplb = false;
  c.expert_placement = plan.string();
  Server ep(c);
  const Reply doc = http(ep.port, "GET", "/omni/v1/expert_placement");
  ASSERT_EQ(doc.status, 200);
  EXPECT_EQ(json::serialize(doc.json().at("placement").at("phy2log").as_array().at(0)),
            "[0,2,4,6,1,1,3,5,7,0]");
  Server plain(micro_config());
  const std::vector<int> prompt = prompt_of(12, 5);
  EXPECT_EQ(greedy(ep.port, prompt, 10), greedy(plain.port, prompt, 10));
  c.data_parallel_size = 3;  // a plan for 2 devices
  EXPECT_FALSE(ServeService::create(c).ok());
}

}  // namespace
}  // namespace omni::serve
