// libFuzzer target for the .npy reader (src/placement/io/io_npy.cpp): any bytes must give either
// an error or an array whose value count matches its shape, never a crash or an overread.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "omni/placement/io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto array = omni::placement::parse_npy(std::span<const std::uint8_t>(data, size));
  if (!array.ok()) return 0;
  std::size_t count = 1;
  for (std::size_t dim : array->shape) count *= dim;
  if (count != array->values.size() || array->shape.size() > omni::placement::kMaxNpyDims) {
    std::abort();
  }
  return 0;
}
