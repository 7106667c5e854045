#include "omni/amla/reference.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <vector>

#include "omni/amla/bf16.hpp"

namespace omni::amla {
namespace {

std::size_t to_size(int value) { return static_cast<std::size_t>(value); }

// One cache row (head_dim values) of logical key `key` of sequence `batch`.
const bf16_bits* cache_row(const DecodeInputs& in, int batch, int key) {
  const DecodeShape& s = in.shape;
  const int logical_page = key / s.page_size;
  const auto page = in.block_table[to_size(batch * s.max_pages_per_seq + logical_page)];
  const std::size_t row = to_size(page) * to_size(s.page_size) + to_size(key % s.page_size);
  return in.kv_cache.data() + row * to_size(s.head_dim);
}

// Softmax-weighted sum of V for one query row over `keys` visible keys.
void reference_row(const DecodeInputs& in, int batch, const bf16_bits* q, int keys,
                   std::span<double> out_row, double& lse) {
  const DecodeShape& s = in.shape;
  if (keys == 0) {
    std::fill(out_row.begin(), out_row.end(), 0.0);
    lse = -std::numeric_limits<double>::infinity();
    return;
  }
  std::vector<double> scores(to_size(keys));
  double max_score = -std::numeric_limits<double>::infinity();
  for (int k = 0; k < keys; ++k) {
    const bf16_bits* row = cache_row(in, batch, k);
    double dot = 0.0;
    for (int d = 0; d < s.head_dim; ++d) {
      dot += static_cast<double>(bf16_to_float(q[d])) * static_cast<double>(bf16_to_float(row[d]));
    }
    scores[to_size(k)] = dot * static_cast<double>(in.softmax_scale);
    max_score = std::max(max_score, scores[to_size(k)]);
  }
  double sum = 0.0;
  std::fill(out_row.begin(), out_row.end(), 0.0);
  for (int k = 0; k < keys; ++k) {
    const double p = std::exp(scores[to_size(k)] - max_score);
    sum += p;
    const bf16_bits* row = cache_row(in, batch, k);
    for (int d = 0; d < s.dv; ++d)
      out_row[to_size(d)] += p * static_cast<double>(bf16_to_float(row[d]));
  }
  for (double& v : out_row) v /= sum;
  lse = max_score + std::log(sum);
}

}  // namespace

std::size_t out_elements(const DecodeShape& s) noexcept {
  return to_size(s.batch) * to_size(s.seqlen_q) * to_size(s.heads_q) * to_size(s.dv);
}

std::size_t lse_elements(const DecodeShape& s) noexcept {
  return to_size(s.batch) * to_size(s.heads_q) * to_size(s.seqlen_q);
}

int visible_keys(int seqlen_k, int seqlen_q, int token, bool causal) noexcept {
  if (!causal) return seqlen_k;
  return std::clamp(seqlen_k - seqlen_q + token + 1, 0, seqlen_k);
}

void reference_decode(const DecodeInputs& in, std::span<double> out, std::span<double> lse) {
  const DecodeShape& s = in.shape;
  assert(out.size() == out_elements(s) && lse.size() == lse_elements(s));
  for (int b = 0; b < s.batch; ++b) {
    const int seqlen_k = in.seqlens_k[to_size(b)];
    for (int t = 0; t < s.seqlen_q; ++t) {
      const int keys = visible_keys(seqlen_k, s.seqlen_q, t, in.causal);
      for (int h = 0; h < s.heads_q; ++h) {
        const std::size_t row =
            (to_size(b) * to_size(s.seqlen_q) + to_size(t)) * to_size(s.heads_q) + to_size(h);
        const bf16_bits* q = in.q.data() + row * to_size(s.head_dim);
        double& row_lse =
            lse[(to_size(b) * to_size(s.heads_q) + to_size(h)) * to_size(s.seqlen_q) + to_size(t)];
        reference_row(in, b, q, keys, out.subspan(row * to_size(s.dv), to_size(s.dv)), row_lse);
      }
    }
  }
}

}  // namespace omni::amla
