#include "omni/common/version.hpp"

#include "omni_build_info.hpp"

namespace omni {

std::string_view version() noexcept { return OMNI_BUILD_VERSION; }
std::string_view git_commit() noexcept { return OMNI_BUILD_COMMIT; }
std::string_view build_type() noexcept { return OMNI_BUILD_TYPE; }

std::string version_line(std::string_view binary) {
  std::string line = std::string(binary) + " " + std::string(version());
  std::string details;
  if (!git_commit().empty()) details = "commit " + std::string(git_commit());
  if (!build_type().empty()) details += (details.empty() ? "" : ", ") + std::string(build_type());
  if (!details.empty()) line += " (" + details + ")";
  return line;
}

}  // namespace omni
