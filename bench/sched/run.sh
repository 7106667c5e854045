#!/usr/bin/env bash
# Prefix-index throughput on one core (scheduling issue, target >= 10M operations/s).
#   bench/sched/run.sh BUILD_DIR [TRACE]
set -euo pipefail
build=${1:-build/bench}
trace=${2:-$(dirname "$0")/../../../shared/traces/mooncake_synthetic_trace.jsonl}
[ -f "$trace" ] || trace=""
mkdir -p bench/results
taskset -c 0 "$build/bin/omni-prefix-index-bench" $trace --instances 16 --rounds 5 | tee bench/results/prefix_index.json
