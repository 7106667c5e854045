// The CPU inference engine's model half: one forward pass over a batch plan.
//
//   StepBatch = [ SequenceStep { tokens, start_pos, pages, logits } ... ]
//        │ embed → per layer: attention (MLA) → MoE / dense MLP → final norm → lm_head
//        ▼
//   StepOutput: logits [rows][vocab] and the final hidden states [rows][hidden] (MTP's input)
//
// A sequence's latent KV cache lives in the PagedLatentCache in pages of `page_size` rows,
// one row per token per layer: kv_lora_rank normalised latent values followed by the RoPE'd
// key (512 + 64 for DeepSeek-V3). The caller owns page allocation (part 2: omni_engine's block
// pool; block id = page index) and passes each sequence's page list; the forward pass writes
// the new tokens' rows and reads the context's.
//
//   pages ──► cache[layer][page][slot][latent_dim]     (bf16, or f32 for exact tests)
//
// Attention: a step of <= absorbed_max_tokens new tokens over a context (decode: 1; the MTP
// verify step: 2) runs in the absorbed form on the AMLA kernel: q_abs = q_nope . W_UK per head,
// scores against the latent rows directly, out = P . latent, then W_UV and o_proj. Longer
// steps (prefill, chunked prefill) run in the expanded form: keys and values decompressed with
// kv_b for the context, then causal attention per head with GEMMs.
//
// Threading: one forward at a time per Engine; the Engine's ThreadPool runs the loops.
// Steady-state steps allocate nothing: scratch buffers grow to the largest step seen.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "omni/amla/cpu.hpp"
#include "omni/common/result.hpp"
#include "omni/model/thread_pool.hpp"
#include "omni/model/weights.hpp"

namespace omni::model {

enum class CacheDtype { kBF16, kF32 };

// How prefill GEMMs run: through OpenBLAS sgemm on dequantized weight panels, or this
// project's own multi-row kernels (the benchmark compares them).
enum class GemmBackend { kBlas, kOwn };

struct EngineOptions {
  int threads = 1;
  bool pin_threads = false;
  CacheDtype cache_dtype = CacheDtype::kBF16;
  int page_size = 64;
  int num_pages = 256;  // per layer
  int absorbed_max_tokens = 2;
  omni::amla::Isa isa = omni::amla::Isa::kScalar;  // usually runtime_isa()
  omni::amla::KernelKind attention_kernel = omni::amla::KernelKind::kAmla;
  // AMLA's split-KV ranges: a fixed length per sequence, so that a sequence's attention does
  // not depend on the rest of the batch (a multiple of 64; 0: AMLA's automatic plan).
  int split_keys = 256;
  GemmBackend gemm = GemmBackend::kBlas;
  // Fused operators (residual add + RMSNorm, norm + RoPE + cache write, one-pass router,
  // gate+up with SiLU-mul, absorbed q written in AMLA's layout); false runs each as the
  // unfused sequence of separate passes (the A/B benchmark's baseline).
  bool fused = true;
};

class PagedLatentCache {
 public:
  PagedLatentCache(int layers, int num_pages, int page_size, int row_width, CacheDtype dtype);
  int layers() const noexcept { return layers_; }
  int num_pages() const noexcept { return num_pages_; }
  int page_size() const noexcept { return page_size_; }
  int row_width() const noexcept { return width_; }
  CacheDtype dtype() const noexcept { return dtype_; }
  std::size_t bytes() const noexcept;
  // One layer's pages, [num_pages][page_size][row_width].
  std::span<std::uint16_t> layer_bf16(int layer);
  std::span<float> layer_f32(int layer);
  // One page of one layer: page_size rows of row_width elements of the cache dtype, contiguous
  // (what a PD transfer moves).
  std::size_t page_bytes() const noexcept;
  std::byte* page(int layer, int page) noexcept;
  // Row `pos` of a sequence with page list `pages`, as floats (tests; the reference check).
  void read_row(int layer, std::span<const std::int32_t> pages, int pos, float* out) const;

