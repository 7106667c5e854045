#!/usr/bin/env bash
# bench/proxy/compare.sh OLD_BIN_DIR NEW_BIN_DIR: two omni-proxy binaries side by side, in the
# same rounds, against the same engine (omni-fake-engine from NEW_BIN_DIR) and nginx. On a
# shared machine whose load swings from round to round, this interleaving is what makes two
# versions comparable; run.sh gives the absolute figures of one.
#
# Per round: wrk (1 thread, 64 connections, small POST) on nginx, OLD and NEW; then one client,
# one request at a time (omni-proxy-load): the engine directly, OLD, NEW. Servers on core 0,
# load on core 1. Environment: ROUNDS (6), DURATION (2s). Prints each round and the medians
# (ratios are taken per round, against that round's nginx or OLD figure).
set -euo pipefail

old=${1:?usage: compare.sh OLD_BIN_DIR NEW_BIN_DIR}
new=${2:?usage: compare.sh OLD_BIN_DIR NEW_BIN_DIR}
rounds=${ROUNDS:-6}
duration=${DURATION:-2s}
repo=$(cd "$(dirname "$0")/../.." && pwd)
. "$repo/bench/lib.sh"
bench_require nginx wrk python3 jq taskset

taskset -c 0 "$new/omni-fake-engine" --port-file "$work/engine.port" >/dev/null 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -s "$work/engine.port" ] && break; sleep 0.05; done
engine_port=$(cat "$work/engine.port")
# Sets <NAME>_at to the proxy's address. Not called inside $(...): the pid must reach `pids`
# in this shell, or cleanup would leave the proxy running.
start_proxy() {  # start_proxy BIN_DIR NAME
  taskset -c 0 "$1/omni-proxy" --listen-port 0 --pd-mode aggregated \
    --decode-endpoints "127.0.0.1:$engine_port" --workers 1 --health-interval 0s \
    --log-level warn >"$work/$2.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do grep -q "listening on" "$work/$2.log" 2>/dev/null && break; sleep 0.05; done
  printf -v "$2_at" '%s' "$(sed -n 's|.*listening on http://\([^ ]*\).*|\1|p' "$work/$2.log")"
}
start_proxy "$old" old
start_proxy "$new" new
nginx_port=$(free_port)
write_nginx_conf "$nginx_port" "upstream engine { server 127.0.0.1:$engine_port; keepalive 128; }" \
  'location / { proxy_pass http://engine; proxy_http_version 1.1; proxy_set_header Connection ""; }'
start_nginx
wait_for_port "$nginx_port"

body='{"model":"fake-model","prompt":"hello","max_tokens":1}'
cat >"$work/post.lua" <<LUA
wrk.method = "POST"
wrk.body = '$body'
wrk.headers["Content-Type"] = "application/json"
LUA
rps() { taskset -c 1 wrk -t1 -c64 -d"$duration" -s "$work/post.lua" "http://$1/v1/completions" | sed -n 's/Requests\/sec: *//p'; }
p50() {
  taskset -c 1 "$new/omni-proxy-load" --target "$1" --concurrency 1 --duration "$duration" \
    --body "$body" | jq -r .p50_us
}
for at in "127.0.0.1:$nginx_port" "$old_at" "$new_at"; do rps "$at" >/dev/null; done  # warm-up
echo "round nginx_rps old_rps new_rps direct_p50_us old_p50_us new_p50_us"
for r in $(seq "$rounds"); do
  echo "$r $(rps "127.0.0.1:$nginx_port") $(rps "$old_at") $(rps "$new_at") $(p50 "127.0.0.1:$engine_port") $(p50 "$old_at") $(p50 "$new_at")" |
    tee -a "$work/rows"
done
python3 - "$work/rows" <<'PY'
import statistics as st, sys
rows = [list(map(float, line.split()[1:])) for line in open(sys.argv[1])]
n, a, b, d, la, lb = (list(c) for c in zip(*rows))
per = lambda xs, ys: st.median(x / y for x, y in zip(xs, ys))
added = lambda xs: st.median(x - y for x, y in zip(xs, d))
print(f"req/s medians: nginx {st.median(n):.0f}, old {st.median(a):.0f} ({per(a, n):.3f}x nginx), "
      f"new {st.median(b):.0f} ({per(b, n):.3f}x nginx); new/old {per(b, a):.3f}")
print(f"1-client p50: direct {st.median(d):.1f} us, old +{added(la):.1f} us, new +{added(lb):.1f} us")
PY
