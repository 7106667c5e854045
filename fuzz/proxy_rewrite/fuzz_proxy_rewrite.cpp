// libFuzzer target: omni-proxy's request rewriting (inspect, prefill/decode/bootstrap bodies).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "rewrite_fuzz_checks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::string failure = omni::proxy::fuzz::check_rewrites(input);
  if (!failure.empty()) {
    std::fprintf(stderr, "property violated: %s\n", failure.c_str());
    std::abort();
  }
  return 0;
}
