#!/usr/bin/env bash
# Integration test of omni-cluster: the real binary on synthetic workloads (and on a slice of the
# Mooncake trace when ../shared/traces is present): results JSON in omni-bench's schema,
# per-request lines, the HTML/SVG report, determinism, and clear errors for bad input.
set -euo pipefail
bin=$1
traces=${2:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

spec="n=300,rate=40,input=lognormal:1500:800,output=uniform:10:120,turns=uniform:1:3"
common=(--synthetic "$spec" --prefill-instances 2 --decode-instances 2 --seed 11)

# 1. Two policies, every output.
"$bin" "${common[@]}" --policy round-robin,least-tokens --slo ttft=2s,tpot=80ms \
  --out "$work/res.json" --requests-out "$work/req.jsonl" --report "$work/report" > "$work/stdout"
grep -q "== policy round-robin ==" "$work/stdout" || fail "no round-robin table"
grep -q "== policy least-tokens ==" "$work/stdout" || fail "no least-tokens table"
python3 - "$work/res.json" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))
assert isinstance(results, list) and len(results) == 2, results
for r in results:
    for key in ("completed", "failed", "duration_s", "request_throughput",
                "output_token_throughput", "goodput", "prefix_cache_hit_rate"):
        assert key in r, key
    for key in ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"):
        for stat in ("mean", "p50", "p90", "p99"):
            assert stat in r[key], (key, stat)
        assert r[key]["p50"] <= r[key]["p99"], key
    assert r["completed"] > 0 and r["duration_s"] > 0
    assert 0 <= r["prefix_cache_hit_rate"] <= 1
    # multi-turn sessions share their earlier turns: some prompt tokens must hit the cache
    assert r["prefix_cache_hit_rate"] > 0, r["prefix_cache_hit_rate"]
PY
lines=$(wc -l < "$work/req.jsonl")
completed=$(python3 -c "import json;print(sum(r['completed']+r['failed'] for r in json.load(open('$work/res.json'))))")
[ "$lines" -eq "$completed" ] || fail "per-request lines $lines != requests $completed"
for f in report.html ttft_cdf.svg tpot_cdf.svg round-robin_queue.svg least-tokens_kv.svg; do
  [ -s "$work/report/$f" ] || fail "report file $f missing"
done
grep -q "<svg" "$work/report/report.html" || fail "report has no inline chart"

# 2. Deterministic: same seed, same numbers (wall time aside); another seed, other numbers.
strip() { python3 -c "import json,sys;r=json.load(open(sys.argv[1]));r.pop('config');print(json.dumps(r,sort_keys=True))" "$1"; }
"$bin" "${common[@]}" --policy random --out "$work/a.json" > /dev/null
"$bin" "${common[@]}" --policy random --out "$work/b.json" > /dev/null
[ "$(strip "$work/a.json")" = "$(strip "$work/b.json")" ] || fail "same seed, different results"
"$bin" --synthetic "$spec" --prefill-instances 2 --decode-instances 2 --seed 12 --policy random \
  --out "$work/c.json" > /dev/null
[ "$(strip "$work/a.json")" != "$(strip "$work/c.json")" ] || fail "seed has no effect"

# 3. Aggregated mode and the slow path agree with the fast one.
"$bin" --synthetic "n=120,rate=20,input=800,output=50" --prefill-instances 0 --decode-instances 2 \
  --out "$work/fast.json" > /dev/null
"$bin" --synthetic "n=120,rate=20,input=800,output=50" --prefill-instances 0 --decode-instances 2 \
  --no-fast-forward --out "$work/slow.json" > /dev/null
python3 - "$work/fast.json" "$work/slow.json" <<'PY'
import json, sys
fast, slow = (json.load(open(p)) for p in sys.argv[1:])
assert fast["completed"] == slow["completed"] == 120, (fast["completed"], slow["completed"])
for key in ("ttft_ms", "e2e_ms"):
    for stat in ("mean", "p99"):
        a, b = fast[key][stat], slow[key][stat]
        assert abs(a - b) <= 1e-6 * max(1.0, abs(b)), (key, stat, a, b)
PY

# 4. Bad input: exit status 2 and a message that names the problem.
expect_error() {
  local pattern=$1; shift
  set +e
  "$bin" "$@" > "$work/err.out" 2> "$work/err.txt"
  local rc=$?
  set -e
  [ "$rc" -eq 2 ] || fail "expected exit 2 for '$*', got $rc"
  grep -q -- "$pattern" "$work/err.txt" || fail "expected '$pattern' for '$*': $(cat "$work/err.txt")"
}
expect_error "least-tokens" --synthetic n=5 --policy nope
expect_error "exactly one of" --synthetic n=5 --trace x.jsonl
expect_error "exactly one of" --prefill-instances 1
expect_error "x-missing.jsonl" --trace "$work/x-missing.jsonl"
expect_error "no memory for the KV cache" --synthetic n=5 --hardware h800 --tensor-parallel-size 1
printf '{"timestamp": 0, "input_length": 10, "output_length": 2, "hash_ids": [1]}\n{"timestamp": oops}\n' \
  > "$work/bad.jsonl"
expect_error "line 2" --trace "$work/bad.jsonl" --trace-format mooncake
expect_error "did you mean --prefill-instances?" --synthetic n=5 --prefill-instance 2
expect_error "Could not convert" --synthetic n=5 --prefill-instances two
grep -q -- "--prefill-instances" <<<"$("$bin" --help)" || fail "--help does not document the flags"
grep -q "^omni-cluster [0-9]" <<<"$("$bin" --version)" || fail "--version"

# 5. A slice of the real Mooncake trace, when the shared traces are here.
if [ -n "$traces" ] && [ -f "$traces/mooncake_synthetic_trace.jsonl" ]; then
  "$bin" --trace "$traces/mooncake_synthetic_trace.jsonl" --trace-format mooncake \
    --max-requests 300 --prefill-instances 2 --decode-instances 1 --out "$work/m.json" > /dev/null
  python3 -c "import json;r=json.load(open('$work/m.json'));assert r['completed']+r['failed']==300, r"
else
  echo "note: shared traces not found; Mooncake slice skipped"
fi
echo "omni-cluster integration: OK"
