#!/usr/bin/env bash
# Faults: engines killed with kill -9 under load (prefill and decode, sequential and parallel),
# retries, ejection, errors after streaming started, client disconnects, health checks,
# drain, SIGHUP reload, and 1,000 concurrent streams.
source "$(dirname "$0")/lib.sh"

summary() { jq -r "$1" "$work/load.json"; }

echo "[$SECONDS s] step 1" >&2
# 1. kill -9 one prefill and one decode engine under streaming load, in both PD modes. No
#    request may fail before streaming started (all 200); streams cut mid-way are continued on
#    the other decode engine (mid-stream migration): none ends with an error event, none
#    silently.
for mode in ${MODES-sequential parallel}; do
  start_engine "p1$mode" --stall 10ms
  start_engine "p2$mode" --stall 10ms
  start_engine "d1$mode" --token-delay 5ms --io-threads 2
  start_engine "d2$mode" --token-delay 5ms --io-threads 2
  eval "pp1=\$PORT_p1$mode pp2=\$PORT_p2$mode dd1=\$PORT_d1$mode dd2=\$PORT_d2$mode"
  start_proxy "kill$mode" --pd-mode "$mode" --prefill-endpoints "127.0.0.1:$pp1,127.0.0.1:$pp2" \
    --decode-endpoints "127.0.0.1:$dd1,127.0.0.1:$dd2" --workers 2 --health-interval 200ms
  "$load_bin" --target "$PROXY" --stream --concurrency 30 --requests 400 \
    --body '{"prompt":"hello","max_tokens":20,"stream":true}' >"$work/load.json" &
  load_pid=$!
  sleep 0.8
  eval "kill -9 \$PID_p1$mode \$PID_d1$mode"
  wait "$load_pid" || fail "$mode: load client failed"
  [ "$(summary '.status | keys == ["200"]')" = "true" ] || fail "$mode: non-200 answers: $(cat "$work/load.json")"
  [ "$(summary '.transport_errors')" = "0" ] || fail "$mode: transport errors: $(cat "$work/load.json")"
  [ "$(summary '.complete_streams')" = "400" ] || fail "$mode: streams without [DONE]: $(cat "$work/load.json")"
  [ "$(summary '.error_events')" = "0" ] || fail "$mode: cut streams were not continued: $(cat "$work/load.json")"
  eval "stop_pid \$PID_kill$mode; stop_pid \$PID_p2$mode; stop_pid \$PID_d2$mode"
done

echo "[$SECONDS s] step 2" >&2
# 2. A decode engine answering 503: requests are retried on the other one before any byte,
#    and the failing node's circuit opens.
start_engine good
start_engine bad --fail-status 503
start_proxy retry --pd-mode aggregated --decode-endpoints "127.0.0.1:$PORT_bad,127.0.0.1:$PORT_good" \
  --health-failures-to-eject 2 --health-interval 0s --log-level debug
for i in $(seq 6); do
  expect_status 200 "$(post /v1/completions '{"prompt":"x","max_tokens":2,"stream":true}')" "retry $i"
done
get /admin/nodes >/dev/null
body_has "(.nodes[] | select(.name == \"127.0.0.1:$PORT_bad\") | .health == \"ejected\")" "bad node not ejected"
[ "$(wc -l <"$work/bad.jsonl")" -eq 2 ] || fail "an ejected node must get no more requests"
jq -e -s 'map(select(.pd_mode != null) | .decode_retries) | add == 2' "$work/retry.access.jsonl" >/dev/null || fail "retries not logged"
# The proxy says what it decided: its set-up at start, the ejection with its reason, the retries
# (one line for the kind, not one per request).
grep -q "pd_mode aggregated, policy .*decode: 127.0.0.1:$PORT_bad, 127.0.0.1:$PORT_good" "$work/retry.log" \
  || fail "the start-up summary must list the nodes"
grep -q "warning proxy: node 127.0.0.1:$PORT_bad (decode) ejected for 5s: consecutive failed requests" \
  "$work/retry.log" || fail "the ejection must be logged with its reason"
[ "$(grep -c "requests retried on another node" "$work/retry.log")" -eq 1 ] \
  || fail "two retries within the interval must make one log line"
