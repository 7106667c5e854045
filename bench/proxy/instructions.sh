#!/usr/bin/env bash
# bench/proxy/instructions.sh <bin-dir> [<bin-dir>...]: user-space instructions per proxied
# request, counted by callgrind — a figure this noisy shared machine cannot blur, for telling
# whether a change to the request path made it cheaper. Not a replacement for run.sh (it says
# nothing about system calls, wake-ups or caches), but stable to well under 1% run to run.
#
# For each build: omni-fake-engine, and omni-proxy (aggregated mode, one I/O thread) under
# `valgrind --tool=callgrind`; WARMUP requests, counters zeroed, then REQUESTS requests from one
# client (one at a time, so batching cannot vary), counters dumped. Every thread of the proxy is
# counted (the scheduler's tick thread too). Environment: REQUESTS (2000), WARMUP (300),
# CONCURRENCY (1). Output: one line per build, and the callgrind files in bench/results/.
set -euo pipefail

[[ $# -ge 1 ]] || { echo "usage: instructions.sh <bin-dir> [<bin-dir>...]" >&2; exit 2; }
requests=${REQUESTS:-2000}
warmup=${WARMUP:-300}
concurrency=${CONCURRENCY:-1}
repo=$(cd "$(dirname "$0")/../.." && pwd)
. "$repo/bench/lib.sh"
bench_require valgrind callgrind_control
mkdir -p "$repo/bench/results"
body='{"model":"fake-model","prompt":"hello","max_tokens":1}'

count() {  # count <bin-dir> <label>
  local bin=$1 label=$2 engine_port proxy_port proxy_pid out
  for b in omni-proxy omni-fake-engine omni-proxy-load; do
    [[ -x $bin/$b ]] || { echo "missing $bin/$b" >&2; exit 1; }
  done
  engine_port=$(free_port)
  proxy_port=$(free_port)
  out="$repo/bench/results/callgrind.proxy.$label"
  rm -f "$out" "$out".*
  "$bin/omni-fake-engine" --port "$engine_port" >"$work/engine.$label.log" 2>&1 &
  pids+=($!)
  valgrind --tool=callgrind --callgrind-out-file="$out" "$bin/omni-proxy" \
    --listen-port "$proxy_port" --pd-mode aggregated --decode-endpoints "127.0.0.1:$engine_port" \
    --workers 1 --health-interval 0s --log-level warn >"$work/proxy.$label.log" 2>&1 &
  proxy_pid=$!
  pids+=("$proxy_pid")
  wait_for_port "$engine_port"
  for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$proxy_port") 2>/dev/null && break; sleep 0.2; done
  "$bin/omni-proxy-load" --target "127.0.0.1:$proxy_port" --concurrency "$concurrency" \
    --requests "$warmup" --body "$body" >/dev/null
  callgrind_control -z "$proxy_pid" >/dev/null 2>&1
  "$bin/omni-proxy-load" --target "127.0.0.1:$proxy_port" --concurrency "$concurrency" \
    --requests "$requests" --body "$body" >"$work/load.$label.json"
  callgrind_control -d "$proxy_pid" >/dev/null 2>&1
  kill "$proxy_pid" 2>/dev/null || true
  python3 - "$out.1" "$requests" "$label" "$work/load.$label.json" <<'PY'
import json, sys
path, requests, label, load = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
ok = json.load(open(load)).get("status", {}).get("200", 0)
for line in open(path):
    if line.startswith("summary:"):
        total = int(line.split()[1])
        print(f"{label}: {total / requests:,.0f} instructions per request "
              f"({requests} requests, {ok} answered 200)")
        break
PY
}

n=0
for bin in "$@"; do
  n=$((n + 1))
  count "$bin" "build$n"
done
