// The forward pass: embedding, MLA attention (attention.cpp), MoE (moe.cpp), the final norm and
// head; the step's layout and the weight products every layer uses.
#include "omni/model/engine.hpp"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "engine_impl.hpp"

namespace omni::model {

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

std::size_t PagedLatentCache::page_bytes() const noexcept {
  return uz(page_size_) * uz(width_) * (dtype_ == CacheDtype::kF32 ? 4 : 2);
}

std::byte* PagedLatentCache::page(int layer, int page) noexcept {
  const std::size_t rows = uz(num_pages_) * uz(page_size_) * uz(width_);
  const std::size_t at = uz(layer) * rows + uz(page) * uz(page_size_) * uz(width_);
  return dtype_ == CacheDtype::kF32 ? reinterpret_cast<std::byte*>(f32_.data() + at)
                                    : reinterpret_cast<std::byte*>(bf16_.data() + at);
}

// ---------------------------------------------------------------------------------------------
Engine::Impl::Impl(const LoadedModel& m, EngineOptions opts)
    : model(m),
      c(m.config),
      w(m.weights),
      o(opts),
      pool(opts.threads, opts.pin_threads),
      K(kernels::table(opts.isa)),
      cache(m.config.num_hidden_layers + (m.weights.mtp ? 1 : 0), opts.num_pages, opts.page_size,
            m.config.latent_dim(), opts.cache_dtype),
      decoder(omni::amla::DecoderOptions{opts.attention_kernel, opts.isa, 2, 256,
                                         std::max(0, opts.split_keys)}),
      rope(m.config) {
  panels.resize(uz(pool.workers()));
  worker_tmp.resize(uz(pool.workers()));
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    moe_index_of.push_back(w.layers[uz(l)].is_moe ? counters.moe_layers : -1);
    counters.moe_layers += w.layers[uz(l)].is_moe;
  }
  counters.experts = c.n_routed_experts;
  counters.expert_tokens.assign(uz(counters.moe_layers) * uz(counters.experts), 0);
}

// ---- weight products ---------------------------------------------------------------------
int Engine::Impl::chunk_rows(int rows_total) const {
  const int target = 4 * pool.workers();
  return std::max(8, ceil_div(ceil_div(rows_total, target), 8) * 8);
}

void Engine::Impl::gemm_panel(const Matrix& wm, int r0, const float* xin, int ldx, int m, float* y,
                              int ldy, int worker) {
  const int n = std::min(kPanel, wm.rows - r0);
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
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, wm.cols, 1.0f, xin, ldx, b, ldb, 0.0f,
              y + r0, ldy);
}

// y[i][r] = W[r] . x[i] for i < m: the weight-streaming GEMV for small m, sgemm on
// dequantized panels of 64 rows for large m (OpenBLAS, one thread per call).
void Engine::Impl::linear(const Matrix& wm, const float* xin, int m, float* y, int ldy) {
  if (m <= 0) return;
  if (o.gemm == GemmBackend::kBlas && m >= kGemmMinRows) {
    pool.parallel_for(ceil_div(wm.rows, kPanel), [&](int t, int worker) {
      gemm_panel(wm, t * kPanel, xin, wm.cols, m, y, ldy, worker);
    });
    return;
  }
  linear_rowwise(wm, xin, m, y, ldy);
}

void Engine::Impl::linear_rowwise(const Matrix& wm, const float* xin, int m, float* y, int ldy) {
  if (m <= 0) return;
  const int chunk = chunk_rows(wm.rows);
  pool.parallel_for(ceil_div(wm.rows, chunk), [&](int t, int) {
    const int r0 = t * chunk, r1 = std::min(wm.rows, r0 + chunk);
    // Blocks of weight rows small enough to stay in cache while every group of activation
    // rows passes over them: the weights stream from memory once, whatever m is.
    for (int b0 = r0; b0 < r1; b0 += kRowBlock) {
      const int b1 = std::min(r1, b0 + kRowBlock);
      for (int i = 0; i < m; i += kernels::kMaxRows) {
        K.gemv(wm, b0, b1, xin + uz(i) * uz(wm.cols), wm.cols, std::min(kernels::kMaxRows, m - i),
               y + uz(i) * uz(ldy), ldy);
      }
    }
  });
}

