// omni-cuda-info: lists the CUDA devices this build can use. Built only when nvcc is found
// (cmake/OmniCuda.cmake); it is the smallest CUDA target, proving the CUDA build path that
// the AMLA kernels use. Exit status 0 with a message when there is no device; it takes no
// arguments but --help and --version (anything else: a message and status 2, as every binary).
#include <cuda_runtime.h>

#include <cstdio>
#include <string_view>

#include "omni/common/version.hpp"

namespace {

__global__ void add_one(int* value) { *value += 1; }

// Runs one tiny kernel and checks its result, so "usable" means a kernel really ran.
bool kernel_runs() {
  int* device_value = nullptr;
  if (cudaMalloc(&device_value, sizeof(int)) != cudaSuccess) return false;
  const int start = 41;
  int result = 0;
  bool ok = cudaMemcpy(device_value, &start, sizeof(int), cudaMemcpyHostToDevice) == cudaSuccess;
  add_one<<<1, 1>>>(device_value);
  ok = ok && cudaGetLastError() == cudaSuccess &&
       cudaMemcpy(&result, device_value, sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess;
  cudaFree(device_value);
  return ok && result == 42;
}

// -1 to go on, otherwise the status to exit with.
int answer_arguments(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--version") {
      std::printf("%s\n", omni::version_line("omni-cuda-info").c_str());
      return 0;
    }
    if (arg == "--help" || arg == "-h") {
      std::printf(
          "usage: omni-cuda-info [--version]\nLists the CUDA devices this build can use.\n");
      return 0;
    }
    std::fprintf(stderr, "omni-cuda-info: unexpected argument '%s' (see --help)\n", argv[i]);
    return 2;
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  if (const int status = answer_arguments(argc, argv); status >= 0) return status;
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    std::printf("omni-cuda-info: no usable CUDA device (%s)\n",
                status == cudaSuccess ? "none found" : cudaGetErrorString(status));
    return 0;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    std::printf("device %d: %s, sm_%d%d, %d SMs, %.1f GiB, kernel check: %s\n", i, prop.name,
                prop.major, prop.minor, prop.multiProcessorCount,
                static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0),
                (cudaSetDevice(i) == cudaSuccess && kernel_runs()) ? "ok" : "FAILED");
  }
  return 0;
}
