#!/usr/bin/env bash
# omni-bench against a real omni-sim process: completions with token-id prompts (multi-turn
# sessions), chat with text prompts, and an injected-error run counted by kind.
set -euo pipefail
bench=${1:?usage: omni_bench_sim_test.sh omni-bench omni-sim}
sim=${2:?usage: omni_bench_sim_test.sh omni-bench omni-sim}
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
check() { grep -q -- "$2" "$1" || { echo "--- $1:"; head -c 3000 "$1"; echo; fail "$3"; }; }

# Starts omni-sim with extra flags; sets $port. A KV cache large enough for the prompts below.
start_sim() {
  local log="$work/sim.$RANDOM.txt"
  "$sim" --port 0 --speed 20 --num-gpu-blocks-override 20000 "$@" >"$log" 2>&1 &
  pids+=($!)
  for _ in $(seq 200); do grep -q "listening on" "$log" && break; sleep 0.05; done
  port=$(sed -n 's/.*listening on [^:]*:\([0-9]*\).*/\1/p' "$log" | head -1)
  [ -n "$port" ] || { cat "$log"; fail "omni-sim did not start"; }
}

start_sim
"$bench" --base-url "http://127.0.0.1:$port" \
  --synthetic 'n=20,rate=20,input=uniform:100:2000,output=uniform:5:30,turns=2,think=100ms' \
  --slo ttft=30s --out "$work/sim.json" --requests-out "$work/sim.jsonl" >"$work/sim.txt" 2>&1 \
  || { cat "$work/sim.txt"; fail "completions run exited with $?"; }
check "$work/sim.json" '"completed":20,"failed":0' "requests against omni-sim failed"
check "$work/sim.json" '"tpot_ms":{"mean":[0-9]' "no TPOT measured"
check "$work/sim.json" '"goodput":[1-9]' "no goodput"
echo "ok: completions against omni-sim"

"$bench" --base-url "http://127.0.0.1:$port" --endpoint /v1/chat/completions \
  --synthetic 'n=10,rate=20,input=300,output=10' --out "$work/chat.json" >"$work/chat.txt" 2>&1 \
  || { cat "$work/chat.txt"; fail "chat run exited with $?"; }
check "$work/chat.json" '"completed":10,"failed":0' "chat requests against omni-sim failed"
echo "ok: chat against omni-sim"

start_sim --fault-error-rate 1 --fault-error-status 503
set +e
"$bench" --base-url "http://127.0.0.1:$port" --synthetic 'n=5,rate=50,input=100,output=5' \
  --out "$work/err.json" >"$work/err.txt" 2>&1
rc=$?
set -e
[ "$rc" -eq 1 ] || { cat "$work/err.txt"; fail "expected exit status 1 when every request fails, got $rc"; }
check "$work/err.json" '"completed":0,"failed":5' "injected errors not counted"
echo "ok: injected errors"
echo "omni-bench against omni-sim: 3 passed, 0 failed"
