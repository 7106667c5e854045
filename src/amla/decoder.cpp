// CpuDecoder: validation, split-KV planning, dispatch to the per-ISA kernels and the combine
// step that merges the partial results of a sequence's KV ranges.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kernel.hpp"
#include "omni/amla/cpu.hpp"
#include "omni/amla/reference.hpp"

namespace omni::amla {
namespace {

using detail_kernel::ItemOutput;
using detail_kernel::KernelScratch;
using detail_kernel::WorkItem;

std::size_t sz(int v) { return static_cast<std::size_t>(v); }

Error invalid(std::string message) {
  return make_error(ErrorCode::kInvalidArgument, std::move(message));
}

Status validate_shape(const DecodeShape& s) {
  if (s.batch < 1 || s.seqlen_q < 1 || s.heads_q < 1)
    return invalid("batch, seqlen_q and heads_q must be >= 1");
  if (s.head_dim < 2 || s.head_dim % 2 != 0 || s.head_dim > 8192)
    return invalid("head_dim must be even, in 2..8192");
  if (s.dv < 64 || s.dv % 64 != 0 || s.dv > s.head_dim)
    return invalid("dv must be a multiple of 64, <= head_dim");
  if (s.page_size < 1 || s.max_pages_per_seq < 1 || s.num_pages < 1) {
    return invalid("page_size, max_pages_per_seq and num_pages must be >= 1");
  }
  return ok_status();
}

Status validate_sizes(const DecodeInputs& in, const DecodeOutputs& out) {
  const DecodeShape& s = in.shape;
  const std::size_t q_size = in.is_f32() ? in.q_f32.size() : in.q.size();
  const std::size_t kv_size = in.is_f32() ? in.kv_cache_f32.size() : in.kv_cache.size();
  if (in.is_f32() && (!in.q.empty() || !in.kv_cache.empty()))
    return invalid("fp32 inputs: q and kv_cache (bf16) must be empty");
  if (q_size != sz(s.batch) * sz(s.seqlen_q) * sz(s.heads_q) * sz(s.head_dim))
    return invalid("q: wrong size");
  if (kv_size != sz(s.num_pages) * sz(s.page_size) * sz(s.head_dim))
    return invalid("kv_cache: wrong size");
  if (in.block_table.size() != sz(s.batch) * sz(s.max_pages_per_seq))
    return invalid("block_table: wrong size");
  if (in.seqlens_k.size() != sz(s.batch)) return invalid("seqlens_k: wrong size");
  if (out.out.size() != out_elements(s)) return invalid("out: wrong size");
  if (out.lse.size() != lse_elements(s)) return invalid("lse: wrong size");
  if (!std::isfinite(in.softmax_scale)) return invalid("softmax_scale must be finite");
  return ok_status();
}

Status validate_pages(const DecodeInputs& in) {
  const DecodeShape& s = in.shape;
  for (int b = 0; b < s.batch; ++b) {
    const int len = in.seqlens_k[sz(b)];
    if (len < 0 || len > s.max_pages_per_seq * s.page_size) {
      return invalid("seqlens_k[" + std::to_string(b) + "] outside 0..max_pages_per_seq*page_size");
    }
    const int used = (len + s.page_size - 1) / s.page_size;
    for (int p = 0; p < used; ++p) {
      const auto page = in.block_table[sz(b * s.max_pages_per_seq + p)];
      if (page < 0 || page >= s.num_pages) {
        return invalid("block_table[" + std::to_string(b) + "][" + std::to_string(p) +
                       "] outside 0..num_pages-1");
      }
    }
  }
  return ok_status();
}

}  // namespace

Status validate(const DecodeInputs& inputs, const DecodeOutputs& outputs) {
  if (auto st = validate_shape(inputs.shape); !st) return st;
  if (auto st = validate_sizes(inputs, outputs); !st) return st;
  return validate_pages(inputs);
}

struct CpuDecoder::State {
  DecoderOptions options;
  std::vector<WorkItem> items;
  std::vector<int> first_item;  // per sequence: index of its first item; items are contiguous
  std::vector<KernelScratch> scratch;
  detail_kernel::AlignedArray<float> partial_out;  // [slot][rows][dv]
  std::vector<float> item_lse;                     // [item][rows]
  int last_items = 0;

