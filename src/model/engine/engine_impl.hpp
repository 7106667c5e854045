// The engine's private state, shared by engine.cpp (layout, weight products, the passes),
// attention.cpp (MLA: absorbed on AMLA, expanded with GEMMs) and moe.cpp (routed and shared
// experts, expert parallelism).
//
// A step's rows are the sequences' new tokens in step order. Weight products see them in two
// kinds of run:
//   rowwise runs  rows of short steps (<= 8 tokens): the weight-streaming kernels, whose sums
//                 for one activation row never depend on the other rows
//   gemm runs     one per longer step: sgemm on dequantized 64-row weight panels
// so that a sequence's numbers never depend on the rest of the batch.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "../kernels/kernels.hpp"
#include "omni/model/engine.hpp"
#include "ops.hpp"

namespace omni::model {

inline std::size_t uz(int v) { return static_cast<std::size_t>(v); }
inline int ceil_div(int a, int b) { return (a + b - 1) / b; }

template <class T>
T* grow(std::vector<T>& v, std::size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

inline Error invalid(std::string m) {
  return make_error(ErrorCode::kInvalidArgument, std::move(m));
}

// Steps longer than this run their weight products as GEMMs (with the BLAS backend).
inline constexpr int kGemmMinRows = 9;
inline constexpr int kPanel = 64;  // weight rows per dequantized GEMM panel
// Weight rows the row-by-row kernels take at a time, for every activation row, before moving on
// (16-64 KiB of weights: they stay in L1/L2 while the activation groups pass over them).
inline constexpr int kRowBlock = 32;

// One sequence's rows within the step.
struct SeqRows {
  int first = 0;  // index of its first token in the step's rows
  int count = 0;
  int start = 0;  // position of its first token
  std::span<const std::int32_t> pages;
  bool gemm = false;  // its weight products run as GEMMs
};

struct RowRun {
  int first = 0, count = 0;
};

// One expert's (or slot's, or the shared/dense MLP's) share of a layer: which gathered rows it
// sees, with which weights, on which rank.
struct ExpertWork {
  const MlpWeights* mlp = nullptr;
  int inter = 0;
  int first = 0;  // offset into the gathered rows
  int count = 0;
  bool gemm = false;
  int rank = -1;  // -1: any worker
};

// A unit of an MoE phase: rows [r0, r1) of one work's weight (gate/up, or down).
struct ExpertTask {
  int work = 0, r0 = 0, r1 = 0;
};

struct Engine::Impl {
  Impl(const LoadedModel& m, EngineOptions opts);

  const LoadedModel& model;
  const ModelConfig& c;
  const ModelWeights& w;
  EngineOptions o;
  ThreadPool pool;
  const kernels::KernelTable& K;
  PagedLatentCache cache;
  omni::amla::CpuDecoder decoder;
  ops::RopeTable rope;

  // Step layout.
  std::vector<SeqRows> seqs;
  std::vector<int> row_pos;  // position of each row
  std::vector<int> row_seq;
  std::vector<RowRun> rowwise;  // runs of rows of short sequences
  std::vector<int> gemm_list;   // indices of the sequences whose products run as GEMMs
  int rows = 0;
  // Activations and scratch (grow-only).
  std::vector<float> h, x, delta, q, qa, kv, attn, attn_heads;
  std::vector<float> out_logits, out_hidden, out_all_hidden, sel;
  std::vector<std::vector<float>> panels, worker_tmp;
  std::vector<float> lat_c, lat_r;
  std::vector<std::uint16_t> amla_q16;
  std::vector<float> amla_q32, amla_out, amla_lse;
  std::vector<std::int32_t> amla_table, amla_lens;
  std::vector<int> amla_seqs;
  std::vector<int> selected;
  // MoE scratch.
  std::vector<float> router_logits, route_w;
  std::vector<int> route_e;
  ops::RouterScratch router_scratch;
  std::vector<float> gathered, act, expert_out, g_tmp, u_tmp;
  std::vector<int> gathered_row;
  std::vector<ExpertWork> works;
  std::vector<ExpertTask> tasks, scratch_tasks;
  std::vector<int> task_rank, rank_begin, rank_fill;
  std::vector<int> moe_index_of;  // per layer: its index among the MoE layers (-1: dense)
  std::vector<int> choice_pos;    // [row][k]: gathered index of each choice
  std::vector<int> shared_pos;    // [row]: gathered index of the shared/dense MLP's row
  std::vector<int> bucket_start, bucket_fill, entry_order;
  struct Entry {
    int slot, row, choice;
  };
  std::vector<Entry> entries;
  // Expert parallelism and live counts.
  std::shared_ptr<const ExpertMap> expert_map;
  ExpertCounters counters;

  // engine.cpp: weight products.
  int chunk_rows(int rows_total) const;
  // y[i] = W x[i] for i < m: GEMV for small m, sgemm on panels above (the unfused paths).
  void linear(const Matrix& wm, const float* xin, int m, float* y, int ldy);
  // The same over the step's rows (rowwise runs and gemm runs).
  void linear_step(const Matrix& wm, const float* xin, float* y, int ldy);
  // Row-by-row kernels only (logits of selected rows, whatever the step).
  void linear_rowwise(const Matrix& wm, const float* xin, int m, float* y, int ldy);
  // One sgemm panel: y[i][r0..r0+n) = W[r0..r0+n) . x[i] for i < m (x rows ldx apart).
  void gemm_panel(const Matrix& wm, int r0, const float* xin, int ldx, int m, float* y, int ldy,
                  int worker);
  void gate_up(const MlpWeights& mw, const float* xin, int m, float* out, int ldo);  // unfused
  Status plan(std::span<const SequenceStep> steps);
  void layer_pass(int cache_layer, const LayerWeights& lw, float* hs, float* pending,
                  bool has_pending);
  void finish_rows(const float* hs, const float* pending, const std::vector<float>& norm,
                   const Matrix& head, std::span<const int> select, bool all_hidden);
  Result<StepOutput> forward(std::span<const SequenceStep> steps, ForwardOptions options);
  Result<StepOutput> forward_mtp(std::span<const SequenceStep> steps, std::span<const float> hidden,
                                 ForwardOptions options);
  StepOutput output(int n, bool all_hidden);

  // attention.cpp
  void write_latents(int layer, const AttentionWeights& a);
  void attend_expanded(int layer, const AttentionWeights& a, const SeqRows& s);
  void attend_absorbed(int layer, const AttentionWeights& a, int T);
  void attention(int layer, const AttentionWeights& a, const float* xin, float* out);

  // moe.cpp
  void feed_forward(int layer, const LayerWeights& lw, const float* xin, float* out);
  // The gathered works' gate/up then down products; `out` [rows][hidden] = the combine.
  void run_works(const float* xin, float* out, int routed_k);
  void run_tasks(int phase, int max_inter);
  void add_all_rows(const MlpWeights& m);
  int source_rank(int seq) const;
};

}  // namespace omni::model
