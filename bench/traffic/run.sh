#!/usr/bin/env bash
# Traffic classes measured in omni-cluster (docs/scheduling.md, "Traffic classes (measured in
# omni-cluster)"): saturation sweep, two priority bands at ~2x overload, and two tenants (10:1)
# at ~2x overload. Prints markdown tables; every run is virtual time, so the figures do not
# depend on the machine (only the wall time does).
#
#   bench/traffic/run.sh [path/to/omni-cluster]     (default: build/dev/bin/omni-cluster)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-build/dev/bin/omni-cluster}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

# The fleet: 4 aggregated DeepSeek-V3 instances (H200, TP8 EP), the gateway admitting at most
# LIMIT running requests per instance, so that an overload's backlog waits in the gateway's
# queue (where bands and tenants act) rather than in the engines' FCFS queues.
WORKLOAD='input=lognormal:2000:1500,output=uniform:50:300'
DURATION=120  # seconds of arrivals
fleet() {
  echo "--prefill-instances 0 --decode-instances 4 --limits-node-max-running $1 --policy least-tokens --seed 1 --slo ttft=2s"
}
run() {  # name rate limit extra...
  local name=$1 rate=$2 limit=$3
  shift 3
  "$BIN" --synthetic "n=$((rate * DURATION)),rate=$rate,$WORKLOAD" $(fleet "$limit") "$@" \
    --out "$OUT/$name.json" >/dev/null
}

echo "## Saturation (one queue, no classes)"
for limit in 32 16; do
  for rate in 10 20 30 40 60 80; do run "sat_${limit}_$rate" "$rate" "$limit"; done
done
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
print("\n| node limit | offered (req/s) | completed (req/s) | failed | TTFT p50 (ms) | TTFT p99 (ms) |")
print("|---|---|---|---|---|---|")
for limit in (32, 16):
    for rate in (10, 20, 30, 40, 60, 80):
        d = json.load(open(f"{out}/sat_{limit}_{rate}.json"))
        print(f"| {limit} | {rate} | {d['request_throughput']:.1f} | {d['failed']} | "
              f"{d['ttft_ms']['p50']:.0f} | {d['ttft_ms']['p99']:.0f} |")
PY

BANDS='high:-1,low:0:sheddable:timeout=5'
CLASSES='interactive:0.2:band=high,batch:0.8:band=low'
for setup in "32 48" "16 38"; do
  set -- $setup
  run "one_$1" "$2" "$1" --traffic-classes 'interactive:0.2,batch:0.8'
  run "bands_$1" "$2" "$1" --traffic-bands "$BANDS" --traffic-classes "$CLASSES"
  run "alone_$1" "$2" "$1" --traffic-bands "$BANDS" --traffic-classes "$CLASSES" --only-class interactive
  # Headroom: the low band may fill only 75% of each node (omni-proxy's node_share).
  run "headroom_$1" "$2" "$1" --traffic-bands "$BANDS:share=0.75" --traffic-classes "$CLASSES"
done

TENANTS='big:10:tenant=big,small:1:tenant=small'
for timeout in 30 5; do
  run "fair_$timeout" 48 32 --timeouts-queue "$timeout" --traffic-classes "$TENANTS"
  run "shared_$timeout" 48 32 --timeouts-queue "$timeout" --traffic-classes 'big:10,small:1'
  run "solo_$timeout" 48 32 --timeouts-queue "$timeout" --traffic-classes "$TENANTS" --only-class small
  # Headroom: the big tenant may fill only 90% of each node (omni-proxy's tenant node_share).
  run "capped_$timeout" 48 32 --timeouts-queue "$timeout" \
    --traffic-classes 'big:10:tenant=big:share=0.9,small:1:tenant=small'
done

python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
def load(name):
    return {c["name"]: c for c in json.load(open(f"{out}/{name}.json"))["classes"]}
def errors(c):
    e = dict(c["errors_by_kind"])
    e.pop("shed", None)
    shed = ", ".join(f"{n} {k}" for k, n in sorted(c["shed_by_reason"].items()))
    rest = ", ".join(f"{n} {k}" for k, n in sorted(e.items()))
    return shed or "0", rest or "0"