void Engine::Impl::linear_step(const Matrix& wm, const float* xin, float* y, int ldy) {
  const int chunk = chunk_rows(wm.rows);
  const int row_tasks = rowwise.empty() ? 0 : ceil_div(wm.rows, chunk);
  const int panels_per = ceil_div(wm.rows, kPanel);
  const int gemm_seqs = static_cast<int>(gemm_list.size());
  if (gemm_seqs == 0 && row_tasks == 0) return;
  // Gemm sequences' panels follow the rowwise chunks: panel p of the g-th gemm sequence.
  pool.parallel_for(row_tasks + gemm_seqs * panels_per, [&](int t, int worker) {
    if (t < row_tasks) {
      const int r0 = t * chunk, r1 = std::min(wm.rows, r0 + chunk);
      for (int b0 = r0; b0 < r1; b0 += kRowBlock) {
        const int b1 = std::min(r1, b0 + kRowBlock);
        for (const RowRun& run : rowwise) {
          for (int i = 0; i < run.count; i += kernels::kMaxRows) {
            const int row = run.first + i;
            K.gemv(wm, b0, b1, xin + uz(row) * uz(wm.cols), wm.cols,
                   std::min(kernels::kMaxRows, run.count - i), y + uz(row) * uz(ldy), ldy);
          }
        }
      }
      return;
    }
    const int g = (t - row_tasks) / panels_per, p = (t - row_tasks) % panels_per;
    const SeqRows& s = seqs[uz(gemm_list[uz(g)])];
    gemm_panel(wm, p * kPanel, xin + uz(s.first) * uz(wm.cols), wm.cols, s.count,
               y + uz(s.first) * uz(ldy), ldy, worker);
  });
}

// act[i][r] = silu(gate[r] . x[i]) * (up[r] . x[i]), as separate passes (the unfused baseline).
void Engine::Impl::gate_up(const MlpWeights& mw, const float* xin, int m, float* out, int ldo) {
  const int inter = mw.gate.rows;
  float* g = grow(g_tmp, uz(m) * uz(inter));
  float* u = grow(u_tmp, uz(m) * uz(inter));
  linear(mw.gate, xin, m, g, inter);
  linear(mw.up, xin, m, u, inter);
  for (std::size_t i = 0; i < uz(m) * uz(inter); ++i) g[i] = g[i] / (1.0f + std::exp(-g[i]));
  for (int i = 0; i < m; ++i) {
    for (int r = 0; r < inter; ++r)
      out[uz(i) * uz(ldo) + uz(r)] = g[uz(i) * uz(inter) + uz(r)] * u[uz(i) * uz(inter) + uz(r)];
  }
}

