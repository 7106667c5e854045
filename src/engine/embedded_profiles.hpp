// The built-in profiles: the text of profiles/models/*.yaml and profiles/hardware/*.yaml,
// compiled into the library by embed_profiles.cmake (generated embedded_profiles.cpp).
#pragma once

#include <span>
#include <string_view>

namespace omni::engine::embedded {

struct ProfileFile {
  std::string_view stem;  // file name without .yaml
  std::string_view yaml;
};

std::span<const ProfileFile> model_files();
std::span<const ProfileFile> hardware_files();

}  // namespace omni::engine::embedded
