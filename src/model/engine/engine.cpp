// The forward pass: embedding, MLA attention (absorbed on AMLA for decode and MTP verify,
// expanded with GEMMs for prefill), MoE with grouped expert GEMMs, the final norm and head.
#include "omni/model/engine.hpp"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "../kernels/kernels.hpp"
#include "ops.hpp"

namespace omni::model {
namespace {

std::size_t uz(int v) { return static_cast<std::size_t>(v); }
int ceil_div(int a, int b) { return (a + b - 1) / b; }

template <class T>
T* grow(std::vector<T>& v, std::size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

Error invalid(std::string m) { return make_error(ErrorCode::kInvalidArgument, std::move(m)); }

// One sequence's rows within the step.
struct SeqRows {
  int first = 0;  // index of its first token in the step's rows
  int count = 0;
  int start = 0;  // position of its first token
  std::span<const std::int32_t> pages;
};

// One expert's share of a MoE layer: which step rows it sees, with which weights.
struct ExpertWork {
  const MlpWeights* mlp = nullptr;
  int inter = 0;
  int first = 0;  // offset into the gathered rows
  int count = 0;
};

}  // namespace

// ---------------------------------------------------------------------------------------------
PagedLatentCache::PagedLatentCache(int layers, int num_pages, int page_size, int row_width,
                                   CacheDtype dtype)
    : layers_(layers),
      num_pages_(num_pages),
      page_size_(page_size),
      width_(row_width),
      dtype_(dtype) {
  const std::size_t n = uz(layers) * uz(num_pages) * uz(page_size) * uz(row_width);
  if (dtype == CacheDtype::kBF16) {
    bf16_.assign(n, 0);
  } else {
    f32_.assign(n, 0.0f);
  }
}

std::size_t PagedLatentCache::bytes() const noexcept { return bf16_.size() * 2 + f32_.size() * 4; }

std::span<std::uint16_t> PagedLatentCache::layer_bf16(int layer) {
  const std::size_t n = uz(num_pages_) * uz(page_size_) * uz(width_);
  return {bf16_.data() + uz(layer) * n, n};
}

std::span<float> PagedLatentCache::layer_f32(int layer) {
  const std::size_t n = uz(num_pages_) * uz(page_size_) * uz(width_);
  return {f32_.data() + uz(layer) * n, n};
}

void PagedLatentCache::read_row(int layer, std::span<const std::int32_t> pages, int pos,
                                float* out) const {
  const std::size_t n = uz(num_pages_) * uz(page_size_) * uz(width_);
  const std::size_t row =
      (uz(pages[uz(pos / page_size_)]) * uz(page_size_) + uz(pos % page_size_)) * uz(width_);
  if (dtype_ == CacheDtype::kF32) {
    std::copy_n(f32_.data() + uz(layer) * n + row, width_, out);
  } else {
    const std::uint16_t* src = bf16_.data() + uz(layer) * n + row;
    for (int i = 0; i < width_; ++i) out[i] = bf16_to_float(src[i]);
  }
}

// ---------------------------------------------------------------------------------------------
struct Engine::Impl {
  Impl(const LoadedModel& m, EngineOptions opts)
      : model(m),
        c(m.config),
        w(m.weights),
        o(opts),
        pool(opts.threads, opts.pin_threads),
        K(kernels::table(opts.isa)),
        cache(m.config.num_hidden_layers + (m.weights.mtp ? 1 : 0), opts.num_pages, opts.page_size,
              m.config.latent_dim(), opts.cache_dtype),
        decoder(omni::amla::DecoderOptions{opts.attention_kernel, opts.isa}),
        rope(m.config) {
    panels.resize(uz(pool.workers()));
    worker_tmp.resize(uz(pool.workers()));
  }

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
  int rows = 0;
  // Activations and scratch (grow-only).
  std::vector<float> h, x, delta, q, qa, kv, attn, attn_heads;
  std::vector<float> out_logits, out_hidden, sel;
  std::vector<float> router_logits, route_w;
  std::vector<int> route_e;
  std::vector<float> gathered, act, expert_out, g_tmp, u_tmp;
  std::vector<int> gathered_row;
  std::vector<float> gathered_w;
  std::vector<ExpertWork> experts_work;
  std::vector<int> expert_count;
  std::vector<std::vector<float>> panels, worker_tmp;
  std::vector<float> lat_c, lat_r;
  std::vector<std::uint16_t> amla_q16;
  std::vector<float> amla_q32, amla_out, amla_lse, qabs_tmp;
  std::vector<std::int32_t> amla_table, amla_lens;
  std::vector<int> amla_seqs;
  ops::RouterScratch router_scratch;
  struct ExpertTask {
    int expert, r0, r1;
  };
  std::vector<ExpertTask> expert_tasks;

