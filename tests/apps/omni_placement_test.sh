#!/usr/bin/env bash
# Integration test of omni-placement: the README example (DeepSeek EPLB's worked example as
# loads, exact phy2log), every subcommand once, and the errors for bad input (exit status 2,
# a message naming the problem).
set -euo pipefail
bin=${1:?usage: omni_placement_test.sh path/to/omni-placement}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fail() { echo "FAIL: $*"; exit 1; }
check() { grep -q -- "$2" "$1" || { echo "--- $1:"; cat "$1"; fail "$3"; }; }
# expect_error <fragment> <args...>: must exit 2 and name the problem on stderr.
expect_error() {
  local fragment=$1; shift
  local status=0
  "$bin" "$@" >"$work/out.txt" 2>"$work/err.txt" || status=$?
  [ "$status" -eq 2 ] || { cat "$work/err.txt"; fail "exit $status (want 2) for: $*"; }
  check "$work/err.txt" "$fragment" "no '$fragment' in the error for: $*"
}

# DeepSeek EPLB's README example: 2 layers x 12 experts, 16 replicas, 4 groups, 2 nodes, 8 GPUs.
cat >"$work/loads.json" <<'JSON'
[[ 90, 132,  40,  61, 104, 165,  39,   4,  73,  56, 183,  86],
 [ 20, 107, 104,  64,  19, 197, 187, 157, 172,  86,  16,  27]]
JSON
printf 'e0,e1,e2,e3,e4,e5,e6,e7,e8,e9,e10,e11\n' >"$work/loads.csv"
tr -d '[] ' <"$work/loads.json" | sed 's/,$//' >>"$work/loads.csv"
example=(--loads "$work/loads.json" --replicas 16 --groups 4 --nodes 2 --devices 8)

# 1. The README example, exactly.
"$bin" plan --algorithm eplb "${example[@]}" --format json --pattern-out "$work/pattern.npy" \
  >"$work/plan.json" || fail "plan exited with $?"
check "$work/plan.json" '"phy2log":\[\[5,6,5,7,8,4,3,4,10,9,10,2,0,1,11,1\],\[7,10,6,8,6,11,8,9,2,4,5,1,5,0,3,1\]\]' \
  "phy2log differs from EPLB's README"
check "$work/plan.json" '"logcnt":\[\[1,2,1,1,2,2,1,1,1,1,2,1\],\[1,2,1,1,1,2,2,1,2,1,1,1\]\]' "logcnt wrong"
check "$work/plan.json" '"metrics":{"sum_max_device_load":' "metrics missing"
head -c 128 "$work/pattern.npy" | grep -aq "'descr': '<i4', 'fortran_order': False, 'shape': (8, 2, 12)" \
  || fail "pattern .npy header wrong"
[ "$(stat -c %s "$work/pattern.npy")" -eq $((128 + 8 * 2 * 12 * 4)) ] || fail "pattern .npy size wrong"

# 2. The same loads as CSV give the same plan.
"$bin" plan --algorithm eplb --loads "$work/loads.csv" --replicas 16 --groups 4 --nodes 2 --devices 8 \
  --format json >"$work/plan_csv.json"
cmp -s "$work/plan.json" "$work/plan_csv.json" || fail "CSV loads planned differently from JSON"

# 3. The other algorithms, evaluate (plan JSON and pattern), rebalance, simulate.
for algorithm in uniform layerwise; do
  "$bin" plan --algorithm "$algorithm" "${example[@]}" --format json >"$work/$algorithm.json" \
    || fail "$algorithm exited with $?"
  check "$work/$algorithm.json" '"phy2log":\[\[' "$algorithm: no phy2log"
done
"$bin" plan --algorithm layerwise "${example[@]}" --slot-budget 5 --format json >"$work/lw.json"
check "$work/lw.json" '"slots_per_device":\[[0-9],[0-9]\]' "layerwise: no per-layer slots"
"$bin" evaluate --placement "$work/plan.json" --loads "$work/loads.json" --nodes 2 --format json \
  >"$work/eval.json"
check "$work/eval.json" '"mean_imbalance"' "evaluate: no metrics"
"$bin" evaluate --placement "$work/pattern.npy" --loads "$work/loads.json" >"$work/eval.txt"
check "$work/eval.txt" "sum over layers of max device load" "evaluate of a pattern failed"
"$bin" rebalance --placement "$work/plan.json" --loads "$work/loads.json" --move-budget 4 \
  --target-ratio 1.0 --format json >"$work/rebalance.json"
check "$work/rebalance.json" '"moves":\[' "rebalance: no moves list"
"$bin" simulate --windows 3 --seed 7 --layers 4 --experts 16 --devices 4 --nodes 2 >"$work/sim.txt"
check "$work/sim.txt" "static-layerwise" "simulate: no report"

# 4. Errors: exit 2 and a message naming the problem.
printf '[[1, 2, 3], [4, -5, 6]]' >"$work/negative.json"
printf '[[1, 2, 3], [4, 5]]' >"$work/ragged.json"
printf '1,2,3\n4,x,6\n' >"$work/bad.csv"
printf '[[1,2,3,4,5,6,7,8,9,10,11,12],[1,2,3,4,5,6,7,8,9,10,11,12],[1,2,3,4,5,6,7,8,9,10,11,12]]' \
  >"$work/three_layers.json"
expect_error "negative load" plan --loads "$work/negative.json" --devices 3
expect_error "layer 1 has 2 values" plan --loads "$work/ragged.json" --devices 3
expect_error "line 2, column 2" plan --loads "$work/bad.csv" --devices 3
expect_error "impossible budget" plan --loads "$work/loads.json" --devices 8 --replicas 8
expect_error "multiple of --devices" plan --loads "$work/loads.json" --devices 8 --replicas 12
expect_error "inconsistent shapes" evaluate --placement "$work/plan.json" --loads "$work/three_layers.json"
expect_error "inconsistent shapes" rebalance --placement "$work/plan.json" --loads "$work/three_layers.json"
expect_error "cannot open" plan --loads "$work/missing.json" --devices 2
expect_error "--algorithm" plan --algorithm magic --loads "$work/loads.json" --devices 8
expect_error "impossible budget" simulate --experts 16 --devices 4 --slots-per-device 3 --layers 2
expect_error "did you mean --devices?" plan --loads "$work/loads.json" --devics 8
expect_error "did you mean 'plan'?" plna --loads "$work/loads.json" --devices 8

echo "omni-placement: 1 passed, 0 failed"
