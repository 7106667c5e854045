#!/usr/bin/env bash
# Integration test of omni-demo, the binary `make run` starts: it must serve, pass its own
# self-check through the runtime's client, log each request, stop on SIGTERM, and refuse bad
# configuration with the key's path.
set -euo pipefail
demo=${1:?usage: omni_demo_test.sh path/to/omni-demo}
work=$(mktemp -d)
trap 'kill "${pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT

fail() { echo "FAIL: $*"; exit 1; }
check() { grep -q -- "$2" "$1" || { echo "--- $1:"; cat "$1"; fail "$3"; }; }

# 1. Self-check, access log, bounded run.
"$demo" --server-port 0 --serve-for 2s --access-log "$work/access.jsonl" --log-format json \
  >"$work/out.txt" 2>"$work/err.txt" || fail "omni-demo exited with $?"
check "$work/out.txt" "self-check passed" "self-check did not pass"
check "$work/out.txt" "5 events + \[DONE\]" "the SSE stream check is missing"
lines=$(wc -l <"$work/access.jsonl")
[ "$lines" -eq 4 ] || fail "expected 4 access-log lines, got $lines"
check "$work/access.jsonl" '"path":"/v1/demo/echo","status":200,"bytes_in":16' "echo not logged"

# 2. SIGTERM stops a server that would otherwise run forever, with exit status 0.
"$demo" --server-port 0 --self-check=false >"$work/out2.txt" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q "the common runtime on" "$work/out2.txt" && break; sleep 0.05; done
check "$work/out2.txt" "the common runtime on" "omni-demo did not start"
kill -TERM "$pid"
wait "$pid" || fail "omni-demo exited with $? after SIGTERM"
pid=

# 3. Bad configuration is refused at start-up, naming the key.
if "$demo" --server-port 70000 >"$work/bad.txt" 2>&1; then fail "port 70000 accepted"; fi
check "$work/bad.txt" "server.port" "the bad key is not named"
printf 'server:\n  prot: 80\n' >"$work/bad.yaml"
if "$demo" --config "$work/bad.yaml" >"$work/bad2.txt" 2>&1; then fail "unknown key accepted"; fi
check "$work/bad2.txt" "server.prot" "the unknown key is not named"
check "$work/bad2.txt" "port" "no suggestion for the misspelt key"

# 4. The CLI convention: --no-<flag>, dashed YAML keys, "did you mean", --version.
printf 'server:\n  io-threads: 3\nself-check: true\n' >"$work/dashed.yaml"
"$demo" --config "$work/dashed.yaml" --no-self-check --print-config >"$work/dashed.out"
check "$work/dashed.out" "io_threads: 3" "a dashed YAML key is not read"
check "$work/dashed.out" "^self_check: false" "--no-self-check is not false"
st=0; "$demo" --server-prot 80 >"$work/typo.txt" 2>&1 || st=$?
[ "$st" -eq 2 ] || fail "exit $st for --server-prot, want 2"
check "$work/typo.txt" "did you mean --server-port?" "no hint for a misspelt flag"
"$demo" --version | grep -q "^omni-demo [0-9]" || fail "--version"

echo "omni-demo: 1 passed, 0 failed"
