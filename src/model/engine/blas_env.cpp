#include "omni/model/blas_env.hpp"

#include <unistd.h>

#include <cstdlib>

namespace omni::model {

void prefer_openblas_core(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f")) return;
  if (setenv("OPENBLAS_CORETYPE", "SkylakeX", 1) != 0) return;
  execv("/proc/self/exe", argv);  // returns only on failure: carry on with the default kernels
}

}  // namespace omni::model