// ---- layout ------------------------------------------------------------------------------
Status Engine::Impl::plan(std::span<const SequenceStep> steps) {
  seqs.clear();
  rowwise.clear();
  gemm_list.clear();
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
    const bool gemm = o.gemm == GemmBackend::kBlas && n >= kGemmMinRows;
    if (gemm) gemm_list.push_back(static_cast<int>(seqs.size()));
    seqs.push_back({rows, n, s.start_pos, s.pages, gemm});
    if (!gemm) {
      if (!rowwise.empty() && rowwise.back().first + rowwise.back().count == rows) {
        rowwise.back().count += n;
      } else {
        rowwise.push_back({rows, n});
      }
    }
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

// ---- the passes ----------------------------------------------------------------------------
// One decoder layer over h; `pending` is the previous layer's MLP output, added here (the
// fused residual add + RMSNorm); returns with this layer's MLP output in `pending`.
void Engine::Impl::layer_pass(int cache_layer, const LayerWeights& lw, float* hs, float* pending,
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
  feed_forward(cache_layer, lw, xv, pending);
}

void Engine::Impl::finish_rows(const float* hs, const float* pending,
                               const std::vector<float>& norm, const Matrix& head,
                               std::span<const int> select, bool all_hidden) {
  const int H = c.hidden_size, V = c.vocab_size;
  const int n = static_cast<int>(select.size());
  float* hid = grow(out_hidden, uz(n) * uz(H));
  float* tmp = grow(sel, uz(H));
  const auto eps = static_cast<float>(c.rms_norm_eps);
  if (all_hidden) {
    float* all = grow(out_all_hidden, uz(rows) * uz(H));
    for (int r = 0; r < rows; ++r) {
      std::copy_n(hs + uz(r) * uz(H), H, tmp);
      ops::add_rmsnorm(tmp, pending + uz(r) * uz(H), norm.data(), H, eps, all + uz(r) * uz(H));
    }
    for (int i = 0; i < n; ++i)
      std::copy_n(all + uz(select[uz(i)]) * uz(H), H, hid + uz(i) * uz(H));
  } else {
    for (int i = 0; i < n; ++i) {
      const int r = select[uz(i)];
      std::copy_n(hs + uz(r) * uz(H), H, tmp);
      ops::add_rmsnorm(tmp, pending + uz(r) * uz(H), norm.data(), H, eps, hid + uz(i) * uz(H));
    }
  }
  // Every logits row is one sequence's own: the row-by-row kernels keep it batch-independent.
  linear_rowwise(head, hid, n, grow(out_logits, uz(n) * uz(V)), V);
}

Result<StepOutput> Engine::Impl::forward(std::span<const SequenceStep> steps,
                                         ForwardOptions options) {
  if (auto st = plan(steps); !st) return std::move(st).error();
  const int H = c.hidden_size;
  float* hs = grow(h, uz(rows) * uz(H));
  float* pending = grow(delta, uz(rows) * uz(H));
  int r = 0;
  for (const auto& s : steps) {
    for (const auto t : s.tokens) K.dequant(w.embed, t, t + 1, hs + uz(r++) * uz(H));
  }
  for (int l = 0; l < c.num_hidden_layers; ++l) layer_pass(l, w.layers[uz(l)], hs, pending, l > 0);
  selected.clear();
  for (std::size_t s = 0; s < seqs.size(); ++s) {
    const int want = steps[s].logits < 0 ? seqs[s].count : std::min(steps[s].logits, seqs[s].count);
    for (int i = seqs[s].count - want; i < seqs[s].count; ++i)
      selected.push_back(seqs[s].first + i);
  }
  finish_rows(hs, pending, w.final_norm, w.lm_head, selected, options.all_hidden);
  ++counters.steps;
  return output(static_cast<int>(selected.size()), options.all_hidden);
}

Result<StepOutput> Engine::Impl::forward_mtp(std::span<const SequenceStep> steps,
                                             std::span<const float> hidden,
                                             ForwardOptions options) {
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
  linear_step(m.eh_proj, cat, hs, H);
  layer_pass(c.num_hidden_layers, m.layer, hs, pending, false);
  selected.clear();
  for (std::size_t s = 0; s < seqs.size(); ++s) {
    const int want = steps[s].logits < 0 ? seqs[s].count : std::min(steps[s].logits, seqs[s].count);
    for (int i = seqs[s].count - want; i < seqs[s].count; ++i)
      selected.push_back(seqs[s].first + i);
  }
  finish_rows(hs, pending, m.head_norm, m.head, selected, options.all_hidden);
  return output(static_cast<int>(selected.size()), options.all_hidden);
}

StepOutput Engine::Impl::output(int n, bool all_hidden) {
  StepOutput out;
  out.rows = n;
  out.logits = {out_logits.data(), uz(n) * uz(c.vocab_size)};
  out.hidden = {out_hidden.data(), uz(n) * uz(c.hidden_size)};
  if (all_hidden) out.all_hidden = {out_all_hidden.data(), uz(rows) * uz(c.hidden_size)};
  return out;
}

// ---------------------------------------------------------------------------------------------
Result<std::unique_ptr<Engine>> Engine::create(const LoadedModel& model, EngineOptions options) {
  if (options.threads < 1 || options.page_size < 1 || options.num_pages < 1 ||
      options.absorbed_max_tokens < 0) {
    return invalid("engine options: threads, page_size and num_pages must be >= 1");
  }
  if (options.split_keys < 0 || options.split_keys % 64 != 0) {
    return invalid("engine options: split_keys must be a multiple of 64");
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
bool Engine::has_mtp() const noexcept { return impl_->w.mtp.has_value(); }

Result<StepOutput> Engine::forward(std::span<const SequenceStep> steps, ForwardOptions options) {
  return impl_->forward(steps, options);
}

Result<StepOutput> Engine::forward_mtp(std::span<const SequenceStep> steps,
                                       std::span<const float> hidden, ForwardOptions options) {
  return impl_->forward_mtp(steps, hidden, options);
}

Result<std::span<const float>> Engine::head(std::span<const float> hidden, int rows) {
  Impl& e = *impl_;
  const int H = e.c.hidden_size, V = e.c.vocab_size;
  if (rows < 0 || hidden.size() != uz(rows) * uz(H))
    return invalid("head: expected rows x hidden_size floats");
  float* out = grow(e.out_logits, uz(rows) * uz(V));
  e.linear_rowwise(e.w.lm_head, hidden.data(), rows, out, V);
  return std::span<const float>(out, uz(rows) * uz(V));
}

}  // namespace omni::model
