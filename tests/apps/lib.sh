# Shared helpers of the scripts in tests/apps/ that start several binaries (sourced after the
# script has read its arguments): a work folder, every process in `pids` stopped on exit, `fail`
# with the tail of every log, `wait_for` a line in a log.
work=$(mktemp -d)
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*"
  for f in "$work"/*.log; do [ -f "$f" ] && { echo "--- $f"; tail -15 "$f"; }; done
  exit 1
}

# wait_for <file> <pattern> <pid>: until the process wrote the pattern (10 s), or died.
wait_for() {
  for _ in $(seq 200); do
    grep -q -- "$2" "$1" 2>/dev/null && return 0
    kill -0 "$3" 2>/dev/null || fail "$(basename "$1" .log) exited"
    sleep 0.05
  done
  fail "timed out waiting for '$2' in $1"
}
