#!/usr/bin/env bash
# Builds, checks and times the CUDA MLA decode kernels on a Hopper GPU in one run (a few
# minutes on an H200). Run from anywhere inside the repository:
#   kernels/amla/cuda/check.sh            # build + GPU tests + timings, table printed last
#   JOBS=8 BUILD_DIR=build/cuda ITERS=20 kernels/amla/cuda/check.sh
# Every step has its own timeout so the whole run stays under 8 minutes.
set -u -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
BUILD_DIR="${BUILD_DIR:-build/cuda}"
JOBS="${JOBS:-$(nproc)}"
ITERS="${ITERS:-20}"
cd "$ROOT" || exit 1
LOG_DIR="$BUILD_DIR/check-logs"
mkdir -p "$LOG_DIR"

step() { printf '\n=== %s (%s UTC)\n' "$1" "$(date -u +%H:%M:%S)"; }
status_build="not run"; status_tests="not run"; status_time="not run"

step "configure ($BUILD_DIR)"
if ! timeout 180 cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DOMNI_BUILD_TESTS=ON >"$LOG_DIR/configure.log" 2>&1; then
  tail -30 "$LOG_DIR/configure.log"
  echo "configure failed"; exit 1
fi
grep -E "omni: (CUDA|nvcc)" "$LOG_DIR/configure.log"

step "build"
targets=(omni_amla omni_amla_cuda amla_cuda_plan_test amla_cuda_decode_test amla-cuda-time)
if timeout 300 cmake --build "$BUILD_DIR" -j "$JOBS" --target "${targets[@]}" \
    >"$LOG_DIR/build.log" 2>&1; then
  status_build="ok"
else
  tail -40 "$LOG_DIR/build.log"
  echo "build failed"; exit 1
fi
# amla-bench is optional here: the timings below do not depend on it.
if timeout 120 cmake --build "$BUILD_DIR" -j "$JOBS" --target amla-bench \
    >"$LOG_DIR/build-bench.log" 2>&1; then
  echo "amla-bench built: $BUILD_DIR/bin/amla-bench --device cuda"
else
  echo "amla-bench not built (see $LOG_DIR/build-bench.log); continuing"
fi

step "GPU"
card="$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null \
        | head -1)"
echo "card: ${card:-unknown (nvidia-smi failed)}"

step "correctness tests"
timeout 60 "$BUILD_DIR/bin/amla_cuda_plan_test" --gtest_brief=1 >"$LOG_DIR/plan_test.log" 2>&1
plan_rc=$?
timeout 150 "$BUILD_DIR/bin/amla_cuda_decode_test" --gtest_brief=1 >"$LOG_DIR/decode_test.log" 2>&1
decode_rc=$?
tail -25 "$LOG_DIR/decode_test.log"
ran="$(grep -oE '\[==========\] [0-9]+ tests' "$LOG_DIR/decode_test.log" | grep -oE '[0-9]+' || true)"
skipped="$(grep -oE '\[  SKIPPED \] [0-9]+ test' "$LOG_DIR/decode_test.log" | grep -oE '[0-9]+' || true)"
if [[ -n "$skipped" && "$skipped" != "0" ]]; then
  # On the GPU machine a skipped GPU test is a failure: it means no device was seen.
  status_tests="SKIPPED $skipped of ${ran:-?} GPU tests (no device?)"
  decode_rc=3
elif [[ $plan_rc -eq 0 && $decode_rc -eq 0 ]]; then
  status_tests="passed (${ran:-?} GPU tests + planner tests)"
else
  status_tests="FAILED (plan rc=$plan_rc, decode rc=$decode_rc; 124 = timeout)"
fi

step "timings (b=128, h_q=128, iters=$ITERS)"
if [[ $decode_rc -eq 124 ]]; then
  echo "skipped: the tests timed out, a hang would hang the timings too" >"$LOG_DIR/time.log"
  time_rc=124
else
  timeout 200 "$BUILD_DIR/bin/amla-cuda-time" "$ITERS" >"$LOG_DIR/time.log" 2>&1
  time_rc=$?
fi
grep -v '^|' "$LOG_DIR/time.log"
status_time="rc=$time_rc (124 = timeout)"

step "summary"
echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "card:    ${card:-unknown}"
echo "commit:  $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "build:   $status_build"
echo "tests:   $status_tests"
echo "timing:  $status_time"
echo "TFLOPS = 2*b*s_q*h_q*s_k*(576+512)/t (FlashMLA's formula); GB/s counts bf16 KV + Q + fp32 out."
echo
grep '^|' "$LOG_DIR/time.log" || echo "(no timing table: see $LOG_DIR/time.log)"
[[ $plan_rc -eq 0 && $decode_rc -eq 0 && $time_rc -eq 0 ]]
