// The build's identity, as every binary's --version prints it: the project version (CMake's
// project()), the git commit the build was configured from, and the build type. The commit and
// the build type are empty when unknown (a build from a tarball, a multi-config generator).
// Plain C++17 so that CUDA-only binaries can include it too.
#pragma once

#include <string>
#include <string_view>

namespace omni {

std::string_view version() noexcept;     // "0.1.0"
std::string_view git_commit() noexcept;  // "1a2b3c4d5e6f", or ""
std::string_view build_type() noexcept;  // "RelWithDebInfo", or ""

// "omni-sim 0.1.0 (commit 1a2b3c4d5e6f, RelWithDebInfo)"; "omni-sim 0.1.0" when neither the
// commit nor the build type is known. The first two words are always "<binary> <version>".
std::string version_line(std::string_view binary);

}  // namespace omni