# At debug level, each decision with its inputs, and which request it was for.
grep -qE "debug proxy: placed ticket [0-9]+ \(decode, [0-9]+ prompt tokens, attempt 0\) on 127.0.0.1:$PORT_bad; weighed 127.0.0.1:$PORT_bad \{matched 0 tokens, outstanding 0 tokens / 0 requests" \
  "$work/retry.log" || fail "debug level must log each placement's inputs: $(grep -m3 placed "$work/retry.log")"
grep -qE "debug proxy: request [0-9a-f]+: decode leg on 127.0.0.1:$PORT_good \(ticket [0-9]+\)" "$work/retry.log" \
  || fail "debug level must say which request a placement was for"
get /metrics >/dev/null
grep -q "omni_proxy_node_health_changes_total{node=\"127.0.0.1:$PORT_bad\",to=\"ejected\"} 1" "$work/body" \
  || fail "the ejection must be counted per node"
grep -q "omni_proxy_node_errors_total{pool=\"decode\",node=\"127.0.0.1:$PORT_bad\",kind=\"http_5xx\"} 2" "$work/body" \
  || fail "the node's 503s must be counted by kind: $(grep node_errors "$work/body")"
grep -q "omni_proxy_node_errors_total{[^}]*node=\"127.0.0.1:$PORT_good\"" "$work/body" \
  && fail "the healthy node must have no errors counted"
stop_pid "$PID_retry"
stop_pid "$PID_bad"

echo "[$SECONDS s] step 2b" >&2
# 2b. No client can take routing down: engines refusing the *request* (501 "not supported",
#     400, a 500 about the request) are answered to the client untouched — status and body —
#     never retried elsewhere, never counted against the node, in every PD mode.
start_engine n501 --fail-status 501
start_engine n400 --fail-status 400
start_engine n500 --fail-status 500
start_engine okp
for bad in n501 n400 n500; do
  port_var=PORT_$bad
  for mode in aggregated sequential; do
    if [ "$mode" = aggregated ]; then
      start_proxy refuse$bad$mode --pd-mode aggregated --decode-endpoints "127.0.0.1:${!port_var},127.0.0.1:$PORT_okp" \
        --health-failures-to-eject 1 --health-interval 0s --policy round-robin
    else
      start_proxy refuse$bad$mode --prefill-endpoints "127.0.0.1:${!port_var}" --decode-endpoints "127.0.0.1:$PORT_okp" \
        --health-failures-to-eject 1 --health-interval 0s
    fi
    before=0
    [ -f "$work/$bad.jsonl" ] && before=$(wc -l <"$work/$bad.jsonl")
    refused=0
    for i in $(seq 4); do
      status=$(post /v1/completions '{"prompt":"x","max_tokens":2,"n":2}')
      if [ "$status" = "${bad#n}" ]; then
        refused=$((refused + 1))
        body_has '.error.message == "injected failure"' "$mode: the engine's own body must reach the client"
      else
        expect_status 200 "$status" "$mode $bad round-robin to the good engine"
      fi
    done
    [ "$refused" -ge 1 ] || fail "$mode: the $bad engine was never asked"
    after=$(wc -l <"$work/$bad.jsonl")
    [ $((after - before)) -eq "$refused" ] || fail "$mode: $bad refusals were retried ($((after - before)) calls for $refused)"
    get /admin/nodes >/dev/null
    body_has "[.nodes[] | select(.name == \"127.0.0.1:${!port_var}\") | .health] == [\"up\"]" \
      "$mode: refusing a bad request must not eject the node"
    body_has "[.nodes[] | .consecutive_failures] | add == 0" "$mode: refusals counted as failures"
    eval "stop_pid \$PID_refuse$bad$mode"
  done
done

echo "[$SECONDS s] step 3" >&2
# 3. The engine dies after streaming started: an error event, then [DONE], never a silent cut.
start_engine dying --die-after-events 3
start_proxy dying --pd-mode aggregated --decode-endpoints "127.0.0.1:$PORT_dying"
curl -sN -H 'Content-Type: application/json' --data '{"prompt":"x","max_tokens":10,"stream":true}' \
  "http://$PROXY/v1/completions" >"$work/cut.txt"
grep -q '^data: {"error": {"message": ' "$work/cut.txt" || { cat "$work/cut.txt"; fail "no error event"; }
tail -2 "$work/cut.txt" | grep -q '^data: \[DONE\]' || fail "no [DONE] after the error event"
jq -e '.outcome == "stream_error"' "$work/dying.access.jsonl" >/dev/null || fail "outcome not stream_error"
# The cut is counted as the node's; the engine is gone now, so the next call cannot connect.
post /v1/completions '{"prompt":"x","max_tokens":2}' >/dev/null
get /metrics >/dev/null
grep -q "omni_proxy_node_errors_total{pool=\"decode\",node=\"127.0.0.1:$PORT_dying\",kind=\"stream_broken\"} 1" "$work/body" \
  || fail "a cut stream must be counted as stream_broken: $(grep node_errors "$work/body")"