def delay(c):
    total = sum(c["queue_wait_s"].values())
    return c["legs_delayed"], (total / c["legs_delayed"] * 1e3 if c["legs_delayed"] else 0.0)

print("\n## Two bands at ~2x overload (interactive 20% → high, batch 80% → low, sheddable, timeout 5 s)")
print("\n| node limit, offered | run | class | requests | completed | shed | other failures | "
      "TTFT p50 (ms) | TTFT p99 (ms) | E2E p99 (s) | legs delayed | mean gateway wait (ms) |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for limit, rate in ((32, 48), (16, 38)):
    for run, label in (("alone", "interactive alone"), ("bands", "two bands"),
                       ("headroom", "two bands, low share 0.75"), ("one", "one queue")):
        for name, c in load(f"{run}_{limit}").items():
            if c["requests"] == 0: continue
            shed, other = errors(c)
            n, w = delay(c)
            print(f"| {limit}, {rate} req/s | {label} | {name} | {c['requests']} | {c['completed']} | "
                  f"{shed} | {other} | {c['ttft_ms']['p50']:.0f} | {c['ttft_ms']['p99']:.0f} | "
                  f"{c['e2e_ms']['p99']/1e3:.2f} | {n} | {w:.0f} |")
    hi = load(f"bands_{limit}")["interactive"]["ttft_ms"]["p99"]
    lo = load(f"alone_{limit}")["interactive"]["ttft_ms"]["p99"]
    one = load(f"one_{limit}")["interactive"]["ttft_ms"]["p99"]
    room = load(f"headroom_{limit}")["interactive"]["ttft_ms"]["p99"]
    done = {run: json.load(open(f"{out}/{run}_{limit}.json"))["request_throughput"]
            for run in ("bands", "headroom")}
    print(f"\nnode limit {limit}: high-band TTFT p99 loaded / alone = {hi:.0f} / {lo:.0f} = "
          f"**{hi/lo:.2f}x** (target ≤ 1.5x); with the low band's share 0.75: {room:.0f} ms = "
          f"**{room/lo:.2f}x** at {done['headroom']:.1f} req/s completed (against "
          f"{done['bands']:.1f}); one queue: {one:.0f} ms = {one/lo:.1f}x")

print("\n## Two tenants, 10:1, at ~2x overload (48 req/s, node limit 32, one band)")
print("\n| queue timeout | run | class | requests | completed | failures | TTFT p50 (ms) | "
      "TTFT p99 (ms) | E2E p99 (s) | mean gateway wait (ms) |")
print("|---|---|---|---|---|---|---|---|---|---|")
for timeout in (30, 5):
    for run, label in (("solo", "small alone"), ("fair", "tenants (fair queuing)"),
                       ("capped", "tenants, big's share 0.9"), ("shared", "no tenants (one queue)")):
        for name, c in load(f"{run}_{timeout}").items():
            if c["requests"] == 0: continue
            shed, other = errors(c)
            n, w = delay(c)
            failures = other if shed == "0" else f"{shed} shed, {other}"
            print(f"| {timeout} s | {label} | {name} | {c['requests']} | {c['completed']} | {failures} | "
                  f"{c['ttft_ms']['p50']:.0f} | {c['ttft_ms']['p99']:.0f} | {c['e2e_ms']['p99']/1e3:.2f} | {w:.0f} |")
    fair = load(f"fair_{timeout}")["small"]["ttft_ms"]["p99"]
    solo = load(f"solo_{timeout}")["small"]["ttft_ms"]["p99"]
    shared = load(f"shared_{timeout}")["small"]["ttft_ms"]["p99"]
    capped = load(f"capped_{timeout}")["small"]["ttft_ms"]["p99"]
    done = {run: json.load(open(f"{out}/{run}_{timeout}.json"))["request_throughput"]
            for run in ("fair", "capped")}
    print(f"\nqueue timeout {timeout} s: small tenant TTFT p99 fair / alone = {fair:.0f} / {solo:.0f} = "
          f"**{fair/solo:.2f}x** (target ≤ 1.5x); with the big tenant's share 0.9: {capped:.0f} ms = "
          f"**{capped/solo:.2f}x** at {done['capped']:.1f} req/s completed (against "
          f"{done['fair']:.1f}); without tenants {shared:.0f} ms = {shared/solo:.1f}x")
PY
