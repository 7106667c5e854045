// RAII device memory and CUDA error conversion for the host code of the MLA kernels.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <vector>

#include "omni/common/result.hpp"

namespace omni::amla::cuda::detail_cuda {

inline Status check(cudaError_t err, const char* what) {
  if (err == cudaSuccess) {
    return ok_status();
  }
  return make_error(ErrorCode::kInternal, std::string(what) + ": " + cudaGetErrorString(err));
}

// One device allocation, freed on destruction. Movable, not copyable.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept : ptr_(other.ptr_), bytes_(other.bytes_) {
    other.ptr_ = nullptr;
    other.bytes_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      release();
      ptr_ = other.ptr_;
      bytes_ = other.bytes_;
      other.ptr_ = nullptr;
      other.bytes_ = 0;
    }
    return *this;
  }
  ~DeviceBuffer() { release(); }

  Status allocate(std::size_t bytes) {
    release();
    bytes_ = bytes;
    // cudaMalloc returns 256-byte aligned memory; a zero-byte request still gets a pointer.
    return check(cudaMalloc(&ptr_, bytes == 0 ? 16 : bytes), "cudaMalloc");
  }

  template <class T>
  Status upload(const std::vector<T>& host) {
    if (auto status = allocate(host.size() * sizeof(T)); !status) {
      return status;
    }
    if (host.empty()) {
      return ok_status();
    }
    return check(cudaMemcpy(ptr_, host.data(), bytes_, cudaMemcpyHostToDevice), "cudaMemcpy H2D");
  }

  template <class T>
  Status download(T* host, std::size_t count) const {
    if (count == 0) {
      return ok_status();
    }
    return check(cudaMemcpy(host, ptr_, count * sizeof(T), cudaMemcpyDeviceToHost),
                 "cudaMemcpy D2H");
  }

  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  std::size_t bytes() const { return bytes_; }

 private:
  void release() {
    if (ptr_ != nullptr) {
      cudaFree(ptr_);
      ptr_ = nullptr;
    }
  }
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace omni::amla::cuda::detail_cuda
