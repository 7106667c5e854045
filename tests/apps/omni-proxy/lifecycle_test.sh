#!/usr/bin/env bash
# Lifecycle gaps: a client that leaves while its request waits (for a non-streamed answer, or
# in the proxy queue) is noticed at once; clients that never read their streams keep the
# proxy's memory bounded while others are served; SSE relay of many events arrives whole and
# in order (coalesced writes); /admin/reload off the I/O thread, one at a time.
source "$(dirname "$0")/lib.sh"

now_ms() { date +%s%3N; }
# access_line FILE RID: the access-log line of request RID, once written (up to 5 s).
access_line() {
  for _ in $(seq 100); do
    local line
    line=$(jq -c --arg rid "$2" 'select(.request_id == $rid)' "$1" 2>/dev/null || true)
    [ -n "$line" ] && { echo "$line"; return 0; }
    sleep 0.05
  done
}

echo "[$SECONDS s] step 1" >&2
# 1. Non-streaming request to a slow engine (10 s stall); the client leaves after 0.3 s. The
#    proxy must notice at once: the engine sees its connection closed during the stall and
#    the access log says client_disconnected within a second, not after the stall.
start_engine slow --stall 10s
start_proxy nonstream --pd-mode aggregated --decode-endpoints "127.0.0.1:$PORT_slow"
t0=$(now_ms)
curl -s -H 'Content-Type: application/json' -H 'X-Request-Id: left-1' --max-time 0.3 \
  --data '{"prompt":"x","max_tokens":5}' "http://$PROXY/v1/completions" >/dev/null || true
line=$(access_line "$work/nonstream.access.jsonl" left-1)
t1=$(now_ms)
[ -n "$line" ] || fail "no access-log line for the departed client"
[ "$(jq -r .outcome <<<"$line")" = "client_disconnected" ] || fail "outcome: $line"
[ $((t1 - t0)) -lt 3000 ] || fail "noticed after $((t1 - t0)) ms"
for _ in $(seq 60); do
  [ -n "$(jq -c 'select(.event == "client_gone" and (.x_request_id | startswith("left-1-")))' "$work/slow.jsonl")" ] && break
  sleep 0.05
done
[ -n "$(jq -c 'select(.event == "client_gone" and (.x_request_id | startswith("left-1-")))' "$work/slow.jsonl")" ] ||
  fail "the engine connection was not closed during the stall"
# Sequential PD: the same on the prefill leg.
start_proxy seqleft --pd-mode sequential --prefill-endpoints "127.0.0.1:$PORT_slow" \
  --decode-endpoints "127.0.0.1:$PORT_slow"
curl -s -H 'Content-Type: application/json' -H 'X-Request-Id: left-2' --max-time 0.3 \
  --data '{"prompt":"x","max_tokens":5,"stream":true}' "http://$PROXY/v1/completions" >/dev/null || true
line=$(access_line "$work/seqleft.access.jsonl" left-2)
[ "$(jq -r .outcome <<<"${line:-{\}}")" = "client_disconnected" ] || fail "prefill leg: ${line:-no line}"
stop_pid "$PID_seqleft"
stop_pid "$PID_nonstream"

echo "[$SECONDS s] step 2" >&2
# 2. A request waiting in the proxy queue (one running slot, held by a 10 s stall) whose client
#    leaves: its ticket is cancelled at once, it never reaches the engine, the queue empties.
start_proxy queued --pd-mode aggregated --decode-endpoints "127.0.0.1:$PORT_slow" \
  --limits-node-max-running 1 --timeouts-queue 20s
curl -s -H 'Content-Type: application/json' -H 'X-Request-Id: holder' --max-time 8 \
  --data '{"prompt":"x","max_tokens":5}' "http://$PROXY/v1/completions" >/dev/null &
holder=$!
for _ in $(seq 100); do [ -n "$(records slow holder)" ] && break; sleep 0.05; done
curl -s -H 'Content-Type: application/json' -H 'X-Request-Id: queued-1' --max-time 0.5 \
  --data '{"prompt":"x","max_tokens":5}' "http://$PROXY/v1/completions" >/dev/null || true
