// Behaviour of the vLLM-v1-shaped scheduler: budgets, chunked prefill, prefix caching,
// preemption, PD modes, events, errors, determinism.
#include <gtest/gtest.h>

#include <map>
#include <variant>

#include "test_engines.hpp"

namespace omni::engine {
namespace {

using testing::request;
using testing::run_to_completion;
using testing::small_config;
using testing::small_engine;

TEST(Scheduler, PrefillThenDecodeUntilMaxOutput) {
  Engine e = small_engine(small_config(64));
  ASSERT_TRUE(e.add(request(1, 100, 4)));
  StepPlan p = e.schedule();
  ASSERT_EQ(p.seqs.size(), 1u);
  EXPECT_EQ(p.seqs[0].new_prefill_tokens, 100u);
  EXPECT_FALSE(p.seqs[0].decode);
  EXPECT_EQ(p.total_prefill_tokens, 100u);
  EXPECT_GT(e.step_seconds(p), 0.0);
  StepOutputs out = e.complete(p);
  ASSERT_EQ(out.outputs.size(), 1u);
  EXPECT_EQ(out.outputs[0].new_tokens, 1u);
  for (std::uint32_t k = 2; k <= 4; ++k) {
    p = e.schedule();
    ASSERT_EQ(p.seqs.size(), 1u);
    EXPECT_TRUE(p.seqs[0].decode);
    EXPECT_EQ(p.seqs[0].context_tokens, 100 + k - 2);
    out = e.complete(p);
    EXPECT_EQ(out.outputs[0].total_output_tokens, k);
  }
  EXPECT_EQ(out.outputs[0].finish, FinishReason::kLength);
  EXPECT_FALSE(e.has_work());
  EXPECT_EQ(e.stats().used_blocks, 0u);
}

TEST(Scheduler, LongPromptsArePrefilledInChunksUnderTheBudget) {
  Engine e = small_engine(small_config(64));
  ASSERT_TRUE(e.add(request(1, 600, 2)));
  std::vector<std::uint32_t> chunks, produced;
  while (e.has_work()) {
    const StepPlan p = e.schedule();
    const StepOutputs out = e.complete(p);
    if (!p.seqs[0].decode) chunks.push_back(p.seqs[0].new_prefill_tokens);
    produced.push_back(out.outputs[0].new_tokens);
  }
  EXPECT_EQ(chunks, (std::vector<std::uint32_t>{256, 256, 88}));
  EXPECT_EQ(produced, (std::vector<std::uint32_t>{0, 0, 1, 1}));
}

TEST(Scheduler, WithoutChunkedPrefillAPromptWaitsForAWholeBudget) {
  EngineConfig c = small_config(64);
  c.enable_chunked_prefill = false;
  Engine e = small_engine(c);
  ASSERT_TRUE(e.add(request(1, 200, 3)));
  ASSERT_TRUE(e.add(request(2, 200, 3)));
  StepPlan p = e.schedule();
  ASSERT_EQ(p.seqs.size(), 1u);  // 56 tokens left: the second prompt does not fit
  e.complete(p);
  p = e.schedule();
  ASSERT_EQ(p.seqs.size(), 2u);  // a decode of 1 token leaves 255: now the prompt fits whole
  EXPECT_EQ(p.seqs[1].new_prefill_tokens, 200u);
}

TEST(Scheduler, RunningDecodesComeBeforeNewPrefills) {
  Engine e = small_engine(small_config(256));
  ASSERT_TRUE(e.add(request(1, 40, 10)));
  e.complete(e.schedule());
  ASSERT_TRUE(e.add(request(2, 1000, 10)));
  const StepPlan p = e.schedule();
  ASSERT_EQ(p.seqs.size(), 2u);
  EXPECT_EQ(p.seqs[0].id, 1u);
  EXPECT_TRUE(p.seqs[0].decode);
  EXPECT_EQ(p.seqs[1].id, 2u);
  EXPECT_EQ(p.seqs[1].new_prefill_tokens, 255u);  // the budget minus the decode
  EXPECT_EQ(p.num_decode_seqs, 1u);
}

TEST(Scheduler, MaxNumSeqsCapsTheBatch) {
  EngineConfig c = small_config(256);
  c.max_num_seqs = 2;
  Engine e = small_engine(c);
  for (SeqId id = 1; id <= 3; ++id) ASSERT_TRUE(e.add(request(id, 20, 5)));
  const StepPlan p = e.schedule();
  EXPECT_EQ(p.seqs.size(), 2u);
  EXPECT_EQ(e.stats().num_waiting, 1u);
  EXPECT_EQ(e.stats().num_running, 2u);
}

TEST(Scheduler, PrefixCacheHitsSkipFullBlocksButNeverTheLastToken) {
  Engine e = small_engine(small_config(64));
  ASSERT_TRUE(e.add(request(1, 64, 1, 1000)));  // 4 full blocks
  run_to_completion(e);
  EXPECT_EQ(e.cached_prefix_tokens({1000, 1001, 1002, 1003, 9}), 64u);
  // Same 64-token prompt: only 3 blocks may be reused, the last token is recomputed.
  ASSERT_TRUE(e.add(request(2, 64, 1, 1000)));
  StepPlan p = e.schedule();
  EXPECT_EQ(p.seqs[0].cached_tokens, 48u);
  EXPECT_EQ(p.seqs[0].new_prefill_tokens, 16u);
  EXPECT_EQ(p.seqs[0].context_tokens, 48u);
  StepOutputs out = e.complete(p);
  EXPECT_EQ(out.outputs[0].num_cached_tokens, 48u);
  // A longer prompt with the same prefix reuses all 4 blocks.
  ASSERT_TRUE(e.add(request(3, 70, 1, 1000)));
  p = e.schedule();
  EXPECT_EQ(p.seqs[0].cached_tokens, 64u);
  EXPECT_EQ(p.seqs[0].new_prefill_tokens, 6u);
  e.complete(p);
  const EngineStats st = e.stats();
  EXPECT_EQ(st.prefix_cache_queries, 64u + 64u + 70u);
  EXPECT_EQ(st.prefix_cache_hits, 48u + 64u);
}

TEST(Scheduler, DisabledPrefixCachingNeverHits) {
  EngineConfig c = small_config(64);
  c.enable_prefix_caching = false;
  Engine e = small_engine(c);
  ASSERT_TRUE(e.add(request(1, 64, 1, 1000)));
  run_to_completion(e);
  ASSERT_TRUE(e.add(request(2, 64, 1, 1000)));
  EXPECT_EQ(e.schedule().seqs[0].cached_tokens, 0u);
  EXPECT_EQ(e.cached_prefix_tokens({1000}), 0u);
}

TEST(Scheduler, PrefixCacheStatsCountEveryLookupAsVllmDoes) {
  // Without chunked prefill a 200-token prompt that does not fit the budget left is looked up,
  // refused, and looked up again at the next step: vLLM counts both lookups.
  EngineConfig c = small_config(64);
  c.enable_chunked_prefill = false;
  Engine e = small_engine(c);
  ASSERT_TRUE(e.add(request(1, 200, 3, 500)));
  ASSERT_TRUE(e.add(request(2, 200, 3, 900)));
  e.complete(e.schedule());  // 1 admitted; 2 looked up and refused (56 tokens of budget left)
  EXPECT_EQ(e.stats().prefix_cache_queries, 400u);
  e.complete(e.schedule());  // 2 looked up again and admitted
  EXPECT_EQ(e.stats().prefix_cache_queries, 600u);
  // With caching off vLLM records nothing.
  EngineConfig off = small_config(64);
  off.enable_prefix_caching = false;
  Engine none = small_engine(off);
  ASSERT_TRUE(none.add(request(1, 64, 2, 500)));
  run_to_completion(none);
  EXPECT_EQ(none.stats().prefix_cache_queries, 0u);
}

TEST(Scheduler, PreemptedRequestsLookupsAreNotCounted) {
  Engine e = small_engine(small_config(8));
  ASSERT_TRUE(e.add(request(1, 48, 40, 100)));
  ASSERT_TRUE(e.add(request(2, 48, 40, 200)));
  run_to_completion(e);
  ASSERT_GE(e.stats().num_preemptions, 1u);
  // One lookup of each request when it was new; the re-admissions after preemption are
  // vLLM's preempted_queries, not prefix_cache_queries.
  EXPECT_EQ(e.stats().prefix_cache_queries, 96u);
}

TEST(Scheduler, PreemptsTheLastRunningRequestWhenBlocksRunOut) {
  // 8 blocks of 16: two requests of 48 tokens (3 blocks each) grow until the pool is full.
  Engine e = small_engine(small_config(8));
  ASSERT_TRUE(e.add(request(1, 48, 40)));
  ASSERT_TRUE(e.add(request(2, 48, 40)));
  bool preempted = false;
  std::map<SeqId, std::uint32_t> total;
  std::map<SeqId, FinishReason> finish;
  for (int k = 0; k < 1000 && e.has_work(); ++k) {
    const StepPlan p = e.schedule();
    if (!p.preempted.empty()) {
      EXPECT_EQ(p.preempted, std::vector<SeqId>{2});  // the last one admitted
      preempted = true;
    }
    for (const SeqOutput& o : e.complete(p).outputs) {
      total[o.id] = o.total_output_tokens;
      if (o.finish != FinishReason::kNone) finish[o.id] = o.finish;
    }
  }
  EXPECT_TRUE(preempted);
  EXPECT_GE(e.stats().num_preemptions, 1u);
  EXPECT_EQ(total[1], 40u);
  EXPECT_EQ(total[2], 40u);
  EXPECT_EQ(finish[1], FinishReason::kLength);
  EXPECT_EQ(finish[2], FinishReason::kLength);
  EXPECT_EQ(e.stats().used_blocks, 0u);
}

TEST(Scheduler, PrefillOnlyHoldsBlocksUntilReleased) {
  Engine e = small_engine(small_config(64));
  SeqSpec s = request(7, 50, 100);
  s.prefill_only = true;
  ASSERT_TRUE(e.add(s));
  const StepOutputs out = e.complete(e.schedule());
  ASSERT_EQ(out.outputs.size(), 1u);
  EXPECT_EQ(out.outputs[0].new_tokens, 1u);
  EXPECT_EQ(out.outputs[0].finish, FinishReason::kPrefillDone);
  EXPECT_FALSE(e.has_work());
  EXPECT_EQ(e.stats().num_held, 1u);
  EXPECT_EQ(e.stats().used_blocks, 4u);
  EXPECT_FALSE(e.add(request(7, 10, 1)));  // the id is still in use
  e.release_held_blocks(7);
  EXPECT_EQ(e.stats().used_blocks, 0u);
  EXPECT_EQ(e.stats().num_held, 0u);
  EXPECT_TRUE(e.add(request(7, 10, 1)));
}

TEST(Scheduler, PreloadedRequestsDecodeImmediately) {
  Engine e = small_engine(small_config(64));
  SeqSpec s = request(3, 500, 3);
  s.kv_preloaded = true;
  ASSERT_TRUE(e.add(s));
  EXPECT_EQ(e.stats().outstanding_prefill_tokens, 0u);
  const StepPlan p = e.schedule();
  ASSERT_EQ(p.seqs.size(), 1u);
  EXPECT_TRUE(p.seqs[0].decode);
  EXPECT_EQ(p.seqs[0].new_prefill_tokens, 0u);
  EXPECT_EQ(p.seqs[0].context_tokens, 499u);
  EXPECT_EQ(p.total_prefill_tokens, 0u);
  EXPECT_EQ(e.stats().used_blocks, 32u);  // ceil(500 / 16)
  const StepOutputs out = e.complete(p);
  EXPECT_EQ(out.outputs[0].new_tokens, 1u);
  EXPECT_EQ(run_to_completion(e).back().total_output_tokens, 3u);
}

TEST(Scheduler, AbortRemovesWaitingAndRunningRequests) {
  Engine e = small_engine(small_config(64));
  ASSERT_TRUE(e.add(request(1, 30, 50)));
  ASSERT_TRUE(e.add(request(2, 30, 50)));
  const StepPlan p = e.schedule();
  e.abort(2);  // between schedule() and complete(): its output is dropped
  const StepOutputs out = e.complete(p);
  ASSERT_EQ(out.outputs.size(), 1u);
  EXPECT_EQ(out.outputs[0].id, 1u);
  ASSERT_TRUE(e.add(request(3, 30, 50)));
  e.abort(3);
  e.abort(1);
  e.abort(99);  // unknown: ignored
  EXPECT_FALSE(e.has_work());
  EXPECT_EQ(e.stats().used_blocks, 0u);
}

TEST(Scheduler, RejectsInvalidRequests) {
  Engine e = small_engine(small_config(8));
  ASSERT_TRUE(e.add(request(1, 10, 5)));
  EXPECT_EQ(e.add(request(1, 10, 5)).error().code, ErrorCode::kInvalidArgument);
  EXPECT_FALSE(e.add(request(2, 0, 5)));
  EXPECT_FALSE(e.add(request(3, 10, 0)));
  EXPECT_FALSE(e.add(request(4, 4096, 5)));  // max_model_len
  EXPECT_FALSE(e.add(request(5, 200, 5)));   // 8 blocks of 16 cannot hold 201 tokens
  EXPECT_EQ(e.stats().num_waiting, 1u);
}

TEST(Scheduler, OutputIsCappedByMaxModelLen) {
  EngineConfig c = small_config(512);
  c.max_model_len = 110;
  Engine e = small_engine(c);
  ASSERT_TRUE(e.add(request(1, 100, 1000)));
  const auto outs = run_to_completion(e);
  EXPECT_EQ(outs.back().total_output_tokens, 10u);
  EXPECT_EQ(outs.back().finish, FinishReason::kLength);
}

TEST(Scheduler, EmitsStoredEventsWithParentChainAndRemovedOnEviction) {
  EngineConfig c = small_config(4);
  c.emit_kv_events = true;
  Engine e = small_engine(c);
  SeqSpec s = request(1, 40, 1, 500);  // 2 full blocks + 8 tokens
  for (std::uint32_t t = 0; t < 40; ++t) s.prompt_token_ids.push_back(t);
  ASSERT_TRUE(e.add(s));
  StepOutputs out = e.complete(e.schedule());
  ASSERT_EQ(out.events.size(), 1u);
  const auto& stored = std::get<kvcache::BlockStored>(out.events[0]);
  ASSERT_EQ(stored.block_hashes.size(), 2u);
  EXPECT_EQ(std::get<std::uint64_t>(stored.block_hashes[0]), 500u);
  EXPECT_EQ(std::get<std::uint64_t>(stored.block_hashes[1]), 501u);
  EXPECT_FALSE(stored.parent_block_hash.has_value());
  EXPECT_EQ(stored.block_size, 16);
  ASSERT_EQ(stored.token_ids.size(), 32u);
  EXPECT_EQ(stored.token_ids[31], 31u);
  // A second request needing all 4 blocks evicts the cached ones (tail of request 1 first).
  ASSERT_TRUE(e.add(request(2, 60, 1)));
  out = e.complete(e.schedule());
  ASSERT_EQ(out.events.size(), 2u);
  EXPECT_EQ(std::get<std::uint64_t>(std::get<kvcache::BlockRemoved>(out.events[0]).block_hashes[0]),
            501u);
  EXPECT_EQ(std::get<std::uint64_t>(std::get<kvcache::BlockRemoved>(out.events[1]).block_hashes[0]),
            500u);
}

TEST(Scheduler, ChunkedPrefillStoresBlocksChunkByChunkWithParents) {
  EngineConfig c = small_config(64);
  c.emit_kv_events = true;
  c.max_num_batched_tokens = 32;
  Engine e = small_engine(c);
  ASSERT_TRUE(e.add(request(1, 64, 1, 900)));
  StepOutputs first = e.complete(e.schedule());
  StepOutputs second = e.complete(e.schedule());
  ASSERT_EQ(first.events.size(), 1u);
  ASSERT_EQ(second.events.size(), 1u);
  const auto& b = std::get<kvcache::BlockStored>(second.events[0]);
  ASSERT_TRUE(b.parent_block_hash.has_value());
  EXPECT_EQ(std::get<std::uint64_t>(*b.parent_block_hash), 901u);
  EXPECT_EQ(std::get<std::uint64_t>(b.block_hashes.at(0)), 902u);
}

TEST(Scheduler, ResetPrefixCacheWhenIdle) {
  EngineConfig c = small_config(16);
  c.emit_kv_events = true;
  Engine e = small_engine(c);
  ASSERT_TRUE(e.add(request(1, 32, 2, 10)));
  e.schedule();
  EXPECT_FALSE(e.reset_prefix_cache());  // blocks in use
  run_to_completion(e);
  EXPECT_TRUE(e.reset_prefix_cache());
  EXPECT_EQ(e.cached_prefix_tokens({10}), 0u);
  ASSERT_TRUE(e.add(request(2, 8, 1)));
  const StepOutputs out = e.complete(e.schedule());
  ASSERT_EQ(out.events.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<kvcache::AllBlocksCleared>(out.events[0]));
}

TEST(Scheduler, MtpYieldsOnePlusAcceptedDrafts) {
  EngineConfig c = small_config(256);
  Engine all = small_engine(c, {2, 1.0});
  ASSERT_TRUE(all.add(request(1, 20, 100)));
  all.complete(all.schedule());
  const StepPlan p = all.schedule();
  EXPECT_EQ(p.seqs[0].draft_tokens, 2u);
  EXPECT_EQ(all.complete(p).outputs[0].new_tokens, 3u);
  Engine none = small_engine(c, {2, 0.0});
  ASSERT_TRUE(none.add(request(1, 20, 100)));
  none.complete(none.schedule());
  EXPECT_EQ(none.complete(none.schedule()).outputs[0].new_tokens, 1u);
}

TEST(Scheduler, MtpNeverOvershootsMaxOutput) {
  Engine e = small_engine(small_config(256), {3, 1.0});
  ASSERT_TRUE(e.add(request(1, 20, 6)));
  const auto outs = run_to_completion(e);
  EXPECT_EQ(outs.back().total_output_tokens, 6u);
  EXPECT_EQ(outs.back().finish, FinishReason::kLength);
}

TEST(Scheduler, SameSeedSameOutputs) {
  auto run = [](std::uint64_t seed) {
    Engine e = small_engine(small_config(64), {1, 0.7}, seed);
    for (SeqId id = 1; id <= 12; ++id) {
      EXPECT_TRUE(e.add(request(id, 30 + 17 * static_cast<std::uint32_t>(id), 40)));
    }
    std::vector<std::pair<SeqId, std::uint32_t>> trace;
    double seconds = 0;
    while (e.has_work()) {
      const StepPlan p = e.schedule();
      seconds += e.step_seconds(p);
      for (const SeqOutput& o : e.complete(p).outputs) trace.emplace_back(o.id, o.new_tokens);
    }
    return std::make_pair(trace, seconds);
  };
  const auto a = run(42), b = run(42), c = run(43);
  EXPECT_EQ(a.first, b.first);
  EXPECT_EQ(a.second, b.second);
  EXPECT_NE(a.first, c.first);  // other draws accept other drafts
}

TEST(Scheduler, StatsCountOutstandingPrefillAndUsage) {
  Engine e = small_engine(small_config(64));
  ASSERT_TRUE(e.add(request(1, 600, 2)));
  ASSERT_TRUE(e.add(request(2, 100, 2)));
  EngineStats st = e.stats();
  EXPECT_EQ(st.outstanding_prefill_tokens, 700u);
  EXPECT_EQ(st.num_waiting, 2u);
  EXPECT_EQ(st.total_blocks, 64u);
  e.complete(e.schedule());  // 256 tokens of request 1
  st = e.stats();
  EXPECT_EQ(st.outstanding_prefill_tokens, 444u);
  EXPECT_EQ(st.num_running, 1u);
  EXPECT_EQ(st.used_blocks, 16u);
  EXPECT_DOUBLE_EQ(st.kv_cache_usage, 0.25);
  e.complete(e.schedule());  // 256 more
  e.complete(e.schedule());  // the last 88 of request 1, then 100 of request 2 (budget 256)
  EXPECT_EQ(e.stats().outstanding_prefill_tokens, 0u);
}

TEST(Scheduler, OutputIsCappedByTheKvCacheSoALoneRequestAlwaysFinishes) {
  Engine e = small_engine(small_config(4));  // 64 tokens of KV
  ASSERT_TRUE(e.add(request(1, 40, 1000)));
  const auto outs = run_to_completion(e, 1000);
  ASSERT_FALSE(outs.empty());
  EXPECT_EQ(outs.back().total_output_tokens, 24u);
  EXPECT_EQ(outs.back().finish, FinishReason::kLength);
  EXPECT_EQ(e.stats().num_preemptions, 0u);
  EXPECT_FALSE(e.add(request(2, 64, 1)));  // the prompt alone fills the cache
}

TEST(Scheduler, LongPrefillThresholdCapsChunks) {
  EngineConfig c = small_config(64);
  c.long_prefill_token_threshold = 100;
  Engine e = small_engine(c);
  ASSERT_TRUE(e.add(request(1, 250, 1)));
  ASSERT_TRUE(e.add(request(2, 30, 1)));
  const StepPlan p = e.schedule();
  ASSERT_EQ(p.seqs.size(), 2u);  // the capped chunk leaves budget for the second prompt
  EXPECT_EQ(p.seqs[0].new_prefill_tokens, 100u);
  EXPECT_EQ(p.seqs[1].new_prefill_tokens, 30u);
}

TEST(Scheduler, PreloadedRequestReusesLocalPrefixHits) {
  Engine e = small_engine(small_config(64));
  ASSERT_TRUE(e.add(request(1, 64, 1, 700)));
  run_to_completion(e);
  SeqSpec s = request(2, 100, 2, 700);  // the first 4 of its 6 full blocks are cached
  s.kv_preloaded = true;
  ASSERT_TRUE(e.add(s));
  const StepPlan p = e.schedule();
  EXPECT_TRUE(p.seqs[0].decode);
  EXPECT_EQ(p.seqs[0].cached_tokens, 64u);
  EXPECT_EQ(p.seqs[0].context_tokens, 99u);
  EXPECT_EQ(e.stats().used_blocks, 7u);  // 4 shared + 3 new for 100 tokens
  e.complete(p);
  // Its transferred full blocks are now cached too.
  std::vector<std::uint64_t> hashes;
  for (std::uint64_t b = 0; b < 6; ++b) hashes.push_back(700 + b);
  EXPECT_EQ(e.cached_prefix_tokens(hashes), 96u);
}

TEST(Scheduler, PreloadedRequestReportsItsTransferredTokens) {
  Engine e = small_engine(small_config(64));
  ASSERT_TRUE(e.add(request(1, 64, 1, 700)));
  run_to_completion(e);
  SeqSpec s = request(2, 100, 2, 700);  // 64 tokens hit locally, 36 arrive by transfer
  s.kv_preloaded = true;
  ASSERT_TRUE(e.add(s));
  const StepOutputs out = e.complete(e.schedule());
  ASSERT_EQ(out.outputs.size(), 1u);
  EXPECT_EQ(out.outputs[0].num_cached_tokens, 64u);
  EXPECT_EQ(out.outputs[0].num_external_tokens, 36u);
  Engine plain = small_engine(small_config(64));
  ASSERT_TRUE(plain.add(request(3, 100, 2, 700)));
  EXPECT_EQ(plain.complete(plain.schedule()).outputs[0].num_external_tokens, 0u);
}

TEST(Scheduler, StopAfterEndsWithStopAtThatLength) {
  Engine e = small_engine(small_config(64));
  SeqSpec s = request(1, 40, 10);
  s.stop_after = 4;
  ASSERT_TRUE(e.add(s));
  const auto outs = run_to_completion(e);
  EXPECT_EQ(outs.back().total_output_tokens, 4u);
  EXPECT_EQ(outs.back().finish, FinishReason::kStop);
  EXPECT_EQ(e.stats().used_blocks, 0u);
}

TEST(Scheduler, StopAfterPastTheLimitRunsToTheLength) {
  Engine e = small_engine(small_config(64));
  SeqSpec s = request(1, 40, 3);
  s.stop_after = 4;
  ASSERT_TRUE(e.add(s));
  const auto outs = run_to_completion(e);
  EXPECT_EQ(outs.back().total_output_tokens, 3u);
  EXPECT_EQ(outs.back().finish, FinishReason::kLength);
  // A stop exactly at the limit is a stop (the EOS is the last token).
  Engine at = small_engine(small_config(64));
  s.id = 2;
  s.stop_after = 3;
  ASSERT_TRUE(at.add(s));
  EXPECT_EQ(run_to_completion(at).back().finish, FinishReason::kStop);
}

TEST(Scheduler, MtpNeverDraftsPastAStop) {
  Engine e = small_engine(small_config(256), {3, 1.0});
  SeqSpec s = request(1, 20, 100);
  s.stop_after = 6;
  ASSERT_TRUE(e.add(s));
  const auto outs = run_to_completion(e);
  EXPECT_EQ(outs.back().total_output_tokens, 6u);
  EXPECT_EQ(outs.back().finish, FinishReason::kStop);
}

TEST(Scheduler, AbortReleasesAHeldPrefill) {
  Engine e = small_engine(small_config(64));
  SeqSpec s = request(5, 40, 10);
  s.prefill_only = true;
  ASSERT_TRUE(e.add(s));
  e.complete(e.schedule());
  EXPECT_EQ(e.stats().used_blocks, 3u);
  e.release_held_blocks(99);  // unknown: ignored
  e.abort(5);
  EXPECT_EQ(e.stats().used_blocks, 0u);
  EXPECT_EQ(e.stats().num_held, 0u);
}

TEST(Scheduler, ReleaseHeldBlocksIgnoresRequestsThatAreNotHeld) {
  Engine e = small_engine(small_config(64));
  ASSERT_TRUE(e.add(request(1, 40, 10)));
  e.complete(e.schedule());
  e.release_held_blocks(1);  // running, not held: nothing happens
  EXPECT_EQ(e.stats().num_running, 1u);
  EXPECT_GT(e.stats().used_blocks, 0u);
}

TEST(Scheduler, PreemptedRequestRecomputesPromptAndOutput) {
  Engine e = small_engine(small_config(8));
  ASSERT_TRUE(e.add(request(1, 48, 40)));
  ASSERT_TRUE(e.add(request(2, 48, 40)));
  StepPlan p;
  do {
    p = e.schedule();
    if (p.preempted.empty()) e.complete(p);
  } while (p.preempted.empty() && e.has_work());
  ASSERT_EQ(p.preempted, std::vector<SeqId>{2});
  e.complete(p);
  // Request 2 holds nothing now; when it comes back it prefills prompt + generated tokens.
  EXPECT_EQ(e.stats().num_waiting, 1u);
  std::uint32_t resumed_prefill = 0;
  while (e.has_work() && resumed_prefill == 0) {
    p = e.schedule();
    for (const ScheduledSeq& s : p.seqs) {
      if (s.id == 2 && !s.decode) resumed_prefill = s.new_prefill_tokens + s.cached_tokens;
    }
    e.complete(p);
  }
  EXPECT_GT(resumed_prefill, 48u);  // more than the prompt: its outputs are recomputed
}

}  // namespace
}  // namespace omni::engine
