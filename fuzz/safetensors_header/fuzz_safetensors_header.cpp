// libFuzzer target for parse_safetensors: any bytes either parse into tensors that lie inside the
// input or are rejected with a message; never a crash or an out-of-bounds read.
#include <cstdint>
#include <cstdlib>
#include <span>

#include "omni/model/formats.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto bytes = std::as_bytes(std::span<const std::uint8_t>(data, size));
  auto parsed = omni::model::parse_safetensors(bytes, "fuzz");
  if (!parsed.ok()) {
    if (parsed.error().message.empty()) std::abort();
    return 0;
  }
  for (const auto& t : parsed->tensors) {
    if (t.data < bytes.data() || t.data + t.bytes > bytes.data() + bytes.size()) std::abort();
  }
  return 0;
}
