#!/usr/bin/env bash
# Admission control: when every node is at its thresholds requests wait in the proxy's
# bounded queue (not on the engines); past the bound they get 429 with Retry-After; a request
# that waits longer than the queue timeout gets 503.
source "$(dirname "$0")/lib.sh"

start_engine busy --stall 2s --io-threads 2
start_proxy admit --pd-mode aggregated --decode-endpoints "127.0.0.1:$PORT_busy" \
  --limits-node-max-running 1 --limits-queue-capacity 2 --timeouts-queue 10s
for i in 1 2 3 4 5; do
  curl -s -o "$work/body$i" -D "$work/headers$i" -w '%{http_code}\n' -H 'Content-Type: application/json' \
    -H "X-Request-Id: adm-$i" --data '{"prompt":"x","max_tokens":1}' "http://$PROXY/v1/completions" \
    >"$work/status$i" &
  sleep 0.1  # arrival order
done
sleep 0.3
get /admin/requests >/dev/null
body_has '.waiting == 2 and (.requests | length) == 3' "want 1 running + 2 waiting: $(cat "$work/body")"
body_has '[.requests[].stage] | sort == ["decoding","waiting_decode","waiting_decode"]' "stages wrong"
get /metrics >/dev/null
grep -q '^omni_proxy_queue_waiting 2' "$work/body" || fail "queue gauge wrong"
grep -q "^omni_proxy_node_running{pool=\"decode\",node=\"127.0.0.1:$PORT_busy\"} 1" "$work/body" \
  || fail "one request at a time on the engine"
for job in $(jobs -p); do
  case " ${pids[*]} " in *" $job "*) ;; *) wait "$job" ;; esac
done
[ "$(cat "$work"/status{1,2,3} | sort -u)" = "200" ] || fail "admitted requests: $(cat "$work"/status*)"
[ "$(cat "$work"/status{4,5} | sort -u)" = "429" ] || fail "over the bound: $(cat "$work"/status*)"
grep -qi '^retry-after: 1' "$work/headers4" || fail "429 without Retry-After"
jq -e '.error.code == 429 and .error.type == "RateLimitError"' "$work/body5" >/dev/null || fail "429 body"
# The engine never had more than one request at once: its three arrived two seconds apart.
[ "$(wc -l <"$work/busy.jsonl")" -eq 3 ] || fail "rejected requests must not reach the engine"
jq -s -e 'map(select(.pd_mode != null) | .outcome) | sort == ["rejected","rejected","success","success","success"]' \
  "$work/admit.access.jsonl" >/dev/null || fail "outcomes: $(jq -c .outcome "$work/admit.access.jsonl")"
stop_pid "$PID_admit"

# The queue timeout: a request that cannot be placed in time gets 503.
start_proxy timeout --pd-mode aggregated --decode-endpoints "127.0.0.1:$PORT_busy" \
  --limits-node-max-running 1 --timeouts-queue 300ms
curl -s -o /dev/null -H 'Content-Type: application/json' --data '{"prompt":"x"}' "http://$PROXY/v1/completions" &
first=$!
sleep 0.2
expect_status 503 "$(post /v1/completions '{"prompt":"x"}')" "queue timeout"
body_has '.error.code == 503' "503 body"
wait "$first" || true
jq -s -e 'map(select(.pd_mode != null) | .outcome) | sort == ["success","timeout"]' "$work/timeout.access.jsonl" >/dev/null \
  || fail "timeout outcome: $(jq -c .outcome "$work/timeout.access.jsonl")"

echo "PASS"
