#!/usr/bin/env bash
# bench/http_echo/run.sh <build-dir>: Omni's HTTP server vs nginx, both answering a fixed
# 13-byte body on 127.0.0.1 with one worker, measured by wrk in alternating rounds
# (A/B/A/B...) so that drift on a shared machine hits both alike.
#
# Environment: ROUNDS (3), DURATION (5s), CONNECTIONS (64), WRK_THREADS (1), WARMUP (2s).
# Output: a table of medians on stdout and bench/results/http_echo.json.
set -euo pipefail

build_dir=${1:?usage: run.sh <build-dir>}
rounds=${ROUNDS:-3}
duration=${DURATION:-5s}
connections=${CONNECTIONS:-64}
wrk_threads=${WRK_THREADS:-1}
warmup=${WARMUP:-2s}

repo=$(cd "$(dirname "$0")/../.." && pwd)
echo_bin=$build_dir/bin/omni-http-echo
[[ -x $echo_bin ]] || { echo "missing $echo_bin (cmake --preset bench && cmake --build build/bench --target omni-http-echo)" >&2; exit 1; }
. "$repo/bench/lib.sh"
bench_require nginx wrk python3

nginx_port=$(free_port)
omni_port=$(free_port)
write_nginx_conf "$nginx_port" "" 'location / { default_type text/plain; return 200 "Hello, world\n"; }'
start_nginx
"${server_pin[@]}" "$echo_bin" "$omni_port" 2>"$work/omni.stderr" &
pids+=($!)
wait_for_port "$nginx_port"
wait_for_port "$omni_port"

run_wrk() {  # <name> <port> <duration> <output-file>
  "${client_pin[@]}" wrk -t"$wrk_threads" -c"$connections" -d"$3" --latency "http://127.0.0.1:$2/" >"$4"
}

echo "warming up (${warmup} each)..." >&2
run_wrk nginx "$nginx_port" "$warmup" /dev/null
run_wrk omni "$omni_port" "$warmup" /dev/null

for round in $(seq "$rounds"); do
  for name in nginx omni; do
    port_var=${name}_port
    echo "round $round/$rounds: $name" >&2
    run_wrk "$name" "${!port_var}" "$duration" "$work/$name.$round.txt"
  done
done

mkdir -p "$repo/bench/results"
python3 - "$work" "$rounds" "$repo/bench/results/http_echo.json" "$repo/bench" <<'PY'
import json, os, platform, statistics, sys, datetime

work, rounds, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
sys.path.insert(0, sys.argv[4])
from wrk_report import parse

result = {}
for name in ("nginx", "omni"):
    runs = [parse(os.path.join(work, f"{name}.{r}.txt")) for r in range(1, rounds + 1)]
    result[name] = {
        "runs": runs,
        "median_rps": statistics.median(r["rps"] for r in runs),
        "median_p50_ms": statistics.median(r["p50_ms"] for r in runs),
        "median_p99_ms": statistics.median(r["p99_ms"] for r in runs),
    }
ratio = result["omni"]["median_rps"] / result["nginx"]["median_rps"]
report = {
    "benchmark": "http_echo",
    "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    "machine": {"host": platform.node(), "kernel": platform.release(), "cpus": os.cpu_count(),
                "cpu_model": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                                   if l.startswith("model name")), "unknown")},
    "settings": {k: os.environ.get(k) for k in ("ROUNDS", "DURATION", "CONNECTIONS", "WRK_THREADS")},
    "command": "bench/http_echo/run.sh <build-dir>",
    "nginx": result["nginx"], "omni": result["omni"], "ratio_rps_omni_over_nginx": ratio,
}
with open(out, "w") as f:
    json.dump(report, f, indent=2)

print(f"{'server':<8} {'req/s (median)':>15} {'p50 ms':>8} {'p99 ms':>8}   per-round req/s")
for name in ("nginx", "omni"):
    r = result[name]
    per = " ".join(f"{x['rps']:.0f}" for x in r["runs"])
    print(f"{name:<8} {r['median_rps']:>15.0f} {r['median_p50_ms']:>8.3f} {r['median_p99_ms']:>8.3f}   {per}")
print(f"ratio omni/nginx (median req/s): {ratio:.3f}")
print(f"written: {out}")
PY
