# CUDA is optional: the CUDA targets are configured only when nvcc is found, and no test
# requires them. Components with CUDA kernels check OMNI_HAVE_CUDA.
include(CheckLanguage)
set(OMNI_HAVE_CUDA OFF)
if(NOT OMNI_SANITIZE)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    set(OMNI_HAVE_CUDA ON)
    message(STATUS "omni: CUDA found (${CMAKE_CUDA_COMPILER}); CUDA targets enabled")
  else()
    message(STATUS "omni: nvcc not found; CUDA targets skipped")
  endif()
endif()