  // ---- weight products -----------------------------------------------------------------
  int chunk_rows(int rows_total) const {
    const int target = 4 * pool.workers();
    return std::max(8, ceil_div(ceil_div(rows_total, target), 8) * 8);
  }

  // y[i][r] = W[r] . x[i] for i < m: the weight-streaming GEMV for small m, sgemm on
  // dequantized panels of 64 rows for large m (OpenBLAS, one thread per call).
  void linear(const Matrix& wm, const float* xin, int m, float* y, int ldy) {
    if (m <= 0) return;
    if (o.gemm == GemmBackend::kBlas && m > 8) {
      constexpr int kPanel = 64;
      const int tasks = ceil_div(wm.rows, kPanel);
      pool.parallel_for(tasks, [&](int t, int worker) {
        const int r0 = t * kPanel, n = std::min(kPanel, wm.rows - r0);
        const float* b;
        int ldb = wm.cols;
        if (wm.dtype == DType::kF32) {
          b = reinterpret_cast<const float*>(wm.data + uz(r0) * wm.row_stride);
          ldb = static_cast<int>(wm.row_stride / 4);
        } else {
          float* panel = grow(panels[uz(worker)], uz(n) * uz(wm.cols));
          K.dequant(wm, r0, r0 + n, panel);
          b = panel;
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, wm.cols, 1.0f, xin, wm.cols, b,
                    ldb, 0.0f, y + r0, ldy);
      });
      return;
    }
    const int chunk = chunk_rows(wm.rows);
    pool.parallel_for(ceil_div(wm.rows, chunk), [&](int t, int) {
      const int r0 = t * chunk, r1 = std::min(wm.rows, r0 + chunk);
      for (int i = 0; i < m; i += kernels::kMaxRows) {
        K.gemv(wm, r0, r1, xin + uz(i) * uz(wm.cols), wm.cols, std::min(kernels::kMaxRows, m - i),
               y + uz(i) * uz(ldy), ldy);
      }
    });
  }

  // act[i][r] = silu(gate[r] . x[i]) * (up[r] . x[i]).
  void gate_up(const MlpWeights& mw, const float* xin, int m, float* out, int ldo) {
    const int inter = mw.gate.rows, H = mw.gate.cols;
    if (!o.fused) {
      float* g = grow(g_tmp, uz(m) * uz(inter));
      float* u = grow(u_tmp, uz(m) * uz(inter));
      linear(mw.gate, xin, m, g, inter);
      linear(mw.up, xin, m, u, inter);
      for (std::size_t i = 0; i < uz(m) * uz(inter); ++i) g[i] = g[i] / (1.0f + std::exp(-g[i]));
      for (int i = 0; i < m; ++i) {
        for (int r = 0; r < inter; ++r)
          out[uz(i) * uz(ldo) + uz(r)] =
              g[uz(i) * uz(inter) + uz(r)] * u[uz(i) * uz(inter) + uz(r)];
      }
      return;
    }
    if (o.gemm == GemmBackend::kBlas && m > 8) {
      constexpr int kPanel = 64;
      pool.parallel_for(ceil_div(inter, kPanel), [&](int t, int worker) {
        const int r0 = t * kPanel, n = std::min(kPanel, inter - r0);
        float* panel = grow(panels[uz(worker)], 2 * uz(n) * uz(H));
        float* tile = grow(worker_tmp[uz(worker)], 2 * uz(m) * uz(n));
        K.dequant(mw.gate, r0, r0 + n, panel);
        K.dequant(mw.up, r0, r0 + n, panel + uz(n) * uz(H));
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, 2 * n, H, 1.0f, xin, H, panel, H,
                    0.0f, tile, 2 * n);
        for (int i = 0; i < m; ++i) {  // SiLU-mul on the output tile
          const float* gr = tile + uz(i) * uz(2 * n);
          float* dst = out + uz(i) * uz(ldo) + uz(r0);
          for (int r = 0; r < n; ++r) dst[r] = gr[r] / (1.0f + std::exp(-gr[r])) * gr[n + r];
        }
      });
      return;
    }
    const int chunk = chunk_rows(inter);
    pool.parallel_for(ceil_div(inter, chunk), [&](int t, int) {
      const int r0 = t * chunk, r1 = std::min(inter, r0 + chunk);
      for (int i = 0; i < m; i += kernels::kMaxRows) {
        K.gate_up(mw.gate, mw.up, r0, r1, xin + uz(i) * uz(H), H,
                  std::min(kernels::kMaxRows, m - i), out + uz(i) * uz(ldo), ldo);
      }
    });
  }