 private:
  int layers_, num_pages_, page_size_, width_;
  CacheDtype dtype_;
  std::vector<std::uint16_t> bf16_;
  std::vector<float> f32_;
};

struct SequenceStep {
  std::span<const std::int32_t> tokens;  // the new tokens of this step
  int start_pos = 0;                     // position of tokens[0] (= tokens already cached)
  std::span<const std::int32_t> pages;   // page list covering [0, start_pos + tokens.size())
  int logits = 1;                        // logits for the last `logits` tokens (-1: all; 0: none)
};

struct StepOutput {
  int rows = 0;                   // rows with logits, in step order
  std::span<const float> logits;  // [rows][vocab]
  std::span<const float> hidden;  // [rows][hidden], after the final norm
  // With ForwardOptions::all_hidden: the final (normed) hidden state of every token of the
  // step, [step tokens][hidden] in step order (the MTP module's input); else empty.
  std::span<const float> all_hidden;
};

struct ForwardOptions {
  bool all_hidden = false;
};

// Expert parallelism inside one engine (docs/engine.md): the routed experts of each MoE layer
// sit in slots owned by ranks, groups of the pool's workers (worker w belongs to rank
// w * ranks / workers); a rank computes only its own slots, from weights it holds in its own
// memory. Tokens reach an expert through the routing table: a sequence's source rank
// (sequence index % ranks, as DP attention would place it) names the slots that serve it,
// and a sequence's rows for one expert all go to one of them (so that a sequence's results
// never depend on which copy served it, nor on the rest of the batch).
struct ExpertSlot {
  int rank = 0;
  int expert = 0;      // logical expert id
  MlpWeights weights;  // points into memory its owner (the rank) holds
};
struct LayerExpertMap {
  std::vector<ExpertSlot> slots;
  // Per source rank and expert: targets[offsets[r * experts + e] .. offsets[r * experts + e + 1])
  // are the slot indices serving it (omni::placement::LayerRouting's shape).
  std::vector<std::uint32_t> offsets, targets;
};
struct ExpertMap {
  int ranks = 1;
  int experts = 0;
  std::vector<LayerExpertMap> layers;  // one per MoE layer, in layer order
};
// Live counts since the last reset: tokens routed to each (MoE layer, logical expert) and
// processed by each (MoE layer, slot) (slots only with an expert map), and the time spent in
// the MoE layers' expert computations.
struct ExpertCounters {
  int moe_layers = 0, experts = 0, slots = 0;
  std::vector<std::uint64_t> expert_tokens;  // [moe layer][expert]
  std::vector<std::uint64_t> slot_tokens;    // [moe layer][slot]
  double moe_seconds = 0.0;
  std::uint64_t steps = 0;
};

class Engine {
 public:
  // The model must outlive the engine. Errors: kInvalidArgument (options), kUnsupported (the
  // ISA is not available here).
  static Result<std::unique_ptr<Engine>> create(const LoadedModel& model, EngineOptions options);
  ~Engine();

  const ModelConfig& config() const noexcept;
  const EngineOptions& options() const noexcept;
  PagedLatentCache& cache() noexcept;
  ThreadPool& pool() noexcept;

  // The main model over a batch of sequence steps. Errors (kInvalidArgument): a token outside
  // the vocabulary, pages that do not cover the positions, a page outside the cache.
  //
  // A sequence's results depend only on its own tokens, cache and chunking, never on the rest
  // of the batch: steps of <= absorbed_max_tokens tokens (decodes, verifies) and any step of at
  // most 8 tokens go through the row-by-row weight-streaming kernels (one activation row's sums
  // never depend on the others), each longer step through its own GEMMs, the split-KV
  // attention is planned per sequence, and a row's experts are summed in expert order.
  Result<StepOutput> forward(std::span<const SequenceStep> steps, ForwardOptions options = {});
  // Logits of final (normed) hidden states, [rows][hidden] -> [rows][vocab] (a PD decode
  // instance's first token from the prefill instance's last hidden state).
  Result<std::span<const float>> head(std::span<const float> hidden, int rows);
  // The MTP module over the same kind of plan: tokens are the next tokens (position i + 1's),
  // `hidden` the main model's final hidden states of those rows (in step order), positions
  // start_pos + i; it keeps its own layer in the cache (layer index num_hidden_layers). Every
  // row gets draft logits. kUnsupported when the model has no MTP weights.
  Result<StepOutput> forward_mtp(std::span<const SequenceStep> steps, std::span<const float> hidden,
                                 ForwardOptions options = {});
  bool has_mtp() const noexcept;

  // Expert parallelism: the map the next forward passes use (between steps; null: off, every
  // expert from the model's own weights). The map and the memory it points to must stay valid
  // until the next set_expert_map() returns.
  Status set_expert_map(std::shared_ptr<const ExpertMap> map);
  const ExpertMap* expert_map() const noexcept;
  const ExpertCounters& expert_counters() const noexcept;
  void reset_expert_counters();

  struct Impl;

 private:
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace omni::model
