// Element conversions and the Matrix element accessor.
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "omni/model/tensor.hpp"

namespace omni::model {

std::string_view dtype_name(DType dtype) noexcept {
  switch (dtype) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kF8E4M3: return "f8_e4m3";
    case DType::kQ8_0: return "q8_0";
    case DType::kI32: return "i32";
    case DType::kI64: return "i64";
    case DType::kF64: return "f64";
  }
  return "unknown";
}

std::size_t row_bytes(DType dtype, std::int64_t cols) noexcept {
  const auto n = static_cast<std::size_t>(cols);
  switch (dtype) {
    case DType::kF32:
    case DType::kI32: return n * 4;
    case DType::kF16:
    case DType::kBF16: return n * 2;
    case DType::kF8E4M3: return n;
    case DType::kQ8_0: return n / kQ8Block * kQ8BlockBytes;
    case DType::kI64:
    case DType::kF64: return n * 8;
  }
  return 0;
}

float f16_to_float(std::uint16_t h) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000U) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1fU;
  const std::uint32_t mantissa = h & 0x3ffU;
  if (exponent == 0) {
    const float value = std::ldexp(static_cast<float>(mantissa), -24);
    return sign != 0 ? -value : value;
  }
  if (exponent == 31) {
    return std::bit_cast<float>(sign | 0x7f800000U | (mantissa << 13));
  }
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

std::uint16_t float_to_f16(float f) noexcept {
  const auto bits = std::bit_cast<std::uint32_t>(f);
  const auto sign = static_cast<std::uint16_t>((bits >> 16) & 0x8000U);
  const float a = std::fabs(f);
  if (std::isnan(f)) return static_cast<std::uint16_t>(sign | 0x7e00U);
  if (a >= 65520.0f) return static_cast<std::uint16_t>(sign | 0x7c00U);
  if (a < 6.103515625e-05f) {  // subnormal: multiples of 2^-24, rounded to nearest even
    const float q = std::nearbyint(std::ldexp(a, 24));
    return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(q));
  }
  std::uint32_t abs_bits = bits & 0x7fffffffU;
  const std::uint32_t round = 0xfffU + ((abs_bits >> 13) & 1U);
  abs_bits += round;
  const std::uint32_t exponent = (abs_bits >> 23) - 112;
  return static_cast<std::uint16_t>(sign | (exponent << 10) | ((abs_bits >> 13) & 0x3ffU));
}

float bf16_to_float(std::uint16_t b) noexcept {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

std::uint16_t float_to_bf16(float f) noexcept {
  const auto bits = std::bit_cast<std::uint32_t>(f);
  if ((bits & 0x7fffffffU) > 0x7f800000U) return static_cast<std::uint16_t>((bits >> 16) | 0x40U);
  const std::uint32_t rounding = 0x7fffU + ((bits >> 16) & 1U);
  return static_cast<std::uint16_t>((bits + rounding) >> 16);
}

float fp8_e4m3_to_float(std::uint8_t v) noexcept {
  const bool negative = (v & 0x80U) != 0;
  const int exponent = (v >> 3) & 0xf;
  const int mantissa = v & 0x7;
  if (exponent == 15 && mantissa == 7) return std::numeric_limits<float>::quiet_NaN();
  float value;
  if (exponent == 0) {
    value = std::ldexp(static_cast<float>(mantissa), -9);  // m/8 * 2^-6
  } else {
    value = std::ldexp(1.0f + static_cast<float>(mantissa) / 8.0f, exponent - 7);
  }
  return negative ? -value : value;
}

std::uint8_t float_to_fp8_e4m3(float f) noexcept {
  if (std::isnan(f)) return 0x7f;
  const std::uint8_t sign = std::signbit(f) ? 0x80 : 0x00;
  float a = std::fabs(f);
  if (a >= 448.0f) return static_cast<std::uint8_t>(sign | 0x7e);  // saturate at the max finite
  // Nearest representable value by search over the 127 non-negative finite codes: exact
  // round-to-nearest-even without bit tricks (make-model only, not a hot path).
  int best = 0;
  float best_err = std::numeric_limits<float>::infinity();
  for (int code = 0; code < 0x7f; ++code) {
    const float v = fp8_e4m3_to_float(static_cast<std::uint8_t>(code));
    const float err = std::fabs(v - a);
    if (err < best_err || (err == best_err && (code & 1) == 0)) {
      best = code;
      best_err = err;
    }
  }
  return static_cast<std::uint8_t>(sign | best);
}

double Matrix::at(int r, int c) const noexcept {
  const std::byte* row = data + static_cast<std::size_t>(r) * row_stride;
  switch (dtype) {
    case DType::kF32: {
      float v;
      std::memcpy(&v, row + static_cast<std::size_t>(c) * 4, 4);
      return v;
    }
    case DType::kF16:
    case DType::kBF16: {
      std::uint16_t v;
      std::memcpy(&v, row + static_cast<std::size_t>(c) * 2, 2);
      return dtype == DType::kF16 ? f16_to_float(v) : bf16_to_float(v);
    }
    case DType::kF8E4M3: {
      const auto v = static_cast<std::uint8_t>(row[static_cast<std::size_t>(c)]);
      const int sr = (row_offset + r) / kFp8Block, sc = c / kFp8Block;
      const double scale =
          scale_inv
              ? scale_inv[static_cast<std::size_t>(sr) * static_cast<std::size_t>(scale_cols) +
                          static_cast<std::size_t>(sc)]
              : 1.0;
      return static_cast<double>(fp8_e4m3_to_float(v)) * scale;
    }
    case DType::kQ8_0: {
      const std::byte* block =
          row + static_cast<std::size_t>(c / kQ8Block) * static_cast<std::size_t>(kQ8BlockBytes);
      std::uint16_t d;
      std::memcpy(&d, block, 2);
      const auto q = static_cast<std::int8_t>(block[2 + c % kQ8Block]);
      return static_cast<double>(f16_to_float(d)) * q;
    }
    default: return std::numeric_limits<double>::quiet_NaN();
  }
}

Matrix Matrix::slice_rows(int first, int count) const noexcept {
  Matrix m = *this;
  m.data = data + static_cast<std::size_t>(first) * row_stride;
  m.rows = count;
  m.row_offset = row_offset + first;
  return m;
}

}  // namespace omni::model
