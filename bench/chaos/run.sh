#!/usr/bin/env bash
# bench/chaos/run.sh <build-dir>: omni-proxy under engine faults, with real processes.
#
#   omni-bench (streaming, RATE req/s) ──┐
#   curl loop (non-streaming, 2 req/s) ──┴─▶ omni-proxy (sequential PD) ─▶ 2 prefill omni-sim
#                                                                        └▶ 2 decode omni-sim
#
# Every FAULT_EVERY seconds one engine, chosen at random (seeded), gets a fault: kill -9 and a
# restart on its port one second later, or SIGSTOP for STOP_S seconds and SIGCONT (a stall longer
# than the prefill's KV lease, so that decodes arriving after it find their KV gone). The decode
# engines fail requests whose KV cannot be loaded (vLLM's kv_load_failure_policy "fail"), so
# every lost hold reaches the proxy.
#
# What it counts, from the proxy's access log (one line per request) and the clients:
#   - answers by status: a 400 is always wrong here (every request is valid);
#   - requests that completed whole, redone after lost KV (kv_redos), retried, ended by an
#     error event after streaming started, answered with an error before it;
#   - hung: requests without an answer within HANG_S (the clients' own timeout);
#   - TTFT/E2E p50/p99 against the same run without faults (FAULTS=0), run first.
#
#   - migrated: streams continued on another engine after part of the answer was sent, and
#     how many of those completed.
#
# Environment: DURATION (60s), RATE (20), FAULT_EVERY (5), STOP_S (3), SPEED (20), LEASE (40
# model s = 2 s wall at SPEED 20), OUTPUT_LEN (64; longer streams are more often cut mid-way),
# HANG_S (60), SEED (1), OUT (bench/results).
# Output: a markdown table on stdout and $OUT/chaos.json.
set -euo pipefail

build=${1:?usage: run.sh <build-dir>}
repo=$(cd "$(dirname "$0")/../.." && pwd)
bin=$(cd "$build" && pwd)/bin
duration=${DURATION:-60}
rate=${RATE:-20}
fault_every=${FAULT_EVERY:-5}
stop_s=${STOP_S:-3}
speed=${SPEED:-20}
lease=${LEASE:-40}
output_len=${OUTPUT_LEN:-64}
hang_s=${HANG_S:-60}
seed=${SEED:-1}
out=${OUT:-$repo/bench/results}
mkdir -p "$out"
# shellcheck source=../lib.sh
. "$repo/bench/lib.sh"
bench_require jq curl python3
for b in omni-proxy omni-sim omni-bench; do
  [ -x "$bin/$b" ] || { echo "run.sh: no $bin/$b" >&2; exit 1; }
done
# SIGCONT as well as TERM on exit: a stopped engine would never see the TERM.
trap 'for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null || true; done; bench_cleanup' EXIT INT TERM

kv='{"kv_connector":"NixlConnector","kv_role":"kv_both","kv_load_failure_policy":"fail",'
kv+="\"kv_connector_extra_config\":{\"kv_lease_duration\":$lease}}"
declare -A engine_pid engine_role engine_port
start_engine() {  # NAME ROLE PORT
  local name=$1 role=$2 port=$3
  "$bin/omni-sim" --host 127.0.0.1 --port "$port" --model deepseek-ai/DeepSeek-V3 --hardware h800 \
    --tensor-parallel-size 8 --max-model-len 8192 --num-gpu-blocks-override 8192 --speed "$speed" \
    --disaggregation-mode "$role" --kv-transfer-config "$kv" --seed 7 \
    >>"$work/$name.log" 2>&1 &
  engine_pid[$name]=$!
  engine_role[$name]=$role
  engine_port[$name]=$port
  pids+=($!)
  wait_for_port "$port"
}

# One run: FAULTS=1 injects faults, 0 does not. Writes $work/<label>.{access.jsonl,bench.json,curl}.
run_once() {
  local label=$1 faults=$2
  local names=(p1 p2 d1 d2) prefills="" decodes=""
  for name in "${names[@]}"; do
    local role=prefill
    [[ $name == d* ]] && role=decode
    start_engine "$label-$name" "$role" "$(free_port)"
    if [ "$role" = prefill ]; then prefills+="127.0.0.1:${engine_port[$label-$name]},"
    else decodes+="127.0.0.1:${engine_port[$label-$name]},"; fi
  done
  local proxy_port
  proxy_port=$(free_port)
  "$bin/omni-proxy" --listen-port "$proxy_port" --prefill-endpoints "${prefills%,}" \
    --decode-endpoints "${decodes%,}" --health-interval 500ms --access-log "$work/$label.access.jsonl" \
    --timeouts-first-token "${hang_s}s" --timeouts-decode-idle 20s \
    >"$work/$label.proxy.log" 2>&1 &
  local proxy_pid=$!
  pids+=($!)
  wait_for_port "$proxy_port"

  local requests=$((duration * rate))
  "$bin/omni-bench" --base-url "http://127.0.0.1:$proxy_port" --dataset-name random \
    --random-input-len 512 --random-output-len "$output_len" --num-prompts "$requests" --request-rate "$rate" \
    --seed "$seed" --timeout "${hang_s}s" --time-base wall --no-progress --out "$work/$label.bench.json" \
    --requests-out "$work/$label.requests.jsonl" >"$work/$label.bench.log" 2>&1 &
  local bench_pid=$!
  # Non-streaming requests beside the stream: each status (000: no answer within HANG_S).
  (
    end=$((SECONDS + duration))
    while [ $SECONDS -lt $end ]; do
      curl -s -o /dev/null -m "$hang_s" -w '%{http_code}\n' -H 'Content-Type: application/json' \
        --data '{"prompt":"chaos non-streaming request","max_tokens":16}' \
        "http://127.0.0.1:$proxy_port/v1/completions" >>"$work/$label.curl" &
      sleep 0.5
    done
    wait
  ) &
  local curl_pid=$!

  local faults_done=0
  if [ "$faults" = 1 ]; then
    RANDOM=$seed
    local t=0
    while [ $((t + fault_every)) -lt "$duration" ]; do
      sleep "$fault_every"
      t=$((t + fault_every))
      local victim="$label-${names[$((RANDOM % 4))]}"
      if [ $((RANDOM % 2)) = 0 ]; then
        echo "[$t s] kill -9 $victim" >>"$work/$label.faults"
        kill -9 "${engine_pid[$victim]}" 2>/dev/null || true
        wait "${engine_pid[$victim]}" 2>/dev/null || true
        sleep 1
        start_engine "$victim" "${engine_role[$victim]}" "${engine_port[$victim]}"
      else
        echo "[$t s] SIGSTOP $victim for ${stop_s}s" >>"$work/$label.faults"
        kill -STOP "${engine_pid[$victim]}"
        sleep "$stop_s"
        kill -CONT "${engine_pid[$victim]}"
      fi
      faults_done=$((faults_done + 1))
    done
  fi
  wait "$bench_pid" || true
  wait "$curl_pid" || true
  kill "$proxy_pid" 2>/dev/null || true
  wait "$proxy_pid" 2>/dev/null || true
  for name in "${names[@]}"; do
    kill "${engine_pid[$label-$name]}" 2>/dev/null || true
    wait "${engine_pid[$label-$name]}" 2>/dev/null || true
  done
  echo "$faults_done" >"$work/$label.fault_count"
}