grep -q "omni_proxy_node_errors_total{pool=\"decode\",node=\"127.0.0.1:$PORT_dying\",kind=\"connect\"} [1-9]" "$work/body" \
  || fail "a refused connection must be counted as connect: $(grep node_errors "$work/body")"
stop_pid "$PID_dying"

echo "[$SECONDS s] step 4" >&2
# 4. A client that goes away cancels the engine call.
start_engine slow --token-delay 100ms
start_proxy disc --pd-mode aggregated --decode-endpoints "127.0.0.1:$PORT_slow"
curl -sN -H 'Content-Type: application/json' -H 'X-Request-Id: gone-1' --max-time 0.6 \
  --data '{"prompt":"x","max_tokens":50,"stream":true}' "http://$PROXY/v1/completions" >/dev/null || true
for _ in $(seq 60); do
  [ -n "$(jq -c 'select(.event == "client_gone" and (.x_request_id | startswith("gone-1-")))' "$work/slow.jsonl")" ] && break
  sleep 0.1
done
sent=$(jq -r 'select(.event == "client_gone" and (.x_request_id | startswith("gone-1-"))) | .sent' "$work/slow.jsonl")
[ -n "$sent" ] && [ "$sent" -lt 30 ] || fail "the engine call was not cancelled (sent: '$sent')"
for _ in $(seq 40); do grep -q client_disconnected "$work/disc.access.jsonl" 2>/dev/null && break; sleep 0.05; done
jq -e '.outcome == "client_disconnected"' "$work/disc.access.jsonl" >/dev/null || fail "outcome not client_disconnected"
stop_pid "$PID_disc"

echo "[$SECONDS s] step 5" >&2
# 5. Active health checks: an unhealthy engine makes the proxy not ready, and back.
start_engine sick --unhealthy
start_proxy health --pd-mode aggregated --decode-endpoints "127.0.0.1:$PORT_sick" --health-interval 100ms
for _ in $(seq 50); do [ "$(get /ready)" = "503" ] && break; sleep 0.1; done
expect_status 503 "$(get /ready)" "ready with only an unhealthy decode node"
stop_pid "$PID_sick"
start_engine sick --port "$PORT_sick"
for _ in $(seq 50); do [ "$(get /ready)" = "200" ] && break; sleep 0.1; done
expect_status 200 "$(get /ready)" "re-admitted after a good probe"
grep -q "node 127.0.0.1:$PORT_sick (decode) up again: its /health probe succeeded" "$work/health.log" \
  || fail "a node back up must be logged"
body_has '.missing == []' "a ready proxy names no missing role"
stop_pid "$PID_health"
# A PD mode is ready only while every role it needs has a usable engine; the body names the
# role that has none (here the prefill role, with a healthy decode engine beside it).
start_engine sickprefill --unhealthy
start_engine okdecode
start_proxy pdready --prefill-endpoints "127.0.0.1:$PORT_sickprefill" \
  --decode-endpoints "127.0.0.1:$PORT_okdecode" --health-interval 100ms
for _ in $(seq 50); do [ "$(get /ready)" = "503" ] && break; sleep 0.1; done
expect_status 503 "$(get /ready)" "sequential PD ready without a healthy prefill engine"
body_has '.missing == ["prefill"] and .decode_usable == true' "/ready names the missing role"
stop_pid "$PID_pdready"
stop_pid "$PID_sickprefill"
stop_pid "$PID_okdecode"

