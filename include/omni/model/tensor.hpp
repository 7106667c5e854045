// Tensors as the checkpoint files hold them: a dtype, a shape and a pointer into memory that
// the WeightSource owns (usually a read-only mmap of the file). Nothing is converted on load:
// FP8 stays FP8 next to its block scales, q8_0 stays in its 34-byte blocks, and the kernels
// dequantize as they read.
//
//   f32 / f16 / bf16      row-major [rows][cols] (the last dimension is contiguous)
//   f8_e4m3               row-major bytes; DeepSeek's `weight_scale_inv` f32 [ceil(rows/128)]
//                         [ceil(cols/128)] multiplies block (r/128, c/128)
//   q8_0 (GGUF)           per row, cols/32 blocks of { f16 scale; int8 q[32] } (34 bytes)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace omni::model {

enum class DType { kF32, kF16, kBF16, kF8E4M3, kQ8_0, kI32, kI64, kF64 };

std::string_view dtype_name(DType dtype) noexcept;  // "f32", "bf16", "f8_e4m3", "q8_0", ...
// Bytes of one row of `cols` elements (q8_0: cols must be a multiple of 32).
std::size_t row_bytes(DType dtype, std::int64_t cols) noexcept;

inline constexpr int kQ8Block = 32;       // elements per q8_0 block
inline constexpr int kQ8BlockBytes = 34;  // f16 scale + 32 int8
inline constexpr int kFp8Block = 128;     // DeepSeek's FP8 block size (both dimensions)

struct TensorView {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<std::int64_t> shape;  // outermost first (safetensors order; GGUF reversed)
  const std::byte* data = nullptr;
  std::size_t bytes = 0;
  std::string file;  // where it came from, for error messages

  std::int64_t numel() const noexcept {
    std::int64_t n = 1;
    for (const auto d : shape) n *= d;
    return n;
  }
};

// A weight matrix y = W x with W [rows][cols], as the kernels see it. `experts` > 1 for a
// stack of equally shaped matrices (GGUF's ffn_*_exps), expert e at data + e * expert_stride.
struct Matrix {
  DType dtype = DType::kF32;
  int rows = 0;
  int cols = 0;
  const std::byte* data = nullptr;
  std::size_t row_stride = 0;  // bytes between rows
  // FP8 only: f32 [ceil(rows/128)][scale_cols] inverse scales (value = fp8 * scale).
  const float* scale_inv = nullptr;
  int scale_cols = 0;
  int row_offset = 0;  // FP8: the first row's index in the scale grid (after slice_rows)

  bool empty() const noexcept { return data == nullptr; }
  // Element (r, c) as float64, whatever the dtype (the reference reads weights this way).
  double at(int r, int c) const noexcept;
  // Rows [first, first + count) as a matrix of its own (shares the data and the scales).
  Matrix slice_rows(int first, int count) const noexcept;
};

// Scalar conversions shared by the reference, the loaders and the kernels' tails.
float f16_to_float(std::uint16_t h) noexcept;
std::uint16_t float_to_f16(float f) noexcept;  // round to nearest even
float bf16_to_float(std::uint16_t b) noexcept;
std::uint16_t float_to_bf16(float f) noexcept;     // round to nearest even, NaN stays NaN
float fp8_e4m3_to_float(std::uint8_t v) noexcept;  // 0x7f/0xff are NaN (no infinities)
std::uint8_t float_to_fp8_e4m3(float f) noexcept;  // round to nearest even, saturating at 448

}  // namespace omni::model