  // ---- layout ------------------------------------------------------------------------------
  Status plan(std::span<const SequenceStep> steps) {
    seqs.clear();
    rows = 0;
    for (const auto& s : steps) {
      const int n = static_cast<int>(s.tokens.size());
      if (n == 0) return invalid("a sequence step without tokens");
      const long end = static_cast<long>(s.start_pos) + n;
      if (s.start_pos < 0 || end > static_cast<long>(s.pages.size()) * o.page_size) {
        return invalid("pages cover " + std::to_string(s.pages.size() * uz(o.page_size)) +
                       " positions, the step needs " + std::to_string(end));
      }
      for (const auto p : s.pages) {
        if (p < 0 || p >= o.num_pages)
          return invalid("page " + std::to_string(p) + " outside the cache");
      }
      for (const auto t : s.tokens) {
        if (t < 0 || t >= c.vocab_size)
          return invalid("token " + std::to_string(t) + " outside the vocabulary");
      }
      seqs.push_back({rows, n, s.start_pos, s.pages});
      rows += n;
    }
    grow(row_pos, uz(rows));
    grow(row_seq, uz(rows));
    int max_end = 0;
    for (std::size_t s = 0; s < seqs.size(); ++s) {
      for (int i = 0; i < seqs[s].count; ++i) {
        row_pos[uz(seqs[s].first + i)] = seqs[s].start + i;
        row_seq[uz(seqs[s].first + i)] = static_cast<int>(s);
      }
      max_end = std::max(max_end, seqs[s].start + seqs[s].count);
    }
    rope.reserve(max_end);
    return ok_status();
  }

  // ---- attention -----------------------------------------------------------------------------
  void write_latents(int layer, const AttentionWeights& a) {
    const int width = c.latent_dim(), lora = c.kv_lora_rank;
    const auto eps = static_cast<float>(c.rms_norm_eps);
    for (int r = 0; r < rows; ++r) {
      const SeqRows& s = seqs[uz(row_seq[uz(r)])];
      const int pos = row_pos[uz(r)];
      const std::size_t row =
          (uz(s.pages[uz(pos / o.page_size)]) * uz(o.page_size) + uz(pos % o.page_size)) *
          uz(width);
      std::uint16_t* d16 =
          cache.dtype() == CacheDtype::kBF16 ? cache.layer_bf16(layer).data() + row : nullptr;
      float* d32 =
          cache.dtype() == CacheDtype::kF32 ? cache.layer_f32(layer).data() + row : nullptr;
      const float* kvr = kv.data() + uz(r) * uz(width);
      if (o.fused) {
        ops::latent_row(rope, kvr, a.kv_a_norm.data(), lora, eps, pos, d16, d32);
      } else {
        ops::latent_row_unfused(rope, kvr, a.kv_a_norm.data(), lora, eps, pos, d16, d32,
                                grow(worker_tmp[0], uz(width)));
      }
    }
  }

