// The real engine's way of executing a step (engine::StepExecutor): the scheduler's plan runs
// as one batched forward pass of the model over the paged latent cache, whose pages are the
// block pool's blocks.
//
//   plan ─► per sequence: a prefill chunk (tokens [context, context + n)), a decode (the last
//           token and its MTP drafts), or a PD decode's first step (KV fetched from the
//           prefill instance copied into its blocks, logits from the prefill's last hidden
//           state) ─► forward ─► sample / verify drafts ─► MTP drafts for the next step
//        ─► ExecutedStep: accepted drafts, stops, new block hashes
//
// Threading: the engine loop's thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "omni/engine/step_executor.hpp"
#include "omni/kvcache/block_hash.hpp"
#include "omni/model/engine.hpp"
#include "serve/sampling.hpp"
#include "serve/seq.hpp"

namespace omni::serve {

struct ExecutorOptions {
  std::uint32_t block_size = 16;
  std::uint32_t spec_tokens = 0;  // MTP drafts per decode (0: off)
  bool prefix_caching = true;
  kvcache::HashAlgo hash_algo = kvcache::HashAlgo::kSha256;
  kvcache::BlockHash hash_root;
};

// Cumulative counts (vLLM's spec-decode metrics) and the last step's times.
struct ExecutorStats {
  std::uint64_t spec_drafts = 0;        // decodes that verified drafts
  std::uint64_t spec_draft_tokens = 0;  // drafted tokens verified
  std::uint64_t spec_accepted = 0;      // of which accepted
  std::vector<std::uint64_t> spec_accepted_per_pos;
  std::uint64_t kv_imported_bytes = 0;            // PD decode side: fetched KV copied into blocks
  double forward_s = 0, mtp_s = 0, sample_s = 0;  // the last step
  std::uint64_t steps = 0;
};

class ModelExecutor final : public engine::StepExecutor {
 public:
  using Lookup = std::function<Seq*(engine::SeqId)>;
  ModelExecutor(model::Engine& model, ExecutorOptions options, Lookup lookup);

  Result<engine::ExecutedStep> execute(const engine::Engine& engine,
                                       const engine::StepPlan& plan) override;
  const ExecutorStats& stats() const noexcept { return stats_; }
  // Tests and benchmarks: replaces a continuing sequence's MTP drafts after each step (an
  // oracle drafter of a chosen acceptance); the MTP module still runs, so its cost is paid.
  void set_draft_hook(std::function<void(Seq&)> hook) { draft_hook_ = std::move(hook); }
  model::Engine& model() noexcept { return model_; }

  // Appends `token` to `seq` (text, stop rules) and records it for this step; returns how it
  // ends the output.
  Finish accept_token(Seq& seq, std::uint32_t token, std::span<const float> logits,
                      Sampler& sampler);
  // The new full blocks of seq.all, hashed, as the engine's event ints (into step_hashes).
  void hash_new_blocks(Seq& seq);

 private:
  enum class Kind { kPrefill, kDecode, kImport };
  struct Item {
    Seq* seq = nullptr;
    const engine::ScheduledSeq* planned = nullptr;
    Kind kind = Kind::kPrefill;
    int step = -1;  // index in steps_ (the main forward), -1 for none
    int gap_step = -1;
    int start = 0;  // position of the step's first token
    int produced = 0;
    int accepted = 0, drafted = 0;  // this step's MTP counts
    Finish finish = Finish::kNone;
    std::vector<std::int32_t> tokens, pages;
  };

  void build(const engine::Engine& engine, const engine::StepPlan& plan);
  void import_kv(Item& item);
  Status sample_main(const model::StepOutput& out);
  void sample_item(Item& it, const model::StepOutput& out, Sampler& sampler);
  Status sample_imports();
  Status draft(const engine::StepPlan& plan);
  SamplingContext context_of(const Seq& seq) const;

  model::Engine& model_;
  ExecutorOptions options_;
  Lookup lookup_;
  Sampler sampler_;                // the loop thread's (PD imports)
  std::vector<Sampler> samplers_;  // one per pool worker (the batch's sampling)
  kvcache::BlockHasher hasher_;
  ExecutorStats stats_;
  // Per step (grow-only).
  std::vector<Item> items_;
  std::vector<model::SequenceStep> steps_;
  std::vector<int> step_row_, step_logit_;  // per step: its first row and first logits row
  std::vector<float> hidden_in_, hidden_rows_;
  std::vector<model::SequenceStep> mtp_steps_;
  std::vector<std::vector<std::int32_t>> mtp_tokens_;
  std::vector<int> mtp_item_;
  std::function<void(Seq&)> draft_hook_;
};

}  // namespace omni::serve
