// libFuzzer target: the client's response parse path (heads into omni's Headers, bodies into
// lent buffers, interim responses, keep-alive), fed as one connection's worth of bytes.
#include <cstddef>
#include <cstdint>

#include "response_parse.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)omni::http::detail::fuzz_parse_response(data, size);
  return 0;
}