  // The expanded form for one sequence: K and V decompressed for its whole context.
  void attend_expanded(int layer, const AttentionWeights& a, const SeqRows& s) {
    const int heads = c.num_attention_heads, qk = c.qk_head_dim(), nope = c.qk_nope_head_dim;
    const int rd = c.qk_rope_head_dim, vd = c.v_head_dim, lora = c.kv_lora_rank;
    const int L = s.start + s.count, T = s.count;
    float* C = grow(lat_c, uz(L) * uz(lora));
    float* R = grow(lat_r, uz(L) * uz(rd));
    std::vector<float>& row = worker_tmp[0];
    grow(row, uz(c.latent_dim()));
    for (int p = 0; p < L; ++p) {
      cache.read_row(layer, s.pages, p, row.data());
      std::copy_n(row.data(), lora, C + uz(p) * uz(lora));
      std::copy_n(row.data() + lora, rd, R + uz(p) * uz(rd));
    }
    const auto scale = static_cast<float>(c.softmax_scale());
    pool.parallel_for(heads, [&](int hd, int worker) {
      std::vector<float>& buf = panels[uz(worker)];
      const std::size_t need =
          uz(L) * uz(nope) + uz(L) * uz(vd) + uz(T) * uz(L) + uz(lora) * uz(std::max(nope, vd));
      float* kn = grow(buf, need);
      float* vv = kn + uz(L) * uz(nope);
      float* sc = vv + uz(L) * uz(vd);
      float* wbuf = sc + uz(T) * uz(L);
      const Matrix& uk = a.uk[uz(hd)];
      const Matrix& uv = a.uv[uz(hd)];
      K.dequant(uk, 0, uk.rows, wbuf);
      if (a.uk_transposed) {  // [lora][nope]: kn = C . uk
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, L, nope, lora, 1.0f, C, lora, wbuf,
                    nope, 0.0f, kn, nope);
      } else {  // [nope][lora]: kn = C . uk^T
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, L, nope, lora, 1.0f, C, lora, wbuf,
                    lora, 0.0f, kn, nope);
      }
      K.dequant(uv, 0, uv.rows, wbuf);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, L, vd, lora, 1.0f, C, lora, wbuf, lora,
                  0.0f, vv, vd);
      const float* qh = q.data() + uz(s.first) * uz(heads) * uz(qk) + uz(hd) * uz(qk);
      const int ldq = heads * qk;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, L, nope, scale, qh, ldq, kn, nope,
                  0.0f, sc, L);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, L, rd, scale, qh + nope, ldq, R, rd,
                  1.0f, sc, L);
      for (int t = 0; t < T; ++t) {
        float* srow = sc + uz(t) * uz(L);
        const int visible = s.start + t + 1;
        float mx = -std::numeric_limits<float>::infinity();
        for (int k = 0; k < visible; ++k) mx = std::max(mx, srow[k]);
        float sum = 0.0f;
        for (int k = 0; k < visible; ++k) sum += srow[k] = std::exp(srow[k] - mx);
        const float inv = 1.0f / sum;
        for (int k = 0; k < visible; ++k) srow[k] *= inv;
        std::fill(srow + visible, srow + L, 0.0f);
      }
      float* dst = attn_heads.data() + uz(s.first) * uz(heads) * uz(vd) + uz(hd) * uz(vd);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, vd, L, 1.0f, sc, L, vv, vd, 0.0f,
                  dst, heads * vd);
    });
  }

  // The absorbed form on AMLA for the sequences in amla_seqs (all with `T` new tokens).
  void attend_absorbed(int layer, const AttentionWeights& a, int T) {
    const int heads = c.num_attention_heads, qk = c.qk_head_dim(), nope = c.qk_nope_head_dim;
    const int rd = c.qk_rope_head_dim, vd = c.v_head_dim, lora = c.kv_lora_rank,
              width = c.latent_dim();
    const int b = static_cast<int>(amla_seqs.size());
    const bool f32 = cache.dtype() == CacheDtype::kF32;
    const std::size_t qsize = uz(b) * uz(T) * uz(heads) * uz(width);
    float* q32 = f32 ? grow(amla_q32, qsize) : nullptr;
    std::uint16_t* q16 = f32 ? nullptr : grow(amla_q16, qsize);
    const int items = b * T * heads;
    // q_abs = W_UK[h]^T q_nope[h], followed by the RoPE'd q_pe: AMLA's [b][T][heads][576] rows.
    pool.parallel_for(items, [&](int item, int worker) {
      const int hd = item % heads, bt = item / heads, t = bt % T, bi = bt / T;
      const SeqRows& s = seqs[uz(amla_seqs[uz(bi)])];
      const float* qrow = q.data() + (uz(s.first + t) * uz(heads) + uz(hd)) * uz(qk);
      const std::size_t dst = uz(item) * uz(width);
      float* target = f32 && o.fused ? q32 + dst : grow(worker_tmp[uz(worker)], uz(width));
      const Matrix& uk = a.uk[uz(hd)];
      if (a.uk_transposed) {
        K.gemv(uk, 0, lora, qrow, nope, 1, target, lora);
      } else {
        K.gemv_t(uk, qrow, target);
      }
      std::copy_n(qrow + nope, rd, target + lora);
      if (f32 && !o.fused) {
        std::copy_n(target, width, q32 + dst);
      } else if (!f32) {
        for (int i = 0; i < width; ++i) q16[dst + uz(i)] = float_to_bf16(target[i]);
      }
    });
    int max_pages = 1;
    for (const int si : amla_seqs)
      max_pages = std::max<int>(max_pages, static_cast<int>(seqs[uz(si)].pages.size()));
    std::int32_t* table = grow(amla_table, uz(b) * uz(max_pages));
    std::int32_t* lens = grow(amla_lens, uz(b));
    for (int bi = 0; bi < b; ++bi) {
      const SeqRows& s = seqs[uz(amla_seqs[uz(bi)])];
      std::fill_n(table + uz(bi) * uz(max_pages), max_pages, 0);
      std::copy(s.pages.begin(), s.pages.end(), table + uz(bi) * uz(max_pages));
      lens[bi] = s.start + s.count;
    }
    omni::amla::DecodeInputs in;
    in.shape = {b, T, heads, width, lora, o.page_size, max_pages, o.num_pages};
    in.softmax_scale = static_cast<float>(c.softmax_scale());
    in.causal = true;
    in.block_table = {table, uz(b) * uz(max_pages)};
    in.seqlens_k = {lens, uz(b)};
    if (f32) {
      in.q_f32 = {q32, qsize};
      auto layer_cache = cache.layer_f32(layer);
      in.kv_cache_f32 = {layer_cache.data(), layer_cache.size()};
    } else {
      in.q = {q16, qsize};
      auto layer_cache = cache.layer_bf16(layer);
      in.kv_cache = {layer_cache.data(), layer_cache.size()};
    }
    float* out = grow(amla_out, uz(b) * uz(T) * uz(heads) * uz(lora));
    float* lse = grow(amla_lse, uz(b) * uz(T) * uz(heads));
    const Status st = decoder.run(
        in, {{out, uz(b) * uz(T) * uz(heads) * uz(lora)}, {lse, uz(b) * uz(T) * uz(heads)}}, pool);
    if (!st) std::abort();  // shapes are ours: a failure is a bug
    // o_h = W_UV[h] . out_latent, into the heads' rows.
    pool.parallel_for(items, [&](int item, int) {
      const int hd = item % heads, bt = item / heads, t = bt % T, bi = bt / T;
      const SeqRows& s = seqs[uz(amla_seqs[uz(bi)])];
      float* dst = attn_heads.data() + (uz(s.first + t) * uz(heads) + uz(hd)) * uz(vd);
      K.gemv(a.uv[uz(hd)], 0, vd, out + uz(item) * uz(lora), lora, 1, dst, vd);
    });
  }

  void attention(int layer, const AttentionWeights& a, const float* xin, float* out) {
    const int H = c.hidden_size, heads = c.num_attention_heads, qk = c.qk_head_dim();
    float* qv = grow(q, uz(rows) * uz(heads) * uz(qk));
    if (c.q_lora_rank > 0) {
      float* qav = grow(qa, uz(rows) * uz(c.q_lora_rank));
      linear(a.q_a, xin, rows, qav, c.q_lora_rank);
      for (int r = 0; r < rows; ++r) {
        float* row = qav + uz(r) * uz(c.q_lora_rank);
        ops::rmsnorm(row, a.q_a_norm.data(), c.q_lora_rank, static_cast<float>(c.rms_norm_eps),
                     row);
      }
      linear(a.q_b, qav, rows, qv, heads * qk);
    } else {
      linear(a.q, xin, rows, qv, heads * qk);
    }
    linear(a.kv_a, xin, rows, grow(kv, uz(rows) * uz(c.latent_dim())), c.latent_dim());
    write_latents(layer, a);
    for (int r = 0; r < rows; ++r) {
      for (int hd = 0; hd < heads; ++hd)
        ops::rope(rope, row_pos[uz(r)],
                  qv + (uz(r) * uz(heads) + uz(hd)) * uz(qk) + uz(c.qk_nope_head_dim));
    }
    grow(attn_heads, uz(rows) * uz(heads) * uz(c.v_head_dim));
    for (int T = 1; T <= o.absorbed_max_tokens; ++T) {
      amla_seqs.clear();
      for (std::size_t s = 0; s < seqs.size(); ++s) {
        if (seqs[s].count == T) amla_seqs.push_back(static_cast<int>(s));
      }
      if (!amla_seqs.empty()) attend_absorbed(layer, a, T);
    }
    for (const auto& s : seqs) {
      if (s.count > o.absorbed_max_tokens) attend_expanded(layer, a, s);
    }
    linear(a.o, attn_heads.data(), rows, out, H);
  }

  // ---- MoE -----------------------------------------------------------------------------------
  void mlp_experts(const float* xin, float* out) {
    const int H = c.hidden_size;
    int total = 0;
    for (const auto& e : experts_work) total = std::max(total, e.first + e.count);
    int max_inter = 0;
    for (const auto& e : experts_work) max_inter = std::max(max_inter, e.inter);
    float* X = grow(gathered, uz(total) * uz(H));
    float* A = grow(act, uz(total) * uz(max_inter));
    float* Y = grow(expert_out, uz(total) * uz(H));
    for (int i = 0; i < total; ++i)
      std::copy_n(xin + uz(gathered_row[uz(i)]) * uz(H), H, X + uz(i) * uz(H));
    // Experts with few rows run together in one pass over the pool (the weight-streaming
    // kernels, split by rows); the rest run as GEMMs one by one.
    std::vector<ExpertTask>& tasks = expert_tasks;
    tasks.clear();
    for (int e = 0; e < static_cast<int>(experts_work.size()); ++e) {
      const ExpertWork& ew = experts_work[uz(e)];
      if (ew.count == 0) continue;
      if (ew.count > 8 || !o.fused) {
        gate_up(*ew.mlp, X + uz(ew.first) * uz(H), ew.count, A + uz(ew.first) * uz(max_inter),
                max_inter);
        continue;
      }
      const int chunk = std::max(16, chunk_rows(ew.inter));
      for (int r = 0; r < ew.inter; r += chunk)
        tasks.push_back({e, r, std::min(ew.inter, r + chunk)});
    }
    pool.parallel_for(static_cast<int>(tasks.size()), [&](int t, int) {
      const ExpertTask& k = tasks[uz(t)];
      const ExpertWork& ew = experts_work[uz(k.expert)];
      for (int i = 0; i < ew.count; i += kernels::kMaxRows) {
        K.gate_up(ew.mlp->gate, ew.mlp->up, k.r0, k.r1, X + uz(ew.first + i) * uz(H), H,
                  std::min(kernels::kMaxRows, ew.count - i), A + uz(ew.first + i) * uz(max_inter),
                  max_inter);
      }
    });
    tasks.clear();
    for (int e = 0; e < static_cast<int>(experts_work.size()); ++e) {
      const ExpertWork& ew = experts_work[uz(e)];
      if (ew.count == 0) continue;
      if (ew.count > 8) {
        // down: [count][inter] -> [count][H]; act rows are max_inter apart.
        if (ew.inter == max_inter) {
          linear(ew.mlp->down, A + uz(ew.first) * uz(max_inter), ew.count, Y + uz(ew.first) * uz(H),
                 H);
        } else {
          float* packed = grow(u_tmp, uz(ew.count) * uz(ew.inter));
          for (int i = 0; i < ew.count; ++i)
            std::copy_n(A + uz(ew.first + i) * uz(max_inter), ew.inter,
                        packed + uz(i) * uz(ew.inter));
          linear(ew.mlp->down, packed, ew.count, Y + uz(ew.first) * uz(H), H);
        }
        continue;
      }
      const int chunk = std::max(16, chunk_rows(H));
      for (int r = 0; r < H; r += chunk) tasks.push_back({e, r, std::min(H, r + chunk)});
    }
    pool.parallel_for(static_cast<int>(tasks.size()), [&](int t, int) {
      const ExpertTask& k = tasks[uz(t)];
      const ExpertWork& ew = experts_work[uz(k.expert)];
      for (int i = 0; i < ew.count; i += kernels::kMaxRows) {
        const Matrix& down = ew.mlp->down;
        // The down matrix reads inter columns of rows spaced max_inter apart.
        K.gemv(down, k.r0, k.r1, A + uz(ew.first + i) * uz(max_inter), max_inter,
               std::min(kernels::kMaxRows, ew.count - i), Y + uz(ew.first + i) * uz(H), H);
      }
    });
    std::fill_n(out, uz(rows) * uz(H), 0.0f);
    for (int i = 0; i < total; ++i) {
      const float wgt = gathered_w[uz(i)];
      float* dst = out + uz(gathered_row[uz(i)]) * uz(H);
      const float* src = Y + uz(i) * uz(H);
      for (int d = 0; d < H; ++d) dst[d] += wgt * src[d];
    }
  }

  void feed_forward(const LayerWeights& lw, const float* xin, float* out) {
    const int H = c.hidden_size;
    experts_work.clear();
    grow(gathered_row, uz(rows) * uz(c.num_experts_per_tok + 1) + 1);
    grow(gathered_w, uz(rows) * uz(c.num_experts_per_tok + 1) + 1);
    int n = 0;
    auto add_all = [&](const MlpWeights& m) {
      experts_work.push_back({&m, m.gate.rows, n, rows});
      for (int r = 0; r < rows; ++r, ++n) {
        gathered_row[uz(n)] = r;
        gathered_w[uz(n)] = 1.0f;
      }
    };
    if (!lw.is_moe) {
      add_all(lw.dense);
      mlp_experts(xin, out);
      return;
    }
    const int E = c.n_routed_experts, k = c.num_experts_per_tok;
    float* logits = grow(router_logits, uz(rows) * uz(E));
    linear(lw.moe.router, xin, rows, logits, E);
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
    grow(expert_count, uz(E));
    std::fill_n(expert_count.begin(), E, 0);
    for (int i = 0; i < rows * k; ++i) ++expert_count[uz(re[i])];
    for (int e = 0; e < E; ++e) {
      if (expert_count[uz(e)] == 0) continue;
      experts_work.push_back({&lw.moe.experts[uz(e)], c.moe_intermediate_size, n, 0});
      ExpertWork& ew = experts_work.back();
      for (int i = 0; i < rows * k; ++i) {
        if (re[i] != e) continue;
        gathered_row[uz(n)] = i / k;
        gathered_w[uz(n)] = rw[i];
        ++n;
        ++ew.count;
      }
    }
    if (!lw.moe.shared.empty()) add_all(lw.moe.shared);
    (void)H;
    mlp_experts(xin, out);
  }

  // ---- the passes ----------------------------------------------------------------------------
  // One decoder layer over h; `pending` is the previous layer's MLP output, added here (the
  // fused residual add + RMSNorm); returns with this layer's MLP output in `pending`.
  void layer_pass(int cache_layer, const LayerWeights& lw, float* hs, float* pending,
                  bool has_pending) {
    const int H = c.hidden_size;
    const auto eps = static_cast<float>(c.rms_norm_eps);
    float* xv = grow(x, uz(rows) * uz(H));
    auto norm_rows = [&](const float* add, const std::vector<float>& weight) {
      for (int r = 0; r < rows; ++r) {
        float* hr = hs + uz(r) * uz(H);
        const float* d = add ? add + uz(r) * uz(H) : nullptr;
        if (o.fused) {
          ops::add_rmsnorm(hr, d, weight.data(), H, eps, xv + uz(r) * uz(H));
        } else {
          ops::add_rmsnorm_unfused(hr, d, weight.data(), H, eps, xv + uz(r) * uz(H));
        }
      }
    };
    norm_rows(has_pending ? pending : nullptr, lw.attn_norm);
    float* av = grow(attn, uz(rows) * uz(H));
    attention(cache_layer, lw.attn, xv, av);
    norm_rows(av, lw.ffn_norm);
    feed_forward(lw, xv, pending);
  }

  void finish_rows(const float* hs, const float* pending, const std::vector<float>& norm,
                   const Matrix& head, std::span<const int> select) {
    const int H = c.hidden_size, V = c.vocab_size;
    const int n = static_cast<int>(select.size());
    float* hid = grow(out_hidden, uz(n) * uz(H));
    float* tmp = grow(sel, uz(H));
    for (int i = 0; i < n; ++i) {
      const int r = select[uz(i)];
      std::copy_n(hs + uz(r) * uz(H), H, tmp);
      ops::add_rmsnorm(tmp, pending + uz(r) * uz(H), norm.data(), H,
                       static_cast<float>(c.rms_norm_eps), hid + uz(i) * uz(H));
    }
    linear(head, hid, n, grow(out_logits, uz(n) * uz(V)), V);
  }

  std::vector<int> selected;

  Result<StepOutput> forward(std::span<const SequenceStep> steps) {
    if (auto st = plan(steps); !st) return std::move(st).error();
    const int H = c.hidden_size;
    float* hs = grow(h, uz(rows) * uz(H));
    float* pending = grow(delta, uz(rows) * uz(H));
    int r = 0;
    for (const auto& s : steps) {
      for (const auto t : s.tokens) K.dequant(w.embed, t, t + 1, hs + uz(r++) * uz(H));
    }
    for (int l = 0; l < c.num_hidden_layers; ++l)
      layer_pass(l, w.layers[uz(l)], hs, pending, l > 0);
    selected.clear();
    for (std::size_t s = 0; s < seqs.size(); ++s) {
      const int want =
          steps[s].logits < 0 ? seqs[s].count : std::min(steps[s].logits, seqs[s].count);
      for (int i = seqs[s].count - want; i < seqs[s].count; ++i)
        selected.push_back(seqs[s].first + i);
    }
    finish_rows(hs, pending, w.final_norm, w.lm_head, selected);
    return output(static_cast<int>(selected.size()));
  }

  Result<StepOutput> forward_mtp(std::span<const SequenceStep> steps,
                                 std::span<const float> hidden) {
    if (!w.mtp) return make_error(ErrorCode::kUnsupported, "the model has no MTP weights");
    if (auto st = plan(steps); !st) return std::move(st).error();
    const int H = c.hidden_size;
    if (hidden.size() != uz(rows) * uz(H))
      return invalid("hidden: expected rows x hidden_size floats");
    const MtpWeights& m = *w.mtp;
    const auto eps = static_cast<float>(c.rms_norm_eps);
    float* cat = grow(g_tmp, uz(rows) * uz(2 * H));
    float* e = grow(sel, uz(H));
    for (int r = 0; r < rows; ++r) {
      const SeqRows& s = seqs[uz(row_seq[uz(r)])];
      const int token = steps[uz(row_seq[uz(r)])].tokens[uz(r - s.first)];
      if (row_pos[uz(r)] == 0) {
        std::fill_n(e, H, 0.0f);  // vLLM's deepseek_mtp masks position 0's embedding
      } else {
        K.dequant(m.embed, token, token + 1, e);
      }
      ops::rmsnorm(e, m.enorm.data(), H, eps, cat + uz(r) * uz(2 * H));
      ops::rmsnorm(hidden.data() + uz(r) * uz(H), m.hnorm.data(), H, eps,
                   cat + uz(r) * uz(2 * H) + uz(H));
    }
    float* hs = grow(h, uz(rows) * uz(H));
    float* pending = grow(delta, uz(rows) * uz(H));
    linear(m.eh_proj, cat, rows, hs, H);
    layer_pass(c.num_hidden_layers, m.layer, hs, pending, false);
    selected.resize(uz(rows));
    for (int i = 0; i < rows; ++i) selected[uz(i)] = i;
    finish_rows(hs, pending, m.head_norm, m.head, selected);
    return output(rows);
  }

  StepOutput output(int n) {
    StepOutput out;
    out.rows = n;
    out.logits = {out_logits.data(), uz(n) * uz(c.vocab_size)};
    out.hidden = {out_hidden.data(), uz(n) * uz(c.hidden_size)};
    return out;
  }
};

