#!/usr/bin/env bash
# No request hangs and none is lost (issue 18): omni-proxy in front of omni-sim engines whose
# faults are injected with omni-sim's flags, in every PD mode where the fault applies. Each
# request must be answered within a bound derived from the per-leg deadlines (set to 1 s here),
# with a well-formed OpenAI error (non-streaming: a JSON error with its status; a stream that had
# sent bytes: an error event, then `data: [DONE]`), and nothing may leak: the engines' running
# counts, requests in flight and KV holds, and the proxy's own in-flight list and node loads,
# all return to 0.
#   1. a prefill that hangs forever (sequential, parallel);
#   2. a decode that stalls after 3 tokens (every mode);
#   3. parallel: a bootstrap peer that never connects (the prefill's, and the decode's);
#   4. an engine that accepts connections and never answers, as prefill and as decode;
#   5. one role entirely down (kill -9): /ready is 503 naming the role; a request gets 503 once
#      the queue timeout passed (it waits for the role to come back; that is 30 s by default);
#   6. a client that leaves mid-stream: both legs cancelled, the engines back to 0 running.
set -euo pipefail
proxy_bin=${1:?usage: pd_faults_test.sh omni-proxy omni-sim}
sim_bin=${2:?missing omni-sim}
. "$(dirname "$0")/sim_lib.sh"

# Every per-leg deadline is 1 s. A failing request meets each of them at most once (single-node
# pools: a retry finds no untried node and ends at once), so its answer is due within their sum,
# plus a margin for this shared 2-core machine.
timeouts=(--timeouts-connect 1s --timeouts-prefill 1s --timeouts-first-token 1s
          --timeouts-decode-idle 1s --timeouts-queue 1s)
bound=$((1 + 1 + 1 + 1 + 4))  # prefill + first token + decode idle + queue + margin, seconds
model='"model":"deepseek-ai/DeepSeek-V3"'
whole="{$model,\"prompt\":\"The capital of France is\",\"max_tokens\":8}"
stream="{$model,\"prompt\":\"The capital of France is\",\"max_tokens\":200,\"ignore_eos\":true,\"stream\":true}"

val() { local name=$1; echo "${!name}"; }  # val VAR: the value of the variable named VAR

# proxy NAME MODE PREFILL DECODE [flags...]: omni-proxy in PD mode MODE in front of the omni-sim
# instances named PREFILL (- for none) and DECODE, with the 1 s deadlines and $probes (none
# until step 5: the leg deadlines are under test). Sets PROXY_<NAME> (host:port) and
# PID_<NAME>; its access log is $work/NAME.access.jsonl.
proxy() {
  local name=$1 mode=$2 prefill=$3 decode=$4; shift 4
  local pools=(--decode-endpoints "127.0.0.1:$(val PORT_$decode)")
  if [ "$prefill" != - ]; then
    pools+=(--prefill-endpoints "127.0.0.1:$(val PORT_$prefill)"
            --bootstrap-port "$(val BOOT_$prefill)")
  fi
  "$proxy_bin" --listen-port 0 --pd-mode "$mode" "${pools[@]}" "${timeouts[@]}" \
    "${probes[@]}" --access-log "$work/$name.access.jsonl" "$@" >"$work/$name.log" 2>&1 &
  pids+=($!)
  eval "PID_$name=$!"
  for _ in $(seq 200); do grep -q "listening on http://" "$work/$name.log" && break; sleep 0.05; done
  local at
  at=$(sed -n 's|.*listening on http://\([^ ]*\).*|\1|p' "$work/$name.log" | head -1)
  [ -n "$at" ] || fail "omni-proxy $name did not start"
  eval "PROXY_$name=$at"
}

stop() {  # stop NAME...: SIGTERM, and wait for the exit
  local name pid
  for name in "$@"; do
    pid=$(val PID_$name)
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
}

# ask PROXY OUT BODY: one completion through the proxy in the background (`collect` waits for
# them): the body in $work/OUT.body, "status seconds" in $work/OUT.res. curl's own limit is far
# above the bound, so a hang shows as a late answer, not as curl giving up.
asks=()
ask() {
  curl -sN -o "$work/$2.body" -w '%{http_code} %{time_total}' -m $((bound * 3)) \
    -H 'Content-Type: application/json' --data-binary "$3" "http://$1/v1/completions" \
    >"$work/$2.res" 2>/dev/null &
  asks+=($!)
}
collect() {
  wait "${asks[@]}" || true
  asks=()
}

