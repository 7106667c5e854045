#!/usr/bin/env bash
# bench/omni_bench/run.sh <build-dir>: two measurements of the load-generation stack.
#  1. omni-workload-bench: request generation speed vs side-by-side baselines (median of ROUNDS).
#  2. omni-bench's timing error: a closed loop at CONCURRENCY streams against fake-openai-server
#     sending one token every ITL_MS; the measured ITL p50/p99 over the true ITL (1.000 = no
#     error added by the generator), and the events/s it handled.
# Environment: ROUNDS (5), TRACE (../shared/traces/mooncake_synthetic_trace.jsonl),
#              CONCURRENCY ("1 64 512"), ITL_MS (20).
# Output: tables on stdout and bench/results/omni_bench.json.
set -euo pipefail
build_dir=${1:?usage: run.sh <build-dir>}
repo=$(cd "$(dirname "$0")/../.." && pwd)
rounds=${ROUNDS:-5}
trace=${TRACE:-$repo/../shared/traces/mooncake_synthetic_trace.jsonl}
levels=${CONCURRENCY:-1 64 512}
itl_ms=${ITL_MS:-20}
bin=$build_dir/bin
for b in omni-workload-bench omni-bench fake-openai-server; do
  [[ -x $bin/$b ]] || { echo "missing $bin/$b (cmake --preset bench && cmake --build build/bench)" >&2; exit 1; }
done
[[ -f $trace ]] || { echo "missing trace $trace (set TRACE)" >&2; exit 1; }
work=$(mktemp -d)
fake_pid=
trap '[ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null; rm -rf "$work"' EXIT

echo "workload generation (median of $rounds rounds, alternating with the baseline)"
"$bin/omni-workload-bench" "$trace" "$rounds" >"$work/workload.json"
cat "$work/workload.json"

"$bin/fake-openai-server" --behaviours ok --itl-ms "$itl_ms" >"$work/fake.txt" 2>&1 &
fake_pid=$!
for _ in $(seq 100); do grep -q "listening on" "$work/fake.txt" && break; sleep 0.05; done
port=$(sed -n 's/.*127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/fake.txt")
echo "timing error at a true ITL of $itl_ms ms"
printf '%-12s %12s %12s %12s %12s %12s\n' concurrency itl_p50_ms itl_p99_ms p50_ratio p99_ratio events_per_s
for c in $levels; do
  n=$((c * 3 > 30 ? c * 3 : 30))
  "$bin/omni-bench" --base-url "http://127.0.0.1:$port" --synthetic "n=$n,input=64,output=50" \
    --concurrency "$c" --no-progress --out "$work/c$c.json" >/dev/null
  python3 - "$work/c$c.json" "$c" "$itl_ms" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); c = int(sys.argv[2]); itl = float(sys.argv[3])
ev = d["total_output_tokens"] / d["duration_s"]
print(f'{c:<12} {d["itl_ms"]["p50"]:12.3f} {d["itl_ms"]["p99"]:12.3f} {d["itl_ms"]["p50"]/itl:12.3f} {d["itl_ms"]["p99"]/itl:12.3f} {ev:12.0f}')
PY
done

mkdir -p "$repo/bench/results"
python3 - "$work" "$itl_ms" "$levels" "$repo/bench/results/omni_bench.json" <<'PY'
import datetime, json, os, platform, sys
work, itl, levels, out = sys.argv[1], float(sys.argv[2]), sys.argv[3].split(), sys.argv[4]
result = {"date": datetime.date.today().isoformat(), "machine": platform.machine(), "nproc": os.cpu_count(),
          "workload": json.load(open(os.path.join(work, "workload.json"))), "true_itl_ms": itl, "timing": {}}
for c in levels:
    d = json.load(open(os.path.join(work, f"c{c}.json")))
    result["timing"][c] = {"itl_p50_ms": d["itl_ms"]["p50"], "itl_p99_ms": d["itl_ms"]["p99"],
                           "ttft_p50_ms": d["ttft_ms"]["p50"], "completed": d["completed"], "failed": d["failed"],
                           "events_per_s": d["total_output_tokens"] / d["duration_s"]}
json.dump(result, open(out, "w"), indent=1)
print("wrote", out)
PY
