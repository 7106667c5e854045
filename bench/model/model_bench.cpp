// model-bench: the engine's figures for bench/model/run.sh, as one JSON object.
//   model-bench MODEL --threads N [--pp 512] [--tg 128] [--rounds 3]
// Every A/B pair runs alternately, round by round, and reports medians:
//   pp_tps, tg_tps                 the engine (bf16 latent cache, fused, BLAS prefill)
//   tg_unfused_tps, pp_unfused_tps the same with the unfused operator sequences
//   pp_own_gemm_tps                prefill on this project's multi-row kernels instead of sgemm
//   verify_over_step               a 2-token MTP verify step's time / a 1-token step's, at the
//                                  end of the pp-token context
//   membw_gbs                      read bandwidth of `threads` threads over a 1 GiB buffer
//   active_bytes                   weight bytes one decode token reads (embedding row, every
//                                  attention and dense matrix, the router, top_k experts and the
//                                  shared expert per MoE layer, the head)
//   op_*_ns                        each fused operator and its unfused sequence, per call
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "../../src/model/engine/ops.hpp"
#include "../../src/model/kernels/kernels.hpp"
#include "omni/model/blas_env.hpp"
#include "omni/model/engine.hpp"

namespace {

using namespace omni::model;
using Clock = std::chrono::steady_clock;
double secs(Clock::time_point a) { return std::chrono::duration<double>(Clock::now() - a).count(); }
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::vector<std::int32_t> prompt_tokens(int n, int vocab) {
  std::vector<std::int32_t> t(static_cast<std::size_t>(n));
  std::uint64_t s = 12345;
  for (auto& x : t) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    x = static_cast<std::int32_t>((s >> 33) % static_cast<std::uint64_t>(std::min(vocab, 100000)));
  }
  return t;
}

std::vector<std::int32_t> pages_for(const Engine& e, int tokens) {
  std::vector<std::int32_t> p(
      static_cast<std::size_t>((tokens + e.options().page_size - 1) / e.options().page_size));
  std::iota(p.begin(), p.end(), 0);
  return p;
}

double prefill_seconds(Engine& e, const std::vector<std::int32_t>& prompt) {
  const auto pages = pages_for(e, static_cast<int>(prompt.size()) + 2);
  SequenceStep s{prompt, 0, pages, 1};
  const auto t = Clock::now();
  if (!e.forward(std::span(&s, 1))) std::abort();
  return secs(t);
}

// tg decode steps after a short prompt; returns seconds per token.
double decode_seconds(Engine& e, int context, int tg) {
  auto toks = prompt_tokens(context + tg, e.config().vocab_size);
  const auto pages = pages_for(e, context + tg + 2);
  SequenceStep s{std::span(toks).first(static_cast<std::size_t>(context)), 0, pages, 1};
  if (!e.forward(std::span(&s, 1))) std::abort();
  const auto t = Clock::now();
  for (int i = 0; i < tg; ++i) {
    SequenceStep d{std::span(toks).subspan(static_cast<std::size_t>(context + i), 1), context + i,
                   pages, 1};
    if (!e.forward(std::span(&d, 1))) std::abort();
  }
  return secs(t) / tg;
}

// Median time of an n-token step (n = 1 or 2) at the end of a `context`-token sequence.
double step_seconds(Engine& e, int context, int n, int reps) {
  auto toks = prompt_tokens(context + n, e.config().vocab_size);
  const auto pages = pages_for(e, context + n + 2);
  SequenceStep s{std::span(toks).first(static_cast<std::size_t>(context)), 0, pages, 1};
  if (!e.forward(std::span(&s, 1))) std::abort();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    SequenceStep d{
        std::span(toks).subspan(static_cast<std::size_t>(context), static_cast<std::size_t>(n)),
        context, pages, n};
    const auto a = Clock::now();
    if (!e.forward(std::span(&d, 1))) std::abort();
    t.push_back(secs(a));
  }
  return median(t);
}

