#!/usr/bin/env bash
# omni-bench for `vllm bench serve` users, against a real omni-sim: vLLM's flag spellings with
# vLLM's meaning, the --save-result file read back by a script written to vLLM's field names,
# model time from the server's reported speed, the trace format detected from the file,
# labelled and direction-aware compare (also of a multi-policy array), warm-up and cache reset.
set -euo pipefail
bench=${1:?usage: vllm_compat_test.sh omni-bench omni-sim}
sim=${2:?usage: vllm_compat_test.sh omni-bench omni-sim}
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
check() { grep -q -- "$2" "$1" || { echo "--- $1:"; head -c 3000 "$1"; echo; fail "$3"; }; }

start_sim() {  # start_sim <flags...>: sets $port
  local log="$work/sim.$RANDOM.txt"
  "$sim" --port 0 --tensor-parallel-size 8 --num-gpu-blocks-override 20000 "$@" >"$log" 2>&1 &
  pids+=($!)
  for _ in $(seq 200); do grep -q "listening on" "$log" && break; sleep 0.05; done
  port=$(sed -n 's/.*listening on [^:]*:\([0-9]*\).*/\1/p' "$log" | head -1)
  [ -n "$port" ] || { cat "$log"; fail "omni-sim did not start"; }
}

# 1. vLLM's spellings: --host/--port, --dataset-name random, --num-prompts, --max-concurrency,
#    --goodput in ms, --save-result with --result-dir/--label/--metadata/--percentile-metrics.
start_sim --speed 100
"$bench" --host 127.0.0.1 --port "$port" --dataset-name random --num-prompts 20 --random-input-len 200 \
  --random-output-len 8 --random-range-ratio 0.5 --max-concurrency 4 --goodput ttft:600000 e2el:600000 \
  --save-result --result-dir "$work/res" --label sim --metadata tp=8 gpu=h800 \
  --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,99 --disable-tqdm \
  --out "$work/ours.json" >"$work/run1.txt" 2>&1 || { cat "$work/run1.txt"; fail "vLLM-style run exited with $?"; }
file=$(ls "$work/res"/sim-infqps-concurrency4-DeepSeek-V3-*.json 2>/dev/null | head -1)
[ -n "$file" ] || { ls -l "$work/res"; fail "no --save-result file named as vLLM names it"; }
# A script written for vllm bench serve's results, reading this file unchanged.
python3 - "$file" <<'PY' || fail "the vLLM-keyed file does not read as vLLM's"
import json, sys, math
r = json.load(open(sys.argv[1]))
assert r["completed"] == 20 and r["failed"] == 0, r["completed"]
assert r["num_prompts"] == 20 and r["max_concurrency"] == 4 and r["label"] == "sim"
assert r["request_rate"] == "inf" and r["burstiness"] == 1.0
assert r["tp"] == "8" and r["gpu"] == "h800"
assert r["backend"] == "openai" and r["endpoint_type"] == "openai"
assert r["model_id"] == "deepseek-ai/DeepSeek-V3", r["model_id"]
for m in ("ttft", "tpot", "itl", "e2el"):
    for k in ("mean", "median", "std", "p50", "p99"):
        v = r[f"{k}_{m}_ms"]
        assert isinstance(v, float) and v >= 0, (k, m, v)
assert r["p99_ttft_ms"] >= r["median_ttft_ms"]
assert math.isclose(r["output_throughput"], r["total_output_tokens"] / r["duration"], rel_tol=1e-9)
assert math.isclose(r["request_throughput"], r["completed"] / r["duration"], rel_tol=1e-9)
assert r["request_goodput"] == r["request_throughput"]
assert 1 <= r["max_concurrent_requests"] <= 4
assert r["max_output_tokens_per_s"] > 0 and len(r["latencies"]) == 20
assert r["total_output_tokens"] == 20 * 8 or 4 * 20 <= r["total_output_tokens"] <= 12 * 20
assert r["omni_bench"]["schema"] == "omni-bench-results/1" and r["omni_bench"]["completed"] == 20
PY
echo "ok: vLLM's flags and --save-result read back with vLLM's field names"

