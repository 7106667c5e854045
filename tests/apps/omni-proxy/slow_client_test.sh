#!/usr/bin/env bash
# Slow readers cannot starve everyone else (issue 16, item 7): a stream's engine output goes
# into a bounded per-stream backlog while its client catches up, so the engine finishes and
# its node's budget is free at once; a client that stops reading is cut at
# timeouts.client_write, with its own outcome in the access log.
source "$(dirname "$0")/lib.sh"

start_engine engine
# Room for two requests on the only node; a third must wait for one of them to end.
start_proxy slow --pd-mode aggregated --decode-endpoints "127.0.0.1:$PORT_engine" \
  --limits-node-max-running 2 --timeouts-queue 4s --limits-stream-backlog-bytes 16MiB \
  --timeouts-client-write 2s

# Two clients reading ~3 MB streams at 16 KB/s: about three minutes each.
slow_pids=()
for i in 1 2; do
  curl -sN --limit-rate 16k -o /dev/null -H 'Content-Type: application/json' -H "X-Request-Id: slow-$i" \
    --data '{"prompt":"x","max_tokens":20000,"stream":true}' "http://$PROXY/v1/completions" &
  slow_pids+=($!)
done
for _ in $(seq 100); do [ "$(records engine slow-2 | wc -l)" -ge 1 ] && [ "$(records engine slow-1 | wc -l)" -ge 1 ] && break; sleep 0.05; done
# Both engine streams end in the proxy's backlogs; their leases are released.
for _ in $(seq 100); do
  get /admin/nodes >/dev/null
  [ "$(jq '.nodes[0].running' "$work/body")" = 0 ] && break
  sleep 0.05
done
get /admin/nodes >/dev/null
body_has '.nodes[0].running == 0' "slow readers still hold the node: $(cat "$work/body")"
expect_status 200 "$(post /v1/completions '{"prompt":"x","max_tokens":3}' --max-time 10)" \
  "a request behind two slow readers"
for pid in "${slow_pids[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done

# A client that stops reading altogether is cut at timeouts.client_write, and says so.
python3 - "${PROXY%:*}" "${PROXY##*:}" <<'PY' &
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect((sys.argv[1], int(sys.argv[2])))
body = b'{"prompt":"x","max_tokens":20000,"stream":true}'
s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
          b"X-Request-Id: stuck-1\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
time.sleep(20)  # never reads
PY
stuck=$!
for _ in $(seq 200); do
  grep -q '"request_id":"stuck-1"' "$work/slow.access.jsonl" 2>/dev/null && break
  sleep 0.05
done
kill "$stuck" 2>/dev/null || true; wait "$stuck" 2>/dev/null || true
jq -e 'select(.request_id == "stuck-1") | .outcome == "client_too_slow"' "$work/slow.access.jsonl" >/dev/null \
  || fail "a client that stopped reading: $(grep stuck-1 "$work/slow.access.jsonl")"
echo "PASS"
