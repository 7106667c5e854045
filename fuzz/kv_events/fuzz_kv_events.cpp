// libFuzzer target for the KV-event decoder (untrusted bytes from any engine's PUB socket).
// Whatever decodes must re-encode to a payload that decodes and re-encodes identically.
#include <cstdint>
#include <cstdlib>
#include <span>

#include "omni/kvcache/kv_events.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace omni::kvcache;
  auto decoded = decode_batch(std::span<const std::uint8_t>(data, size));
  if (!decoded.ok()) return 0;
  for (EventLayout layout : {EventLayout::kArray, EventLayout::kMap}) {
    const auto first = encode_batch(decoded->batch, layout);
    auto again = decode_batch(first);
    if (!again.ok()) std::abort();
    // Bytes, not structs, are compared: a NaN timestamp never equals itself.
    if (encode_batch(again->batch, layout) != first) std::abort();
  }
  return 0;
}
