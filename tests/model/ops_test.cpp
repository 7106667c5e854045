// The fused operators and the per-ISA kernels, each fused and unfused, against plain float64
// loops: residual add + RMSNorm, norm + RoPE + cache-row write, the one-pass router, gate+up
// with SiLU-mul on the tile, dequantizing GEMV/GEMV-transposed for every dtype and ISA.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "../../src/model/engine/ops.hpp"
#include "../../src/model/kernels/kernels.hpp"
#include "test_models.hpp"

namespace omni::model {
namespace {

std::vector<float> randn(std::size_t n, std::uint64_t seed, float scale = 1.0f) {
  std::mt19937_64 g(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

TEST(FusedOps, AddRmsNormMatchesFloat64) {
  const int n = 200;
  const auto h0 = randn(n, 1), delta = randn(n, 2), w = randn(n, 3, 0.2f);
  std::vector<double> eh(n), ex(n);
  double ss = 0;
  for (int i = 0; i < n; ++i)
    ss += (eh[static_cast<std::size_t>(i)] =
               double(h0[static_cast<std::size_t>(i)]) + delta[static_cast<std::size_t>(i)]) *
          eh[static_cast<std::size_t>(i)];
  const double inv = 1.0 / std::sqrt(ss / n + 1e-6);
  for (int i = 0; i < n; ++i)
    ex[static_cast<std::size_t>(i)] =
        w[static_cast<std::size_t>(i)] * eh[static_cast<std::size_t>(i)] * inv;
  for (const bool fused : {true, false}) {
    auto h = h0;
    std::vector<float> out(n);
    (fused ? ops::add_rmsnorm : ops::add_rmsnorm_unfused)(h.data(), delta.data(), w.data(), n,
                                                          1e-6f, out.data());
    EXPECT_LT(testing::max_rel_error(h, eh, 1.0), 1e-6);
    EXPECT_LT(testing::max_rel_error(out, ex, 1.0), 1e-5);
  }
}

TEST(FusedOps, LatentRowMatchesFloat64) {
  auto c = testing::micro_config();
  const int lora = c.kv_lora_rank, rd = c.qk_rope_head_dim;
  const auto kv = randn(static_cast<std::size_t>(lora + rd), 4),
             norm = randn(static_cast<std::size_t>(lora), 5, 0.3f);
  const auto inv_freq = c.rope_inv_freq();
  for (const bool interleave : {true, false}) {
    c.rope_interleave = interleave;
    ops::RopeTable table(c);
    table.reserve(1000);
    const int pos = 777;
    std::vector<double> expect(static_cast<std::size_t>(lora + rd));
    double ss = 0;
    for (int i = 0; i < lora; ++i)
      ss += double(kv[static_cast<std::size_t>(i)]) * kv[static_cast<std::size_t>(i)];
    for (int i = 0; i < lora; ++i)
      expect[static_cast<std::size_t>(i)] = norm[static_cast<std::size_t>(i)] *
                                            kv[static_cast<std::size_t>(i)] /
                                            std::sqrt(ss / lora + c.rms_norm_eps);
    const double af = c.rope_attention_factor();
    for (int i = 0; i < rd / 2; ++i) {
      const int a = interleave ? 2 * i : i, b = interleave ? 2 * i + 1 : i + rd / 2;
      const double th = pos * inv_freq[static_cast<std::size_t>(i)];
      const double x = kv[static_cast<std::size_t>(lora + a)],
                   y = kv[static_cast<std::size_t>(lora + b)];
      expect[static_cast<std::size_t>(lora + a)] = (x * std::cos(th) - y * std::sin(th)) * af;
      expect[static_cast<std::size_t>(lora + b)] = (y * std::cos(th) + x * std::sin(th)) * af;
    }
    for (const bool fused : {true, false}) {
      std::vector<float> row(expect.size()), scratch(expect.size());
      std::vector<std::uint16_t> row16(expect.size());
      if (fused) {
        ops::latent_row(table, kv.data(), norm.data(), lora, static_cast<float>(c.rms_norm_eps),
                        pos, nullptr, row.data());
        ops::latent_row(table, kv.data(), norm.data(), lora, static_cast<float>(c.rms_norm_eps),
                        pos, row16.data(), nullptr);
      } else {
        ops::latent_row_unfused(table, kv.data(), norm.data(), lora,
                                static_cast<float>(c.rms_norm_eps), pos, nullptr, row.data(),
                                scratch.data());
        ops::latent_row_unfused(table, kv.data(), norm.data(), lora,
                                static_cast<float>(c.rms_norm_eps), pos, row16.data(), nullptr,
                                scratch.data());
      }
      EXPECT_LT(testing::max_rel_error(row, expect, 1.0), 2e-5) << fused << interleave;
      for (std::size_t i = 0; i < row16.size(); ++i) EXPECT_EQ(row16[i], float_to_bf16(row[i]));
    }
  }
}

TEST(FusedOps, RouterMatchesTheReferenceRouter) {
  for (const auto arch : {Arch::kDeepseekV3, Arch::kDeepseekV2}) {
    auto c = testing::micro_config(arch);
    auto src = to_source(random_weights(c, 8), DType::kF32);
    auto w = bind_weights(c, **src, true);
    ASSERT_TRUE(w.ok());
    const MoeWeights& moe = w->layers[1].moe;
    ops::RouterScratch scratch;
    for (int t = 0; t < 200; ++t) {
      const auto x =
          randn(static_cast<std::size_t>(c.hidden_size), 100 + static_cast<std::uint64_t>(t));
      std::vector<double> xd(x.begin(), x.end());
      std::vector<float> logits(static_cast<std::size_t>(c.n_routed_experts));
      for (int e = 0; e < c.n_routed_experts; ++e) {
        double s = 0;
        for (int i = 0; i < c.hidden_size; ++i)
          s += xd[static_cast<std::size_t>(i)] * moe.router.at(e, i);
        logits[static_cast<std::size_t>(e)] = static_cast<float>(s);
      }
      auto ref = reference_route(c, moe, xd);
      std::sort(ref.begin(), ref.end(), [](auto& a, auto& b) { return a.expert < b.expert; });
      for (const bool fused : {true, false}) {
        std::vector<int> ex(static_cast<std::size_t>(c.num_experts_per_tok));
        std::vector<float> wt(ex.size());
        const float* bias = moe.bias.empty() ? nullptr : moe.bias.data();
        if (fused) {
          ops::route(c, logits.data(), bias, ex.data(), wt.data());
        } else {
          ops::route_unfused(c, logits.data(), bias, ex.data(), wt.data(), scratch);
        }
        std::vector<std::pair<int, float>> got;
        for (std::size_t k = 0; k < ex.size(); ++k) got.push_back({ex[k], wt[k]});
        std::sort(got.begin(), got.end());
        ASSERT_EQ(got.size(), ref.size());
        for (std::size_t k = 0; k < got.size(); ++k) {
          EXPECT_EQ(got[k].first, ref[k].expert)
              << "token " << t << (fused ? " fused" : " unfused");
          EXPECT_NEAR(got[k].second, ref[k].weight, 1e-5);
        }
      }
    }
  }
}

// Every dtype's weights through every ISA's kernels, against Matrix::at in float64.
TEST(Kernels, EveryDtypeOnEveryIsaMatchesFloat64) {
  const int rows = 40, cols = 256;
  std::map<std::string, MasterTensor> master;
  master["w"] = {{rows, cols}, randn(static_cast<std::size_t>(rows * cols), 9, 0.5f)};
  master["u"] = {{rows, cols}, randn(static_cast<std::size_t>(rows * cols), 10, 0.5f)};
  const auto x = randn(static_cast<std::size_t>(4 * cols), 11);
  const auto xt = randn(static_cast<std::size_t>(rows), 12);
  for (const DType dtype : {DType::kF32, DType::kBF16, DType::kF16, DType::kF8E4M3}) {
    auto src = to_source(master, dtype);
    ASSERT_TRUE(src.ok());
    auto mat = [&](const char* n) {
      const TensorView* t = (*src)->find(n);
      Matrix m{t->dtype, rows, cols, t->data, row_bytes(t->dtype, cols)};
      if (const TensorView* s = (*src)->find(std::string(n) + "_scale_inv")) {
        m.scale_inv = reinterpret_cast<const float*>(s->data);
        m.scale_cols = 2;
      }
      return m;
    };
    const Matrix w = mat("w"), u = mat("u");
    std::vector<double> y(4 * rows), act(4 * rows), yt(cols, 0.0);
    for (int i = 0; i < 4; ++i) {
      for (int r = 0; r < rows; ++r) {
        double s = 0, su = 0;
        for (int c = 0; c < cols; ++c) {
          s += w.at(r, c) * x[static_cast<std::size_t>(i * cols + c)];
          su += u.at(r, c) * x[static_cast<std::size_t>(i * cols + c)];
        }
        y[static_cast<std::size_t>(i * rows + r)] = s;
        act[static_cast<std::size_t>(i * rows + r)] = s / (1 + std::exp(-s)) * su;
      }
    }
    for (int r = 0; r < rows; ++r) {
      for (int c = 0; c < cols; ++c)
        yt[static_cast<std::size_t>(c)] += xt[static_cast<std::size_t>(r)] * w.at(r, c);
    }
    for (const auto isa : omni::amla::supported_isas()) {
      const auto& K = kernels::table(isa);
      std::vector<float> got(4 * rows, NAN), got_act(4 * rows, NAN), got_t(cols, NAN),
          deq(static_cast<std::size_t>(rows * cols));
      K.gemv(w, 0, rows, x.data(), cols, 4, got.data(), rows);
      K.gate_up(w, u, 0, rows, x.data(), cols, 4, got_act.data(), rows);
      K.gemv_t(w, xt.data(), got_t.data());
      K.dequant(w, 0, rows, deq.data());
      const std::string what =
          std::string(dtype_name(dtype)) + " on " + std::string(omni::amla::isa_name(isa));
      EXPECT_LT(testing::max_rel_error(got, y, 1.0), 1e-5) << what;
      EXPECT_LT(testing::max_rel_error(got_act, act, 10.0), 1e-5)
          << what;  // products of two dots: scale 10
      EXPECT_LT(testing::max_rel_error(got_t, yt, 1.0), 1e-5) << what;
      for (int i = 0; i < rows * cols; i += 37)
        EXPECT_EQ(deq[static_cast<std::size_t>(i)], static_cast<float>(w.at(i / cols, i % cols)))
            << what;
    }
  }
}

TEST(Kernels, ExpSumOnEveryIsaMatchesFloat64) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-30.0f, 5.0f);
  std::vector<float> x(1037);  // not a multiple of any vector width
  for (auto& v : x) v = dist(rng);
  x[5] = -std::numeric_limits<float>::infinity();  // a masked logit: exactly 0
  x[9] = -100.0f;                                  // below e^-87: 0 too
  for (const auto isa : omni::amla::supported_isas()) {
    std::vector<float> out(x.size(), -1.0f);
    const double sum =
        kernels::table(isa).exp_sum(x.data(), static_cast<int>(x.size()), 2.0f, out.data());
    double want = 0.0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      // The kernels take x - shift in float, as the sampler's float logits are.
      const double e = std::exp(static_cast<double>(x[i] - 2.0f));
      want += e;
      EXPECT_NEAR(out[i], e, 4e-7 * e + 1e-38) << omni::amla::isa_name(isa) << " at " << i;
    }
    EXPECT_EQ(out[5], 0.0f);
    EXPECT_EQ(out[9], 0.0f);
    EXPECT_NEAR(sum, want, 1e-6 * want) << omni::amla::isa_name(isa);
  }
}

TEST(Kernels, Q8BlocksOnEveryIsa) {
  testing::TempDir dir;
  const auto c = testing::micro_config();
  ASSERT_TRUE(
      write_gguf_checkpoint(dir.path() / "q.gguf", c, random_weights(c, 2), DType::kQ8_0, nullptr)
          .ok());
  auto m = load_model(dir.path() / "q.gguf");
  ASSERT_TRUE(m.ok()) << m.error().message;
  const Matrix& w = (*m)->weights.layers[0].attn.kv_a;
  ASSERT_EQ(w.dtype, DType::kQ8_0);
  const auto x = randn(static_cast<std::size_t>(w.cols), 5);
  std::vector<double> y(static_cast<std::size_t>(w.rows));
  for (int r = 0; r < w.rows; ++r) {
    for (int k = 0; k < w.cols; ++k)
      y[static_cast<std::size_t>(r)] += w.at(r, k) * x[static_cast<std::size_t>(k)];
  }
  for (const auto isa : omni::amla::supported_isas()) {
    std::vector<float> got(static_cast<std::size_t>(w.rows));
    kernels::table(isa).gemv(w, 0, w.rows, x.data(), w.cols, 1, got.data(), w.rows);
    EXPECT_LT(testing::max_rel_error(got, y, 1.0), 1e-5) << omni::amla::isa_name(isa);
  }
}

}  // namespace
}  // namespace omni::model
