// Shared helpers of the model tests: a micro model in memory, temp dirs, comparisons.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <random>
#include <string>

#include "omni/model/make_model.hpp"
#include "omni/model/reference.hpp"
#include "omni/model/weights.hpp"

namespace omni::model::testing {

inline ModelConfig micro_config(Arch arch = Arch::kDeepseekV3) {
  auto c = preset_config(arch, "micro");
  EXPECT_TRUE(c.ok());
  return *c;
}

// A fresh directory under the system temp dir, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("omni-model-test-" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// max |a - e| / max(|e|, floor) over the arrays.
template <class A, class E>
double max_rel_error(const A& a, const E& e, double floor = 1.0) {
  double worst = 0.0;
  for (std::size_t i = 0; i < e.size(); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - static_cast<double>(e[i])) /
                                std::max(std::fabs(static_cast<double>(e[i])), floor));
  }
  return worst;
}

// ||a - e|| / ||e||: the size of the error relative to the size of the answer.
template <class A, class E>
double rms_rel_error(const A& a, const E& e) {
  double num = 0.0, den = 0.0;
  for (std::size_t i = 0; i < e.size(); ++i) {
    const double d = static_cast<double>(a[i]) - static_cast<double>(e[i]);
    num += d * d;
    den += static_cast<double>(e[i]) * static_cast<double>(e[i]);
  }
  return std::sqrt(num / den);
}

}  // namespace omni::model::testing