line=$(access_line "$work/queued.access.jsonl" queued-1)
[ "$(jq -r .outcome <<<"${line:-{\}}")" = "client_disconnected" ] || fail "queued: ${line:-no line within 5 s}"
# Read whole, then searched: `curl | grep -q` under pipefail fails whenever grep stops reading
# before curl has written everything (curl dies of SIGPIPE), which made this check flaky.
queue_empty() {
  local metrics
  metrics=$(curl -s "http://$PROXY/metrics") && grep -q '^omni_proxy_queue_waiting 0' <<<"$metrics"
}
for _ in $(seq 40); do
  queue_empty && break
  sleep 0.05
done
queue_empty || fail "the queue did not empty"
[ -z "$(records slow queued-1)" ] || fail "a cancelled queued request reached the engine"
kill "$holder" 2>/dev/null || true
wait "$holder" 2>/dev/null || true
stop_pid "$PID_queued"
stop_pid "$PID_slow"

echo "[$SECONDS s] step 3" >&2
# 3. Relay: 20 streams of 2,000 events from an engine that sends them back to back (many per
#    read, so the proxy coalesces them); every stream complete, events in order.
start_engine fast --io-threads 2
start_proxy relay --pd-mode aggregated --decode-endpoints "127.0.0.1:$PORT_fast"
curls=()
for i in $(seq 20); do
  curl -sN --max-time 60 -H 'Content-Type: application/json' \
    --data '{"prompt":"x","max_tokens":2000,"stream":true}' \
    "http://$PROXY/v1/completions" >"$work/relay.$i.txt" &
  curls+=($!)
done
wait_curls() { for pid in "${curls[@]}"; do wait "$pid" || true; done; curls=(); }
wait_curls
for i in $(seq 20); do
  f="$work/relay.$i.txt"
  [ "$(grep -c '^data: {' "$f")" = "2000" ] || fail "stream $i: $(grep -c '^data: {' "$f") events, want 2000"
  tail -2 "$f" | grep -q '^data: \[DONE\]' || fail "stream $i: no [DONE]"
  # " tok0", " tok1", ... in order, each once.
  grep -o '"text": *" tok[0-9]*"' "$f" | sed 's/.*tok\([0-9]*\)"/\1/' >"$work/relay.order"
  seq 0 1999 | cmp -s - "$work/relay.order" || fail "stream $i: events out of order or missing"
done
relayed=$(curl -s "http://$PROXY/metrics" | sed -n 's/^omni_proxy_relayed_events_total{pool="decode"} //p')
[ "${relayed%.*}" -ge 40000 ] || fail "relayed_events_total $relayed, want >= 40000"
stop_pid "$PID_relay"

echo "[$SECONDS s] step 4" >&2
# 4. 50 streams whose clients never read, from an engine that writes as fast as it can
#    (200,000 events, ~30 MB, each). Backpressure (the relay reads the engine only after the
#    previous write to the client completed) keeps the proxy's memory bounded: its RSS may
#    grow by at most 64 MiB (each stalled stream holds one 16 KiB read piece, its coroutine
#    frames and Beast buffers, well under 100 KiB; the rest waits in kernel socket buffers and
#    then in the engine) plus each stream's migration transcript (the answer's text kept so
#    that another engine could continue it, at most limits.migration_text_bytes = 256 KiB),
#    and it keeps serving other clients.
# (Thresholds raised so that admission control does not queue the streams: 50 x 200,000
# tokens is far over the default per-node budget.)
start_proxy slowread --pd-mode aggregated --decode-endpoints "127.0.0.1:$PORT_fast" --workers 2 \
  --limits-node-max-outstanding-tokens 1000000000
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$PID_slowread/status"; }
expect_status 200 "$(post /v1/completions '{"prompt":"x","max_tokens":2}')" "warm-up"
before=$(rss_kib)
python3 - "$PROXY" >"$work/stalled.log" 2>&1 <<'PY' &
import socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
body = b'{"prompt":"x","max_tokens":200000,"stream":true}'
head = ("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Content-Length: %d\r\n\r\n" % len(body)).encode()
socks = []
for _ in range(50):
    s = socket.create_connection((host, int(port)))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.sendall(head + body)
    socks.append(s)
