// One MLA decode attention problem in the weight-absorbed form (DeepSeek-V3 shapes), laid out
// as FlashMLA lays it out, shared by the reference, the CPU kernels and the CUDA kernel.
//
//   q           [batch, seqlen_q, heads_q, head_dim]            bf16 (or fp16 on GPU)
//   kv_cache    [num_pages, page_size, head_dim]                one KV head; V = first dv columns
//   block_table [batch, max_pages_per_seq]                      page index per logical page
//   seqlens_k   [batch]                                         0 allowed
//   out         [batch, seqlen_q, heads_q, dv]                  fp32 here (the kernels accumulate
//                                                              in fp32; the GPU may store bf16)
//   lse         [batch, heads_q, seqlen_q]                      natural-log log-sum-exp; -inf for
//                                                              a row that sees no key
// Causal (seqlen_q > 1): query token i of seqlen_q sees keys [0, seqlen_k - seqlen_q + i].
#pragma once

#include <cstdint>
#include <span>

namespace omni::amla {

// bfloat16 storage: the top 16 bits of an IEEE-754 float32.
using bf16_bits = std::uint16_t;

struct DecodeShape {
  int batch = 1;
  int seqlen_q = 1;  // 1, or 2 with MTP
  int heads_q = 128;
  int head_dim = 576;  // 512 latent + 64 RoPE
  int dv = 512;        // V width: the first dv columns of each cache row
  int page_size = 64;
  int max_pages_per_seq = 0;
  int num_pages = 0;
};

struct DecodeInputs {
  DecodeShape shape;
  float softmax_scale = 0.0f;  // usually 1/sqrt(192) for DeepSeek-V3 (nope 128 + rope 64)
  bool causal = true;
  std::span<const bf16_bits> q;
  std::span<const bf16_bits> kv_cache;
  std::span<const std::int32_t> block_table;
  std::span<const std::int32_t> seqlens_k;
  // fp32 inputs instead of bf16 (an engine with an fp32 latent cache): when kv_cache_f32 is
  // set, q_f32 and kv_cache_f32 are read and q / kv_cache must be empty. The scalar and AVX2
  // kernels run them (on an AVX-512 machine the AVX2 kernels do: there is no fp32 dot-product
  // instruction to gain from); the reference does not take them.
  std::span<const float> q_f32;
  std::span<const float> kv_cache_f32;
  bool is_f32() const noexcept { return !kv_cache_f32.empty(); }
};

struct DecodeOutputs {
  std::span<float> out;
  std::span<float> lse;
};

}  // namespace omni::amla
