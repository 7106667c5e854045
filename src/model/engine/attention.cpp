// MLA attention: the latent cache rows written (norm + RoPE fused into the write), then the
// absorbed form on AMLA for steps of <= absorbed_max_tokens tokens and the expanded form with
// GEMMs for longer ones.
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine_impl.hpp"

namespace omni::model {

void Engine::Impl::write_latents(int layer, const AttentionWeights& a) {
  const int width = c.latent_dim(), lora = c.kv_lora_rank;
  const auto eps = static_cast<float>(c.rms_norm_eps);
  for (int r = 0; r < rows; ++r) {
    const SeqRows& s = seqs[uz(row_seq[uz(r)])];
    const int pos = row_pos[uz(r)];
    const std::size_t row =
        (uz(s.pages[uz(pos / o.page_size)]) * uz(o.page_size) + uz(pos % o.page_size)) * uz(width);
    std::uint16_t* d16 =
        cache.dtype() == CacheDtype::kBF16 ? cache.layer_bf16(layer).data() + row : nullptr;
    float* d32 = cache.dtype() == CacheDtype::kF32 ? cache.layer_f32(layer).data() + row : nullptr;
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
void Engine::Impl::attend_expanded(int layer, const AttentionWeights& a, const SeqRows& s) {
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
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, L, nope, lora, 1.0f, C, lora, wbuf, lora,
                  0.0f, kn, nope);
    }
    K.dequant(uv, 0, uv.rows, wbuf);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, L, vd, lora, 1.0f, C, lora, wbuf, lora,
                0.0f, vv, vd);
    const float* qh = q.data() + uz(s.first) * uz(heads) * uz(qk) + uz(hd) * uz(qk);
    const int ldq = heads * qk;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, L, nope, scale, qh, ldq, kn, nope, 0.0f,
                sc, L);
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
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, vd, L, 1.0f, sc, L, vv, vd, 0.0f, dst,
                heads * vd);
  });
}

// The absorbed form on AMLA for the sequences in amla_seqs (all with `T` new tokens).
void Engine::Impl::attend_absorbed(int layer, const AttentionWeights& a, int T) {
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

void Engine::Impl::attention(int layer, const AttentionWeights& a, const float* xin, float* out) {
  const int H = c.hidden_size, heads = c.num_attention_heads, qk = c.qk_head_dim();
  float* qv = grow(q, uz(rows) * uz(heads) * uz(qk));
  if (c.q_lora_rank > 0) {
    float* qav = grow(qa, uz(rows) * uz(c.q_lora_rank));
    linear_step(a.q_a, xin, qav, c.q_lora_rank);
    for (int r = 0; r < rows; ++r) {
      float* row = qav + uz(r) * uz(c.q_lora_rank);
      ops::rmsnorm(row, a.q_a_norm.data(), c.q_lora_rank, static_cast<float>(c.rms_norm_eps), row);
    }
    linear_step(a.q_b, qav, qv, heads * qk);
  } else {
    linear_step(a.q, xin, qv, heads * qk);
  }
  linear_step(a.kv_a, xin, grow(kv, uz(rows) * uz(c.latent_dim())), c.latent_dim());
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
  linear_step(a.o, attn_heads.data(), out, H);
}

}  // namespace omni::model
