#!/usr/bin/env bash
# omni-sim's PD holds and fault flags with real processes on loopback (issues 16 and 18):
#   1. concurrent prefills with one X-Request-Id get distinct holds; every decode gets its own
#      KV; nothing leaks (KV usage back to 0), unpulled holds end at lease expiry;
#   2. vLLM's prompt-token counters on the decode instance after remote prefills;
#   3. remote KV that cannot be loaded is recomputed (or 500 with kv_load_failure_policy fail);
#   4. clients that go away: running count and KV usage return to 0;
#   5. the fault flags: hang, unresponsive, stall forever after N tokens, in-stream error,
#      crash after N tokens, a bootstrap peer that never connects.
set -euo pipefail
sim=${1:?usage: pd_faults_test.sh path/to/omni-sim}
. "$(dirname "$0")/lib.sh"

common=(--host 127.0.0.1 --port 0 --model deepseek-ai/DeepSeek-V3 --served-model-name sim-model
        --tensor-parallel-size 8 --num-gpu-blocks-override 4000 --max-model-len 2048 --seed 7)
nixl() { echo "{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_both\",\"kv_connector_extra_config\":{\"kv_lease_duration\":$1}${2:-}}"; }
prompt="the engine and the expert of the layer in the time of the step"

# 1. One X-Request-Id, 20 concurrent prefills (a lease of 4000 model s = 20 s at 200x).
start prefill "${common[@]}" --speed 200 --kv-transfer-config "$(nixl 4000)"
p_port=$port
start decode "${common[@]}" --speed 200 --kv-transfer-config "$(nixl 200)"
d_port=$port
jobs_=()
for i in $(seq 20); do
  curl -s -o "$work/p$i.json" -H 'Content-Type: application/json' -H 'X-Request-Id: dup' \
    --data-binary "{\"prompt\":\"$prompt number $i\",\"max_tokens\":1,\"kv_transfer_params\":{\"do_remote_decode\":true}}" \
    "http://127.0.0.1:$p_port/v1/completions" &
  jobs_+=($!)
done
wait "${jobs_[@]}"
jobs_=()
ids=$(for i in $(seq 20); do jq -r .kv_transfer_params.remote_request_id "$work/p$i.json"; done | sort -u | wc -l)
expect_eq "$ids" 20 "distinct remote_request_ids for one X-Request-Id"
for i in $(seq 20); do
  params=$(jq -c .kv_transfer_params "$work/p$i.json")
  curl -s -o "$work/d$i.json" -H 'Content-Type: application/json' -H 'X-Request-Id: dup' \
    --data-binary "{\"prompt\":\"$prompt number $i\",\"max_tokens\":4,\"ignore_eos\":true,\"kv_transfer_params\":$params}" \
    "http://127.0.0.1:$d_port/v1/completions" &
  jobs_+=($!)
done
wait "${jobs_[@]}"
for i in $(seq 20); do
  expect_eq "$(jq -r .usage.completion_tokens "$work/d$i.json")" 4 "decode $i ($(cat "$work/d$i.json"))"
done
until_metric "$p_port" 'omni_sim_kv_holds_total{outcome="pulled"}' 20
until_metric "$p_port" 'vllm:kv_cache_usage_perc{' 0
until_metric "$p_port" 'vllm:num_requests_running{' 0
until_metric "$p_port" 'omni_sim_kv_holds ' 0
[ -z "$(metric "$d_port" 'omni_sim_kv_load_failures_total{')" ] || fail "a decode did not get its KV"
# Unpulled holds end at the lease (200 model s = 1 s): 10 prefills with one id, never pulled.
start short "${common[@]}" --speed 200 --kv-transfer-config "$(nixl 200)"
p_port=$port
for i in $(seq 10); do
  post "$p_port" /v1/completions "{\"prompt\":\"$prompt again $i\",\"max_tokens\":1,\"kv_transfer_params\":{\"do_remote_decode\":true}}" -H 'X-Request-Id: dup'
  expect_eq "$status" 200 "unpulled prefill $i"
done
until_metric "$p_port" 'omni_sim_kv_holds_total{outcome="expired"}' 10
until_metric "$p_port" 'vllm:kv_cache_usage_perc{' 0

# 2. vLLM's PromptTokenStats on the decode instance: every prompt counted once; its KV came by
#    transfer or the local prefix cache, and only the last token was computed (recomputed).
total=0
for i in $(seq 20); do total=$((total + $(jq -r .usage.prompt_tokens "$work/d$i.json"))); done
expect_eq "$(metric "$d_port" 'vllm:prompt_tokens_total{')" "$total" "decode prompt_tokens_total"
expect_eq "$(metric "$d_port" 'vllm:prompt_tokens_by_source_total{model_name="sim-model",engine="0",source="local_compute"}')" 20 "local_compute"
expect_eq "$(metric "$d_port" 'vllm:prompt_tokens_cached_total{')" $((total - 20)) "prompt_tokens_cached_total"
expect_eq "$(metric "$d_port" 'vllm:prompt_tokens_recomputed_total{')" 20 "prompt_tokens_recomputed_total"
ext=$(metric "$d_port" 'vllm:prompt_tokens_by_source_total{model_name="sim-model",engine="0",source="external_kv_transfer"}')
hit=$(metric "$d_port" 'vllm:prompt_tokens_by_source_total{model_name="sim-model",engine="0",source="local_cache_hit"}')
expect_eq "$((ext + hit))" "$total" "external + local hits"
[ "$ext" -gt 0 ] || fail "no external_kv_transfer tokens"
expect_eq "$(metric "$d_port" 'vllm:prefix_cache_queries_total{')" "$total" "decode prefix_cache_queries_total"

