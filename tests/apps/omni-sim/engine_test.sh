#!/usr/bin/env bash
# omni-sim starts and stops like an engine (issues 18 and 24), real processes on loopback:
#   1. docs/omni-sim.md's quick start, run as written (on another port);
#   2. no flags at all: a deployment that fits, printed; an impossible explicit one refused;
#   3. EOS without max_tokens, stop strings, stop token ids, min_tokens, ignore_eos, n > 1;
#   4. POST /reset_prefix_cache, --enable-prompt-tokens-details, the speed in /version and the
#      X-Omni-Sim-Speed header.
set -euo pipefail
sim=${1:?usage: engine_test.sh path/to/omni-sim}
doc=${2:?usage: engine_test.sh path/to/omni-sim path/to/docs/omni-sim.md}
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/../free_port.sh"

# 1. The quick start: the first shell block after "## Quick start", continuation lines joined;
#    its omni-sim line gets --port, its curl lines that port.
python3 - "$doc" >"$work/quickstart.txt" <<'PY'
import sys
text = open(sys.argv[1]).read()
block = text.split("## Quick start", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
print(block.replace("\\\n", " "), end="")
PY
qs_port=$(free_port)
n=0
while IFS= read -r line; do
  [ -z "$line" ] && continue
  n=$((n + 1))
  if [[ "$line" == omni-sim* ]]; then
    args=${line#omni-sim}; args=${args%%#*}
    # exec: the background job is omni-sim itself, so that cleanup's kill reaches it.
    eval "exec \"\$sim\" $args --port $qs_port" >"$work/quickstart.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 200); do grep -q "omni-sim listening on" "$work/quickstart.log" && break; sleep 0.05; done
    check "$work/quickstart.log" "omni-sim listening on 127.0.0.1:$qs_port" "the quick start's omni-sim did not start"
    check "$work/quickstart.log" "omni-sim deployment: deepseek-v3 on " "no deployment line"
    continue
  fi
  [[ "$line" == curl* ]] || fail "unexpected quick-start line: $line"
  eval "${line//localhost:8000/localhost:$qs_port}" >"$work/qs$n.out" || fail "quick start: '$line' failed"
  [ -s "$work/qs$n.out" ] || fail "quick start: '$line' printed nothing"
done <"$work/quickstart.txt"
[ "$n" -ge 3 ] || fail "the quick start has $n commands"
grep -h '"object":"text_completion"' "$work"/qs*.out >/dev/null || fail "no completion in the quick start"
chat=$(grep -l 'chat.completion.chunk' "$work"/qs*.out | head -1)
[ -n "$chat" ] || fail "no chat stream in the quick start"
tail -n 2 "$chat" | grep -q '^data: \[DONE\]' || fail "the chat stream did not end"
# No max_tokens: the generation ends at the model's EOS, as vLLM's would.
grep -q '"finish_reason":"stop"' "$chat" || fail "the chat stream without max_tokens did not stop at EOS"

# 2. No flags at all: it gets past configuration with a deployment that fits (port 8000 may be
#    taken on a shared machine: then it says it cannot listen, after the deployment line).
st=0
timeout 3 "$sim" >"$work/noflags.log" 2>&1 || st=$?
check "$work/noflags.log" "omni-sim deployment: deepseek-v3 on 16 x h800" "no-flag deployment"
grep -q -e "omni-sim listening on 127.0.0.1:8000" -e "cannot listen on 127.0.0.1:8000" "$work/noflags.log" \
  || fail "omni-sim without flags did not start ($st)"
st=0; "$sim" --port 0 --tensor-parallel-size 1 >"$work/nofit.txt" 2>&1 || st=$?
expect_eq "$st" 2 "an explicit layout that does not fit"
check "$work/nofit.txt" "larger than the maximum number of tokens that can be stored in KV cache" "no vLLM refusal"

# 3. Stop conditions (a real-time-ish clock is not needed: 200x).
start main --host 127.0.0.1 --port 0 --served-model-name sim-model --num-gpu-blocks-override 4000 \
  --tensor-parallel-size 8 --max-model-len 4096 --speed 200 --seed 7 --enable-prompt-tokens-details
main_port=$port
post "$main_port" /v1/chat/completions '{"messages":[{"role":"user","content":"tell me"}]}' -H 'X-Request-Id: eos-1'
expect_eq "$(jq -r '.choices[0].finish_reason' "$work/body")" stop "EOS without max_tokens"
eos_len=$(jq -r .usage.completion_tokens "$work/body")
[ "$eos_len" -ge 16 ] && [ "$eos_len" -lt 4000 ] || fail "EOS length $eos_len"
# The same id stops at the same length; ignore_eos runs to max_tokens.
post "$main_port" /v1/chat/completions '{"messages":[{"role":"user","content":"tell me"}]}' -H 'X-Request-Id: eos-1'
expect_eq "$(jq -r .usage.completion_tokens "$work/body")" "$eos_len" "EOS length of a repeated id"
post "$main_port" /v1/completions "{\"prompt\":\"x\",\"max_tokens\":$((eos_len + 5)),\"ignore_eos\":true}" -H 'X-Request-Id: eos-1'
expect_eq "$(jq -r '.choices[0].finish_reason' "$work/body")" length "ignore_eos"
expect_eq "$(jq -r .usage.completion_tokens "$work/body")" $((eos_len + 5)) "ignore_eos length"
# min_tokens above the EOS length moves the EOS to min_tokens + 1.
post "$main_port" /v1/completions "{\"prompt\":\"x\",\"max_tokens\":$((eos_len + 50)),\"min_tokens\":$((eos_len + 9))}" -H 'X-Request-Id: eos-1'
expect_eq "$(jq -r .usage.completion_tokens "$work/body")" $((eos_len + 10)) "min_tokens"
# A stop string taken from the text the request would write: cut before it, reason = it.
post "$main_port" /v1/completions '{"prompt":"x","max_tokens":40,"ignore_eos":true,"return_token_ids":true}' -H 'X-Request-Id: stop-1'
full=$(jq -r '.choices[0].text' "$work/body")
token9=$(jq -r '.choices[0].token_ids[9]' "$work/body")
stop=${full:20:4}
post "$main_port" /v1/completions "$(jq -cn --arg s "$stop" '{prompt:"x",max_tokens:40,ignore_eos:true,stop:["never-there",$s]}')" -H 'X-Request-Id: stop-1'
expect_eq "$(jq -r '.choices[0].finish_reason' "$work/body")" stop "stop string finish"
expect_eq "$(jq -r '.choices[0].stop_reason' "$work/body")" "$stop" "stop_reason"
cut=$(jq -r '.choices[0].text' "$work/body")
expect_eq "$cut" "${full%%"$stop"*}" "text cut before the stop string"
post "$main_port" /v1/completions "{\"prompt\":\"x\",\"max_tokens\":40,\"ignore_eos\":true,\"stop_token_ids\":[$token9],\"stream\":true}" -H 'X-Request-Id: stop-1'
grep '^data: {' "$work/body" | sed 's/^data: //' >"$work/stop.jsonl"
expect_eq "$(tail -1 "$work/stop.jsonl" | jq -r '.choices[0].finish_reason')" stop "stop token finish (stream)"
expect_eq "$(tail -1 "$work/stop.jsonl" | jq -r '.choices[0].stop_reason')" "$token9" "stop token reason"
# n > 1: three choices, each its own text and finish; usage sums them.
post "$main_port" /v1/completions '{"prompt":"x","max_tokens":6,"n":3}'
expect_eq "$(jq -r '[.choices[].index] | join(",")' "$work/body")" "0,1,2" "n=3 indexes"
expect_eq "$(jq -r '.usage.completion_tokens' "$work/body")" 18 "n=3 usage"
expect_eq "$(jq -r '[.choices[].text] | unique | length' "$work/body")" 3 "n=3 distinct texts"
post "$main_port" /v1/chat/completions '{"messages":[{"role":"user","content":"hi"}],"max_tokens":4,"n":2,"stream":true,"stream_options":{"include_usage":true}}'
grep '^data: {' "$work/body" | sed 's/^data: //' >"$work/n.jsonl"
expect_eq "$(jq -s '[.[] | select(.choices[0].delta.role == "assistant")] | length' "$work/n.jsonl")" 2 "a role chunk per choice"
expect_eq "$(jq -s '[.[] | select(.choices[0].finish_reason == "length") | .choices[0].index] | sort | join(",")' "$work/n.jsonl")" '"0,1"' "each choice finishes"
expect_eq "$(tail -1 "$work/n.jsonl" | jq -r .usage.completion_tokens)" 8 "n=2 stream usage"

# 4. Prefix cache: details, reset. The same 64-token prompt twice: the second hits 48 tokens
#    (3 blocks; the last token is always recomputed).
prompt=$(python3 -c 'print(",".join(str(1000 + i) for i in range(64)))')
post "$main_port" /v1/completions "{\"prompt\":[$prompt],\"max_tokens\":1}"
expect_eq "$(jq -r .usage.prompt_tokens_details "$work/body")" null "no cached tokens: null"
post "$main_port" /v1/completions "{\"prompt\":[$prompt],\"max_tokens\":1}"
expect_eq "$(jq -r .usage.prompt_tokens_details.cached_tokens "$work/body")" 48 "cached_tokens"
st=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$main_port/reset_prefix_cache")
expect_eq "$st" 200 "reset_prefix_cache"
post "$main_port" /v1/completions "{\"prompt\":[$prompt],\"max_tokens\":1}"
expect_eq "$(jq -r .usage.prompt_tokens_details "$work/body")" null "no hit after the reset"

# 5. Model time: the speed in /version and on every generation response.
expect_eq "$(curl -s "http://127.0.0.1:$main_port/version" | jq -c .)" '{"version":"0.20.0","omni_sim":{"speed":200}}' "/version"
grep -qi '^X-Omni-Sim-Speed: 200' "$work/headers" || fail "no X-Omni-Sim-Speed header"
echo "omni-sim engine behaviour: passed"
