// Scalar kernels: the portable fallback (one lane).
#include <cmath>

#include "gemv_impl.hpp"

namespace omni::model::kernels {
namespace {

struct Scalar {
  static constexpr int kLanes = 1;
  using F = float;
  static F zero() { return 0.0f; }
  static F load(const float* p) { return *p; }
  static void store(float* p, F v) { *p = v; }
  static F set1(float v) { return v; }
  static F add(F a, F b) { return a + b; }
  static F mul(F a, F b) { return a * b; }
  static F fma(F a, F b, F acc) { return acc + a * b; }
  static float hsum(F v) { return v; }
  static F from_bf16(const std::uint16_t* p) { return bf16_to_float(*p); }
  static F from_f16(const std::uint16_t* p) { return f16_to_float(*p); }
  static F from_fp8(const std::uint8_t* p) { return fp8_e4m3_to_float(*p) / 256.0f; }
  static float half(std::uint16_t h) { return f16_to_float(h); }
  static F from_i8(const std::int8_t* p) { return static_cast<float>(*p); }
  // As the vector kernels: 0 below e^-87.3 (no denormal results), std::exp above.
  static F exp(F x) { return x < -87.33654f ? 0.0f : std::exp(x); }
};

}  // namespace

const KernelTable& table_scalar() {
  static const KernelTable t = impl::make_table<Scalar>(omni::amla::Isa::kScalar);
  return t;
}

const KernelTable& table(omni::amla::Isa isa) {
  switch (isa) {
    case omni::amla::Isa::kAvx512: return table_avx512();
    case omni::amla::Isa::kAvx2: return table_avx2();
    case omni::amla::Isa::kScalar: break;
  }
  return table_scalar();
}

}  // namespace omni::model::kernels
