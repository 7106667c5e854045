// libFuzzer target for SseParser: it parses what engines send, so it is untrusted input.
// Crashes and sanitizer reports are findings; so is any broken invariant (sse_invariants.hpp).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "sse_invariants.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::string broken = omni::http::fuzzing::check_sse_invariants(input);
  if (!broken.empty()) {
    std::fprintf(stderr, "SSE parser invariant broken: %s\n", broken.c_str());
    std::abort();
  }
  return 0;
}
