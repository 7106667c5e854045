#!/usr/bin/env bash
# omni-proxy in front of the real engine simulator (omni-sim): the three PD modes (NixlConnector
# handshake, SGLang bootstrap, aggregated), streaming and not.
set -euo pipefail
proxy_bin=${1:?usage: omni_sim_test.sh omni-proxy omni-sim}
sim_bin=${2:?missing omni-sim}
SIM_ARGS=(--speed 100)
. "$(dirname "$0")/sim_lib.sh"
prefill_port=$(free_port); decode_port=$(free_port)
start_sim prefill "$prefill_port" --disaggregation-mode prefill
start_sim decode "$decode_port" --disaggregation-mode decode

# In omni-sim the SGLang bootstrap service is the prefill instance's HTTP port.
for mode in sequential parallel aggregated; do
  start_omni_proxy "proxy-$mode" --pd-mode "$mode" --prefill-endpoints "127.0.0.1:$prefill_port" \
    --bootstrap-port "$prefill_port" \
    --decode-endpoints "127.0.0.1:$decode_port"
  proxy_pid=$PROXY_PID proxy_port=$PROXY_PORT
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

# Sequential PD when the decode comes after its prefill's KV hold expired (the decode engine was
# stopped for longer than the lease: 30 model s = 0.3 s here) and that engine fails requests
# whose KV cannot be loaded (kv_load_failure_policy "fail": a 500): the proxy prefills again.
# The client's valid request gets its answer, never a 400 or the engine's 500; the access log
# and /metrics count the redo.
lease_cfg() {
  echo "{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_both\",\"kv_load_failure_policy\":\"fail\",\"kv_connector_extra_config\":{\"kv_lease_duration\":30}}"
}
lp_port=$(free_port); ld_port=$(free_port)
KV_CONFIG=$(lease_cfg) start_sim leaseprefill "$lp_port" --disaggregation-mode prefill
KV_CONFIG=$(lease_cfg) start_sim faildecode "$ld_port" --disaggregation-mode decode
decode_pid=${pids[-1]}
start_omni_proxy proxy-redo --prefill-endpoints "127.0.0.1:$lp_port" \
  --decode-endpoints "127.0.0.1:$ld_port" --health-interval 0s --access-log "$work/redo.access.jsonl"
proxy_port=$PROXY_PORT
kill -STOP "$decode_pid"
curl -s -o "$work/redo.json" -w '%{http_code}' -H 'Content-Type: application/json' \
  --data '{"model":"deepseek-ai/DeepSeek-V3","prompt":"The capital of France is","max_tokens":8}' \
  "http://127.0.0.1:$proxy_port/v1/completions" >"$work/redo.status" &
curl_pid=$!
sleep 1.5
kill -CONT "$decode_pid"
wait "$curl_pid" || fail "redo: curl failed"
[ "$(cat "$work/redo.status")" = 200 ] || fail "redo: status $(cat "$work/redo.status"): $(cat "$work/redo.json")"
jq -e '.choices[0].text | length > 0' "$work/redo.json" >/dev/null || fail "redo: no text: $(cat "$work/redo.json")"
grep -q "omni_sim_kv_load_failures_total" <(curl -s "http://127.0.0.1:$ld_port/metrics") \
  || fail "redo: the decode never failed to load the KV (the test did not test the redo)"
jq -e -s 'length == 1 and .[0].kv_redos == 1 and .[0].status == 200' "$work/redo.access.jsonl" >/dev/null \
  || fail "redo: access log: $(cat "$work/redo.access.jsonl")"
# (Read whole first: grep -q leaving early would make curl fail with SIGPIPE under pipefail.)
proxy_metrics=$(curl -s "http://127.0.0.1:$proxy_port/metrics")
grep -q '^omni_proxy_kv_redos_total{pool="decode"} 1' <<<"$proxy_metrics" \
  || fail "redo: omni_proxy_kv_redos_total is not 1"
echo "PASS"
