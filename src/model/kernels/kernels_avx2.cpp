// AVX2 + FMA + F16C kernels (8 lanes). Compiled with -mavx2 -mfma -mf16c.
#include <immintrin.h>

#include "gemv_impl.hpp"

namespace omni::model::kernels {
namespace {

struct Avx2 {
  static constexpr int kLanes = 8;
  using F = __m256;
  static F zero() { return _mm256_setzero_ps(); }
  static F load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, F v) { _mm256_storeu_ps(p, v); }
  static F set1(float v) { return _mm256_set1_ps(v); }
  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F fma(F a, F b, F acc) { return _mm256_fmadd_ps(a, b, acc); }
  static float hsum(F v) {
    const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
  }
  static F from_bf16(const std::uint16_t* p) {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(raw), 16));
  }
  static F from_f16(const std::uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static F from_fp8(const std::uint8_t* p) {
    const __m128i b = _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    const __m128i sign = _mm_slli_epi16(_mm_and_si128(b, _mm_set1_epi16(0x80)), 8);
    const __m128i rest = _mm_slli_epi16(_mm_and_si128(b, _mm_set1_epi16(0x7f)), 7);
    return _mm256_cvtph_ps(_mm_or_si128(sign, rest));
  }
  static float half(std::uint16_t h) { return _cvtsh_ss(h); }
  static F from_i8(const std::int8_t* p) {
    return _mm256_cvtepi32_ps(
        _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  // e^x (Cephes' expf polynomial, ~1 ulp); 0 below e^-87.3 (and for -inf).
  static F exp(F x) {
    const F lo = set1(-87.33654f);
    const F live = _mm256_cmp_ps(x, lo, _CMP_GE_OQ);
    const F c = _mm256_min_ps(_mm256_max_ps(x, lo), set1(88.72283f));
    const F n = _mm256_round_ps(_mm256_mul_ps(c, set1(1.44269504088896341f)),
                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    F r = _mm256_fnmadd_ps(n, set1(0.693359375f), c);
    r = _mm256_fnmadd_ps(n, set1(-2.12194440e-4f), r);
    F y = set1(1.9875691500e-4f);
    y = fma(y, r, set1(1.3981999507e-3f));
    y = fma(y, r, set1(8.3334519073e-3f));
    y = fma(y, r, set1(4.1665795894e-2f));
    y = fma(y, r, set1(1.6666665459e-1f));
    y = fma(y, r, set1(5.0000001201e-1f));
    y = fma(y, _mm256_mul_ps(r, r), _mm256_add_ps(r, set1(1.0f)));
    const __m256i e =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_and_ps(live, _mm256_mul_ps(y, _mm256_castsi256_ps(e)));
  }
};

}  // namespace

const KernelTable& table_avx2() {
  static const KernelTable t = impl::make_table<Avx2>(omni::amla::Isa::kAvx2);
  return t;
}

}  // namespace omni::model::kernels
