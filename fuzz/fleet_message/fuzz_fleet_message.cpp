// libFuzzer target: the fleet sync's message decoder (what any NATS client may publish on a
// fleet's subject). A message decodes or is refused; one that decodes re-encodes to a message
// that decodes to the same value.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "fleet_fuzz_checks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::string failure = omni::fleet::fuzz::check_message(input);
  if (!failure.empty()) {
    std::fprintf(stderr, "property violated: %s\n", failure.c_str());
    std::abort();
  }
  return 0;
}
