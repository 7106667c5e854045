// Instruction-set detection and the start-up choice (OMNI_FORCE_ISA).
#include <cstdlib>
#include <string>

#include "omni/amla/cpu.hpp"

namespace omni::amla {

std::string_view isa_name(Isa isa) noexcept {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
  }
  return "unknown";
}

std::optional<Isa> parse_isa(std::string_view name) noexcept {
  for (const Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    if (name == isa_name(isa)) return isa;
  }
  return std::nullopt;
}

std::string_view kernel_name(KernelKind kind) noexcept {
  return kind == KernelKind::kAmla ? "amla" : "flash";
}

std::optional<KernelKind> parse_kernel(std::string_view name) noexcept {
  if (name == "amla") return KernelKind::kAmla;
  if (name == "flash") return KernelKind::kFlash;
  return std::nullopt;
}

bool isa_supported(Isa isa) noexcept {
  __builtin_cpu_init();
  switch (isa) {
    case Isa::kScalar: return true;
    case Isa::kAvx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("fma");
  }
  return false;
}

std::vector<Isa> supported_isas() {
  std::vector<Isa> out;
  for (const Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    if (isa_supported(isa)) out.push_back(isa);
  }
  return out;
}

Result<Isa> choose_isa(std::optional<std::string_view> forced) {
  if (!forced || forced->empty()) return supported_isas().back();
  const auto isa = parse_isa(*forced);
  if (!isa) {
    return make_error(
        ErrorCode::kInvalidArgument,
        "OMNI_FORCE_ISA: unknown ISA '" + std::string(*forced) + "' (scalar|avx2|avx512)");
  }
  if (!isa_supported(*isa)) {
    return make_error(ErrorCode::kUnsupported,
                      "OMNI_FORCE_ISA: this CPU does not support " + std::string(isa_name(*isa)));
  }
  return *isa;
}

const Result<Isa>& runtime_isa() {
  static const Result<Isa> chosen = [] {
    const char* forced = std::getenv("OMNI_FORCE_ISA");
    return choose_isa(forced ? std::optional<std::string_view>(forced) : std::nullopt);
  }();
  return chosen;
}

}  // namespace omni::amla
