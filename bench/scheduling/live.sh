#!/usr/bin/env bash
# bench/scheduling/live.sh <build-dir>: the live confirmation of the policy ranking.
#
#   omni-bench ──▶ omni-proxy --policy P ──▶ PREFILL x omni-sim (prefill, KV events over ZeroMQ)
#                                       └──▶ DECODE  x omni-sim (decode)
#
# For every policy a fresh cluster (empty caches) replays the same slice of the Mooncake trace
# through the proxy in sequential PD mode; the proxy hashes the token-id prompts omni-bench sends
# exactly as the engines do and follows their KV events. Times are wall-clock at SPEED x model
# speed; the table also gives them scaled back to model time (x SPEED).
#
# Environment: POLICIES (default: all seven), PREFILL (4), DECODE (2), REQUESTS (600),
# LOAD (1.5: the trace's rate x PREFILL / 4 x LOAD, as bench/scheduling/run.py counts load),
# SPEED (10), TRACE (../shared/traces/mooncake_synthetic_trace.jsonl), OUT (bench/results).
# Cache hit = prefix-cache hits / queries summed over the prefill engines' /metrics.
# Output: a markdown table on stdout, $OUT/scheduling_live.json, per-policy logs in $OUT/live/.
set -euo pipefail

build=${1:?usage: live.sh <build-dir>}
repo=$(cd "$(dirname "$0")/../.." && pwd)
bin=$(cd "$build" && pwd)/bin
policies=${POLICIES:-round-robin least-load sglang-cache-aware llm-d dynamo omni-anchor omni}
prefill=${PREFILL:-4}
decode=${DECODE:-2}
requests=${REQUESTS:-600}
load=${LOAD:-1.5}
speed=${SPEED:-10}
trace=${TRACE:-$repo/../shared/traces/mooncake_synthetic_trace.jsonl}
out=${OUT:-$repo/bench/results}
[ -f "$trace" ] || { echo "live.sh: no trace at $trace" >&2; exit 1; }
for b in omni-sim omni-proxy omni-bench; do
  [ -x "$bin/$b" ] || { echo "live.sh: missing $bin/$b" >&2; exit 1; }
done
mkdir -p "$out/live"

pids=()
stop_all() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  pids=()
}
trap stop_all EXIT INT TERM

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# The address a process printed on its "listening on" line (it was started with port 0).
wait_listening() {
  local log=$1 pid=$2
  for _ in $(seq 1 300); do
    kill -0 "$pid" 2>/dev/null || { echo "live.sh: exited early, see $log" >&2; tail -5 "$log" >&2; exit 1; }
    local address
    address=$(grep -m1 "listening on" "$log" 2>/dev/null | grep -oE "[0-9]+(\.[0-9]+){3}:[0-9]+" | head -1) || true
    [ -n "$address" ] && { echo "$address"; return; }
    sleep 0.05
  done
  echo "live.sh: nothing listening, see $log" >&2
  exit 1
}

model=deepseek-ai/DeepSeek-V3
nixl='{"kv_connector":"NixlConnector","kv_role":"kv_both"}'
# Engines and proxy agree on the block hashes: same block size, algorithm and seed. The engines
# bind their KV-event PUB sockets (a wildcard host: vLLM binds only then, else it connects).
export PYTHONHASHSEED=0
block_size=16
# Load 1.0 = the trace's own rate x PREFILL / 4 in model time; the model runs SPEED x faster.
time_scale=$(python3 -c "print(1 / ($prefill * 0.25 * $load * $speed))")

