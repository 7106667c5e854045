# Every dependency comes from Debian bookworm packages (see scripts/install-deps.sh).

find_package(Threads REQUIRED)
# Boost 1.81 (libboost1.81-dev): Asio + Beast with C++20 coroutines and as_tuple.
find_package(Boost 1.81 REQUIRED CONFIG COMPONENTS json)
# Asio recycles the memory of coroutine frames and handlers per thread, but keeps only two
# blocks of each kind by default: a request crosses a dozen nested coroutines, so nearly every
# frame went to malloc. A deeper cache serves them all from the thread's own free list. Every
# translation unit must agree on the value (it sizes an Asio class), hence a global definition.
add_compile_definitions(BOOST_ASIO_RECYCLING_ALLOCATOR_CACHE_SIZE=16)
find_package(yaml-cpp REQUIRED)
find_package(CLI11 REQUIRED)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(OpenSSL REQUIRED)

if(OMNI_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(OMNI_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
# libxxhash-dev ships no CMake config: XXH3-128 for vLLM's xxhash block-hash algorithms.
find_path(XXHASH_INCLUDE_DIR xxhash.h REQUIRED)
find_library(XXHASH_LIBRARY NAMES xxhash REQUIRED)

# pkg-config for the C libraries that ship no CMake config.
find_package(PkgConfig REQUIRED)
# ZeroMQ (libzmq3-dev + cppzmq-dev): vLLM's KV-event PUB/SUB and replay sockets.
pkg_check_modules(ZMQ REQUIRED IMPORTED_TARGET libzmq)
find_path(CPPZMQ_INCLUDE_DIR zmq.hpp REQUIRED)
# PCRE2 with JIT (libpcre2-dev): the tokenizers' pre-tokenization regexes.
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
# OpenBLAS (libopenblas-dev): the GEMM-based attention baseline (cblas_sgemm, cblas_sbgemm).
pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas)
# The NATS C client (libnats-dev): omni-proxy replicas share their load over NATS (fleet sync).
# By pkg-config: bookworm's CMake config names a static library the package does not ship.
pkg_check_modules(NATS REQUIRED IMPORTED_TARGET libnats)
# ICU (libicu-dev): Unicode normalisation (NFC/NFKC) for the tokenizers.
find_package(ICU REQUIRED COMPONENTS uc)
