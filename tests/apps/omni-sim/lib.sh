# Helpers of omni-sim's integration tests (sourced after the script read $sim): real processes
# on loopback, every one stopped on exit.
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*"
  for f in "$work"/*.log; do [ -f "$f" ] && { echo "--- $f"; tail -15 "$f"; }; done
  exit 1
}
check() { grep -q -- "$2" "$1" || { echo "--- $1:"; cat "$1"; fail "$3"; }; }
expect_eq() { [ "$1" == "$2" ] || fail "$3: got '$1', want '$2'"; }

# start <name> <args...>: starts omni-sim, waits for its "listening" line, sets $port.
start() {
  local name=$1; shift
  "$sim" "$@" >"$work/$name.log" 2>&1 &
  pids+=($!)
  eval "${name}_pid=$!"
  for _ in $(seq 200); do grep -q "omni-sim listening on" "$work/$name.log" && break; sleep 0.05; done
  check "$work/$name.log" "omni-sim listening on" "$name did not start"
  port=$(sed -n 's/.*omni-sim listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$work/$name.log" | head -1)
}

# post <port> <path> <json> [curl args...]: body in $work/body, headers in $work/headers, status
# in $status ("000" when no answer came).
post() {
  local p=$1 path=$2 data=$3; shift 3
  status=$(curl -s -o "$work/body" -D "$work/headers" -w '%{http_code}' -H 'Content-Type: application/json' \
    "$@" --data-binary "$data" "http://127.0.0.1:$p$path" || true)
}

# metric <port> <name{labels... prefix>: the value of the first sample line starting with it.
metric() {
  curl -s "http://127.0.0.1:$1/metrics" | grep -v "^#" | grep -F -- "$2" | head -1 | awk '{print $NF}' || true
}

# until_metric <port> <line prefix> <value>: waits (up to 10 s) until the metric equals value.
until_metric() {
  local v=""
  for _ in $(seq 200); do
    v=$(metric "$1" "$2")
    python3 -c "import sys; sys.exit(0 if float('${v:-nan}') == float('$3') else 1)" 2>/dev/null && return 0
    sleep 0.05
  done
  fail "$2 on port $1 is '$v', want $3"
}
