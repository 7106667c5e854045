// Access to the shared golden files (/work/shared/protocol in the workspace). Tests that need
// them GTEST_SKIP() when they are absent, e.g. in a fresh clone outside the workspace.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace omni::kvcache::testing {

// $OMNI_SHARED_DIR/protocol when the variable is set, else the path configured by CMake.
std::filesystem::path protocol_dir();

// The parsed vllm_vectors.json, or nullopt (with `why` set) when it cannot be read.
std::optional<boost::json::value> load_vectors(std::string& why);
// The payload line of vllm_kv_event_batch.hex (comments skipped), or nullopt.
std::optional<std::string> load_batch_hex(std::string& why);

std::vector<std::uint8_t> from_hex(std::string_view hex);
std::string to_hex(const std::vector<std::uint8_t>& bytes);

}  // namespace omni::kvcache::testing