# 2. Model time: omni-sim reports --speed 100 in /version; omni-bench reports in model time.
check "$work/ours.json" '"time_base":"model","server_speed":100' "results are not in model time"
check "$work/run1.txt" "model time" "the run does not say it reports model time"
"$bench" --base-url "http://127.0.0.1:$port" --synthetic 'n=4,rate=100,input=100,output=4' --time-base wall \
  --out "$work/wall.json" >"$work/wall.txt" 2>&1 || fail "wall-time run exited with $?"
grep -q '"time_base"' "$work/wall.json" && fail "--time-base wall still reports model time"
echo "ok: model time"

# 3. --burstiness is vLLM's gamma shape; the old meaning is --arrival-cv, with a note.
"$bench" --base-url "http://127.0.0.1:$port" --synthetic 'n=4,input=100,output=2' --request-rate 50 \
  --burstiness 0.25 --out "$work/b.json" >"$work/b.txt" 2>&1 || fail "burstiness run exited with $?"
check "$work/b.txt" "gamma shape" "no note on --burstiness"
check "$work/b.json" '"arrival_cv":2,"burstiness":0.25' "burstiness 0.25 is not a CV of 2"
echo "ok: --burstiness as vLLM's"

# 4. The trace format from the file: an Azure CSV without --trace-format; a wrong one refused.
{ echo "TIMESTAMP,ContextTokens,GeneratedTokens"
  for i in 1 2 3; do echo "2023-11-16 18:17:0$i.0000000,300,3"; done; } >"$work/azure.csv"
"$bench" --base-url "http://127.0.0.1:$port" --trace "$work/azure.csv" --out "$work/az.json" >"$work/az.txt" 2>&1 \
  || { cat "$work/az.txt"; fail "an Azure CSV without --trace-format failed"; }
check "$work/az.json" '"completed":3' "the Azure trace did not run"
set +e
"$bench" --base-url "http://127.0.0.1:$port" --trace "$work/azure.csv" --trace-format mooncake >"$work/tf.txt" 2>&1
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "a mismatched --trace-format: status $rc"
check "$work/tf.txt" "looks like the azure format" "the mismatch is not explained"
grep -q "Successful requests" "$work/tf.txt" && fail "a table was printed before the refusal"
echo "ok: trace format detected"

# 5. compare: labels, directions, and an omni-cluster-style array of several policies.
jq -s '.' "$work/ours.json" "$work/az.json" >"$work/policies.json"
"$bench" compare "$work/policies.json" "$work/wall.json" --labels random,azure,wall >"$work/cmp.txt" \
  || fail "compare of an array exited with $?"
check "$work/cmp.txt" "azure/random" "no ratio column labelled"
check "$work/cmp.txt" "ttft_ms.p50 *lower" "TTFT is not marked lower-is-better"
check "$work/cmp.txt" "request_throughput *higher" "throughput is not marked higher-is-better"
check "$work/cmp.txt" "note: wall is in wall time" "mixed time bases not flagged"
echo "ok: compare"

# 6. Warm-up and cache reset before measuring: the warm-up's requests are not measured.
start_sim --speed 100
"$bench" --base-url "http://127.0.0.1:$port" --synthetic 'n=5,rate=100,input=600,output=3' --num-warmups 3 \
  --reset-prefix-cache --out "$work/warm.json" >"$work/warm.txt" 2>&1 || { cat "$work/warm.txt"; fail "warm-up run failed"; }
check "$work/warm.txt" "warming up with 3 requests" "no warm-up"
check "$work/warm.txt" "prefix cache reset" "no cache reset"
check "$work/warm.json" '"completed":5,' "the warm-up was measured"
served=$(curl -s "http://127.0.0.1:$port/metrics" | grep '^omni_sim_http_requests_total{route="/v1/completions",status="200"}' | awk '{print $NF}')
[ "$served" = 8 ] || fail "omni-sim served $served generation requests, want 3 + 5"
echo "ok: warm-up and reset"
echo "omni-bench for vllm bench serve users: passed"
