#!/usr/bin/env bash
# omni-serve end to end on a micro random-weight model: make-model, the one-shot `run`, and the
# server's /health, /v1/models and /v1/completions (token-id prompt, greedy, streaming and not,
# return_token_ids) giving exactly the tokens `run` gives; bad requests answered with 400.
set -euo pipefail
bin=$1
work=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
"$bin" make-model --arch deepseek_v3 --preset micro --seed 5 --gguf q8_0 --tokenizer '' "$work/m" >/dev/null
test -s "$work/m/model.safetensors" && test -s "$work/m/model-q8_0.gguf"
run_json=$("$bin" run "$work/m" --prompt-tokens 7,8,9,10 --max-tokens 6 --json)
expected=$(echo "$run_json" | jq -c .token_ids)
[ "$(echo "$run_json" | jq .output_tokens)" = 6 ]
# The GGUF runs too (q8_0 weights, same seed: close to but not the same tokens as bf16).
"$bin" run "$work/m/model-q8_0.gguf" --prompt-tokens 7,8,9 --max-tokens 2 --json | jq -e '.output_tokens == 2' >/dev/null
# A bad flag and a missing model are errors, not crashes.
if "$bin" run "$work/m" --prompt-tokens 1 --max-tokens 0 2>/dev/null; then exit 1; fi
if "$bin" run "$work/nothing" --prompt-tokens 1 2>/dev/null; then exit 1; fi
# The CLI convention: usage errors exit 2 with a message ("did you mean" for a near miss).
st=0; "$bin" run "$work/m" --prompt-tokens 1 --max-token 2 2>"$work/err" || st=$?
[ "$st" -eq 2 ] && grep -q "did you mean --max-tokens?" "$work/err" || { cat "$work/err"; exit 1; }
st=0; "$bin" --port 8000 2>"$work/err" || st=$?
[ "$st" -eq 2 ] && grep -q "the model comes first" "$work/err" || { cat "$work/err"; exit 1; }
"$bin" --version | grep -q "^omni-serve [0-9]"

"$bin" "$work/m" --host 127.0.0.1 --port 0 --threads 2 >"$work/serve.log" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q "listening on" "$work/serve.log" && break; sleep 0.1; done
port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$work/serve.log")
[ -n "$port" ] || { cat "$work/serve.log"; exit 1; }
base=http://127.0.0.1:$port
[ "$(curl -s -o /dev/null -w '%{http_code}' "$base/health")" = 200 ]
curl -s "$base/v1/models" | jq -e '.data[0].id == "m"' >/dev/null
body='{"model":"m","prompt":[7,8,9,10],"max_tokens":6,"temperature":0,"ignore_eos":true,"return_token_ids":true}'
resp=$(curl -s "$base/v1/completions" -H 'content-type: application/json' -d "$body")
[ "$(echo "$resp" | jq -c .choices[0].token_ids)" = "$expected" ] || { echo "$resp"; exit 1; }
[ "$(echo "$resp" | jq -r .choices[0].finish_reason)" = length ]
[ "$(echo "$resp" | jq .usage.completion_tokens)" = 6 ]
stream=$(curl -sN "$base/v1/completions" -H 'content-type: application/json' \
  -d "${body%\}},\"stream\":true}")
[ "$(echo "$stream" | tail -n 1)" = "data: [DONE]" ] || { echo "$stream"; exit 1; }
streamed=$(echo "$stream" | sed -n 's/^data: \({.*\)/\1/p' | jq -c '.choices[0].token_ids // empty' | jq -sc 'add')
[ "$streamed" = "$expected" ] || { echo "streamed $streamed, expected $expected"; exit 1; }
[ "$(curl -s -o /dev/null -w '%{http_code}' "$base/v1/completions" -d '{"model":"m","prompt":[1],"max_tokens":-1}')" = 400 ]
[ "$(curl -s -o /dev/null -w '%{http_code}' "$base/v1/completions" -H 'content-type: application/json' -d '{"model":"other","prompt":[1]}')" = 404 ]
# Concurrent requests are batched, each with the same greedy answer (a sequence never depends
# on the rest of the batch).
clients=()
for i in 1 2 3; do
  curl -s "$base/v1/completions" -H 'content-type: application/json' -d "$body" -o "$work/c$i" &
  clients+=($!)
done
wait "${clients[@]}"  # not a bare wait: the server is a background job too
for i in 1 2 3; do [ "$(jq -c .choices[0].token_ids "$work/c$i")" = "$expected" ]; done
echo "omni-serve: run and /v1/completions agree on $expected"
