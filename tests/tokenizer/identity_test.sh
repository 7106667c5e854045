#!/usr/bin/env bash
# identity_test.sh CHECK MODEL_DIR WORK_DIR: builds the corpus (make_corpus.py), has Hugging Face
# tokenizers encode it (reference/encode.mjs) and compares every id with ours (identity_check).
# Skips (exit 77) when node or the reference tools in .tools/ are missing (`make deps` installs them).
set -euo pipefail
check=$1 model_dir=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
tools=$(cd "$here/../.." && pwd)/.tools
if ! command -v node >/dev/null || [[ ! -d $tools/node_modules/@anush008/tokenizers ]] || [[ ! -f $model_dir/tokenizer.json ]]; then
  echo "SKIP: needs node and .tools/ (scripts/install-deps.sh installs @anush008/tokenizers and the models)"
  exit 77
fi
mkdir -p "$work"
corpus=$work/corpus.jsonl
[[ -s $corpus ]] || python3 "$here/make_corpus.py" "$corpus" --mb "${OMNI_TOKENIZER_CORPUS_MB:-4}"
node "$here/reference/encode.mjs" "$tools" "$model_dir/tokenizer.json" "$corpus" "$work/expected.jsonl"
"$check" "$model_dir" "$corpus" "$work/expected.jsonl"