print("opened", len(socks), flush=True)
time.sleep(30)  # never reads; killed by the test
PY
stalled=$!
pids+=("$stalled")
for _ in $(seq 100); do grep -q opened "$work/stalled.log" && break; sleep 0.05; done
sleep 3
after=$(rss_kib)
grew=$((after - before))
echo "proxy RSS: $before KiB before, $after KiB with 50 stalled streams (+$grew KiB)" >&2
bound=$((65536 + 50 * 256))  # KiB
[ "$grew" -lt "$bound" ] || fail "RSS grew by $grew KiB with 50 stalled streams"
# (The bound is generous: while the 50 backlogs fill, 50 MiB of events are relayed, which on a
# 2-core machine busy with other tests delays a new request by seconds, not by minutes.)
expect_status 200 "$(post /v1/completions '{"prompt":"x","max_tokens":2}' --max-time 30)" "served while 50 streams stall"
sleep 1
[ "$(rss_kib)" -lt $((before + bound)) ] || fail "RSS keeps growing: $(rss_kib) KiB"
stop_pid "$stalled"
stop_pid "$PID_slowread"

echo "[$SECONDS s] step 5" >&2
# 5. /admin/reload runs off the I/O thread, one at a time: 10 at once each get 200 or 409,
#    at least one 200, and the proxy serves throughout.
printf 'pd_mode: aggregated\ndecode_endpoints: ["127.0.0.1:%s"]\n' "$PORT_fast" >"$work/reload.yaml"
start_proxy reload --config "$work/reload.yaml"
for i in $(seq 10); do
  curl -s --max-time 10 -o /dev/null -w '%{http_code}\n' -X POST "http://$PROXY/admin/reload" >"$work/rl.$i" &
  curls+=($!)
done
expect_status 200 "$(post /v1/completions '{"prompt":"x","max_tokens":2}')" "served during reloads"
wait_curls
codes=$(cat "$work"/rl.* | sort | uniq -c | tr -s ' ' | tr '\n' ' ')
echo "reload answers: $codes" >&2
grep -qv -E '^(200|409)$' <(cat "$work"/rl.*) && fail "unexpected reload answers: $codes"
grep -q '^200$' <(cat "$work"/rl.*) || fail "no reload succeeded: $codes"
stop_pid "$PID_reload"

echo "[$SECONDS s] step 6" >&2
# 6. SIGTERM under load: the proxy stops accepting at once, the streams in flight finish whole
#    (each ends with [DONE], no error event) within timeouts.shutdown_grace, and it exits 0.
start_engine paced --token-delay 20ms --io-threads 2
start_proxy term --pd-mode aggregated --decode-endpoints "127.0.0.1:$PORT_paced" --workers 2 \
  --timeouts-shutdown-grace 10s
"$load_bin" --target "$PROXY" --stream --concurrency 8 --requests 8 \
  --body '{"prompt":"x","max_tokens":100,"stream":true}' >"$work/term_load.json" &
term_load=$!
# Every stream under way (100 tokens x 20 ms = 2 s each) before the signal.
for _ in $(seq 100); do
  [ "$(curl -s "http://$PROXY/admin/requests" | jq '.requests | length')" -ge 8 ] && break
  sleep 0.02
done
kill -TERM "$PID_term"
sleep 0.1
refused=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://$PROXY/health" || true)
[ "$refused" = "000" ] || fail "a new connection was accepted after SIGTERM (status $refused)"
wait "$term_load" || fail "the load client failed during the shutdown"
jq -e '.status == {"200": 8} and .complete_streams == 8 and .error_events == 0 and .transport_errors == 0' \
  "$work/term_load.json" >/dev/null || fail "streams cut by SIGTERM: $(cat "$work/term_load.json")"
term_status=0
wait "$PID_term" || term_status=$?
[ "$term_status" -eq 0 ] || fail "omni-proxy exited $term_status after SIGTERM, want 0"
echo "PASS"
