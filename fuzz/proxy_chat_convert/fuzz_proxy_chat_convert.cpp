// libFuzzer target: omni-proxy's chat → completions conversion (client chat bodies, engine
// stream payloads and bodies). See chat_convert_fuzz_checks.hpp for the properties.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "chat_convert_fuzz_checks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::string failure = omni::proxy::fuzz::check_chat_convert(input);
  if (!failure.empty()) {
    std::fprintf(stderr, "property violated: %s\n", failure.c_str());
    std::abort();
  }
  return 0;
}