// Streams [a, b) through eight independent vector accumulators: a read as fast as the memory
// system delivers (a scalar sum would be bound by the add latency instead).
__attribute__((target("avx512f"))) float stream_avx512(const float* p, std::size_t n) {
  __m512 acc[8];
  for (auto& v : acc) v = _mm512_setzero_ps();
  for (std::size_t k = 0; k + 128 <= n; k += 128) {
    for (int j = 0; j < 8; ++j)
      acc[j] = _mm512_add_ps(acc[j], _mm512_loadu_ps(p + k + 16 * static_cast<std::size_t>(j)));
  }
  for (int j = 1; j < 8; ++j) acc[0] = _mm512_add_ps(acc[0], acc[j]);
  return _mm512_reduce_add_ps(acc[0]);
}

__attribute__((target("avx2"))) float stream_avx2(const float* p, std::size_t n) {
  __m256 acc[8];
  for (auto& v : acc) v = _mm256_setzero_ps();
  for (std::size_t k = 0; k + 64 <= n; k += 64) {
    for (int j = 0; j < 8; ++j)
      acc[j] = _mm256_add_ps(acc[j], _mm256_loadu_ps(p + k + 8 * static_cast<std::size_t>(j)));
  }
  for (int j = 1; j < 8; ++j) acc[0] = _mm256_add_ps(acc[0], acc[j]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc[0]);
  return lanes[0] + lanes[7];
}

double membw_gbs(int threads) {
  const std::size_t n = (std::size_t{1} << 30) / sizeof(float);
  std::vector<float> buf(n, 1.0f);
  std::vector<double> rates;
  for (int round = 0; round < 5; ++round) {
    std::vector<double> sums(static_cast<std::size_t>(threads));
    const auto t = Clock::now();
    std::vector<std::thread> pool;
    for (int i = 0; i < threads; ++i) {
      pool.emplace_back([&, i] {
        const std::size_t a = n / static_cast<std::size_t>(threads) * static_cast<std::size_t>(i);
        const std::size_t b = a + n / static_cast<std::size_t>(threads);
        sums[static_cast<std::size_t>(i)] = __builtin_cpu_supports("avx512f")
                                                ? stream_avx512(buf.data() + a, b - a)
                                                : stream_avx2(buf.data() + a, b - a);
      });
    }
    for (auto& th : pool) th.join();
    rates.push_back(static_cast<double>(n * sizeof(float)) / secs(t) / 1e9);
    if (sums[0] < 0) std::abort();
  }
  return *std::max_element(rates.begin(), rates.end());
}

double matrix_bytes(const Matrix& m) {
  return m.empty() ? 0.0 : static_cast<double>(m.row_stride) * m.rows;
}
double mlp_bytes(const MlpWeights& m) {
  return matrix_bytes(m.gate) + matrix_bytes(m.up) + matrix_bytes(m.down);
}

double active_bytes(const LoadedModel& m) {
  const auto& c = m.config;
  double b = matrix_bytes(m.weights.embed) / c.vocab_size + matrix_bytes(m.weights.lm_head);
  for (const auto& l : m.weights.layers) {
    const auto& a = l.attn;
    b += matrix_bytes(a.q) + matrix_bytes(a.q_a) + matrix_bytes(a.q_b) + matrix_bytes(a.kv_a) +
         matrix_bytes(a.o);
    for (const auto& u : a.uk) b += matrix_bytes(u);
    for (const auto& v : a.uv) b += matrix_bytes(v);
    if (!l.is_moe) {
      b += mlp_bytes(l.dense);
    } else {
      b += matrix_bytes(l.moe.router) + mlp_bytes(l.moe.shared) +
           c.num_experts_per_tok * mlp_bytes(l.moe.experts[0]);
    }
  }
  return b;
}

template <class F>
double ns_per_call(F&& f, int reps) {
  std::vector<double> t;
  for (int r = 0; r < 7; ++r) {
    const auto a = Clock::now();
    for (int i = 0; i < reps; ++i) f();
    t.push_back(secs(a) / reps * 1e9);
  }
  return median(t);
}

struct Args {
  std::string model;
  int threads = 1, pp = 512, tg = 128, rounds = 3;
};

}  // namespace