run_policy() {
  local policy=$1 dir=$out/live/$1
  rm -rf "$dir" && mkdir -p "$dir"
  local prefill_list="" kv_list="" decode_list=""
  prefill_addresses=()
  for i in $(seq 0 $((prefill - 1))); do
    local zmq_port
    zmq_port=$(free_port)
    "$bin/omni-sim" --host 127.0.0.1 --port 0 --model "$model" --hardware h200 \
      --tensor-parallel-size 8 --enable-expert-parallel --max-model-len 131072 \
      --block-size "$block_size" --kv-transfer-config "$nixl" --speed "$speed" --seed "$i" \
      --kv-events-config "{\"enable_kv_cache_events\":true,\"publisher\":\"zmq\",\"endpoint\":\"tcp://*:$zmq_port\"}" \
      > "$dir/prefill-$i.log" 2>&1 &
    pids+=($!)
    local address
    address=$(wait_listening "$dir/prefill-$i.log" $!)
    prefill_list+="${prefill_list:+,}$address"
    prefill_addresses+=("$address")
    kv_list+="${kv_list:+,}$address=tcp://127.0.0.1:$zmq_port"
  done
  for i in $(seq 0 $((decode - 1))); do
    "$bin/omni-sim" --host 127.0.0.1 --port 0 --model "$model" --hardware h200 \
      --tensor-parallel-size 8 --enable-expert-parallel --max-model-len 131072 \
      --block-size "$block_size" --kv-transfer-config "$nixl" --speed "$speed" --seed "$((100 + i))" \
      > "$dir/decode-$i.log" 2>&1 &
    pids+=($!)
    local address
    address=$(wait_listening "$dir/decode-$i.log" $!)
    decode_list+="${decode_list:+,}$address"
  done
  "$bin/omni-proxy" --listen-host 127.0.0.1 --listen-port 0 --pd-mode sequential \
    --prefill-endpoints "$prefill_list" --decode-endpoints "$decode_list" \
    --kv-events-endpoints "$kv_list" --policy "$policy" --block-size "$block_size" \
    --hash-seed 0 --access-log "$dir/access.jsonl" > "$dir/proxy.log" 2>&1 &
  pids+=($!)
  local proxy
  proxy=$(wait_listening "$dir/proxy.log" $!)
  for _ in $(seq 1 100); do
    curl -sf "http://$proxy/ready" > /dev/null 2>&1 && break
    sleep 0.1
  done
  sleep 0.5  # let the KV-event subscriptions join before the first request
  "$bin/omni-bench" --base-url "http://$proxy" --endpoint /v1/completions --model "$model" \
    --trace "$trace" --trace-format mooncake --max-requests "$requests" \
    --time-scale "$time_scale" --slo "ttft=$(python3 -c "print(10 / $speed)")s,tpot=$(python3 -c "print(100 / $speed)")ms" \
    --timeout 120s --no-progress --out "$dir/results.json" > "$dir/bench.txt" 2>&1
  curl -sf "http://$proxy/metrics" > "$dir/proxy_metrics.txt" || true
  # Prefix-cache hits where they happen in PD: at the prefill engines.
  for address in "${prefill_addresses[@]}"; do curl -sf "http://$address/metrics" || true; done \
    > "$dir/prefill_metrics.txt"
  stop_all
}

for policy in $policies; do
  echo "live.sh: $policy" >&2
  run_policy "$policy"
done

python3 - "$out" "$speed" "$policies" "$prefill" "$decode" "$requests" "$load" <<'PY'
import json, sys
out, speed, policies, prefill, decode, requests, load = sys.argv[1:]
speed = float(speed)
rows = []
for p in policies.split():
    r = json.load(open(f"{out}/live/{p}/results.json"))
    hits = queries = 0.0
    for line in open(f"{out}/live/{p}/prefill_metrics.txt"):
        if line.startswith("vllm:prefix_cache_hits_total"): hits += float(line.split()[-1])
        if line.startswith("vllm:prefix_cache_queries_total"): queries += float(line.split()[-1])
    rows.append({"policy": p, "ttft_p50_s": r["ttft_ms"]["p50"] * speed / 1000,
                 "ttft_p99_s": r["ttft_ms"]["p99"] * speed / 1000,
                 "tpot_p50_ms": r["tpot_ms"]["p50"] * speed,
                 "goodput": r["goodput"] / speed, "throughput": r["request_throughput"] / speed,
                 "cache_hit": hits / queries if queries else None,
                 "completed": r["completed"], "failed": r.get("failed", 0)})
json.dump({"prefill": int(prefill), "decode": int(decode), "requests": int(requests),
           "load": float(load), "speed": speed, "rows": rows},
          open(f"{out}/scheduling_live.json", "w"), indent=1)
best99 = min(x["ttft_p99_s"] for x in rows)
bestgood = max(x["goodput"] for x in rows)
print(f"{prefill}P{decode}D, {requests} Mooncake requests, load {load}x, model time (wall x {speed:g})\n")
print("| policy | TTFT p50 (s) | TTFT p99 (s) | TPOT p50 (ms) | goodput (req/s) | throughput (req/s) | cache hit | completed |")
print("|---|---|---|---|---|---|---|---|")
for x in rows:
    p99 = f"**{x['ttft_p99_s']:.2f}**" if x["ttft_p99_s"] == best99 else f"{x['ttft_p99_s']:.2f}"
    good = f"**{x['goodput']:.3f}**" if x["goodput"] == bestgood else f"{x['goodput']:.3f}"
    hit = "" if x["cache_hit"] is None else f"{x['cache_hit']:.3f}"
    print(f"| {x['policy']} | {x['ttft_p50_s']:.2f} | {p99} | {x['tpot_p50_ms']:.1f} | {good} | {x['throughput']:.3f} | {hit} | {x['completed']}/{x['completed'] + x['failed']} |")
PY
