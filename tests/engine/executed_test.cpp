// The "execute a step" seam: the cost-model executor leaves the engine model exactly as it was;
// an executor that decides outcomes (the real engine) sets accepted drafts and stops, and its
// generated blocks enter the prefix cache with BlockStored events, as vLLM caches decode-time
// blocks.
#include <gtest/gtest.h>

#include <variant>

#include "omni/engine/step_executor.hpp"
#include "test_engines.hpp"

namespace omni::engine {
namespace {

using testing::request;
using testing::small_config;
using testing::small_engine;

ExecutedStep decide_all(const StepPlan& plan, std::uint32_t accepted, SeqId stop_id = 0) {
  ExecutedStep x;
  x.decided = true;
  for (const ScheduledSeq& s : plan.seqs) {
    ExecutedSeq e;
    e.id = s.id;
    e.accepted_drafts = s.decode ? std::min(accepted, s.draft_tokens) : 0;
    e.stop = s.id == stop_id;
    x.seqs.push_back(e);
  }
  return x;
}

TEST(StepExecutor, CostModelExecutorMatchesTheEngineModel) {
  MtpConfig mtp{1, 0.5};
  Engine a = small_engine(small_config(64), mtp, 7);
  Engine b = small_engine(small_config(64), mtp, 7);
  for (SeqId id = 1; id <= 3; ++id) {
    ASSERT_TRUE(a.add(request(id, 40 * static_cast<std::uint32_t>(id), 20)));
    ASSERT_TRUE(b.add(request(id, 40 * static_cast<std::uint32_t>(id), 20)));
  }
  CostModelExecutor executor;
  while (a.has_work()) {
    const StepPlan pa = a.schedule();
    const StepPlan pb = b.schedule();
    auto step = executor.execute(b, pb);
    ASSERT_TRUE(step);
    EXPECT_DOUBLE_EQ(step->seconds, a.step_seconds(pa));
    const StepOutputs oa = a.complete(pa);
    const StepOutputs ob = b.complete(pb, *step);
    ASSERT_EQ(oa.outputs.size(), ob.outputs.size());
    for (std::size_t i = 0; i < oa.outputs.size(); ++i) {
      EXPECT_EQ(oa.outputs[i].new_tokens, ob.outputs[i].new_tokens);
      EXPECT_EQ(oa.outputs[i].finish, ob.outputs[i].finish);
    }
  }
  EXPECT_FALSE(b.has_work());
}

TEST(StepExecutor, DecidedDraftsAndStops) {
  Engine e = small_engine(small_config(64), MtpConfig{2, 0.0}, 1);
  ASSERT_TRUE(e.add(request(1, 20, 50)));
  ASSERT_TRUE(e.add(request(2, 20, 50)));
  StepPlan p = e.schedule();  // both prompts
  StepOutputs out = e.complete(p, decide_all(p, 0));
  ASSERT_EQ(out.outputs.size(), 2u);
  EXPECT_EQ(out.outputs[0].new_tokens, 1u);
  p = e.schedule();  // decodes with 2 drafts each (the engine model would accept none)
  ASSERT_EQ(p.seqs[0].draft_tokens, 2u);
  out = e.complete(p, decide_all(p, 2));
  EXPECT_EQ(out.outputs[0].new_tokens, 3u);
  EXPECT_EQ(out.outputs[0].total_output_tokens, 4u);
  p = e.schedule();
  EXPECT_EQ(p.seqs[0].context_tokens, 20u + 4u - 1u);
  out = e.complete(p, decide_all(p, 1, /*stop_id=*/2));
  ASSERT_EQ(out.outputs.size(), 2u);
  EXPECT_EQ(out.outputs[0].finish, FinishReason::kNone);
  EXPECT_EQ(out.outputs[1].finish, FinishReason::kStop);
  EXPECT_EQ(out.outputs[1].total_output_tokens, 6u);
  EXPECT_TRUE(e.blocks(2).empty());  // freed at the stop
  EXPECT_FALSE(e.blocks(1).empty());
}

TEST(StepExecutor, BlocksListThePagesInTokenOrder) {
  Engine e = small_engine(small_config(64));
  ASSERT_TRUE(e.add(request(1, 40, 4)));
  EXPECT_TRUE(e.blocks(1).empty());  // waiting: nothing allocated yet
  const StepPlan p = e.schedule();
  ASSERT_EQ(e.blocks(1).size(), 3u);  // 40 tokens in blocks of 16
  EXPECT_EQ(e.blocks(1)[0], 0u);
  EXPECT_EQ(e.blocks(1)[2], 2u);
  e.complete(p, decide_all(p, 0));
  EXPECT_TRUE(e.blocks(99).empty());
}

// Generated tokens that fill a block are hashed by the executor; the engine caches the block
// when it is computed (the step after the token that fills it was sampled) and emits
// BlockStored with the generated tokens, parented on the prompt's last block.
TEST(StepExecutor, DecodeTimeBlocksAreCachedAndAnnounced) {
  EngineConfig c = small_config(64, 4);
  c.emit_kv_events = true;
  Engine e = small_engine(c);
  SeqSpec s = request(1, 8, 20, 100, 4);  // 2 prompt blocks, hashes 100, 101
  s.prompt_token_ids = {1, 2, 3, 4, 5, 6, 7, 8};
  ASSERT_TRUE(e.add(s));
  std::vector<kvcache::KVEvent> events;
  std::uint32_t next = 50;
  std::uint32_t known = 8;
  std::vector<std::uint64_t> hashes;
  for (int step = 0; step < 6; ++step) {
    const StepPlan p = e.schedule();
    ASSERT_EQ(p.seqs.size(), 1u);
    ExecutedStep x = decide_all(p, 0);
    const std::uint32_t token = next++;
    x.seqs[0].tokens = std::span<const std::uint32_t>(&token, 1);
    ++known;
    hashes.clear();
    if (known % 4 == 0) hashes.push_back(200 + known / 4);  // block known/4 - 1 is full
    x.seqs[0].block_hashes = hashes;
    StepOutputs out = e.complete(p, x);
    events.insert(events.end(), out.events.begin(), out.events.end());
  }
  // Prompt blocks stored at the prefill; block 2 (tokens 50..53, full after the 4th sample,
  // hash 203) stored when the step computing its last token was scheduled.
  ASSERT_EQ(events.size(), 2u);
  const auto& prompt = std::get<kvcache::BlockStored>(events[0]);
  ASSERT_EQ(prompt.block_hashes.size(), 2u);
  const auto& decoded = std::get<kvcache::BlockStored>(events[1]);
  ASSERT_EQ(decoded.block_hashes.size(), 1u);
  EXPECT_EQ(decoded.block_hashes[0], kvcache::EventHash{std::uint64_t{203}});
  ASSERT_TRUE(decoded.parent_block_hash.has_value());
  EXPECT_EQ(*decoded.parent_block_hash, kvcache::EventHash{std::uint64_t{101}});
  EXPECT_EQ(decoded.token_ids, (std::vector<std::uint32_t>{50, 51, 52, 53}));
  // A new request with the same 12 tokens hits all three blocks (two prompt + one generated).
  EXPECT_EQ(e.cached_prefix_tokens({100, 101, 203}), 12u);
}

}  // namespace
}  // namespace omni::engine
