#!/usr/bin/env bash
# Integration test of omni-bench against a real server process on loopback: a healthy stream,
# every kind of failure a server can produce, a refused connection, limits, SIGINT, compare.
set -euo pipefail
bench=${1:?usage: omni_bench_test.sh omni-bench fake-openai-server [traces-dir]}
fake=${2:?usage: omni_bench_test.sh omni-bench fake-openai-server [traces-dir]}
traces=${3:-}
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

fail() { echo "FAIL: $*"; exit 1; }
check() { grep -q -- "$2" "$1" || { echo "--- $1:"; head -c 3000 "$1"; echo; fail "$3"; }; }
passed=0
ok() { passed=$((passed + 1)); echo "ok: $*"; }

# Starts the fake server with the given behaviours; sets $port and remembers the pid.
start_fake() {
  local log="$work/fake.$RANDOM.txt"
  "$fake" "$@" >"$log" 2>&1 &
  pids+=($!)
  fake_pid=$!
  for _ in $(seq 100); do grep -q "listening on" "$log" && break; sleep 0.05; done
  port=$(sed -n 's/.*127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log")
  [ -n "$port" ] || { cat "$log"; fail "the fake server did not start"; }
}

# 1. A healthy server: every request completes, the JSON has the shared schema, one line per request.
start_fake --behaviours ok --itl-ms 1
ok_port=$port
if [ -n "$traces" ] && [ -f "$traces/mooncake_synthetic_trace.jsonl" ]; then
  workload=(--trace "$traces/mooncake_synthetic_trace.jsonl" --trace-format mooncake --time-scale 0.01)
else
  workload=(--synthetic 'n=30,rate=100,input=uniform:100:3000,output=uniform:2:20')
fi
"$bench" --base-url "http://127.0.0.1:$ok_port" "${workload[@]}" --max-requests 30 --slo ttft=10s,tpot=1s \
  --out "$work/a.json" --requests-out "$work/a.jsonl" >"$work/a.txt" 2>"$work/a.err" || fail "healthy run exited with $?"
check "$work/a.json" '"completed":30,"failed":0' "not every request completed"
for key in duration_s ttft_ms tpot_ms itl_ms e2e_ms request_throughput output_token_throughput goodput prefix_cache_hit_rate; do
  check "$work/a.json" "\"$key\":" "results lack $key"
done
check "$work/a.json" '"ttft_ms":{"mean":[0-9]' "TTFT has no mean"
[ "$(wc -l <"$work/a.jsonl")" -eq 30 ] || fail "expected 30 per-request lines"
check "$work/a.txt" "Successful requests: *30" "the table lacks the request count"
ok "healthy replay"

# 2. Multi-turn sessions over the chat endpoint: later turns reuse the earlier prompt.
"$bench" --base-url "http://127.0.0.1:$ok_port/" --endpoint /v1/chat/completions \
  --synthetic 'n=12,rate=1000,input=1100,output=4,turns=3,think=10ms' --out "$work/chat.json" \
  >"$work/chat.txt" 2>&1 || fail "chat run exited with $?"
check "$work/chat.json" '"completed":12,"failed":0' "chat requests failed"
ok "chat endpoint"
"$bench" --base-url "http://127.0.0.1:$ok_port" \
  --synthetic 'n=12,rate=1000,input=1100,output=4,turns=3,think=10ms' --concurrency 1 --out "$work/sessions.json" \
  >"$work/sessions.txt" 2>&1 || fail "session run exited with $?"
check "$work/sessions.json" '"prefix_cache_hit_rate":0\.[1-9]' "sessions show no prefix reuse"
ok "sessions share their prefix"

# 3. Every failure a server can produce is counted under its kind; nothing crashes or hangs.
start_fake --behaviours ok,http500,cut,garbage,stall,error_event,no_done --stall-ms 4000
start=$(date +%s)
"$bench" --base-url "http://127.0.0.1:$port" --synthetic 'n=14,rate=1000,input=100,output=3' --concurrency 1 \
  --timeout 1s --out "$work/faults.json" --requests-out "$work/faults.jsonl" >"$work/faults.txt" 2>&1 \
  || fail "fault run exited with $?"
[ $(( $(date +%s) - start )) -lt 30 ] || fail "the fault run took too long"
check "$work/faults.json" '"completed":2,"failed":12' "wrong completed/failed counts"
check "$work/faults.json" '"by_kind":{"http_status":2,"malformed_stream":6,"server_error":2,"timeout":2}' "wrong error kinds"
check "$work/faults.json" '"by_status":{"500":2}' "wrong error statuses"
check "$work/faults.jsonl" '"error_message":"HTTP 500: the engine is on fire"' "the server's message is lost"
check "$work/faults.txt" "malformed_stream: *6" "the table lacks the error kinds"
ok "failing server"

# 4. Nobody listening: connection errors, exit status 1 (nothing completed), quickly.
start_fake --behaviours ok
dead_port=$port
kill "$fake_pid"; wait "$fake_pid" 2>/dev/null || true
set +e
"$bench" --base-url "http://127.0.0.1:$dead_port" --synthetic 'n=5,rate=1000' --out "$work/dead.json" >"$work/dead.txt" 2>&1
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "expected exit status 1 with no server, got $rc"
check "$work/dead.json" '"by_kind":{"connect":5}' "refused connections not counted"
ok "refused connection"

# 5. Limits: --duration stops sending; --concurrency bounds the in-flight requests.
"$bench" --base-url "http://127.0.0.1:$ok_port" --synthetic 'n=100000,rate=200,output=2' --duration 1s \
  --out "$work/dur.json" >"$work/dur.txt" 2>&1 || fail "duration run exited with $?"
check "$work/dur.json" '"duration_s":[1-4]\.' "--duration did not bound the run"
"$bench" --base-url "http://127.0.0.1:$ok_port" --synthetic 'n=40,output=5' --concurrency 4 --request-rate inf \
  --out "$work/conc.json" >"$work/conc.txt" 2>&1 || fail "concurrency run exited with $?"
check "$work/conc.json" '"completed":40,"failed":0' "concurrency run lost requests"
ok "limits"

# 6. SIGINT stops sending, in-flight requests finish, the results are still written.
"$bench" --base-url "http://127.0.0.1:$ok_port" --synthetic 'n=100000,rate=50,output=2' --out "$work/int.json" \
  >"$work/int.txt" 2>"$work/int.err" &
bench_pid=$!
pids+=($bench_pid)
sleep 1
kill -INT "$bench_pid"
wait "$bench_pid" || fail "interrupted run exited with $?"
check "$work/int.err" "interrupted" "no interruption notice"
check "$work/int.json" '"failed":0' "interrupted run has no results"
ok "SIGINT"

# 7. compare prints ratios; bad input is refused with status 2 and a reason.
"$bench" compare "$work/a.json" "$work/a.json" >"$work/cmp.txt" || fail "compare exited with $?"
check "$work/cmp.txt" "ttft_ms.p50.* 1\.000" "compare of a file with itself is not 1.000"
expect_refusal() {
  local why=$1; shift
  set +e
  "$bench" "$@" >"$work/bad.txt" 2>&1
  local rc=$?
  set -e
  [ "$rc" -eq 2 ] || fail "$why: expected exit status 2, got $rc"
  check "$work/bad.txt" "$why" "the refusal does not say '$why'"
}
expect_refusal "synthetic spec item 'n=0'" --base-url http://127.0.0.1:1 --synthetic n=0
expect_refusal "give exactly one of --trace, --synthetic" --base-url http://127.0.0.1:1
expect_refusal "--slo item 'ttft=2'" --base-url http://127.0.0.1:1 --synthetic n=1 --slo ttft=2
expect_refusal "--base-url" --base-url https://x:1 --synthetic n=1
expect_refusal "cannot open trace" --base-url http://127.0.0.1:1 --trace "$work/none.jsonl"
echo '{"x":1}' >"$work/other.json"
expect_refusal "no 'completed' field" compare "$work/other.json" "$work/a.json"
expect_refusal "not a results JSON object" compare "$work/a.jsonl" "$work/a.json"
expect_refusal "unknown flag --num-prompt (did you mean --num-prompts?)" --num-prompt 3
expect_refusal "unknown flag --lables (did you mean --labels?)" compare "$work/a.json" --lables x
ok "compare and refusals"

echo "omni-bench: $passed passed, 0 failed"