int main(int argc, char** argv) {
  omni::model::prefer_openblas_core(argv);
  Args a;
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: model-bench MODEL [--threads N] [--pp 512] [--tg 128] [--rounds 3]\n");
    return 2;
  }
  a.model = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const int v = std::atoi(argv[i + 1]);
    if (k == "--threads")
      a.threads = v;
    else if (k == "--pp")
      a.pp = v;
    else if (k == "--tg")
      a.tg = v;
    else if (k == "--rounds")
      a.rounds = v;
  }
  auto m = load_model(a.model, false);
  if (!m) {
    std::fprintf(stderr, "model-bench: %s\n", m.error().message.c_str());
    return 1;
  }
  EngineOptions base;
  base.threads = a.threads;
  base.isa = *omni::amla::runtime_isa();
  base.num_pages = (a.pp + a.tg + 256) / base.page_size + 1;
  auto make = [&](bool fused, GemmBackend gemm) {
    EngineOptions o = base;
    o.fused = fused;
    o.gemm = gemm;
    auto e = Engine::create(**m, o);
    if (!e) std::abort();
    return std::move(*e);
  };
  auto fused = make(true, GemmBackend::kBlas);
  auto unfused = make(false, GemmBackend::kBlas);
  auto own = make(true, GemmBackend::kOwn);
  const auto prompt = prompt_tokens(a.pp, (*m)->config.vocab_size);
  std::vector<double> pp, pp_u, pp_own, tg, tg_u, v1, v2;
  prefill_seconds(*fused, prompt);  // warm-up: page faults of the mapping
  for (int r = 0; r < a.rounds; ++r) {
    pp.push_back(a.pp / prefill_seconds(*fused, prompt));
    pp_u.push_back(a.pp / prefill_seconds(*unfused, prompt));
    pp_own.push_back(a.pp / prefill_seconds(*own, prompt));
    tg.push_back(1.0 / decode_seconds(*fused, 16, a.tg));
    tg_u.push_back(1.0 / decode_seconds(*unfused, 16, a.tg));
    v1.push_back(step_seconds(*fused, a.pp, 1, 5));
    v2.push_back(step_seconds(*fused, a.pp, 2, 5));
  }
  // Operator micro-benchmarks (one token of the model's shapes).
  const auto& c = (*m)->config;
  const int H = c.hidden_size;
  std::vector<float> h(static_cast<std::size_t>(H), 0.5f), d(static_cast<std::size_t>(H), 0.25f),
      w(static_cast<std::size_t>(H), 1.0f), out(static_cast<std::size_t>(H));
  const double norm_f = ns_per_call(
      [&] { omni::model::ops::add_rmsnorm(h.data(), d.data(), w.data(), H, 1e-6f, out.data()); },
      20000);
  const double norm_u = ns_per_call(
      [&] {
        omni::model::ops::add_rmsnorm_unfused(h.data(), d.data(), w.data(), H, 1e-6f, out.data());
      },
      20000);
  omni::model::ops::RopeTable rope(c);
  rope.reserve(1024);
  std::vector<float> kv(static_cast<std::size_t>(c.latent_dim()), 0.3f),
      knorm(static_cast<std::size_t>(c.kv_lora_rank), 1.0f), scratch(kv.size());
  std::vector<std::uint16_t> row(kv.size());
  const auto eps = static_cast<float>(c.rms_norm_eps);
  const double lat_f = ns_per_call(
      [&] {
        omni::model::ops::latent_row(rope, kv.data(), knorm.data(), c.kv_lora_rank, eps, 700,
                                     row.data(), nullptr);
      },
      20000);
  const double lat_u = ns_per_call(
      [&] {
        omni::model::ops::latent_row_unfused(rope, kv.data(), knorm.data(), c.kv_lora_rank, eps,
                                             700, row.data(), nullptr, scratch.data());
      },
      20000);
  std::vector<float> logits(static_cast<std::size_t>(c.n_routed_experts));
  for (std::size_t i = 0; i < logits.size(); ++i)
    logits[i] = static_cast<float>(std::sin(0.7 * static_cast<double>(i)));
  std::vector<float> bias(logits.size(), 0.05f),
      wts(static_cast<std::size_t>(c.num_experts_per_tok));
  std::vector<int> ex(wts.size());
  omni::model::ops::RouterScratch rs;
  const float* bp = c.topk_method == TopkMethod::kNoauxTc ? bias.data() : nullptr;
  const double route_f = ns_per_call(
      [&] { omni::model::ops::route(c, logits.data(), bp, ex.data(), wts.data()); }, 20000);
  const double route_u = ns_per_call(
      [&] { omni::model::ops::route_unfused(c, logits.data(), bp, ex.data(), wts.data(), rs); },
      20000);
  // gate+up with SiLU-mul on the tile vs two GEMVs and two passes, one expert, one token.
  const auto& K = omni::model::kernels::table(base.isa);
  const MlpWeights* mlp = nullptr;
  for (const auto& l : (*m)->weights.layers) {
    if (l.is_moe) mlp = &l.moe.experts[0];
  }
  const int I = mlp->gate.rows;
  std::vector<float> x(static_cast<std::size_t>(H), 0.1f), g(static_cast<std::size_t>(I)),
      u(static_cast<std::size_t>(I)), act(static_cast<std::size_t>(I));
  const double gu_f = ns_per_call(
      [&] { K.gate_up(mlp->gate, mlp->up, 0, I, x.data(), H, 1, act.data(), I); }, 2000);
  const double gu_u = ns_per_call(
      [&] {
        K.gemv(mlp->gate, 0, I, x.data(), H, 1, g.data(), I);
        K.gemv(mlp->up, 0, I, x.data(), H, 1, u.data(), I);
        for (int i = 0; i < I; ++i)
          g[static_cast<std::size_t>(i)] =
              g[static_cast<std::size_t>(i)] / (1.0f + std::exp(-g[static_cast<std::size_t>(i)]));
        for (int i = 0; i < I; ++i)
          act[static_cast<std::size_t>(i)] =
              g[static_cast<std::size_t>(i)] * u[static_cast<std::size_t>(i)];
      },
      2000);
  // Dequantization inside the GEMV vs dequantizing a copy of the weights first.
  std::vector<float> copy(static_cast<std::size_t>(I) * static_cast<std::size_t>(H));
  Matrix f32view{DType::kF32, I, H, reinterpret_cast<const std::byte*>(copy.data()),
                 static_cast<std::size_t>(H) * 4};
  const double dq_f =
      ns_per_call([&] { K.gemv(mlp->gate, 0, I, x.data(), H, 1, g.data(), I); }, 2000);
  const double dq_u = ns_per_call(
      [&] {
        K.dequant(mlp->gate, 0, I, copy.data());
        K.gemv(f32view, 0, I, x.data(), H, 1, g.data(), I);
      },
      2000);
  const double bw = membw_gbs(a.threads);
  const double bytes = active_bytes(**m);
  const double tg_med = median(tg);
  std::printf(
      "{\"model\":\"%s\",\"dtype\":\"%s\",\"threads\":%d,\"isa\":\"%s\",\"pp\":%d,\"tg\":%d,"
      "\"pp_tps\":%.2f,\"pp_unfused_tps\":%.2f,\"pp_own_gemm_tps\":%.2f,\"tg_tps\":%.3f,\"tg_"
      "unfused_tps\":%.3f,"
      "\"step1_ms\":%.3f,\"step2_ms\":%.3f,\"verify_over_step\":%.3f,\"membw_gbs\":%.2f,\"active_"
      "bytes\":%.0f,"
      "\"bandwidth_fraction\":%.3f,\"op_add_rmsnorm_ns\":[%.1f,%.1f],\"op_latent_row_ns\":[%.1f,%."
      "1f],"
      "\"op_router_ns\":[%.1f,%.1f],\"op_gate_up_ns\":[%.1f,%.1f],\"op_dequant_gemv_ns\":[%.1f,%."
      "1f]}\n",
      a.model.c_str(), std::string(dtype_name((*m)->weights.layers[0].attn.kv_a.dtype)).c_str(),
      a.threads, std::string(omni::amla::isa_name(base.isa)).c_str(), a.pp, a.tg, median(pp),
      median(pp_u), median(pp_own), tg_med, median(tg_u), median(v1) * 1e3, median(v2) * 1e3,
      median(v2) / median(v1), bw, bytes, tg_med * bytes / (bw * 1e9), norm_f, norm_u, lat_f, lat_u,
      route_f, route_u, gu_f, gu_u, dq_f, dq_u);
  return 0;
}