# 3. Remote KV that cannot be loaded: an unreachable prefill instance. Recomputed by default;
#    500 (never 400) with kv_load_failure_policy "fail".
dead=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
gone="{\"do_remote_prefill\":true,\"remote_engine_id\":\"e\",\"remote_request_id\":\"r\",\"remote_host\":\"127.0.0.1\",\"remote_port\":$dead,\"remote_block_ids\":[[1]]}"
post "$d_port" /v1/completions "{\"prompt\":\"$prompt\",\"max_tokens\":3,\"ignore_eos\":true,\"kv_transfer_params\":$gone}"
expect_eq "$status" 200 "unreachable prefill, recomputed ($(cat "$work/body"))"
expect_eq "$(metric "$d_port" 'omni_sim_kv_load_failures_total{reason="unreachable",action="recompute"}')" 1 "recompute counted"
start strict "${common[@]}" --speed 200 --kv-transfer-config "$(nixl 30 ',"kv_load_failure_policy":"fail"')"
post "$port" /v1/completions "{\"prompt\":\"$prompt\",\"max_tokens\":3,\"kv_transfer_params\":$gone}"
expect_eq "$status" 500 "unreachable prefill with policy fail"

# 4. Clients that go away (real-time clock: the requests are still running).
start slow "${common[@]}" --speed 1
slow_port=$port
post "$slow_port" /v1/completions '{"prompt":"x","max_tokens":2000,"ignore_eos":true,"stream":true}' -m 1
post "$slow_port" /v1/completions '{"prompt":"y","max_tokens":2000,"ignore_eos":true}' -m 1
expect_eq "$status" 000 "the non-streaming client gave up"
until_metric "$slow_port" 'vllm:num_requests_running{' 0
until_metric "$slow_port" 'vllm:kv_cache_usage_perc{' 0
until_metric "$slow_port" 'vllm:request_success_total{model_name="sim-model",engine="0",finished_reason="abort"}' 2

# 5. Fault flags.
start hang "${common[@]}" --speed 200 --fault-hang-rate 1
post "$port" /v1/completions '{"prompt":"x","max_tokens":2}' -m 1
expect_eq "$status" 000 "--fault-hang-rate: no answer"
expect_eq "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" 200 "health of a hanging engine"
start frozen "${common[@]}" --speed 200 --fault-unresponsive
expect_eq "$(curl -s -o /dev/null -m 1 -w '%{http_code}' "http://127.0.0.1:$port/health" || true)" 000 "--fault-unresponsive health"

stream='{"prompt":"x","max_tokens":12,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}'
start stall "${common[@]}" --speed 1 --fault-stall-rate 1 --fault-stall-after-tokens 3
stall_port=$port
post "$stall_port" /v1/completions "$stream" -m 2
grep -q '\[DONE\]' "$work/body" && fail "a stream stalled forever ended"
got=$(grep '^data: {' "$work/body" | tail -1 | sed 's/^data: //' | jq -r .usage.completion_tokens)
[ "$got" -ge 3 ] && [ "$got" -lt 12 ] || fail "stall after 3 tokens: the stream stopped at $got"
until_metric "$stall_port" 'vllm:num_requests_running{' 0

start err "${common[@]}" --speed 200 --fault-stream-error-rate 1 --fault-stream-error-after-tokens 2
post "$port" /v1/completions "$stream"
check "$work/body" '"error": {"message": "injected fault' "no in-stream error event"
expect_eq "$(tail -n 2 "$work/body" | head -1)" "data: [DONE]" "the erroring stream ends with [DONE]"

start crash "${common[@]}" --speed 1 --fault-crash-after-tokens 5
post "$port" /v1/completions "$stream" -m 10
grep -q '\[DONE\]' "$work/body" && fail "a stream crashed after 5 tokens ended"
crash_status=0
wait "$crash_pid" || crash_status=$?
expect_eq "$crash_status" 70 "--fault-crash-after-tokens exit status"
got=$(grep '^data: {' "$work/body" | tail -1 | sed 's/^data: //' | jq -r .usage.completion_tokens)
[ "$got" -ge 5 ] || fail "crash after 5 tokens: only $got arrived"

# A bootstrap peer that never connects: a decode that never pulls, and a prefill whose
# bootstrap never hands the KV over. Both decodes fail with 500 after --bootstrap-timeout.
start lonely "${common[@]}" --speed 200 --disaggregation-mode decode --bootstrap-timeout 500ms --fault-bootstrap-never-connects
post "$port" /v1/completions '{"prompt":"x","bootstrap_host":"127.0.0.1","bootstrap_port":1,"bootstrap_room":5}' -m 10
expect_eq "$status" 500 "decode that never connects"
start mute "${common[@]}" --speed 200 --disaggregation-mode prefill --disaggregation-bootstrap-port 0 --fault-bootstrap-never-connects
mute_port=$port
mute_boot=$(sed -n 's/.*omni-sim bootstrap listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$work/mute.log" | head -1)
start sgld "${common[@]}" --speed 200 --disaggregation-mode decode --bootstrap-timeout 1s
body="{\"prompt\":\"$prompt\",\"max_tokens\":3,\"bootstrap_host\":\"127.0.0.1\",\"bootstrap_port\":$mute_boot,\"bootstrap_room\":6}"
post "$port" /v1/completions "$body" -m 10 &
decode_req=$!
st=$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' --data-binary "$body" \
  "http://127.0.0.1:$mute_port/v1/completions")
expect_eq "$st" 200 "the prefill half"
wait "$decode_req"
expect_eq "$(jq -r .error.code "$work/body")" 500 "decode of a bootstrap that never hands over"
echo "omni-sim PD holds and faults: passed"