run_once calm 0
run_once chaos 1

summary() {  # LABEL -> one JSON object
  local label=$1
  python3 - "$work/$label" <<'PY'
import json, sys
base = sys.argv[1]
lines = [json.loads(l) for l in open(base + ".access.jsonl") if l.strip()]
gen = [l for l in lines if l.get("pd_mode") is not None]
by_status = {}
for l in gen:
    by_status[str(l["status"])] = by_status.get(str(l["status"]), 0) + 1
curl = [l.strip() for l in open(base + ".curl") if l.strip()]
bench = json.load(open(base + ".bench.json"))
hung = bench.get("errors", {}).get("by_kind", {}).get("timeout", 0) + curl.count("000")
out = {
    "requests": len(gen),
    "status": by_status,
    "wrong_400": by_status.get("400", 0),
    "completed_whole": sum(1 for l in gen if l["status"] == 200 and l["outcome"] == "success"),
    "error_event_after_stream_start": sum(1 for l in gen if l["outcome"] == "stream_error"),
    "kv_redos": sum(l.get("kv_redos", 0) for l in gen),
    "prefill_retries": sum(l.get("prefill_retries", 0) for l in gen),
    "decode_retries": sum(l.get("decode_retries", 0) for l in gen),
    "hung": hung,
    "migrated": sum(1 for l in gen if l.get("migrations", 0) > 0),
    "migrated_completed": sum(1 for l in gen if l.get("migrations", 0) > 0 and l["outcome"] == "success"),
    "outcomes": {},
    "faults": int(open(base + ".fault_count").read()),
    "curl_status": {c: curl.count(c) for c in sorted(set(curl))},
    "bench": {k: bench.get(k) for k in ("ttft_ms", "e2e_ms", "completed", "failed", "errors")},
}
for l in gen:
    out["outcomes"][l["outcome"]] = out["outcomes"].get(l["outcome"], 0) + 1
print(json.dumps(out))
PY
}
calm=$(summary calm)
chaos=$(summary chaos)
jq -n --argjson calm "$calm" --argjson chaos "$chaos" --arg date "$(date -u +%F)" \
  --arg cpu "$(lscpu | sed -n 's/^Model name: *//p')" \
  --arg params "DURATION=$duration RATE=$rate FAULT_EVERY=$fault_every STOP_S=$stop_s SPEED=$speed LEASE=$lease OUTPUT_LEN=$output_len SEED=$seed" \
  '{date: $date, cpu: $cpu, params: $params, calm: $calm, chaos: $chaos}' >"$out/chaos.json"
echo "faults injected:"
sed 's/^/  /' "$work/chaos.faults" 2>/dev/null || true
jq -r '
  def row(k; f): "| \(k) | \(.calm | f) | \(.chaos | f) |";
  "| | no faults | faults |", "|---|---|---|",
  row("requests (access log)"; .requests),
  row("answers by status"; .status | to_entries | map("\(.key): \(.value)") | join(", ")),
  row("wrong 400s"; .wrong_400),
  row("completed whole"; .completed_whole),
  row("redone after lost KV"; .kv_redos),
  row("prefill / decode retries"; "\(.prefill_retries) / \(.decode_retries)"),
  row("migrated mid-stream (completed)"; "\(.migrated) (\(.migrated_completed))"),
  row("error event after streaming started"; .error_event_after_stream_start),
  row("hung past their deadline"; .hung),
  row("outcomes"; .outcomes | to_entries | map("\(.key): \(.value)") | join(", ")),
  row("streams completed / failed (omni-bench)"; "\(.bench.completed) / \(.bench.failed)"),
  row("non-streaming answers by status (curl)"; .curl_status | to_entries | map("\(.key): \(.value)") | join(", ")),
  row("TTFT ms p50 / p99 (omni-bench)"; .bench.ttft_ms | "\(.p50 | floor) / \(.p99 | floor)"),
  row("E2E ms p50 / p99 (omni-bench)"; .bench.e2e_ms | "\(.p50 | floor) / \(.p99 | floor)")
' "$out/chaos.json"
