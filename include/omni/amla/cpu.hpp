// MLA decode attention kernels for CPUs: a FlashAttention-style kernel with multiplicative
// rescaling ("flash") and the AMLA kernel ("amla": power-of-two rescales applied as an integer
// add to the float32 exponent bits), each for scalar code, AVX2+FMA and AVX-512 with
// AVX512-BF16 dot products. The instruction set is chosen once at start-up (the best this CPU
// has, or OMNI_FORCE_ISA=scalar|avx2|avx512) and can be passed explicitly (tests run every ISA).
//
// Work is split over (sequence, KV range) items, each computing all heads of its sequence so
// that every cache row is loaded once for all 128 heads; items of one sequence are merged by a
// split-KV combine step. The kernels own no threads: an Executor passed in runs the items.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "omni/amla/problem.hpp"
#include "omni/common/result.hpp"

namespace omni::amla {

enum class Isa { kScalar, kAvx2, kAvx512 };
enum class KernelKind { kFlash, kAmla };

std::string_view isa_name(Isa isa) noexcept;  // "scalar", "avx2", "avx512"
std::optional<Isa> parse_isa(std::string_view name) noexcept;
std::string_view kernel_name(KernelKind kind) noexcept;  // "flash", "amla"
std::optional<KernelKind> parse_kernel(std::string_view name) noexcept;

// Whether this CPU (and OS) runs `isa`: avx2 needs AVX2+FMA; avx512 needs AVX-512
// F/BW/VL/DQ and AVX512-BF16 (without BF16 the AVX2 kernels are used).
bool isa_supported(Isa isa) noexcept;
std::vector<Isa> supported_isas();  // scalar first, best last

// The best supported ISA, or `forced` (OMNI_FORCE_ISA's value) when given: an unknown name or
// an ISA this CPU lacks is an error, never a silent fallback.
Result<Isa> choose_isa(std::optional<std::string_view> forced);
// choose_isa(getenv("OMNI_FORCE_ISA")), evaluated once per process.
const Result<Isa>& runtime_isa();

// Runs independent tasks; `worker` < workers() names per-worker scratch. Threading: run() is
// called from one thread at a time and returns after every task has finished.
class Executor {
 public:
  virtual ~Executor() = default;
  virtual int workers() const noexcept = 0;
  virtual void run(int tasks, const std::function<void(int task, int worker)>& fn) = 0;
};

// Runs every task in the calling thread.
class InlineExecutor final : public Executor {
 public:
  int workers() const noexcept override { return 1; }
  void run(int tasks, const std::function<void(int task, int worker)>& fn) override {
    for (int t = 0; t < tasks; ++t) fn(t, 0);
  }
};

struct DecoderOptions {
  KernelKind kernel = KernelKind::kAmla;
  Isa isa = Isa::kScalar;
  // Split-KV: a sequence is cut into ranges of about total_keys / (workers * items_per_worker)
  // keys (multiples of the 64-key block), never shorter than min_split_keys.
  int items_per_worker = 2;
  int min_split_keys = 256;
  // Tests force splits with a fixed range length (a multiple of 64); 0 = automatic.
  int fixed_split_keys = 0;
};

// Checks the shape and spans of a problem: sizes, page/block-table consistency, lengths
// within the block table, and what the kernels need (head_dim even, dv a multiple of 64).
Status validate(const DecodeInputs& inputs, const DecodeOutputs& outputs);

// Threading: one run() at a time per decoder; decoders are independent. Scratch memory grows
// to the largest problem seen and is reused.
class CpuDecoder {
 public:
  explicit CpuDecoder(DecoderOptions options);
  ~CpuDecoder();
  CpuDecoder(CpuDecoder&&) noexcept;
  CpuDecoder& operator=(CpuDecoder&&) noexcept;

  const DecoderOptions& options() const noexcept;
  // out [batch, seqlen_q, heads_q, dv], lse [batch, heads_q, seqlen_q] (natural log). A row
  // that sees no key gets out = 0, lse = -inf. Errors: kInvalidArgument (see validate),
  // kUnsupported (the ISA is not supported here).
  Status run(const DecodeInputs& inputs, const DecodeOutputs& outputs, Executor& executor);
  // Number of work items of the last run (splits included).
  int last_items() const noexcept;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace omni::amla
