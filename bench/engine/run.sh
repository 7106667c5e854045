#!/usr/bin/env bash
# bench/engine/run.sh <build-dir>: the engine model's simulation speed on one core, in virtual
# time and without HTTP: INSTANCES engines (DeepSeek-V3 on 8 H200, EP8) serve REQUESTS requests
# from one event loop (Poisson arrivals at RATE requests/s per instance, prompts 128-2048
# tokens, outputs 16-512 tokens, prefix caching on). Side by side, alternating, REPEATS times:
# the stable fast path (Engine::stable_decode_run / advance_stable) against the baseline that
# steps every engine one step at a time. Both must produce the same results (checksum).
#
# Environment: INSTANCES (1000), REQUESTS (1000000), RATE (8), MTP (0), REPEATS (3).
# Output: a table on stdout and bench/results/engine.json. Times are CPU seconds of the process
# (the shared machine's other load does not count); wall seconds are in the JSON.
set -euo pipefail

build_dir=${1:?usage: run.sh <build-dir>}
instances=${INSTANCES:-1000}
requests=${REQUESTS:-1000000}
rate=${RATE:-8}
mtp=${MTP:-0}
repeats=${REPEATS:-3}
repo=$(cd "$(dirname "$0")/../.." && pwd)
bin=$build_dir/bin/omni-engine-bench
[[ -x $bin ]] || { echo "missing $bin (cmake --preset bench && cmake --build build/bench --target omni-engine-bench)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
args=(--instances "$instances" --requests "$requests" --rate "$rate" --mtp "$mtp")
for r in $(seq "$repeats"); do
  echo "round $r/$repeats: fast path" >&2
  "$bin" "${args[@]}" >"$work/fast.$r.json"
  echo "round $r/$repeats: baseline (one step at a time)" >&2
  "$bin" "${args[@]}" --no-fast-path >"$work/base.$r.json"
done

mkdir -p "$repo/bench/results"
python3 - "$work" "$repeats" "$repo/bench/results/engine.json" <<'PY'
import datetime, json, os, platform, statistics, sys

work, repeats, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
load = lambda kind: [json.load(open(os.path.join(work, f"{kind}.{r}.json"))) for r in range(1, repeats + 1)]
fast, base = load("fast"), load("base")
med = lambda runs, key: statistics.median(r[key] for r in runs)
cpu_model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
summary = {
    "date": datetime.date.today().isoformat(),
    "machine": {"nproc": os.cpu_count(), "cpu": cpu_model, "python": platform.python_version()},
    "config": {k: fast[0][k] for k in ("instances", "requests", "mtp")},
    "fast": {k: med(fast, k) for k in ("cpu_s", "wall_s", "requests_per_cpu_s", "steps_per_cpu_s")},
    "baseline": {k: med(base, k) for k in ("cpu_s", "wall_s", "requests_per_cpu_s", "steps_per_cpu_s")},
    "stable_step_fraction": fast[0]["stable_steps"] / fast[0]["steps"],
    "steps": fast[0]["steps"],
    "virtual_s": fast[0]["virtual_s"],
    "projected_1m_requests_cpu_s": 1e6 / med(fast, "requests_per_cpu_s"),
    "speedup_vs_baseline": med(base, "cpu_s") / med(fast, "cpu_s"),
    "results_identical": all(abs(f["checksum"] - b["checksum"]) <= 1e-9 * abs(b["checksum"])
                             and f["output_tokens"] == b["output_tokens"] for f, b in zip(fast, base)),
    "runs": {"fast": fast, "baseline": base},
}
json.dump(summary, open(out, "w"), indent=2)
f, b = summary["fast"], summary["baseline"]
print(f"engine model: {summary['config']['instances']} instances, {summary['config']['requests']} requests, "
      f"{summary['steps']} steps, {summary['virtual_s']:.0f} s simulated")
print(f"{'':22}{'CPU s':>10}{'requests/s':>14}{'steps/s':>12}")
print(f"{'fast path':22}{f['cpu_s']:>10.2f}{f['requests_per_cpu_s']:>14.0f}{f['steps_per_cpu_s']:>12.0f}")
print(f"{'baseline (stepwise)':22}{b['cpu_s']:>10.2f}{b['requests_per_cpu_s']:>14.0f}{b['steps_per_cpu_s']:>12.0f}")
projected = 1e6 / f["requests_per_cpu_s"]
print(f"speed-up {summary['speedup_vs_baseline']:.2f}x; stable steps {100 * summary['stable_step_fraction']:.1f}%; "
      f"results identical: {summary['results_identical']}")
print(f"1M requests at this rate: {projected:.1f} CPU s (target <= 60 s: {'met' if projected <= 60 else 'NOT met'})")
PY
