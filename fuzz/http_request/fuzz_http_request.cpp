// libFuzzer target: the server's request parse path (limits, head checks, conversion to
// omni::http::Request), fed as one connection's worth of bytes.
#include <cstddef>
#include <cstdint>

#include "request_parse.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)omni::http::detail::fuzz_parse_request(data, size);
  return 0;
}