  void plan(const DecodeInputs& in, int workers);
  void run_item(const DecodeInputs& in, const DecodeOutputs& out, int index, int worker);
  void combine(const DecodeInputs& in, const DecodeOutputs& out, int batch);
};

void CpuDecoder::State::plan(const DecodeInputs& in, int workers) {
  const DecodeShape& s = in.shape;
  long total = 0;
  for (const auto len : in.seqlens_k) total += len;
  int chunk = options.fixed_split_keys;
  if (chunk <= 0) {
    const long target_items = std::max(1L, static_cast<long>(workers) * options.items_per_worker);
    const long per_item = (total + target_items - 1) / target_items;
    const long rounded = (per_item + detail_kernel::kBlockKeys - 1) / detail_kernel::kBlockKeys *
                         detail_kernel::kBlockKeys;
    chunk = static_cast<int>(std::max<long>(rounded, options.min_split_keys));
  }
  items.clear();
  first_item.assign(sz(s.batch), 0);
  int slots = 0;
  for (int b = 0; b < s.batch; ++b) {
    first_item[sz(b)] = static_cast<int>(items.size());
    const int len = in.seqlens_k[sz(b)];
    const int splits = std::max(1, (len + chunk - 1) / chunk);
    for (int i = 0; i < splits; ++i) {
      WorkItem item{b, i * chunk, std::min(len, (i + 1) * chunk), splits > 1 ? slots++ : -1};
      items.push_back(item);
    }
  }
  const int rows = s.seqlen_q * s.heads_q;
  partial_out.get(std::max<std::size_t>(1, sz(slots) * sz(rows) * sz(s.dv)));
  item_lse.resize(items.size() * sz(rows));
  if (scratch.size() < sz(workers)) scratch.resize(sz(workers));
  last_items = static_cast<int>(items.size());
}

void CpuDecoder::State::run_item(const DecodeInputs& in, const DecodeOutputs& out, int index,
                                 int worker) {
  const DecodeShape& s = in.shape;
  const WorkItem& item = items[sz(index)];
  const std::size_t rows = sz(s.seqlen_q) * sz(s.heads_q);
  ItemOutput dst;
  dst.lse_rows = item_lse.data() + sz(index) * rows;
  dst.out_rows = item.partial_slot < 0
                     ? out.out.data() + sz(item.batch) * rows * sz(s.dv)
                     : partial_out.get(0) + sz(item.partial_slot) * rows * sz(s.dv);
  KernelScratch& sc = scratch[sz(worker)];
  switch (options.isa) {
    case Isa::kScalar: detail_kernel::run_item_scalar(in, item, options.kernel, sc, dst); break;
    case Isa::kAvx2: detail_kernel::run_item_avx2(in, item, options.kernel, sc, dst); break;
    case Isa::kAvx512:
      if (in.is_f32()) {  // fp32 inputs: the fp32 FMA kernels (AVX2 is part of AVX-512)
        detail_kernel::run_item_avx2(in, item, options.kernel, sc, dst);
      } else {
        detail_kernel::run_item_avx512(in, item, options.kernel, sc, dst);
      }
      break;
  }
}

// Merges a sequence's items: lse = log sum_i exp(lse_i), out = sum_i exp(lse_i - lse) out_i;
// writes lse in the [batch, heads_q, seqlen_q] layout.
void CpuDecoder::State::combine(const DecodeInputs& in, const DecodeOutputs& out, int batch) {
  const DecodeShape& s = in.shape;
  const int rows = s.seqlen_q * s.heads_q;
  const int first = first_item[sz(batch)];
  const int count =
      (batch + 1 < s.batch ? first_item[sz(batch + 1)] : static_cast<int>(items.size())) - first;
  std::vector<float> weights(sz(count));
  for (int m = 0; m < rows; ++m) {
    float lse = item_lse[sz(first) * sz(rows) + sz(m)];
    if (count > 1) {
      float top = -std::numeric_limits<float>::infinity();
      for (int i = 0; i < count; ++i)
        top = std::max(top, item_lse[sz(first + i) * sz(rows) + sz(m)]);
      float* dst = out.out.data() + (sz(batch) * sz(rows) + sz(m)) * sz(s.dv);
      std::fill_n(dst, s.dv, 0.0f);
      if (top == -std::numeric_limits<float>::infinity()) {
        lse = top;
      } else {
        float total = 0.0f;
        for (int i = 0; i < count; ++i) {
          weights[sz(i)] = std::exp(item_lse[sz(first + i) * sz(rows) + sz(m)] - top);
          total += weights[sz(i)];
        }
        for (int i = 0; i < count; ++i) {
          const float w = weights[sz(i)] / total;
          const float* src = partial_out.get(0) +
                             (sz(items[sz(first + i)].partial_slot) * sz(rows) + sz(m)) * sz(s.dv);
          for (int d = 0; d < s.dv; ++d) dst[d] += w * src[d];
        }
        lse = top + std::log(total);
      }
    }
    const int token = m / s.heads_q, head = m % s.heads_q;
    out.lse[(sz(batch) * sz(s.heads_q) + sz(head)) * sz(s.seqlen_q) + sz(token)] = lse;
  }
}

CpuDecoder::CpuDecoder(DecoderOptions options) : state_(std::make_unique<State>()) {
  state_->options = options;
}
CpuDecoder::~CpuDecoder() = default;
CpuDecoder::CpuDecoder(CpuDecoder&&) noexcept = default;
CpuDecoder& CpuDecoder::operator=(CpuDecoder&&) noexcept = default;

const DecoderOptions& CpuDecoder::options() const noexcept { return state_->options; }
int CpuDecoder::last_items() const noexcept { return state_->last_items; }

Status CpuDecoder::run(const DecodeInputs& inputs, const DecodeOutputs& outputs,
                       Executor& executor) {
  if (!isa_supported(state_->options.isa)) {
    return make_error(ErrorCode::kUnsupported,
                      "this CPU does not support " + std::string(isa_name(state_->options.isa)));
  }
  if (auto st = validate(inputs, outputs); !st) return st;
  const int workers = std::max(1, executor.workers());
  state_->plan(inputs, workers);
  State& st = *state_;
  executor.run(static_cast<int>(st.items.size()), [&st, &inputs, &outputs](int task, int worker) {
    st.run_item(inputs, outputs, task, worker);
  });
  executor.run(inputs.shape.batch,
               [&st, &inputs, &outputs](int batch, int) { st.combine(inputs, outputs, batch); });
  return ok_status();
}

}  // namespace omni::amla
