// The MoE layer (and the dense MLP, which is its one-expert case): router, the experts' rows
// gathered into works, the works' gate/up and down products as one task list per phase (on
// their rank's workers under expert parallelism), and the combine.
//
//   rows ──route──► (row, choice) entries ──bucket by slot──► works: [slot e | rows of short
//   steps] [slot e | rows of long step A] ...  ──gate/up tasks──► act ──down tasks──► Y
//   combine: out[row] = Σ over its choices in expert order  w · Y  (+ shared expert)
//
// A work of a long step (>= 9 rows for its expert) runs on sgemm panels, any other on the
// row-by-row kernels; a sequence's rows for an expert always form works of their own kind, so
// its numbers never depend on the batch, nor on which copy of an expert served it.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "engine_impl.hpp"

namespace omni::model {
namespace {

float silu(float v) { return v / (1.0f + std::exp(-v)); }

}  // namespace

int Engine::Impl::source_rank(int seq) const { return expert_map ? seq % expert_map->ranks : 0; }

// The shared expert or the dense MLP over every row: one work for the short steps' rows, one
// per long step.
void Engine::Impl::add_all_rows(const MlpWeights& m) {
  const int inter = m.gate.rows;
  int short_rows = 0;
  for (const RowRun& run : rowwise) short_rows += run.count;
  if (short_rows > 0) {
    works.push_back({&m, inter, static_cast<int>(gathered_row.size()), short_rows, false, -1});
    for (const RowRun& run : rowwise) {
      for (int r = run.first; r < run.first + run.count; ++r) {
        shared_pos[uz(r)] = static_cast<int>(gathered_row.size());
        gathered_row.push_back(r);
      }
    }
  }
  for (const int si : gemm_list) {
    const SeqRows& s = seqs[uz(si)];
    works.push_back({&m, inter, static_cast<int>(gathered_row.size()), s.count, true, -1});
    for (int r = s.first; r < s.first + s.count; ++r) {
      shared_pos[uz(r)] = static_cast<int>(gathered_row.size());
      gathered_row.push_back(r);
    }
  }
}

void Engine::Impl::feed_forward(int layer, const LayerWeights& lw, const float* xin, float* out) {
  works.clear();
  gathered_row.clear();
  grow(shared_pos, uz(rows));
  std::fill_n(shared_pos.begin(), rows, -1);
  if (!lw.is_moe) {
    add_all_rows(lw.dense);
    run_works(xin, out, 0);
    return;
  }
  const int E = c.n_routed_experts, k = c.num_experts_per_tok;
  float* logits = grow(router_logits, uz(rows) * uz(E));
  linear_step(lw.moe.router, xin, logits, E);
  int* re = grow(route_e, uz(rows) * uz(k));
  float* rw = grow(route_w, uz(rows) * uz(k));
  const float* bias = lw.moe.bias.empty() ? nullptr : lw.moe.bias.data();
  for (int r = 0; r < rows; ++r) {
    if (o.fused) {
      ops::route(c, logits + uz(r) * uz(E), bias, re + uz(r) * uz(k), rw + uz(r) * uz(k));
    } else {
      ops::route_unfused(c, logits + uz(r) * uz(E), bias, re + uz(r) * uz(k), rw + uz(r) * uz(k),
                         router_scratch);
    }
  }
  // The main model's MoE layers are counted (and served by the expert map); MTP's layer is not.
  const int moe_index = layer < c.num_hidden_layers ? moe_index_of[uz(layer)] : -1;
  const LayerExpertMap* lm =
      moe_index >= 0 && expert_map && uz(moe_index) < expert_map->layers.size()
          ? &expert_map->layers[uz(moe_index)]
          : nullptr;
  if (moe_index >= 0) {
    std::uint64_t* counts = counters.expert_tokens.data() + uz(moe_index) * uz(E);
    for (int i = 0; i < rows * k; ++i) ++counts[re[i]];
  }
  // Entries bucketed by slot (the expert itself without a map), rows ascending in a bucket.
  const int slots = lm ? static_cast<int>(lm->slots.size()) : E;
  entries.resize(uz(rows) * uz(k));
  grow(bucket_start, uz(slots) + 1);
  std::fill_n(bucket_start.begin(), slots + 1, 0);
  auto slot_of = [&](int r, int e) {
    if (!lm) return e;
    const int s = row_seq[uz(r)], src = source_rank(s);
    const std::uint32_t* first = lm->targets.data() + lm->offsets[uz(src) * uz(E) + uz(e)];
    const std::uint32_t n =
        lm->offsets[uz(src) * uz(E) + uz(e) + 1] - lm->offsets[uz(src) * uz(E) + uz(e)];
    return static_cast<int>(first[static_cast<std::uint32_t>(s / expert_map->ranks) % n]);
  };
  for (int r = 0; r < rows; ++r) {
    for (int j = 0; j < k; ++j) {
      const int slot = slot_of(r, re[uz(r) * uz(k) + uz(j)]);
      entries[uz(r) * uz(k) + uz(j)] = {slot, r, j};
      ++bucket_start[uz(slot) + 1];
    }
  }
  for (int s = 0; s < slots; ++s) bucket_start[uz(s) + 1] += bucket_start[uz(s)];
  grow(bucket_fill, uz(slots));
  std::copy_n(bucket_start.begin(), slots, bucket_fill.begin());
  grow(entry_order, entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i)
    entry_order[uz(bucket_fill[uz(entries[i].slot)]++)] = static_cast<int>(i);
  grow(choice_pos, uz(rows) * uz(k));
  if (lm && counters.slot_tokens.size() != uz(counters.moe_layers) * uz(slots)) {
    counters.slots = slots;
    counters.slot_tokens.assign(uz(counters.moe_layers) * uz(slots), 0);
  }
  for (int slot = 0; slot < slots; ++slot) {
    const int b0 = bucket_start[uz(slot)], b1 = bucket_start[uz(slot) + 1];
    if (b0 == b1) continue;
    if (lm) counters.slot_tokens[uz(moe_index) * uz(slots) + uz(slot)] += uz(b1 - b0);
    const MlpWeights* mlp = lm ? &lm->slots[uz(slot)].weights : &lw.moe.experts[uz(slot)];
    const int rank = lm ? lm->slots[uz(slot)].rank : -1;
    const int inter = mlp->gate.rows;
    // The rows of short steps first, then each long step's rows (contiguous: rows ascend).
    const int first_short = static_cast<int>(gathered_row.size());
    for (int b = b0; b < b1; ++b) {
      const Entry& en = entries[uz(entry_order[uz(b)])];
      if (seqs[uz(row_seq[uz(en.row)])].gemm) continue;
      choice_pos[uz(en.row) * uz(k) + uz(en.choice)] = static_cast<int>(gathered_row.size());
      gathered_row.push_back(en.row);
    }
    const int shorts = static_cast<int>(gathered_row.size()) - first_short;
    if (shorts > 0) works.push_back({mlp, inter, first_short, shorts, false, rank});
    for (int b = b0; b < b1;) {
      const Entry& en = entries[uz(entry_order[uz(b)])];
      const int seq = row_seq[uz(en.row)];
      if (!seqs[uz(seq)].gemm) {
        ++b;
        continue;
      }
      const int first = static_cast<int>(gathered_row.size());
      for (; b < b1 && row_seq[uz(entries[uz(entry_order[uz(b)])].row)] == seq; ++b) {
        const Entry& e2 = entries[uz(entry_order[uz(b)])];
        choice_pos[uz(e2.row) * uz(k) + uz(e2.choice)] = static_cast<int>(gathered_row.size());
        gathered_row.push_back(e2.row);
      }
      const int n = static_cast<int>(gathered_row.size()) - first;
      works.push_back({mlp, inter, first, n, n >= kGemmMinRows, rank});
    }
  }
  if (!lw.moe.shared.empty()) add_all_rows(lw.moe.shared);
  const auto start = std::chrono::steady_clock::now();
  run_works(xin, out, k);
  if (moe_index >= 0) {
    counters.moe_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
}

// Phase 0: act = silu(gate x) * (up x); phase 1: Y = down act. Tasks split each work's weight
// rows: 64-row sgemm panels for GEMM works, row chunks of the weight-streaming kernels else.
void Engine::Impl::run_tasks(int phase, int max_inter) {
  const int H = c.hidden_size;
  tasks.clear();
  for (int wi = 0; wi < static_cast<int>(works.size()); ++wi) {
    const ExpertWork& ew = works[uz(wi)];
    const int span = phase == 0 ? ew.inter : H;
    const int step = ew.gemm ? kPanel : std::max(16, chunk_rows(span));
    for (int r = 0; r < span; r += step) tasks.push_back({wi, r, std::min(span, r + step)});
  }
  float* X = gathered.data();
  float* A = act.data();
  float* Y = expert_out.data();
  auto run = [&](int t, int worker) {
    const ExpertTask& task = tasks[uz(t)];
    const ExpertWork& ew = works[uz(task.work)];
    const MlpWeights& m = *ew.mlp;
    const float* xw = X + uz(ew.first) * uz(H);
    float* aw = A + uz(ew.first) * uz(max_inter);
    float* yw = Y + uz(ew.first) * uz(H);
    if (phase == 0 && ew.gemm) {
      const int n = task.r1 - task.r0;
      float* panel = grow(panels[uz(worker)], 2 * uz(n) * uz(H));
      float* tile = grow(worker_tmp[uz(worker)], 2 * uz(ew.count) * uz(n));
      K.dequant(m.gate, task.r0, task.r1, panel);
      K.dequant(m.up, task.r0, task.r1, panel + uz(n) * uz(H));
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, ew.count, 2 * n, H, 1.0f, xw, H, panel,
                  H, 0.0f, tile, 2 * n);
      for (int i = 0; i < ew.count; ++i) {  // SiLU-mul on the output tile
        const float* gr = tile + uz(i) * uz(2 * n);
        float* dst = aw + uz(i) * uz(max_inter) + uz(task.r0);
        for (int r = 0; r < n; ++r) dst[r] = silu(gr[r]) * gr[n + r];
      }
    } else if (phase == 0) {
      for (int b0 = task.r0; b0 < task.r1; b0 += kRowBlock) {
        const int b1 = std::min(task.r1, b0 + kRowBlock);
        for (int i = 0; i < ew.count; i += kernels::kMaxRows) {
          K.gate_up(m.gate, m.up, b0, b1, xw + uz(i) * uz(H), H,
                    std::min(kernels::kMaxRows, ew.count - i), aw + uz(i) * uz(max_inter),
                    max_inter);
        }
      }
    } else if (ew.gemm) {
      gemm_panel(m.down, task.r0, aw, max_inter, ew.count, yw, H, worker);
    } else {
      for (int b0 = task.r0; b0 < task.r1; b0 += kRowBlock) {
        const int b1 = std::min(task.r1, b0 + kRowBlock);
        for (int i = 0; i < ew.count; i += kernels::kMaxRows) {
          K.gemv(m.down, b0, b1, aw + uz(i) * uz(max_inter), max_inter,
                 std::min(kernels::kMaxRows, ew.count - i), yw + uz(i) * uz(H), H);
        }
      }
    }
  };
  const int ranks = expert_map ? expert_map->ranks : 1;
  if (ranks <= 1) {
    pool.parallel_for(static_cast<int>(tasks.size()), run);
    return;
  }
  // Each rank's tasks on its own workers; works without a rank (shared experts) spread evenly.
  grow(task_rank, tasks.size());
  std::vector<int>& begin = rank_begin;
  begin.assign(uz(ranks) + 1, 0);
  for (std::size_t t = 0; t < tasks.size(); ++t) {
    const int rank = works[uz(tasks[t].work)].rank;
    task_rank[t] = rank >= 0 ? rank % ranks : static_cast<int>(t % uz(ranks));
    ++begin[uz(task_rank[t]) + 1];
  }
  for (int r = 0; r < ranks; ++r) begin[uz(r) + 1] += begin[uz(r)];
  std::vector<ExpertTask>& sorted = scratch_tasks;
  sorted.resize(tasks.size());
  rank_fill.assign(begin.begin(), begin.end() - 1);
  for (std::size_t t = 0; t < tasks.size(); ++t)
    sorted[uz(rank_fill[uz(task_rank[t])]++)] = tasks[t];
  tasks.swap(sorted);
  pool.parallel_for_groups(std::span<const int>(begin.data(), uz(ranks) + 1), run);
}

void Engine::Impl::run_works(const float* xin, float* out, int routed_k) {
  const int H = c.hidden_size;
  const int total = static_cast<int>(gathered_row.size());
  int max_inter = 0;
  for (const auto& e : works) max_inter = std::max(max_inter, e.inter);
  float* X = grow(gathered, uz(total) * uz(H));
  float* A = grow(act, uz(total) * uz(max_inter));
  float* Y = grow(expert_out, uz(total) * uz(H));
  for (int i = 0; i < total; ++i)
    std::copy_n(xin + uz(gathered_row[uz(i)]) * uz(H), H, X + uz(i) * uz(H));
  if (o.fused) {
    run_tasks(0, max_inter);
    run_tasks(1, max_inter);
  } else {
    // The unfused baseline: each work's gate, up, SiLU, multiply and down as separate passes.
    for (const ExpertWork& ew : works) {
      gate_up(*ew.mlp, X + uz(ew.first) * uz(H), ew.count, A + uz(ew.first) * uz(max_inter),
              max_inter);
      float* packed = grow(u_tmp, uz(ew.count) * uz(ew.inter));
      for (int i = 0; i < ew.count; ++i)
        std::copy_n(A + uz(ew.first + i) * uz(max_inter), ew.inter, packed + uz(i) * uz(ew.inter));
      linear(ew.mlp->down, packed, ew.count, Y + uz(ew.first) * uz(H), H);
    }
  }
  // A row's experts in expert order, then the shared expert (or the dense MLP).
  const int k = routed_k;
  for (int r = 0; r < rows; ++r) {
    float* dst = out + uz(r) * uz(H);
    std::fill_n(dst, H, 0.0f);
    int order[64];
    const int kk = std::min(k, 64);
    if (kk > 0) {
      for (int j = 0; j < kk; ++j) order[j] = j;
      const int* re = route_e.data() + uz(r) * uz(k);
      std::sort(order, order + kk, [&](int a, int b) { return re[a] < re[b]; });
    }
    for (int j = 0; j < kk; ++j) {
      const int pos = choice_pos[uz(r) * uz(k) + uz(order[j])];
      const float wgt = route_w[uz(r) * uz(k) + uz(order[j])];
      const float* src = Y + uz(pos) * uz(H);
      for (int d = 0; d < H; ++d) dst[d] += wgt * src[d];
    }
    if (shared_pos[uz(r)] >= 0) {
      const float* src = Y + uz(shared_pos[uz(r)]) * uz(H);
      for (int d = 0; d < H; ++d) dst[d] += 1.0f * src[d];
    }
  }
}

// ---- expert parallelism ----------------------------------------------------------------------
Status Engine::set_expert_map(std::shared_ptr<const ExpertMap> map) {
  Impl& e = *impl_;
  if (map) {
    int moe_layers = 0;
    for (int l = 0; l < e.c.num_hidden_layers; ++l) moe_layers += e.w.layers[uz(l)].is_moe;
    if (map->ranks < 1 || map->ranks > ThreadPool::kMaxGroups)
      return invalid("expert map: ranks must be in 1.." + std::to_string(ThreadPool::kMaxGroups));
    if (map->experts != e.c.n_routed_experts || static_cast<int>(map->layers.size()) != moe_layers)
      return invalid("expert map: " + std::to_string(map->layers.size()) + " layers of " +
                     std::to_string(map->experts) + " experts; the model has " +
                     std::to_string(moe_layers) + " MoE layers of " +
                     std::to_string(e.c.n_routed_experts));
    for (const LayerExpertMap& lm : map->layers) {
      const std::size_t rows = uz(map->ranks) * uz(map->experts);
      if (lm.offsets.size() != rows + 1 || lm.offsets.back() != lm.targets.size())
        return invalid("expert map: routing table of the wrong size");
      for (std::size_t i = 0; i < rows; ++i) {
        if (lm.offsets[i + 1] <= lm.offsets[i]) return invalid("expert map: an expert unserved");
      }
      for (const std::uint32_t t : lm.targets) {
        if (t >= lm.slots.size()) return invalid("expert map: a target outside the slots");
      }
    }
  }
  e.expert_map = std::move(map);
  return ok_status();
}

const ExpertMap* Engine::expert_map() const noexcept { return impl_->expert_map.get(); }
const ExpertCounters& Engine::expert_counters() const noexcept { return impl_->counters; }

void Engine::reset_expert_counters() {
  ExpertCounters& c = impl_->counters;
  std::fill(c.expert_tokens.begin(), c.expert_tokens.end(), 0);
  std::fill(c.slot_tokens.begin(), c.slot_tokens.end(), 0);
  c.moe_seconds = 0.0;
  c.steps = 0;
}

}  // namespace omni::model
