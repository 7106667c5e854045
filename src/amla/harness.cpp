#include "omni/amla/harness.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>

#include "omni/amla/bf16.hpp"

namespace omni::amla {
namespace {

constexpr bf16_bits kBf16QuietNan = 0x7fc0;

std::size_t to_size(std::int64_t value) { return static_cast<std::size_t>(value); }

// Approximately standard normal: the sum of four 16-bit uniforms (Irwin-Hall), centred and
// scaled to unit variance; tails end at +-3.46. One 64-bit draw per value, so the
// benchmarks' gigabyte caches fill in seconds rather than minutes.
float approx_normal(Random& random) {
  const std::uint64_t bits = random.next_u64();
  double sum = 0.0;
  for (int i = 0; i < 4; ++i) sum += static_cast<double>((bits >> (16 * i)) & 0xffffU) / 65536.0;
  return static_cast<float>((sum - 2.0) * 1.7320508075688772);
}

// A bf16 that is never +-0 (a zero would hide a missing multiply).
bf16_bits random_nonzero_bf16(Random& random) {
  for (;;) {
    const bf16_bits v = float_to_bf16(approx_normal(random));
    if ((v & 0x7fffU) != 0) return v;
  }
}

int pages_for(std::int32_t seqlen, int page_size) { return (seqlen + page_size - 1) / page_size; }

// Chooses a random page for every logical page in use and fills those rows; every other row
// of the cache stays NaN. Unused block-table entries point at NaN pages.
void fill_cache(TestCase& tc, Random& random) {
  const DecodeShape& s = tc.shape;
  std::vector<std::int32_t> pages(to_size(s.num_pages));
  std::iota(pages.begin(), pages.end(), 0);
  std::shuffle(pages.begin(), pages.end(), random);
  std::size_t next = 0;
  tc.block_table.assign(to_size(s.batch) * to_size(s.max_pages_per_seq), 0);
  for (int b = 0; b < s.batch; ++b) {
    const int used = pages_for(tc.seqlens_k[to_size(b)], s.page_size);
    for (int p = 0; p < used; ++p)
      tc.block_table[to_size(b * s.max_pages_per_seq + p)] = pages[next++];
  }
  const std::size_t first_spare = next;  // pages[first_spare..] are NaN pages
  for (int b = 0; b < s.batch; ++b) {
    const int used = pages_for(tc.seqlens_k[to_size(b)], s.page_size);
    for (int p = used; p < s.max_pages_per_seq; ++p) {
      const std::size_t spare =
          first_spare +
          to_size(random.uniform_int(0, static_cast<std::int64_t>(pages.size() - first_spare) - 1));
      tc.block_table[to_size(b * s.max_pages_per_seq + p)] = pages[spare];
    }
  }
  tc.kv_cache.assign(to_size(s.num_pages) * to_size(s.page_size) * to_size(s.head_dim),
                     kBf16QuietNan);
  for (int b = 0; b < s.batch; ++b) {
    for (int key = 0; key < tc.seqlens_k[to_size(b)]; ++key) {
      const auto page = tc.block_table[to_size(b * s.max_pages_per_seq + key / s.page_size)];
      const std::size_t row = to_size(page) * to_size(s.page_size) + to_size(key % s.page_size);
      for (int d = 0; d < s.head_dim; ++d)
        tc.kv_cache[row * to_size(s.head_dim) + to_size(d)] = random_nonzero_bf16(random);
    }
  }
}

}  // namespace

std::vector<std::int32_t> make_seqlens(int batch, int mean, bool variable, Random& random) {
  std::vector<std::int32_t> out(to_size(batch), mean);
  if (!variable) return out;
  for (auto& v : out) {
    const double draw = random.normal(mean, mean / 2.0);
    v = static_cast<std::int32_t>(std::clamp(draw, 1.0, 2.0 * mean));
  }
  return out;
}

DecodeInputs TestCase::inputs() const {
  DecodeInputs in;
  in.shape = shape;
  in.softmax_scale = softmax_scale;
  in.causal = causal;
  in.q = q;
  in.kv_cache = kv_cache;
  in.block_table = block_table;
  in.seqlens_k = seqlens_k;
  return in;
}

TestCase make_test_case(const CaseSpec& spec, Random& random) {
  TestCase tc;
  DecodeShape& s = tc.shape;
  s.batch = static_cast<int>(spec.seqlens_k.size());
  s.seqlen_q = spec.seqlen_q;
  s.heads_q = spec.heads_q;
  s.head_dim = spec.head_dim;
  s.dv = spec.dv;
  s.page_size = spec.page_size;
  int used_pages = 0;
  s.max_pages_per_seq = 1;
  for (const auto len : spec.seqlens_k) {
    used_pages += pages_for(len, s.page_size);
    s.max_pages_per_seq = std::max(s.max_pages_per_seq, pages_for(len, s.page_size));
  }
  s.num_pages = used_pages + std::max(spec.extra_pages, 1);
  tc.softmax_scale = spec.softmax_scale != 0.0f ? spec.softmax_scale : 1.0f / std::sqrt(192.0f);
  tc.causal = spec.causal;
  tc.seqlens_k = spec.seqlens_k;
  tc.q.resize(to_size(s.batch) * to_size(s.seqlen_q) * to_size(s.heads_q) * to_size(s.head_dim));
  for (auto& v : tc.q) v = random_nonzero_bf16(random);
  fill_cache(tc, random);
  return tc;
}

void poison(std::span<float> values) noexcept {
  std::fill(values.begin(), values.end(), std::numeric_limits<float>::quiet_NaN());
}

std::string Comparison::describe() const {
  std::ostringstream os;
  os << (passed ? "passed" : "FAILED") << ": " << elements << " elements, " << out_of_tolerance
     << " out of tolerance, " << nonfinite_mismatch << " NaN/inf mismatches, max abs error "
     << max_abs_error << ", max rel error " << max_rel_error << ", cos diff " << cos_diff
     << ", worst index " << worst_index;
  return os.str();
}

Comparison compare(std::span<const float> actual, std::span<const double> expected,
                   const Tolerance& tol) {
  Comparison c;
  c.elements = expected.size();
  if (actual.size() != expected.size()) {
    c.nonfinite_mismatch = std::max(actual.size(), expected.size());
    return c;
  }
  double dot = 0.0, norms = 0.0, worst_excess = -std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const double a = actual[i], e = expected[i];
    if (!std::isfinite(a) || !std::isfinite(e)) {
      const bool same = (std::isnan(a) && std::isnan(e)) ||
                        (std::isinf(a) && std::isinf(e) && (a > 0) == (e > 0));
      if (!same) {
        if (c.nonfinite_mismatch++ == 0) c.worst_index = i;
        worst_excess = std::numeric_limits<double>::infinity();
      }
      continue;
    }
    const double err = std::abs(a - e);
    c.max_abs_error = std::max(c.max_abs_error, err);
    c.max_rel_error = std::max(c.max_rel_error, err / std::max(std::abs(e), tol.abs));
    const double excess = err - (tol.abs + tol.rel * std::abs(e));
    if (excess > 0) ++c.out_of_tolerance;
    if (excess > worst_excess) {
      worst_excess = excess;
      c.worst_index = i;
    }
    dot += a * e;
    norms += a * a + e * e;
  }
  c.cos_diff = norms > 0.0 ? 1.0 - 2.0 * dot / norms : 0.0;
  c.passed = c.out_of_tolerance == 0 && c.nonfinite_mismatch == 0 && c.cos_diff <= tol.cos_diff;
  return c;
}

}  // namespace omni::amla