Result<std::unique_ptr<Engine>> Engine::create(const LoadedModel& model, EngineOptions options) {
  if (options.threads < 1 || options.page_size < 1 || options.num_pages < 1 ||
      options.absorbed_max_tokens < 0) {
    return invalid("engine options: threads, page_size and num_pages must be >= 1");
  }
  if (!omni::amla::isa_supported(options.isa)) {
    return make_error(ErrorCode::kUnsupported, "this CPU does not support " +
                                                   std::string(omni::amla::isa_name(options.isa)));
  }
  openblas_set_num_threads(1);  // the pool splits the work; each sgemm call is single-threaded
  return std::unique_ptr<Engine>(new Engine(std::make_unique<Impl>(model, options)));
}

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;
const ModelConfig& Engine::config() const noexcept { return impl_->c; }
const EngineOptions& Engine::options() const noexcept { return impl_->o; }
PagedLatentCache& Engine::cache() noexcept { return impl_->cache; }
ThreadPool& Engine::pool() noexcept { return impl_->pool; }
Result<StepOutput> Engine::forward(std::span<const SequenceStep> steps) {
  return impl_->forward(steps);
}
Result<StepOutput> Engine::forward_mtp(std::span<const SequenceStep> steps,
                                       std::span<const float> hidden) {
  return impl_->forward_mtp(steps, hidden);
}

}  // namespace omni::model
