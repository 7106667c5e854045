#!/usr/bin/env bash
# docs/metrics.md documents every metric family the binaries export: starts omni-proxy in front
# of omni-fake-engine, and omni-sim with its defaults, on loopback with ephemeral ports; sends
# each one request; scrapes /metrics; fails naming every `# TYPE` family without a row
# ("| `name` |") in the page.
set -euo pipefail
proxy=${1:?usage: metrics_doc_test.sh omni-proxy omni-fake-engine omni-sim docs/metrics.md}
engine=${2:?missing omni-fake-engine}
sim=${3:?missing omni-sim}
doc=${4:?missing docs/metrics.md}
[ -f "$doc" ] || { echo "FAIL: no $doc"; exit 1; }

. "$(dirname "$0")/lib.sh"

# request <host:port> <name>: one generation request; the answer must be 200.
request() {
  local status
  status=$(curl -s -o "$work/$2.body" -w '%{http_code}' -H 'Content-Type: application/json' \
    --data-binary '{"prompt":"Hello","max_tokens":4}' "http://$1/v1/completions" || true)
  [ "$status" = 200 ] || { cat "$work/$2.body" 2>/dev/null; fail "$2: /v1/completions answered $status"; }
}

# scrape <host:port> <name>: its /metrics in $work/<name>.metrics.
scrape() {
  curl -sf "http://$1/metrics" >"$work/$2.metrics" || fail "$2: GET /metrics failed"
  grep -q '^# TYPE ' "$work/$2.metrics" || fail "$2: /metrics has no # TYPE line"
}

# 1. omni-proxy (aggregated) in front of omni-fake-engine.
"$engine" --port-file "$work/engine.port" >"$work/engine.log" 2>&1 &
pids+=($!)
wait_for "$work/engine.port" . "$!"
"$proxy" --listen-port 0 --pd-mode aggregated \
  --decode-endpoints "127.0.0.1:$(cat "$work/engine.port")" >"$work/proxy.log" 2>&1 &
pids+=($!)
wait_for "$work/proxy.log" "listening on http://" "$!"
proxy_at=$(sed -n 's|.*listening on http://\([^ ]*\).*|\1|p' "$work/proxy.log" | head -1)
request "$proxy_at" proxy

# 2. omni-sim with its defaults (a deployment that fits), on a free port.
"$sim" --host 127.0.0.1 --port 0 >"$work/sim.log" 2>&1 &
pids+=($!)
wait_for "$work/sim.log" "omni-sim listening on" "$!"
sim_at=$(sed -n 's/.*omni-sim listening on \(127\.0\.0\.1:[0-9]*\).*/\1/p' "$work/sim.log" | head -1)
request "$sim_at" sim

checked=0
missing=()
scrape "$proxy_at" proxy
scrape "$sim_at" sim
for name in proxy sim; do
  while read -r family; do
    checked=$((checked + 1))
    grep -qF -- "| \`$family\` |" "$doc" || missing+=("$family ($name)")
  done < <(awk '$1 == "#" && $2 == "TYPE" { print $3 }' "$work/$name.metrics")
done

if [ "${#missing[@]}" -gt 0 ]; then
  echo "FAIL: metric families exported but not documented in $doc (add a row \"| \`name\` | type | labels | meaning |\"):"
  printf '  %s\n' "${missing[@]}"
  exit 1
fi
echo "ok: $checked metric families exported by omni-proxy and omni-sim, all documented in $(basename "$doc")"
