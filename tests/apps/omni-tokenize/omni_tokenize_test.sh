#!/usr/bin/env bash
# omni-tokenize end to end: encode/decode round trips, count, --add-special-tokens, --input,
# chat with and without the generation prompt, and the exit status of bad input and bad flags.
set -euo pipefail
bin=$1 models=$2
# The CLI convention, which needs no tokenizer: usage errors exit 2 with a message naming the
# nearest flag or subcommand; --version exits 0.
for usage in "encdoe --tokenizer x:did you mean 'encode'?" "encode --tokenzer x:did you mean --tokenizer?" \
             "chat --tokenizer x --no-generation-promt:did you mean --no-generation-prompt?"; do
  st=0; err=$($bin ${usage%%:*} 2>&1 >/dev/null </dev/null) || st=$?
  [[ $st == 2 && $err == *"${usage#*:}"* ]] || { echo "FAIL: '${usage%%:*}': exit $st, $err" >&2; exit 1; }
done
[[ $("$bin" --version) == "omni-tokenize "[0-9]* ]] || { echo "FAIL: --version" >&2; exit 1; }
ds=$models/tokenizer-deepseek_v3/models
qw=$models/tokenizer-qwen3/models
if [[ ! -f $ds/tokenizer.json || ! -f $qw/tokenizer.json ]]; then
  echo "SKIP: $models is missing (scripts/install-deps.sh installs the reference tokenizers)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

text=$'Hello, world! 你好 12345\n\tcafé 😀'
for model in "$ds" "$qw/tokenizer.json" "$qw/tokenizer_config.json"; do
  ids=$(printf '%s' "$text" | "$bin" encode --tokenizer "$model")
  [[ $ids =~ ^\[[0-9]+(,[0-9]+)*\]$ ]] || fail "encode output is not a JSON array of ids: $ids"
  back=$(printf '%s' "$ids" | "$bin" decode --tokenizer "$model"; printf x)
  [[ ${back%x} == "$text" ]] || fail "decode(encode(text)) differs for $model: '${back%x}'"
  count=$(printf '%s' "$text" | "$bin" count --tokenizer "$model")
  n=$(( $(printf '%s' "$ids" | tr -cd ',' | wc -c) + 1 ))
  [[ $count == "$n" ]] || fail "count $count != number of ids $n"
done

# --input FILE is the same as stdin.
printf '%s' "$text" >"$work/in.txt"
[[ $("$bin" encode --tokenizer "$ds" --input "$work/in.txt") == "$(printf '%s' "$text" | "$bin" encode --tokenizer "$ds")" ]] ||
  fail "--input differs from stdin"

# DeepSeek's config says add_bos_token: the BOS id (0) comes first only with --add-special-tokens.
with=$(printf 'hi' | "$bin" encode --tokenizer "$ds" --add-special-tokens)
without=$(printf 'hi' | "$bin" encode --tokenizer "$ds")
[[ $with == "[0,${without#[}" ]] || fail "--add-special-tokens: $with vs $without"
[[ $(printf '[0,6895]' | "$bin" decode --tokenizer "$ds" --skip-special-tokens) == "$(printf '[6895]' | "$bin" decode --tokenizer "$ds")" ]] ||
  fail "--skip-special-tokens kept the BOS"

# Chat (needs omni_chat in the build).
request='{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}]}'
if out=$(printf '%s' "$request" | "$bin" chat --tokenizer "$qw" 2>"$work/err"); then
  [[ $out == *"<|im_start|>user"$'\n'"Hi<|im_end|>"* ]] || fail "chat prompt: $out"
  [[ $out == *"<|im_start|>assistant"* ]] || fail "chat without the generation prompt: $out"
  out=$(printf '%s' "$request" | "$bin" chat --tokenizer "$qw" --no-generation-prompt)
  [[ $out != *"<|im_start|>assistant"* ]] || fail "--no-generation-prompt still prompts: $out"
  status=0; printf 'not json' | "$bin" chat --tokenizer "$qw" 2>/dev/null || status=$?
  [[ $status == 2 ]] || fail "chat on bad JSON: exit $status"
else
  grep -q unsupported "$work/err" || fail "chat failed: $(cat "$work/err")"
  echo "note: omni-tokenize built without omni_chat; chat checks skipped"
fi

# Bad input and a bad tokenizer path: exit 2 and 1, with a message.
for bad in '[1,"x"]' '[-1]' '[99999999]' '{}' 'nope'; do
  status=0; printf '%s' "$bad" | "$bin" decode --tokenizer "$ds" 2>"$work/err" || status=$?
  [[ $status == 2 && -s $work/err ]] || fail "decode '$bad': exit $status"
done
status=0; printf 'x' | "$bin" encode --tokenizer "$work/missing" 2>"$work/err" || status=$?
[[ $status == 1 ]] && grep -q not_found "$work/err" || fail "missing tokenizer: exit $status $(cat "$work/err")"
status=0; "$bin" encode 2>/dev/null </dev/null || status=$?
[[ $status != 0 ]] || fail "encode without --tokenizer succeeded"

# Invalid UTF-8 and NUL bytes encode (read as U+FFFD / as themselves).
printf 'a\xff\x00b' | "$bin" encode --tokenizer "$qw" >/dev/null || fail "invalid UTF-8 input"
echo "omni-tokenize: all checks passed"
