#!/usr/bin/env bash
# Fidelity of the cluster simulator: the same workload (a) live, omni-bench against a real
# omni-sim process whose model clock runs K times faster than the wall, and (b) in omni-cluster
# with the same profiles and engine limits. Median TTFT and TPOT must agree within 10% (the
# live figures, measured on the wall clock, are multiplied by K to be in model time). The live
# side has no gateway, so the simulated one runs round-robin over its one instance: a policy
# that never holds a request at the gateway.
#   fidelity_test.sh omni-sim omni-bench omni-cluster [K]
set -euo pipefail
sim=$1
bench=$2
cluster=$3
k=${4:-4}
work=$(mktemp -d)
sim_pid=""
trap '[ -n "$sim_pid" ] && kill "$sim_pid" 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; tail -5 "$work/sim.log" >&2 || true; exit 1; }

# Arrivals in model time (requests/s); omni-bench replays them K times faster on the wall.
spec="n=60,rate=2,input=lognormal:12000:6000,output=uniform:100:300"
engine=(--block-size 64 --max-num-batched-tokens 16384 --max-num-seqs 256)

"$sim" --host 127.0.0.1 --port 0 --model deepseek-ai/DeepSeek-V3 --hardware h200 \
  --tensor-parallel-size 8 --enable-expert-parallel "${engine[@]}" --speed "$k" --seed 1 \
  > "$work/sim.log" 2>&1 &
sim_pid=$!
for _ in $(seq 200); do grep -q "listening on" "$work/sim.log" && break; sleep 0.05; done
address=$(grep -m1 "listening on" "$work/sim.log" | grep -oE "[0-9]+(\.[0-9]+){3}:[0-9]+") ||
  fail "omni-sim did not start"

# --time-base wall: this test scales by K itself (omni-bench would otherwise read omni-sim's
# speed from /version and pace and report in model time on its own).
"$bench" --base-url "http://$address" --synthetic "$spec" --seed 5 --time-base wall \
  --time-scale "$(python3 -c "print(1 / $k)")" --out "$work/live.json" > "$work/bench.out" 2>&1 ||
  fail "omni-bench failed: $(tail -3 "$work/bench.out")"
"$cluster" --synthetic "$spec" --seed 5 --prefill-instances 0 --decode-instances 1 \
  --model deepseek-v3 --hardware h200 --tensor-parallel-size 8 --enable-expert-parallel true \
  "${engine[@]}" --network-latency-ms 0 --policy round-robin --out "$work/sim.json" > /dev/null ||
  fail "omni-cluster failed"

python3 - "$work/live.json" "$work/sim.json" "$k" <<'PY'
import json, sys
live, sim, k = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), float(sys.argv[3])
assert live["completed"] == sim["completed"] == 60, (live["completed"], sim["completed"])
worst = 0.0
for metric in ("ttft_ms", "tpot_ms"):
    a, b = live[metric]["p50"] * k, sim[metric]["p50"]
    ratio = a / b
    worst = max(worst, abs(ratio - 1))
    print(f"{metric} p50: live {a:.1f} ms (model time), simulated {b:.1f} ms, ratio {ratio:.3f}")
assert worst <= 0.10, f"live and simulated medians differ by {worst:.1%} (limit 10%)"
print("fidelity: OK")
PY
