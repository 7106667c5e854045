#!/usr/bin/env bash
# omni-proxy in front of the real engine simulator (omni-sim): the three PD modes (NixlConnector
# handshake, SGLang bootstrap, aggregated), streaming and not.
set -euo pipefail
proxy_bin=${1:?usage: omni_sim_test.sh omni-proxy omni-sim}
sim_bin=${2:?missing omni-sim}
SIM_ARGS=(--speed 100)
. "$(dirname "$0")/sim_lib.sh"
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
