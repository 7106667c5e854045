// AVX-512 kernels (16 lanes). Compiled with AVX-512 F/BW/VL/DQ flags.
// GCC 12 warns about its own intrinsics' undefined temporaries once inlined (see
// src/amla/kernel_avx512.cpp); silenced for this file only.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include "gemv_impl.hpp"

namespace omni::model::kernels {
namespace {

struct Avx512 {
  static constexpr int kLanes = 16;
  using F = __m512;
  static F zero() { return _mm512_setzero_ps(); }
  static F load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, F v) { _mm512_storeu_ps(p, v); }
  static F set1(float v) { return _mm512_set1_ps(v); }
  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F fma(F a, F b, F acc) { return _mm512_fmadd_ps(a, b, acc); }
  static float hsum(F v) { return _mm512_reduce_add_ps(v); }
  static F from_bf16(const std::uint16_t* p) {
    const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(raw), 16));
  }
  static F from_f16(const std::uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static F from_fp8(const std::uint8_t* p) {
    const __m256i b = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    const __m256i sign = _mm256_slli_epi16(_mm256_and_si256(b, _mm256_set1_epi16(0x80)), 8);
    const __m256i rest = _mm256_slli_epi16(_mm256_and_si256(b, _mm256_set1_epi16(0x7f)), 7);
    return _mm512_cvtph_ps(_mm256_or_si256(sign, rest));
  }
  static float half(std::uint16_t h) { return _cvtsh_ss(h); }
  static F from_i8(const std::int8_t* p) {
    return _mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  // e^x (Cephes' expf polynomial, ~1 ulp); 0 below e^-87.3 (and for -inf).
  static F exp(F x) {
    const F lo = set1(-87.33654f);
    const __mmask16 live = _mm512_cmp_ps_mask(x, lo, _CMP_GE_OQ);
    const F c = _mm512_min_ps(_mm512_max_ps(x, lo), set1(88.72283f));
    const F n = _mm512_roundscale_ps(_mm512_mul_ps(c, set1(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    F r = _mm512_fnmadd_ps(n, set1(0.693359375f), c);
    r = _mm512_fnmadd_ps(n, set1(-2.12194440e-4f), r);
    F y = set1(1.9875691500e-4f);
    y = fma(y, r, set1(1.3981999507e-3f));
    y = fma(y, r, set1(8.3334519073e-3f));
    y = fma(y, r, set1(4.1665795894e-2f));
    y = fma(y, r, set1(1.6666665459e-1f));
    y = fma(y, r, set1(5.0000001201e-1f));
    y = fma(y, _mm512_mul_ps(r, r), _mm512_add_ps(r, set1(1.0f)));
    const __m512i e =
        _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    return _mm512_maskz_mov_ps(live, _mm512_mul_ps(y, _mm512_castsi512_ps(e)));
  }
};

}  // namespace

const KernelTable& table_avx512() {
  static const KernelTable t = impl::make_table<Avx512>(omni::amla::Isa::kAvx512);
  return t;
}

}  // namespace omni::model::kernels