# answered_in_time OUT WHAT: the request was answered, within the bound.
answered_in_time() {
  local status secs
  read -r status secs <"$work/$1.res" || true  # no newline at its end
  echo "  $2: $status in $secs s" >&2
  [ "$status" != 000 ] || fail "$2: no answer within $((bound * 3)) s (a hang)"
  awk -v s="$secs" -v b="$bound" 'BEGIN { exit !(s + 0 <= b) }' ||
    fail "$2: answered after $secs s, past the bound of $bound s"
}

# json_error OUT STATUS WHAT: a whole OpenAI error body with STATUS, within the bound.
json_error() {
  answered_in_time "$1" "$3"
  local status
  status=$(cut -d' ' -f1 "$work/$1.res")
  [ "$status" = "$2" ] || fail "$3: status $status, want $2: $(cat "$work/$1.body")"
  jq -e --argjson code "$2" '.error.code == $code and (.error.message | type == "string")
      and (.error.type | type == "string") and (.error | has("param"))' "$work/$1.body" >/dev/null ||
    fail "$3: not an OpenAI error body: $(cat "$work/$1.body")"
}

# stream_error OUT WHAT: a 200 stream that relayed completion events, then ended with an error
# event (502, the reason matching $3) and exactly one `data: [DONE]`, the last line; in time.
stream_error() {
  answered_in_time "$1" "$2"
  local f="$work/$1.body" events
  [ "$(cut -d' ' -f1 "$work/$1.res")" = 200 ] || fail "$2: status $(cat "$work/$1.res"): $(cat "$f")"
  grep '^data: ' "$f" | sed 's/^data: //' >"$work/$1.events"
  events=$(wc -l <"$work/$1.events")
  [ "$events" -ge 3 ] || fail "$2: too few events: $(cat "$f")"
  [ "$(tail -1 "$work/$1.events")" = "[DONE]" ] || fail "$2: the stream does not end with [DONE]: $(cat "$f")"
  [ "$(grep -c '^\[DONE\]$' "$work/$1.events")" = 1 ] || fail "$2: [DONE] more than once: $(cat "$f")"
  tail -2 "$work/$1.events" | head -1 | jq -e --arg why "$3" \
    '.error.code == 502 and (.error.message | test($why))' >/dev/null ||
    fail "$2: no error event before [DONE]: $(cat "$f")"
  head -n $((events - 2)) "$work/$1.events" | jq -e -s 'all(.choices[0].text | type == "string")' \
    >/dev/null || fail "$2: the events before the error are not completion chunks: $(cat "$f")"
}

# logged PROXY OUTCOME WHAT: the proxy's access log has one generation line, with OUTCOME (the
# line is written just after the client got its answer: waits up to 5 s for it).
logged() {
  local log="$work/$1.access.jsonl" filter='map(select(.pd_mode != null))'
  for _ in $(seq 50); do
    [ "$(jq -s "$filter | length" "$log" 2>/dev/null)" = 1 ] && break
    sleep 0.1
  done
  jq -e -s --arg want "$2" "$filter | length == 1 and .[0].outcome == \$want" "$log" >/dev/null ||
    fail "$3: access log: $(cat "$log")"
}

# metric PORT LINE-PREFIX: the value of the first sample starting with it.
metric() {
  curl -s -m 2 "http://127.0.0.1:$1/metrics" | grep -v '^#' | grep -F -- "$2" | head -1 | awk '{print $NF}' || true
}
# until_metric PORT LINE-PREFIX VALUE WHAT: waits up to 10 s for the metric to equal VALUE.
until_metric() {
  local v=""
  for _ in $(seq 100); do
    v=$(metric "$1" "$2")
    awk -v v="$v" -v want="$3" 'BEGIN { exit !(v != "" && v + 0 == want + 0) }' && return 0
    sleep 0.1
  done
  fail "$4: $2 on port $1 is '$v', want $3"
}

