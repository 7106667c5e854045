#include "serve/executor.hpp"

#include <algorithm>
#include <cstring>

namespace omni::serve {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::size_t uz(int v) { return static_cast<std::size_t>(v); }

std::uint32_t argmax(std::span<const float> row) {
  return static_cast<std::uint32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

}  // namespace

ModelExecutor::ModelExecutor(model::Engine& model, ExecutorOptions options, Lookup lookup)
    : model_(model),
      options_(options),
      lookup_(std::move(lookup)),
      hasher_(options.hash_algo, options.block_size, options.hash_root) {
  stats_.spec_accepted_per_pos.assign(options.spec_tokens, 0);
}

SamplingContext ModelExecutor::context_of(const Seq& seq) const {
  SamplingContext ctx;
  ctx.prompt = seq.prompt;
  ctx.output = std::span<const std::uint32_t>(seq.all).subspan(seq.prompt.size());
  ctx.min_tokens = seq.text.rules().min_tokens;
  ctx.stop_ids = seq.masked_ids;
  return ctx;
}

void ModelExecutor::hash_new_blocks(Seq& seq) {
  if (!options_.prefix_caching) return;
  hasher_.extend(seq.all, seq.extra, seq.hashes);
  for (std::size_t i = seq.hashes_given; i < seq.hashes.size(); ++i) {
    seq.step_hashes.push_back(kvcache::event_int(seq.hashes[i]));
  }
  seq.hashes_given = seq.hashes.size();
}

Finish ModelExecutor::accept_token(Seq& seq, std::uint32_t token, std::span<const float> logits,
                                   Sampler& sampler) {
  if (seq.sampling.logprobs) {
    seq.step_logprobs.push_back(sampler.logprobs(logits, token, *seq.sampling.logprobs));
  }
  seq.all.push_back(token);
  seq.step_tokens.push_back(token);
  return seq.text.push(token);
}

// The step's sequence steps, in plan order (a PD decode's first step may add a gap chunk).
void ModelExecutor::build(const engine::Engine& engine, const engine::StepPlan& plan) {
  items_.resize(plan.seqs.size());
  steps_.clear();
  const int bs = static_cast<int>(options_.block_size);
  for (std::size_t k = 0; k < plan.seqs.size(); ++k) {
    const engine::ScheduledSeq& s = plan.seqs[k];
    Item& it = items_[k];
    it.seq = lookup_(s.id);
    it.planned = &s;
    it.step = it.gap_step = -1;
    it.produced = it.accepted = it.drafted = 0;
    it.finish = Finish::kNone;
    it.tokens.clear();
    it.pages.clear();
    Seq& seq = *it.seq;
    seq.step_tokens.clear();
    seq.step_hashes.clear();
    seq.step_logprobs.clear();
    for (const engine::BlockId b : engine.blocks(s.id)) it.pages.push_back(static_cast<int>(b));
    it.start = static_cast<int>(s.context_tokens);
    if (s.decode && seq.staged) {
      it.kind = Kind::kImport;
      const int staged_from = static_cast<int>(seq.staged->first_block) * bs;
      const int cached = static_cast<int>(s.cached_tokens);
      if (cached < staged_from) {
        // The local prefix hit shrank since the fetch: compute the missing rows here.
        it.tokens.assign(seq.all.begin() + cached, seq.all.begin() + staged_from);
        it.gap_step = static_cast<int>(steps_.size());
        steps_.push_back({it.tokens, cached, it.pages, 0});
      }
    } else if (s.decode) {
      it.kind = Kind::kDecode;
      it.tokens.push_back(static_cast<std::int32_t>(seq.all.back()));
      for (std::uint32_t d = 0; d < s.draft_tokens; ++d) {
        it.tokens.push_back(static_cast<std::int32_t>(d < seq.drafts.size() ? seq.drafts[d] : 0));
      }
      it.step = static_cast<int>(steps_.size());
      steps_.push_back({it.tokens, it.start, it.pages, static_cast<int>(it.tokens.size())});
    } else {
      it.kind = Kind::kPrefill;
      const auto from = seq.all.begin() + it.start;
      it.tokens.assign(from, from + s.new_prefill_tokens);
      const bool last =
          it.start + static_cast<int>(s.new_prefill_tokens) >= static_cast<int>(seq.all.size());
      it.step = static_cast<int>(steps_.size());
      steps_.push_back({it.tokens, it.start, it.pages, last ? 1 : 0});
    }
  }
  // Spans into item vectors are stable now (no more resizes of items_).
  step_row_.assign(steps_.size() + 1, 0);
  step_logit_.assign(steps_.size() + 1, 0);
  for (std::size_t j = 0; j < steps_.size(); ++j) {
    step_row_[j + 1] = step_row_[j] + static_cast<int>(steps_[j].tokens.size());
    step_logit_[j + 1] =
        step_logit_[j] + std::min(steps_[j].logits, static_cast<int>(steps_[j].tokens.size()));
  }
}

void ModelExecutor::import_kv(Item& item) {
  Seq& seq = *item.seq;
  const StagedKv& kv = *seq.staged;
  model::PagedLatentCache& cache = model_.cache();
  const std::size_t page_bytes = cache.page_bytes();
  const int layers = std::min<int>(static_cast<int>(kv.layers), cache.layers());
  const std::uint32_t cached_blocks = item.planned->cached_tokens / options_.block_size;
  if (kv.page_bytes != page_bytes) return;  // refused at fetch time; never here
  for (std::uint32_t b = 0; b < kv.blocks; ++b) {
    const std::uint32_t block = kv.first_block + b;
    if (block < cached_blocks || block >= item.pages.size()) continue;  // hit locally
    const std::byte* src = kv.data.data() + uz(static_cast<int>(b)) * kv.layers * page_bytes;
    for (int l = 0; l < layers; ++l) {
      std::memcpy(cache.page(l, item.pages[block]), src + uz(l) * page_bytes, page_bytes);
    }
    stats_.kv_imported_bytes += static_cast<std::uint64_t>(layers) * page_bytes;
  }
}

// One sequence's tokens from the main forward's logits (on a pool worker: sequences are
// independent; `sampler` is the worker's own).
void ModelExecutor::sample_item(Item& it, const model::StepOutput& out, Sampler& sampler) {
  const auto V = static_cast<std::size_t>(model_.config().vocab_size);
  const auto H = static_cast<std::size_t>(model_.config().hidden_size);
  Seq& seq = *it.seq;
  const int logit0 = step_logit_[uz(it.step)];
  const int nlogits = step_logit_[uz(it.step) + 1] - logit0;
  auto row = [&](int i) { return out.logits.subspan((uz(logit0) + uz(i)) * V, V); };
  if (it.kind == Kind::kPrefill) {
    if (nlogits == 0) return;  // a chunk in the middle of the prompt
    const std::uint32_t token =
        sampler.sample(row(0), seq.sampling, context_of(seq), seq.output_len());
    it.finish = accept_token(seq, token, row(0), sampler);
    it.produced = 1;
    if (seq.prefill_only) {
      const auto h = out.hidden.subspan(uz(logit0) * H, H);
      seq.last_hidden.assign(h.begin(), h.end());
    }
    return;
  }
  // A decode: rows verify the drafts in order; the first rejection (or the bonus position
  // after all of them) samples the step's last token.
  const int drafts = nlogits - 1;
  int i = 0;
  for (; i < drafts; ++i) {
    const auto draft = static_cast<std::uint32_t>(it.tokens[uz(i) + 1]);
    std::uint32_t replacement = 0;
    const bool ok =
        sampler.verify(row(i), seq.sampling, context_of(seq), seq.output_len(), draft, replacement);
    const std::uint32_t token = ok ? draft : replacement;
    it.finish = accept_token(seq, token, row(i), sampler);
    ++it.produced;
    if (ok) ++it.accepted;
    if (!ok || it.finish != Finish::kNone) break;
  }
  it.drafted = drafts;
  if (i == drafts && it.finish == Finish::kNone) {
    const std::uint32_t token =
        sampler.sample(row(drafts), seq.sampling, context_of(seq), seq.output_len());
    it.finish = accept_token(seq, token, row(drafts), sampler);
    ++it.produced;
  }
}

Status ModelExecutor::sample_main(const model::StepOutput& out) {
  auto& pool = model_.pool();
  if (samplers_.size() < static_cast<std::size_t>(pool.workers())) {
    samplers_.resize(static_cast<std::size_t>(pool.workers()));
  }
  pool.parallel_for(static_cast<int>(items_.size()), [&](int k, int worker) {
    Item& it = items_[uz(k)];
    if (it.step >= 0) sample_item(it, out, samplers_[uz(worker)]);
  });
  for (const Item& it : items_) {
    if (it.drafted > 0) {
      ++stats_.spec_drafts;
      stats_.spec_draft_tokens += static_cast<std::uint64_t>(it.drafted);
    }
    stats_.spec_accepted += static_cast<std::uint64_t>(it.accepted);
    for (int i = 0; i < it.accepted && uz(i) < stats_.spec_accepted_per_pos.size(); ++i) {
      ++stats_.spec_accepted_per_pos[uz(i)];
    }
  }
  return ok_status();
}

// PD decode side, first step: the prefill instance's last hidden state gives the logits.
Status ModelExecutor::sample_imports() {
  const auto V = static_cast<std::size_t>(model_.config().vocab_size);
  for (Item& it : items_) {
    if (it.kind != Kind::kImport) continue;
    Seq& seq = *it.seq;
    auto logits = model_.head(seq.staged->hidden, 1);
    if (!logits) return std::move(logits).error();
    const auto row = logits->subspan(0, V);
    const std::uint32_t token =
        sampler_.sample(row, seq.sampling, context_of(seq), seq.output_len());
    it.finish = accept_token(seq, token, row, sampler_);
    it.produced = 1;
  }
  return ok_status();
}

// The MTP module over every row whose main-model KV became final this step (its input: the
// next token and the row's final hidden state), then one draft per continuing sequence (and
// more, chained on the module's own hidden state, when num_speculative_tokens > 1).
Status ModelExecutor::draft(const engine::StepPlan& plan) {
  (void)plan;
  const auto H = static_cast<std::size_t>(model_.config().hidden_size);
  const auto V = static_cast<std::size_t>(model_.config().vocab_size);
  const int bs = static_cast<int>(options_.block_size);
  mtp_steps_.clear();
  mtp_item_.clear();
  hidden_in_.clear();
  if (mtp_tokens_.size() < 2 * items_.size()) mtp_tokens_.resize(2 * items_.size());
  auto add = [&](std::size_t k, int start, int count, const float* hidden, bool wants_draft) {
    Item& it = items_[k];
    std::vector<std::int32_t>& toks = mtp_tokens_[mtp_steps_.size()];
    toks.clear();
    for (int i = 0; i < count; ++i) {
      toks.push_back(static_cast<std::int32_t>(it.seq->all[uz(start + i + 1)]));
    }
    hidden_in_.insert(hidden_in_.end(), hidden, hidden + uz(count) * H);
    mtp_steps_.push_back({toks, start, it.pages, wants_draft ? 1 : 0});
    mtp_item_.push_back(wants_draft ? static_cast<int>(k) : -1);
  };
  // Hidden rows of the main forward were copied out before sampling (hidden_rows_).
  for (std::size_t k = 0; k < items_.size(); ++k) {
    Item& it = items_[k];
    Seq& seq = *it.seq;
    seq.drafts.clear();
    if (it.finish != Finish::kNone) continue;  // done: nothing more to draft
    const bool continues = !seq.prefill_only;
    if (it.gap_step >= 0) {
      const int n = static_cast<int>(steps_[uz(it.gap_step)].tokens.size());
      add(k, steps_[uz(it.gap_step)].start_pos, n,
          hidden_rows_.data() + uz(step_row_[uz(it.gap_step)]) * H, false);
    }
    if (it.kind == Kind::kImport) {
      add(k, static_cast<int>(seq.all.size()) - 2, 1, seq.staged->hidden.data(), continues);
      continue;
    }
    const int rows = it.kind == Kind::kDecode ? it.produced
                                              : static_cast<int>(steps_[uz(it.step)].tokens.size());
    if (rows == 0) continue;
    const bool final_rows = it.kind == Kind::kDecode || it.produced > 0;
    add(k, it.start, rows, hidden_rows_.data() + uz(step_row_[uz(it.step)]) * H,
        continues && final_rows);
  }
  if (mtp_steps_.empty()) return ok_status();
  const bool chain = options_.spec_tokens > 1;
  auto out = model_.forward_mtp(mtp_steps_, hidden_in_, {chain});
  if (!out) return std::move(out).error();
  int logit = 0;
  std::vector<int> chained;  // items still drafting, with their MTP hidden row
  std::vector<float> chain_hidden;
  int row = 0;
  for (std::size_t j = 0; j < mtp_steps_.size(); ++j) {
    const int rows = static_cast<int>(mtp_steps_[j].tokens.size());
    if (mtp_item_[j] >= 0) {
      Item& it = items_[uz(mtp_item_[j])];
      it.seq->drafts.push_back(argmax(out->logits.subspan(uz(logit) * V, V)));
      ++logit;
      if (chain) {
        chained.push_back(mtp_item_[j]);
        const float* h = out->all_hidden.data() + uz(row + rows - 1) * H;
        chain_hidden.insert(chain_hidden.end(), h, h + H);
      }
    }
    row += rows;
  }
  for (std::uint32_t d = 1; d < options_.spec_tokens && !chained.empty(); ++d) {
    mtp_steps_.clear();
    hidden_in_.clear();
    std::vector<int> next;
    for (std::size_t c = 0; c < chained.size(); ++c) {
      Item& it = items_[uz(chained[c])];
      Seq& seq = *it.seq;
      // Row K - 2 + d (K known tokens) takes draft d - 1 as its token and the module's own
      // hidden state of the row before it; it must fit in the blocks allocated this step.
      const int pos = static_cast<int>(seq.all.size()) - 2 + static_cast<int>(d);
      if (pos >= static_cast<int>(it.pages.size()) * bs) continue;
      std::vector<std::int32_t>& toks = mtp_tokens_[mtp_steps_.size()];
      toks.assign(1, static_cast<std::int32_t>(seq.drafts.back()));
      mtp_steps_.push_back({toks, pos, it.pages, 1});
      hidden_in_.insert(hidden_in_.end(), chain_hidden.begin() + static_cast<std::ptrdiff_t>(c * H),
                        chain_hidden.begin() + static_cast<std::ptrdiff_t>((c + 1) * H));
      next.push_back(chained[c]);
    }
    if (mtp_steps_.empty()) break;
    auto more = model_.forward_mtp(mtp_steps_, hidden_in_, {true});
    if (!more) return std::move(more).error();
    chain_hidden.assign(more->all_hidden.begin(), more->all_hidden.end());
    for (std::size_t c = 0; c < next.size(); ++c) {
      items_[uz(next[c])].seq->drafts.push_back(argmax(more->logits.subspan(c * V, V)));
    }
    chained.swap(next);
  }
  if (draft_hook_) {
    for (const int k : mtp_item_) {
      if (k >= 0) draft_hook_(*items_[static_cast<std::size_t>(k)].seq);
    }
  }
  return ok_status();
}

Result<engine::ExecutedStep> ModelExecutor::execute(const engine::Engine& engine,
                                                    const engine::StepPlan& plan) {
  engine::ExecutedStep result;
  result.decided = true;
  const auto t0 = Clock::now();
  for (const engine::SeqId id : plan.preempted) {
    if (Seq* seq = lookup_(id)) seq->drafts.clear();  // its KV is gone: recomputed later
  }
  build(engine, plan);
  for (Item& it : items_) {
    if (it.kind == Kind::kImport) import_kv(it);
  }
  const bool mtp = options_.spec_tokens > 0 && model_.has_mtp();
  if (!steps_.empty()) {
    auto out = model_.forward(steps_, {mtp});
    if (!out) return std::move(out).error();
    stats_.forward_s = since(t0);
    const auto t1 = Clock::now();
    if (mtp) hidden_rows_.assign(out->all_hidden.begin(), out->all_hidden.end());
    if (auto st = sample_main(*out); !st) return std::move(st).error();
    stats_.sample_s = since(t1);
  } else {
    stats_.forward_s = stats_.sample_s = 0;
  }
  if (auto st = sample_imports(); !st) return std::move(st).error();
  const auto t2 = Clock::now();
  if (mtp) {
    if (auto st = draft(plan); !st) return std::move(st).error();
  }
  stats_.mtp_s = mtp ? since(t2) : 0.0;
  for (Item& it : items_) {
    Seq& seq = *it.seq;
    if (it.kind == Kind::kImport) seq.staged.reset();  // its KV is in the blocks now
    hash_new_blocks(seq);
    engine::ExecutedSeq x;
    x.id = seq.id;
    x.accepted_drafts = it.produced > 0 ? static_cast<std::uint32_t>(it.produced - 1) : 0;
    x.stop = it.finish == Finish::kStop;
    x.tokens = seq.step_tokens;
    x.block_hashes = seq.step_hashes;
    result.seqs.push_back(x);
  }
  ++stats_.steps;
  result.seconds = since(t0);
  return result;
}

}  // namespace omni::serve