echo "[$SECONDS s] step 6" >&2
# 6. Drain via the admin API, then SIGHUP reloads the pools from the config file.
start_engine e1
start_engine e2
printf 'pd_mode: aggregated\ndecode_endpoints: ["127.0.0.1:%s", "127.0.0.1:%s"]\n' "$PORT_e1" "$PORT_e2" >"$work/pools.yaml"
start_proxy pools --config "$work/pools.yaml"
expect_status 200 "$(post /admin/drain "{\"node\":\"127.0.0.1:$PORT_e1\",\"drain\":true}")" "drain"
expect_status 404 "$(post /admin/drain '{"node":"127.0.0.1:1"}')" "drain an unknown node"
for i in $(seq 4); do expect_status 200 "$(post /v1/completions '{"prompt":"x","max_tokens":1}')" "drained $i"; done
[ ! -s "$work/e1.jsonl" ] || fail "a draining node got requests"
grep -q "node 127.0.0.1:$PORT_e1 drained" "$work/pools.log" || fail "a drain must be logged"
expect_status 200 "$(post /admin/drain "{\"node\":\"127.0.0.1:$PORT_e1\",\"drain\":false}")" "undrain"
# The same through the node's own route, /admin/nodes/{host:port}/drain (body optional; the
# ':' may come as %3A): a drained e2 gets nothing, {"drain":false} gives it work again.
expect_status 200 "$(post "/admin/nodes/127.0.0.1:$PORT_e2/drain" '')" "drain by path"
body_has ".node == \"127.0.0.1:$PORT_e2\" and .draining == true" "drain by path: the answer"
expect_status 200 "$(get /admin/nodes)" "nodes"
body_has ".nodes | map(select(.name == \"127.0.0.1:$PORT_e2\")) | .[0].draining" "e2 draining"
e2_before=$(wc -l <"$work/e2.jsonl")
for i in $(seq 4); do expect_status 200 "$(post /v1/completions '{"prompt":"x","max_tokens":1}')" "e2 drained $i"; done
[ "$(wc -l <"$work/e2.jsonl")" -eq "$e2_before" ] || fail "a node drained by path got requests"
expect_status 200 "$(post "/admin/nodes/127.0.0.1%3A$PORT_e2/drain" '{"drain":false}')" "undrain by path, %3A"
body_has ".node == \"127.0.0.1:$PORT_e2\" and .draining == false" "undrain by path: the answer"
expect_status 200 "$(get /admin/nodes)" "nodes"
body_has "all(.nodes[]; .draining == false)" "no node draining after the undrain"
expect_status 404 "$(post /admin/nodes/127.0.0.1:1/drain '')" "drain an unknown node by path"
body_has '.error.type == "NotFoundError"' "unknown node: the error"
expect_status 405 "$(get "/admin/nodes/127.0.0.1:$PORT_e2/drain")" "GET on the drain route"
grep -qi '^Allow: POST' "$work/headers" || fail "405 without Allow: POST"
expect_status 400 "$(post "/admin/nodes/127.0.0.1:$PORT_e2/drain" '{"drain":"no"}')" "a drain that is not a boolean"
expect_status 400 "$(post "/admin/nodes/127.0.0.1%3/drain" '')" "a malformed %-escape"
expect_status 404 "$(post "/admin/nodes/127.0.0.1:$PORT_e2/undrain" '')" "another route under a node"
printf 'pd_mode: aggregated\ndecode_endpoints: ["127.0.0.1:%s"]\n' "$PORT_e1" >"$work/pools.yaml"
kill -HUP "$PID_pools"
for _ in $(seq 50); do grep -q "pools reloaded" "$work/pools.log" && break; sleep 0.05; done
grep -q "reload: -127.0.0.1:$PORT_e2 (decode)" "$work/pools.log" || fail "a reload must say what it removed"
e2_before=$(wc -l <"$work/e2.jsonl")
for i in $(seq 3); do expect_status 200 "$(post /v1/completions '{"prompt":"x","max_tokens":1}')" "reloaded $i"; done
[ "$(wc -l <"$work/e2.jsonl")" -eq "$e2_before" ] || fail "a node removed by SIGHUP still gets requests"
expect_status 200 "$(post /admin/reload '{}')" "admin reload"
stop_pid "$PID_pools"

echo "[$SECONDS s] step 7" >&2
# 7. 1,000 concurrent streams complete.
start_engine many --token-delay 20ms --io-threads 2
start_proxy many --pd-mode aggregated --decode-endpoints "127.0.0.1:$PORT_many" --workers 2
"$load_bin" --target "$PROXY" --stream --concurrency 1000 --requests 1000 \
  --body '{"prompt":"x","max_tokens":8,"stream":true}' >"$work/load.json" || fail "load client failed"
[ "$(summary '.complete_streams')" = "1000" ] || fail "1000 streams: $(cat "$work/load.json")"
[ "$(summary '.events')" = "9000" ] || fail "1000 streams: events lost: $(cat "$work/load.json")"

echo "PASS"
