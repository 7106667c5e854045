#!/usr/bin/env bash
# The three PD modes end to end against fake engines: parallel (SGLang bootstrap, with the
# other leg cancelled when one fails), aggregated (the body untouched), sequential without
# usable kv_transfer_params (the prefill's answer goes to the client), and PD groups.
source "$(dirname "$0")/lib.sh"

# 1. Parallel: the same body to both legs with bootstrap_host/port/room, decode streams.
start_engine prefill
start_engine decode --token-delay 5ms
start_proxy parallel --pd-mode parallel --prefill-endpoints "127.0.0.1:$PORT_prefill" \
  --decode-endpoints "127.0.0.1:$PORT_decode" --bootstrap-port 9123
curl -sN -H 'Content-Type: application/json' -H 'X-Request-Id: par-1' \
  --data '{"prompt":"hi","max_tokens":4,"stream":true,"extra":"kept","bootstrap_host":"10.9.9.9","bootstrap_room":7,"kv_transfer_params":{"remote_host":"10.9.9.9"}}' \
  "http://$PROXY/v1/completions" >"$work/stream.txt"
[ "$(grep -c '^data: ' "$work/stream.txt")" -eq 5 ] || { cat "$work/stream.txt"; fail "parallel stream"; }
p=$(records prefill par-1); d=$(records decode par-1)
[ -n "$p" ] && [ -n "$d" ] || fail "parallel: both legs must be sent"
echo "$p" | jq -e '.body.bootstrap_host == "127.0.0.1" and .body.bootstrap_port == 9123 and .body.extra == "kept"
  and (.body.bootstrap_room | type) == "number" and .body.bootstrap_room != 7
  and (.body | has("kv_transfer_params") | not) and (.raw | contains("10.9.9.9") | not)' >/dev/null \
  || fail "parallel prefill body (the client's PD fields must be stripped): $p"
[ "$(echo "$p" | jq -c .body)" = "$(echo "$d" | jq -c .body)" ] || fail "parallel legs must get the same body"
stop_pid "$PID_parallel"
stop_pid "$PID_prefill"

# 2. Parallel, prefill fails fast while the decode stalls: the decode is cancelled at once
#    (no waiting for its timeout) and the client gets a 502 before anything was streamed.
start_engine badprefill --fail-status 503
stop_pid "$PID_decode"
start_engine stalldecode --stall 20s
start_proxy parallel2 --pd-mode parallel --prefill-endpoints "127.0.0.1:$PORT_badprefill" \
  --decode-endpoints "127.0.0.1:$PORT_stalldecode" --timeouts-decode-idle 60s
start=$(date +%s%N)
status=$(post /v1/completions '{"prompt":"hi","max_tokens":4,"stream":true}' --max-time 15)
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
expect_status 502 "$status" "parallel with a failing prefill"
[ "$elapsed_ms" -lt 5000 ] || fail "the decode leg was not cancelled (took ${elapsed_ms} ms)"
body_has '.error.code == 502' "502 body"
get /metrics >/dev/null
grep -q '^omni_proxy_cancelled_legs_total{pool="any"} [1-9]' "$work/body" || fail "cancelled leg not counted"
stop_pid "$PID_parallel2"
stop_pid "$PID_stalldecode"
stop_pid "$PID_badprefill"

# 3. Aggregated: only the decode pool, and the body reaches it byte for byte.
start_engine agg
start_proxy aggregated --pd-mode aggregated --decode-endpoints "127.0.0.1:$PORT_agg"
raw='{"prompt": [1, 2, 3],   "max_tokens":3, "temperature": 1.0e0, "x":{"y":"\u00e9"}}'
expect_status 200 "$(post /v1/completions "$raw" -H 'X-Request-Id: agg-1')" "aggregated"
[ "$(records agg agg-1 | jq -r .raw)" = "$raw" ] || fail "aggregated body changed: $(records agg agg-1 | jq -r .raw)"
expect_status 200 "$(get /ready)" "aggregated /ready without prefill"
# The client's PD fields are stripped in aggregated mode too (they would point the engine's KV
# transfer at a host of the client's choosing).
expect_status 200 "$(post /v1/completions '{"prompt":"x","kv_transfer_params":{"do_remote_prefill":true,"remote_host":"10.9.9.9","remote_port":22},"bootstrap_host":"10.9.9.9"}' -H 'X-Request-Id: agg-2')" "aggregated PD fields"
records agg agg-2 | jq -e '(.body | has("kv_transfer_params") | not) and (.body | has("bootstrap_host") | not)' \
  >/dev/null || fail "client PD fields reached the engine: $(records agg agg-2)"
stop_pid "$PID_aggregated"

# 4. Sequential, the prefill returns no usable kv_transfer_params: its answer is the answer.
start_engine noparams --no-kv-params
start_proxy seq --prefill-endpoints "127.0.0.1:$PORT_noparams" --decode-endpoints "127.0.0.1:$PORT_agg"
expect_status 200 "$(post /v1/completions '{"prompt":"x","max_tokens":3}' -H 'X-Request-Id: np-1')" "no params"
body_has '.choices[0].text == " tok0" and .kv_transfer_params == null' "prefill answer not passed"
[ -z "$(records agg np-1)" ] || fail "no decode leg without kv_transfer_params"
stop_pid "$PID_seq"

# 5. PD groups (YAML config): a decode choice stays within the prefill's group.
start_engine p1 --stall 300ms
start_engine p2 --stall 300ms
start_engine d1
start_engine d2
cat >"$work/groups.yaml" <<YAML
pd_mode: sequential
prefill_nodes:
  - {endpoint: "127.0.0.1:$PORT_p1", group: g1}
  - {endpoint: "127.0.0.1:$PORT_p2", group: g2}
decode_nodes:
  - {endpoint: "127.0.0.1:$PORT_d1", group: g1}
  - {endpoint: "127.0.0.1:$PORT_d2", group: g2}
YAML
start_proxy groups --config "$work/groups.yaml"
# Concurrent, so that least-outstanding spreads them over both prefill nodes.
for i in $(seq 8); do
  curl -s -o /dev/null -w '%{http_code}\n' -H 'Content-Type: application/json' -H "X-Request-Id: grp-$i" \
    --data '{"prompt":"x","max_tokens":2}' "http://$PROXY/v1/completions" >>"$work/group_status" &
done
wait_jobs=$(jobs -p | grep -v -x -F "$(printf '%s\n' "${pids[@]}")" || true)
for job in $wait_jobs; do wait "$job"; done
[ "$(sort -u "$work/group_status")" = "200" ] || fail "groups: $(cat "$work/group_status")"
for i in $(seq 8); do
  if [ -n "$(records p1 "grp-$i")" ]; then
    [ -n "$(records d1 "grp-$i")" ] && [ -z "$(records d2 "grp-$i")" ] || fail "grp-$i: prefill in g1, decode outside it"
  else
    [ -n "$(records d2 "grp-$i")" ] && [ -z "$(records d1 "grp-$i")" ] || fail "grp-$i: prefill in g2, decode outside it"
  fi
done
[ -s "$work/p1.jsonl" ] && [ -s "$work/p2.jsonl" ] || fail "least-outstanding should use both prefill nodes"

echo "PASS"
