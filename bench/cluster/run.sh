#!/usr/bin/env bash
# omni-cluster at scale: a million requests over 1,000 instances (500 prefill + 500 decode),
# one core. Prints the simulator's own line, CPU seconds, wall seconds and peak memory, and
# writes bench/results/cluster_scale.json. Target: <= 60 s on one core.
#   bench/cluster/run.sh BUILD_DIR [REQUESTS]
set -euo pipefail
build=${1:-build/bench}
n=${2:-1000000}
mkdir -p bench/results
out=$(mktemp)
trap 'rm -f "$out" "$out.time"' EXIT
taskset -c 0 /usr/bin/time -f "%U %S %e %M" -o "$out.time" \
  "$build/bin/omni-cluster" --synthetic "n=$n,rate=3000,input=lognormal:1000:600,output=uniform:20:180" \
  --prefill-instances 500 --decode-instances 500 --tensor-parallel-size 1 --data-parallel-size 8 \
  --policy least-load --sample-interval 10 --seed 1 --out "$out" | grep -E "simulated|Successful"
read -r user sys wall rss < "$out.time"
python3 - "$out" "$user" "$sys" "$wall" "$rss" "$n" <<'PY'
import json, sys
res = json.load(open(sys.argv[1]))
user, sys_, wall, rss, n = float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
cpu = user + sys_
summary = {"requests": n, "instances": 1000, "cpu_seconds": cpu, "wall_seconds": wall,
           "peak_rss_mb": rss / 1024, "requests_per_cpu_second": n / cpu,
           "completed": res["completed"], "failed": res["failed"],
           "simulated_seconds": res["duration_s"]}
print(json.dumps(summary))
json.dump(summary, open("bench/results/cluster_scale.json", "w"), indent=1)
PY
