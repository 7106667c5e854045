#!/usr/bin/env bash
# bench/omni-sim/run.sh <build-dir>: omni-sim's HTTP throughput, measured by wrk against one
# omni-sim process, in alternating rounds (A/B/C/A/B/C...) so drift hits every case alike:
#   health      GET /health — the HTTP server alone (the baseline: the ceiling of this process)
#   completion  POST /v1/completions, max_tokens 1, non-streaming — the whole generation path
#               (JSON parsing, tokenizing, block hashing, engine driver round trip, response)
#   stream      POST /v1/completions, max_tokens 16, SSE — one chunk per engine step
# The model clock runs --speed 1e6 faster than wall time, so the engine model's step times do
# not bound the rate: this measures the server. A fourth case, "streams", holds STREAMS
# concurrent SSE streams at --speed 1 (real model time) and reports the concurrency reached
# (Little's law: requests/s x mean latency).
#
# Environment: ROUNDS (3), DURATION (5s), CONNECTIONS (64), STREAMS (256), WRK_THREADS (1).
# Output: a table of medians on stdout and bench/results/omni_sim.json.
set -euo pipefail

build_dir=${1:?usage: run.sh <build-dir>}
rounds=${ROUNDS:-3}
duration=${DURATION:-5s}
connections=${CONNECTIONS:-64}
streams=${STREAMS:-256}
wrk_threads=${WRK_THREADS:-1}

repo=$(cd "$(dirname "$0")/../.." && pwd)
sim=$build_dir/bin/omni-sim
[[ -x $sim ]] || { echo "missing $sim (cmake --build <build-dir> --target omni-sim)" >&2; exit 1; }
. "$repo/bench/lib.sh"
bench_require wrk python3

start_sim() {  # <name> <speed>: starts omni-sim, sets <name>_port
  "${server_pin[@]}" "$sim" --port 0 --model deepseek-ai/DeepSeek-V3 --served-model-name m \
    --hardware h200 --tensor-parallel-size 8 --speed "$2" --max-num-seqs 1024 >"$work/$1.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 200); do grep -q "listening on" "$work/$1.log" 2>/dev/null && break; sleep 0.05; done
  local port
  port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$work/$1.log" | head -1)
  [[ -n $port ]] || { cat "$work/$1.log"; echo "omni-sim did not start" >&2; exit 1; }
  eval "$1_port=$port"
}

post_script() {  # <file> <json body>
  cat >"$1" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '$2'
LUA
}
prompt='the model of the cache and the block of the prefix in the engine is not the batch of the layer'
post_script "$work/completion.lua" "{\"prompt\":\"$prompt\",\"max_tokens\":1}"
post_script "$work/stream.lua" "{\"prompt\":\"$prompt\",\"max_tokens\":16,\"stream\":true}"
post_script "$work/streams.lua" "{\"prompt\":\"$prompt\",\"max_tokens\":32,\"stream\":true}"

start_sim fast 1000000
start_sim real 1

run_wrk() {  # <case> <out> <duration>
  case $1 in
    health) "${client_pin[@]}" wrk -t"$wrk_threads" -c"$connections" -d"$3" --latency "http://127.0.0.1:$fast_port/health" >"$2" ;;
    completion) "${client_pin[@]}" wrk -t"$wrk_threads" -c"$connections" -d"$3" --latency -s "$work/completion.lua" "http://127.0.0.1:$fast_port/v1/completions" >"$2" ;;
    stream) "${client_pin[@]}" wrk -t"$wrk_threads" -c"$connections" -d"$3" --latency -s "$work/stream.lua" "http://127.0.0.1:$fast_port/v1/completions" >"$2" ;;
    streams) "${client_pin[@]}" wrk -t"$wrk_threads" -c"$streams" -d"$3" --timeout 30s --latency -s "$work/streams.lua" "http://127.0.0.1:$real_port/v1/completions" >"$2" ;;
  esac
}

echo "warming up..." >&2
for c in health completion stream; do run_wrk "$c" /dev/null 1s; done
for round in $(seq "$rounds"); do
  for c in health completion stream streams; do
    echo "round $round/$rounds: $c" >&2
    run_wrk "$c" "$work/$c.$round.txt" "$duration"
  done
done

mkdir -p "$repo/bench/results"
python3 - "$work" "$rounds" "$repo/bench/results/omni_sim.json" "$repo/bench" <<'PY'
import json, os, platform, statistics, sys, datetime

work, rounds, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
sys.path.insert(0, sys.argv[4])
from wrk_report import parse

result = {}
for name in ("health", "completion", "stream", "streams"):
    runs = [parse(os.path.join(work, f"{name}.{r}.txt")) for r in range(1, rounds + 1)]
    result[name] = {"runs": runs,
                    "median_rps": statistics.median(r["rps"] for r in runs),
                    "median_p50_ms": statistics.median(r["p50_ms"] for r in runs),
                    "median_p99_ms": statistics.median(r["p99_ms"] for r in runs),
                    "median_mean_ms": statistics.median(r["mean_ms"] for r in runs)}
streams = result["streams"]
concurrency = streams["median_rps"] * streams["median_mean_ms"] / 1000.0
report = {
    "benchmark": "omni_sim",
    "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    "machine": {"host": platform.node(), "kernel": platform.release(), "cpus": os.cpu_count()},
    "settings": {k: os.environ.get(k) for k in ("ROUNDS", "DURATION", "CONNECTIONS", "STREAMS")},
    "command": "bench/omni-sim/run.sh <build-dir>",
    **result,
    "ratio_completion_over_health": result["completion"]["median_rps"] / result["health"]["median_rps"],
    "ratio_stream_over_health": result["stream"]["median_rps"] / result["health"]["median_rps"],
    "concurrent_streams_reached": concurrency,
}
json.dump(report, open(out, "w"), indent=2)
print(f"{'case':<12}{'req/s':>10}{'p50 ms':>10}{'p99 ms':>10}{'non-2xx':>9}")
for name in ("health", "completion", "stream", "streams"):
    r = result[name]
    bad = sum(x["non_2xx"] for x in r["runs"])
    print(f"{name:<12}{r['median_rps']:>10.0f}{r['median_p50_ms']:>10.2f}{r['median_p99_ms']:>10.2f}{bad:>9}")
print(f"completion / health = {report['ratio_completion_over_health']:.2f}   "
      f"stream(16 tokens) / health = {report['ratio_stream_over_health']:.2f}   "
      f"concurrent streams held at --speed 1: {concurrency:.0f}")
print(f"written {out}")
PY
