# Shared helpers of omni-proxy's integration tests (sourced). Every process started here is
# stopped on exit; ports are ephemeral and read back from each process.
set -euo pipefail

proxy_bin=${1:?usage: $0 omni-proxy omni-fake-engine omni-proxy-load}
engine_bin=${2:?missing omni-fake-engine}
load_bin=${3:?missing omni-proxy-load}
work=$(mktemp -d)
pids=()

cleanup() {
  local pid
  # SIGCONT too: a test may have stopped an engine (SIGSTOP), which would never see the TERM.
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; kill -CONT "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  # Under sanitizers a report in any process's log fails the test.
  local reports
  reports=$(grep -l -E "ERROR: (Address|Leak)Sanitizer|runtime error:" "$work"/*.log 2>/dev/null || true)
  if [ -n "$reports" ]; then
    for f in $reports; do echo "--- $f"; grep -A30 -E "Sanitizer|runtime error" "$f" | head -60; done
    rm -rf "$work"
    echo "FAIL: sanitizer reports"
    exit 1
  fi
  rm -rf "$work"
}
trap cleanup EXIT
[ -n "${KEEP:-}" ] && trap - EXIT

fail() {
  echo "FAIL: $*"
  for f in "$work"/*.log; do [ -f "$f" ] && { echo "--- $f"; tail -20 "$f"; }; done
  exit 1
}

wait_file() {
  for _ in $(seq 200); do [ -s "$1" ] && return 0; sleep 0.05; done
  fail "timed out waiting for $1"
}

# start_engine NAME [flags...]: starts a fake engine; sets ENGINE_PORT and records its pid
# in PID_<NAME>; its requests go to $work/NAME.jsonl.
start_engine() {
  local name=$1; shift
  rm -f "$work/$name.port"
  "$engine_bin" --port-file "$work/$name.port" --record "$work/$name.jsonl" "$@" \
    >"$work/$name.log" 2>&1 &
  local pid=$!
  pids+=("$pid")
  eval "PID_$name=$pid"
  wait_file "$work/$name.port"
  ENGINE_PORT=$(cat "$work/$name.port")
  eval "PORT_$name=$ENGINE_PORT"
}

# start_proxy NAME [flags...]: starts omni-proxy on an ephemeral port; sets PROXY (host:port).
start_proxy() {
  local name=$1; shift
  "$proxy_bin" --listen-port 0 --access-log "$work/$name.access.jsonl" "$@" >"$work/$name.log" 2>&1 &
  local pid=$!
  pids+=("$pid")
  eval "PID_$name=$pid"
  for _ in $(seq 200); do
    if grep -qE "listening on https?://" "$work/$name.log" 2>/dev/null; then break; fi
    kill -0 "$pid" 2>/dev/null || fail "omni-proxy $name exited"
    sleep 0.05
  done
  PROXY=$(sed -n 's|.*listening on https\{0,1\}://\([^ ]*\).*|\1|p' "$work/$name.log" | head -1)
  [ -n "$PROXY" ] || fail "omni-proxy $name did not start"
}

stop_pid() {
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

# post PATH BODY [curl args...]: prints the status code; the body goes to $work/body, the
# headers to $work/headers.
post() {
  local path=$1 body=$2; shift 2
  curl -s -o "$work/body" -D "$work/headers" -w '%{http_code}' -H 'Content-Type: application/json' \
    --data-binary "$body" "$@" "http://$PROXY$path"
}

get() {
  local path=$1; shift
  curl -s -o "$work/body" -D "$work/headers" -w '%{http_code}' "$@" "http://$PROXY$path"
}

expect_status() {  # expect_status WANT GOT WHAT
  [ "$1" = "$2" ] || { echo "--- body:"; cat "$work/body" 2>/dev/null; echo; fail "$3: status $2, want $1"; }
}

body_has() {  # body_has JQ-FILTER WHAT  (the filter must print true)
  [ "$(jq -r "$1" "$work/body")" = "true" ] || { echo "--- body:"; cat "$work/body"; echo; fail "$2"; }
}

# The record lines of engine NAME for the client's request id RID (one JSON per line). The
# proxy sends engines an id of its own, unique per call, that starts with the client's: RID-<hex>.
records() {
  jq -c --arg rid "$2" 'select(.x_request_id | startswith($rid + "-"))' "$work/$1.jsonl" 2>/dev/null || true
}
# The access-log lines of generation requests only (other routes and refusals log too).
generation_lines() { jq -c 'select(.pd_mode != null)' "$1"; }
