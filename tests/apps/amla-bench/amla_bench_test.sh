#!/usr/bin/env bash
# Integration test of amla-bench: a tiny CPU run in text and JSON (the issue's schema, one
# object per kernel and shape, FLOPs by FlashMLA's formula), every ISA forced through
# OMNI_FORCE_ISA, and the errors (exit status 2 and a message naming the problem).
set -euo pipefail
bin=${1:?usage: amla_bench_test.sh path/to/amla-bench}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fail() { echo "FAIL: $*"; exit 1; }
expect_error() {
  local fragment=$1; shift
  local status=0
  "$bin" "$@" >"$work/out.txt" 2>"$work/err.txt" || status=$?
  [ "$status" -eq 2 ] || { cat "$work/err.txt"; fail "exit $status (want 2) for: $*"; }
  grep -q -- "$fragment" "$work/err.txt" || { cat "$work/err.txt"; fail "no '$fragment' for: $*"; }
}
tiny=(--seqlen-q 2 --seqlen-k 64 --heads 16 --iters 1 --warmup 0 --peak-seconds 0.01 --threads 2)

# 1. Text: a peak line, one row per kernel and shape, ratios.
"$bin" "${tiny[@]}" --batch 1,2 >"$work/text.txt" || fail "text run exited with $?"
grep -q '^peak (' "$work/text.txt" || fail "no peak line"
[ "$(grep -cE '^(gemm|flash|amla) ' "$work/text.txt")" -eq 6 ] || { cat "$work/text.txt"; fail "want 6 rows"; }

# 2. JSON: the schema, and the FLOPs formula checked from the reported numbers.
"$bin" "${tiny[@]}" --batch 1,2 --kernels flash,amla --json >"$work/out.json" || fail "json run exited with $?"
python3 - "$work/out.json" <<'PY' || fail "JSON output wrong"
import json, sys
rows = json.load(open(sys.argv[1]))
assert isinstance(rows, list) and len(rows) == 4, rows
for r in rows:
    for key in ("kernel", "device", "batch", "seqlen_q", "seqlen_k", "heads", "time_ms", "tflops",
                "gbps", "peak_fraction"):
        assert key in r, key
    assert r["kernel"] in ("flash", "amla") and r["device"] == "cpu"
    assert r["seqlen_q"] == 2 and r["seqlen_k"] == 64 and r["heads"] == 16
    flops = 2 * r["batch"] * 2 * 16 * 64 * (576 + 512)
    assert abs(r["tflops"] - flops / (r["time_ms"] * 1e-3) / 1e12) <= 1e-9 + 1e-6 * r["tflops"], r
    assert r["peak_fraction"] > 0 and r["time_ms"] > 0
PY

# 3. Every ISA this CPU has, forced through the environment.
for isa in scalar avx2 avx512; do
  status=0
  OMNI_FORCE_ISA=$isa "$bin" "${tiny[@]}" --kernels amla --batch 1 --json >"$work/isa.json" 2>"$work/err.txt" || status=$?
  if [ "$status" -eq 0 ]; then
    grep -q "\"isa\":\"$isa\"" "$work/isa.json" || fail "OMNI_FORCE_ISA=$isa not used"
  else
    grep -q "does not support" "$work/err.txt" || { cat "$work/err.txt"; fail "OMNI_FORCE_ISA=$isa: exit $status"; }
  fi
done

# 4. --accuracy: every kernel on every ISA against the float64 reference, errors small.
"$bin" --accuracy --batch 1 --seqlen-q 2 --seqlen-k 70 --heads 16 >"$work/acc.txt" || fail "accuracy exited with $?"
python3 - "$work/acc.txt" <<'PY' || { cat "$work/acc.txt"; fail "accuracy table wrong"; }
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.split() and l.split()[0] in ("gemm", "flash", "amla")]
assert {r[0] for r in rows} == {"gemm", "flash", "amla"}, rows
for r in rows:
    assert float(r[8]) < 1e-5, r  # cosine difference
PY

# 5. Errors.
expect_error "unknown kernel" --kernels amla,fast
expect_error "not a positive integer" --batch 0
expect_error "--device" --device tpu
expect_error "did you mean --kernels?" --kernel amla
expect_error "Could not convert" --iters many
OMNI_FORCE_ISA=sse9 expect_error "unknown ISA" "${tiny[@]}"
# Without a CUDA build (or without a GPU) --device cuda names the reason and exits 2.
if ! "$bin" --device cuda --batch 1 --seqlen-k 64 --iters 1 >/dev/null 2>&1; then
  expect_error "cuda" --device cuda --batch 1 --seqlen-k 64 --iters 1
fi
echo "amla-bench integration: ok"
