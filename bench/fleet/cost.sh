#!/usr/bin/env bash
# bench/fleet/cost.sh <build-dir>: what the fleet sync costs (docs/fleet.md).
#
#   omni-proxy-load ──▶ omni-proxy (alone)            ──▶ 2 omni-fake-engine
#   omni-proxy-load ──▶ omni-proxy (fleet sync on) ─┬─▶ the same engines
#                       omni-proxy (a 2nd replica) ─┴── nats-server (monitoring on)
#
# The same closed loop (CONCURRENCY clients, REQUESTS non-streaming requests with a 64-token-id
# prompt, so that prefix messages are sent too) runs against a proxy alone and against a replica
# with the sync on, alternately, ROUNDS times each, side by side in one run. Reported: requests/s
# and p50/p99 latency of each (the sync's added decision cost is the difference), and from the
# NATS server's /varz the messages and bytes per request that the sync published.
#
# Environment: REQUESTS (4000), CONCURRENCY (16), ROUNDS (3), OUT (bench/results).
# Output: a markdown table on stdout and $OUT/fleet_cost.json.
set -euo pipefail

build=${1:?usage: cost.sh <build-dir>}
repo=$(cd "$(dirname "$0")/../.." && pwd)
bin=$(cd "$build" && pwd)/bin
requests=${REQUESTS:-4000}
concurrency=${CONCURRENCY:-16}
rounds=${ROUNDS:-3}
out=${OUT:-$repo/bench/results}
mkdir -p "$out"
# shellcheck source=../lib.sh
. "$repo/bench/lib.sh"
bench_require jq curl python3
nats_bin=$(command -v nats-server || echo /usr/sbin/nats-server)
[ -x "$nats_bin" ] || { echo "cost.sh: nats-server is not installed" >&2; exit 1; }

nats_port=$(free_port)
monitor_port=$(free_port)
"${server_pin[@]}" "$nats_bin" -a 127.0.0.1 -p "$nats_port" -m "$monitor_port" >"$work/nats.log" 2>&1 &
pids+=($!)
wait_for_port "$nats_port"

engines=""
for name in e1 e2; do
  "${server_pin[@]}" "$bin/omni-fake-engine" --port-file "$work/$name.port" --io-threads 1 \
    >"$work/$name.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do [ -s "$work/$name.port" ] && break; sleep 0.05; done
  engines+="127.0.0.1:$(cat "$work/$name.port"),"
done
engines=${engines%,}

start_proxy() {  # NAME [flags...]: sets PORT_<NAME>
  local name=$1 port
  shift
  port=$(free_port)
  "${server_pin[@]}" "$bin/omni-proxy" --listen-port "$port" --pd-mode aggregated \
    --decode-endpoints "$engines" --health-interval 0s --hash-seed 0 "$@" >"$work/$name.log" 2>&1 &
  pids+=($!)
  wait_for_port "$port"
  eval "PORT_$name=$port"
}
fleet=(--fleet-nats-url "nats://127.0.0.1:$nats_port" --fleet-name bench)
start_proxy alone
start_proxy synced "${fleet[@]}" --fleet-replica-id synced
start_proxy peer "${fleet[@]}" --fleet-replica-id peer
sleep 1

ids=$(seq -s, 1000 1063)
body="{\"model\":\"m\",\"prompt\":[$ids],\"max_tokens\":4}"
varz() { curl -s "http://127.0.0.1:$monitor_port/varz"; }
run() {  # NAME ROUND: one closed loop; its JSON in $work/NAME.ROUND.json
  "${client_pin[@]}" "$bin/omni-proxy-load" --target "127.0.0.1:$(eval echo "\$PORT_$1")" \
    --concurrency "$concurrency" --requests "$requests" --body "$body" >"$work/$1.$2.json"
}
run alone 0  # warm-up of both
run synced 0
before=$(varz)
for round in $(seq "$rounds"); do
  run alone "$round"
  run synced "$round"
done
after=$(varz)

python3 - "$work" "$rounds" "$requests" "$before" "$after" >"$out/fleet_cost.json" <<'PY'
import json, statistics, sys
work, rounds, requests = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
before, after = json.loads(sys.argv[4]), json.loads(sys.argv[5])
def summary(name):
    runs = [json.load(open(f"{work}/{name}.{r}.json")) for r in range(1, rounds + 1)]
    return {
        "requests_per_second": statistics.median(r["requests_per_second"] for r in runs),
        "p50_us": statistics.median(r["p50_us"] for r in runs),
        "p99_us": statistics.median(r["p99_us"] for r in runs),
        "non_200": sum(sum(v for k, v in r["status"].items() if k != "200") for r in runs),
    }
synced_requests = rounds * requests
print(json.dumps({
    "alone": summary("alone"),
    "synced": summary("synced"),
    "sync_messages_per_request": (after["in_msgs"] - before["in_msgs"]) / synced_requests,
    "sync_bytes_per_request": (after["in_bytes"] - before["in_bytes"]) / synced_requests,
}))
PY
jq -r --arg cpu "$(lscpu | sed -n 's/^Model name: *//p')" --arg date "$(date -u +%F)" '
  "fleet sync cost, \($date), \($cpu)",
  "| | proxy alone | replica with the fleet sync |", "|---|---|---|",
  "| requests/s (median of rounds) | \(.alone.requests_per_second | floor) | \(.synced.requests_per_second | floor) |",
  "| p50 / p99 latency µs | \(.alone.p50_us | floor) / \(.alone.p99_us | floor) | \(.synced.p50_us | floor) / \(.synced.p99_us | floor) |",
  "| non-200 answers | \(.alone.non_200) | \(.synced.non_200) |",
  "| sync messages / bytes per request | – | \(.sync_messages_per_request * 100 | floor / 100) / \(.sync_bytes_per_request | floor) |"
' "$out/fleet_cost.json"
