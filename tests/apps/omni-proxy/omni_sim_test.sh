#!/usr/bin/env bash
# omni-proxy in front of the real engine simulator (omni-sim): the three PD modes (NixlConnector
# handshake, SGLang bootstrap, aggregated), streaming and not.
set -euo pipefail
proxy_bin=${1:?usage: omni_sim_test.sh omni-proxy omni-sim}
sim_bin=${2:?missing omni-sim}
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; for f in "$work"/*.log; do echo "--- $f"; tail -20 "$f"; done; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() {
  for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done
  fail "nothing listens on $1"
}
nixl='{"kv_connector":"NixlConnector","kv_role":"kv_both"}'
start_sim() {  # start_sim NAME PORT [flags...]
  local name=$1 port=$2; shift 2
  "$sim_bin" --host 127.0.0.1 --port "$port" --model deepseek-ai/DeepSeek-V3 --hardware h800 \
    --tensor-parallel-size 8 --max-model-len 8192 --num-gpu-blocks-override 4096 --kv-transfer-config "$nixl" --speed 100 "$@" \
    >"$work/$name.log" 2>&1 &
  pids+=($!)
  wait_port "$port"
}
prefill_port=$(free_port); decode_port=$(free_port); proxy_port=$(free_port)
start_sim prefill "$prefill_port" --disaggregation-mode prefill
start_sim decode "$decode_port" --disaggregation-mode decode

# In omni-sim the SGLang bootstrap service is the prefill instance's HTTP port.
for mode in sequential parallel aggregated; do
  "$proxy_bin" --listen-port "$proxy_port" --pd-mode "$mode" --prefill-endpoints "127.0.0.1:$prefill_port" \
    --bootstrap-port "$prefill_port" \
    --decode-endpoints "127.0.0.1:$decode_port" >"$work/proxy-$mode.log" 2>&1 &
  proxy_pid=$!
  pids+=("$proxy_pid")
  wait_port "$proxy_port"
  status=$(curl -s -o "$work/body" -w '%{http_code}' -H 'Content-Type: application/json' \
    --data '{"model":"deepseek-ai/DeepSeek-V3","prompt":"The capital of France is","max_tokens":8}' \
    "http://127.0.0.1:$proxy_port/v1/completions")
  [ "$status" = 200 ] || fail "$mode: completion status $status: $(cat "$work/body")"
  jq -e '.choices[0].text | length > 0' "$work/body" >/dev/null || fail "$mode: no text: $(cat "$work/body")"
  curl -sN -H 'Content-Type: application/json' \
    --data '{"model":"deepseek-ai/DeepSeek-V3","messages":[{"role":"user","content":"hi"}],"max_tokens":8,"stream":true}' \
    "http://127.0.0.1:$proxy_port/v1/chat/completions" >"$work/stream.txt"
  tail -2 "$work/stream.txt" | grep -q '^data: \[DONE\]' || fail "$mode: stream: $(cat "$work/stream.txt")"
  grep -q '"error"' "$work/stream.txt" && fail "$mode: error in stream: $(cat "$work/stream.txt")"
  kill "$proxy_pid"; wait "$proxy_pid" 2>/dev/null || true
done
echo "PASS"