# engine_idle NAME...: each engine runs nothing, serves nothing and holds no KV (waits 10 s).
engine_idle() {
  local name port
  for name in "$@"; do
    port=$(val PORT_$name)
    until_metric "$port" 'vllm:num_requests_running{' 0 "$name leaks a running request"
    until_metric "$port" 'vllm:num_requests_waiting{' 0 "$name leaks a waiting request"
    until_metric "$port" 'omni_sim_kv_holds ' 0 "$name leaks a KV hold"
    for _ in $(seq 100); do
      [ "$(curl -s -m 2 "http://127.0.0.1:$port/load" | jq -r .server_load)" = 0 ] && break
      sleep 0.1
    done
    [ "$(curl -s -m 2 "http://127.0.0.1:$port/load" | jq -r .server_load)" = 0 ] ||
      fail "$name leaks a request in flight (/load)"
  done
}

# proxy_idle NAME...: each proxy has no request in flight and no load left on any node.
proxy_idle() {
  local name at
  for name in "$@"; do
    at=$(val PROXY_$name)
    for _ in $(seq 100); do
      [ "$(curl -s -m 2 "http://$at/admin/requests" | jq '.requests | length')" = 0 ] && break
      sleep 0.1
    done
    [ "$(curl -s -m 2 "http://$at/admin/requests" | jq '.requests | length')" = 0 ] ||
      fail "proxy $name: requests still in flight: $(curl -s "http://$at/admin/requests")"
    curl -s -m 2 "http://$at/admin/nodes" | jq -e 'all(.nodes[]; .running == 0 and .outstanding_tokens == 0)' \
      >/dev/null || fail "proxy $name: load left on a node: $(curl -s "http://$at/admin/nodes")"
    [ "$(curl -s -m 2 "http://$at/metrics" | awk '$1 == "omni_proxy_requests_in_flight" {print $2}')" = 0 ] ||
      fail "proxy $name: omni_proxy_requests_in_flight is not 0"
  done
}

probes=(--health-interval 0s)
sim P --disaggregation-mode prefill
sim D --disaggregation-mode decode

echo "[$SECONDS s] 1. a prefill that hangs forever" >&2
sim Phang --disaggregation-mode prefill --fault-hang-rate 1
for mode in sequential parallel; do
  proxy hang_$mode "$mode" Phang D
  ask "$(val PROXY_hang_$mode)" hang_$mode.whole "$whole"
  ask "$(val PROXY_hang_$mode)" hang_$mode.stream "$stream"
  collect
  json_error hang_$mode.whole 502 "$mode, hanging prefill, JSON"
  # Nothing reached the client before the failure: a stream gets the JSON error too.
  json_error hang_$mode.stream 502 "$mode, hanging prefill, stream"
done
engine_idle D
proxy_idle hang_sequential hang_parallel
[ "$(metric "$PORT_Phang" 'omni_sim_faults_injected_total{kind="hang"}')" -ge 3 ] ||
  fail "the hanging prefill was not reached"
stop hang_sequential hang_parallel Phang

echo "[$SECONDS s] 2. a decode that stalls after 3 tokens" >&2
# In model time (a token every few ms), so that its chunks are not coalesced past the stall.
sim Dstall --disaggregation-mode decode --speed 1 --fault-stall-rate 1 --fault-stall-after-tokens 3
proxy stall_sequential sequential P Dstall
proxy stall_parallel parallel P Dstall
proxy stall_aggregated aggregated - Dstall
counted="${stream%\}},\"stream_options\":{\"include_usage\":true,\"continuous_usage_stats\":true}}"
for mode in sequential parallel aggregated; do
  ask "$(val PROXY_stall_$mode)" stall_$mode "$counted"
done
collect
for mode in sequential parallel aggregated; do
  stream_error stall_$mode "$mode, decode stalled after 3 tokens" "silent"
  got=$(grep -v '^\[DONE\]$' "$work/stall_$mode.events" | jq -s 'map(.usage.completion_tokens // empty) | max')
  [ "$got" -ge 3 ] && [ "$got" -lt 200 ] || fail "$mode: the stream should stop after 3 of 200 tokens, at $got"
  logged stall_$mode stream_error "$mode, decode stalled"
done
engine_idle P Dstall
proxy_idle stall_sequential stall_parallel stall_aggregated
stop stall_sequential stall_parallel stall_aggregated Dstall

echo "[$SECONDS s] 3. parallel: a bootstrap peer that never connects" >&2
# The prefill's bootstrap never hands the KV over; then a decode that never contacts it.
sim Pmute --disaggregation-mode prefill --fault-bootstrap-never-connects
sim Dlonely --disaggregation-mode decode --fault-bootstrap-never-connects
proxy mute parallel Pmute D
proxy lonely parallel P Dlonely
for name in mute lonely; do
  ask "$(val PROXY_$name)" $name.whole "$whole"
  ask "$(val PROXY_$name)" $name.stream "$stream"
done
collect
for name in mute lonely; do
  json_error $name.whole 502 "parallel, $name bootstrap peer, JSON"
  json_error $name.stream 502 "parallel, $name bootstrap peer, stream"
done
for name in Pmute Dlonely; do
  [ "$(metric "$(val PORT_$name)" 'omni_sim_faults_injected_total{kind="bootstrap_never_connects"}')" -ge 2 ] ||
    fail "$name: the fault was not reached"
done
# The prefill halves succeeded and hold their rooms' KV until the lease ends (0.3 s here).
engine_idle P Pmute D Dlonely
proxy_idle mute lonely
stop mute lonely Pmute Dlonely

echo "[$SECONDS s] 4. an engine that accepts and never answers" >&2
sim F --disaggregation-mode prefill --fault-unresponsive
proxy frozenp_sequential sequential F D
proxy frozenp_parallel parallel F D
proxy frozend_sequential sequential P F
proxy frozend_parallel parallel P F
proxy frozend_aggregated aggregated - F
cases=(frozenp_sequential frozenp_parallel frozend_sequential frozend_parallel frozend_aggregated)
for name in "${cases[@]}"; do
  ask "$(val PROXY_$name)" $name.whole "$whole"
  ask "$(val PROXY_$name)" $name.stream "$stream"
done
collect
for name in "${cases[@]}"; do
  json_error $name.whole 502 "$name, JSON"
  json_error $name.stream 502 "$name, stream"
done
engine_idle P D
proxy_idle "${cases[@]}"
stop "${cases[@]}" F

echo "[$SECONDS s] 5. one role entirely down" >&2
# Active probes now. Pdown is the prefill of two proxies, Ddown the decode of three; both die.
sim Pdown --disaggregation-mode prefill
sim Ddown --disaggregation-mode decode
probes=(--health-interval 100ms --health-timeout 500ms)
proxy nop_sequential sequential Pdown D
proxy nop_parallel parallel Pdown D
proxy nod_sequential sequential P Ddown
proxy nod_parallel parallel P Ddown
proxy nod_aggregated aggregated - Ddown
cases=(nop_sequential nop_parallel nod_sequential nod_parallel nod_aggregated)
ready() {  # ready NAME: the proxy's /ready status; its body in $work/ready.json
  curl -s -m 2 -o "$work/ready.json" -w '%{http_code}' "http://$(val PROXY_$1)/ready" || true
}
for name in "${cases[@]}"; do
  for _ in $(seq 50); do [ "$(ready "$name")" = 200 ] && break; sleep 0.1; done
  [ "$(ready "$name")" = 200 ] || fail "$name: not ready with every engine up: $(cat "$work/ready.json")"
done
kill -9 "$PID_Pdown" "$PID_Ddown"
{ wait "$PID_Pdown" "$PID_Ddown"; } 2>/dev/null || true
for name in "${cases[@]}"; do
  role=prefill
  [ "${name#nod_}" != "$name" ] && role=decode
  for _ in $(seq 50); do [ "$(ready "$name")" = 503 ] && break; sleep 0.1; done
  [ "$(ready "$name")" = 503 ] || fail "$name: ready with the $role role down: $(cat "$work/ready.json")"
  jq -e --arg role "$role" '.ready == false and .missing == [$role]' "$work/ready.json" >/dev/null ||
    fail "$name: /ready does not name the missing $role role: $(cat "$work/ready.json")"
  ask "$(val PROXY_$name)" $name "$whole"
done
collect
for name in "${cases[@]}"; do
  json_error $name 503 "$name: a request with a role down"
done
engine_idle P D
proxy_idle "${cases[@]}"
stop "${cases[@]}"

echo "[$SECONDS s] 6. a client that leaves mid-stream" >&2
# A decode in real time (2,000 tokens take minutes): the client leaves after 2 s of its stream.
sim Dslow --disaggregation-mode decode --speed 1
long="{$model,\"prompt\":\"The capital of France is\",\"max_tokens\":2000,\"ignore_eos\":true,\"stream\":true}"
aborted=0
for mode in sequential parallel aggregated; do
  prefill=P
  [ "$mode" = aggregated ] && prefill=-
  proxy leave_$mode "$mode" "$prefill" Dslow
  curl -sN -o "$work/leave_$mode.body" -m 2 -H 'Content-Type: application/json' \
    --data-binary "$long" "http://$(val PROXY_leave_$mode)/v1/completions" || true
  grep -q '^data: {"id"' "$work/leave_$mode.body" || fail "$mode: the stream never started: $(cat "$work/leave_$mode.body")"
  grep -q 'DONE' "$work/leave_$mode.body" && fail "$mode: a 2,000-token stream ended within 2 s"
  aborted=$((aborted + 1))
  until_metric "$PORT_Dslow" 'vllm:request_success_total{model_name="deepseek-ai/DeepSeek-V3",engine="0",finished_reason="abort"}' \
    "$aborted" "$mode: the decode was not aborted"
  engine_idle P Dslow
  proxy_idle leave_$mode
  logged leave_$mode client_disconnected "$mode, the client left"
  stop leave_$mode
done

# Every process we started ran clean (matters with the binaries of a sanitizer build).
if grep -l -E "ERROR: (Address|Leak)Sanitizer|runtime error:" "$work"/*.log 2>/dev/null; then
  fail "sanitizer reports"
fi
echo "[$SECONDS s] PASS"
