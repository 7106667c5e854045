// libFuzzer target: the Mooncake JSON-line and Azure CSV-line parsers of omni_workload, and a
// whole trace stream through the lazy reader (line splitting, id normalisation, arrivals).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>

#include "omni/workload/trace.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)omni::workload::parse_mooncake_line(text);
  (void)omni::workload::parse_azure_line(text);
  (void)omni::workload::parse_azure_timestamp(text);
  for (auto format :
       {omni::workload::TraceFormat::kMooncake, omni::workload::TraceFormat::kAzure}) {
    omni::workload::TraceOptions options;
    options.system_prompt_tokens = 1024;
    auto workload = omni::workload::make_trace_workload(
        std::make_unique<std::istringstream>(std::string(text)), format, options);
    for (int i = 0; i < 64; ++i) {
      auto next = workload->next();
      if (!next.ok() || !next->has_value()) break;
      const auto& spec = **next;
      if (spec.hash_ids.size() != omni::workload::blocks_for(spec.input_tokens)) __builtin_trap();
    }
  }
  return 0;
}
