#!/usr/bin/env bash
# Mid-stream migration (issue 18) with real processes: omni-proxy in front of omni-sim engines,
# one decode of which fails after tokens reached the client. The client must get one whole,
# well-formed stream: every completion token it asked for, exactly one [DONE], no error event,
# one id, a usage chunk with the true completion total, and the continuation's finish_reason.
#   1. each PD mode: the decode ends the stream with an error event after 4 tokens
#      (--fault-stream-error-rate 1); the continuation runs on the other decode (sequential:
#      after a fresh prefill; parallel: a fresh pair);
#   2. aggregated: the decode process dies after 6 tokens of a stream (--fault-crash-after-tokens,
#      a cut connection); with continuous usage stats the engines' own counts are used;
#   3. a request whose continuation would differ (logprobs) is not migrated: error event + [DONE];
#   4. --migration-max-attempts 0 turns it off;
#   5. a decode drained through the admin API under a stream: past timeouts.drain_grace the
#      stream moves to the other decode (cause "drain").
# Nothing may leak: the engines run nothing afterwards and the proxies hold no load.
set -euo pipefail
proxy_bin=${1:?usage: migration_test.sh omni-proxy omni-sim}
sim_bin=${2:?missing omni-sim}
. "$(dirname "$0")/sim_lib.sh"

model='"model":"deepseek-ai/DeepSeek-V3"'
val() { local name=$1; echo "${!name}"; }

# Engines in model time (--speed 1): one token per event.
SIM_SPEED=1

# proxy NAME MODE PREFILL DECODES [flags...]: DECODES is a comma-separated list of sim names,
# the first one listed first (the policies prefer it when both are idle).
proxy() {
  local name=$1 mode=$2 prefill=$3 decodes=$4; shift 4
  local list="" d
  for d in ${decodes//,/ }; do list+="${list:+,}127.0.0.1:$(val PORT_$d)"; done
  local pools=(--decode-endpoints "$list")
  if [ "$prefill" != - ]; then
    pools+=(--prefill-endpoints "127.0.0.1:$(val PORT_$prefill)"
            --bootstrap-port "$(val BOOT_$prefill)")
  fi
  "$proxy_bin" --listen-port 0 --pd-mode "$mode" "${pools[@]}" --health-interval 0s \
    --timeouts-decode-idle 2s --access-log "$work/$name.access.jsonl" "$@" >"$work/$name.log" 2>&1 &
  pids+=($!)
  eval "PID_$name=$!"
  for _ in $(seq 200); do grep -q "listening on http://" "$work/$name.log" && break; sleep 0.05; done
  local at
  at=$(sed -n 's|.*listening on http://\([^ ]*\).*|\1|p' "$work/$name.log" | head -1)
  [ -n "$at" ] || fail "omni-proxy $name did not start"
  eval "PROXY_$name=$at"
}

# ask PROXY OUT BODY: a streamed completion; its events (data payloads) in $work/OUT.events.
ask() {
  local code
  code=$(curl -sN -o "$work/$2.body" -w '%{http_code}' -m 60 -H 'Content-Type: application/json' \
    --data-binary "$3" "http://$1/v1/completions") || true
  [ "$code" = 200 ] || fail "$2: status $code: $(cat "$work/$2.body")"
  grep '^data: ' "$work/$2.body" | sed 's/^data: //' >"$work/$2.events"
}

# whole_stream OUT TOKENS WHAT: one stream as if from one engine: completion chunks with one id,
# no error, exactly one [DONE] (the last), and a usage chunk counting TOKENS completion tokens;
# the last text chunk's finish_reason is "length".
whole_stream() {
  local f="$work/$1.events"
  [ "$(tail -1 "$f")" = "[DONE]" ] || fail "$3: the stream does not end with [DONE]: $(cat "$f")"
  [ "$(grep -c '^\[DONE\]$' "$f")" = 1 ] || fail "$3: [DONE] more than once: $(cat "$f")"
  grep -v '^\[DONE\]$' "$f" >"$f.json"
  jq -e -s 'all(has("error") | not)' "$f.json" >/dev/null || fail "$3: an error event: $(cat "$f")"
  jq -e -s 'map(.id) | unique | length == 1' "$f.json" >/dev/null ||
    fail "$3: more than one stream id: $(jq -s -c 'map(.id) | unique' "$f.json")"
  jq -e -s --argjson n "$2" 'map(select(.usage != null)) | last | .usage |
      .completion_tokens == $n and .total_tokens == .prompt_tokens + .completion_tokens
      and .prompt_tokens > 0' "$f.json" >/dev/null ||
    fail "$3: usage is not the whole request's: $(jq -s -c 'map(.usage)' "$f.json")"
  jq -e -s 'map(select((.choices | length) > 0)) | last | .choices[0].finish_reason == "length"' \
    "$f.json" >/dev/null || fail "$3: the last chunk's finish_reason is not length: $(cat "$f")"
}

# migrated PROXY CAUSE WHAT: the access log's one generation line says the request was
# continued once, after CAUSE, by two decode legs, and succeeded.
migrated() {
  local log="$work/$1.access.jsonl"
  for _ in $(seq 50); do [ -s "$log" ] && break; sleep 0.1; done
  jq -e -s --arg cause "$2" 'map(select(.pd_mode != null)) | last |
      .outcome == "success" and .migrations == 1 and .migration_cause == $cause
      and (.decode_legs | length) == 2 and .decode_legs[0] != .decode_legs[1]' "$log" >/dev/null ||
    fail "$3: access log: $(tail -1 "$log")"
}

metric() {
  local text
  text=$(curl -s -m 2 "http://$1/metrics")
  grep -v '^#' <<<"$text" | grep -F -- "$2" | head -1 | awk '{print $NF}'
}

# idle NAME...: each engine runs nothing (waits up to 10 s).
idle() {
  local name v
  for name in "$@"; do
    for _ in $(seq 100); do
      v=$(metric "127.0.0.1:$(val PORT_$name)" 'vllm:num_requests_running{')
      [ "$v" = 0 ] || [ "$v" = 0.0 ] && break
      sleep 0.1
    done
    [ "$v" = 0 ] || [ "$v" = 0.0 ] || fail "$name still runs a request"
  done
}

stream="{$model,\"prompt\":\"The capital of France is\",\"max_tokens\":16,\"ignore_eos\":true,\"stream\":true,\"stream_options\":{\"include_usage\":true}}"

echo "[$SECONDS s] 1. an error event after 4 tokens, every PD mode" >&2
sim P --disaggregation-mode prefill
sim Dbad --disaggregation-mode decode --fault-stream-error-rate 1 --fault-stream-error-after-tokens 4
sim Dgood --disaggregation-mode decode
sim Abad --fault-stream-error-rate 1 --fault-stream-error-after-tokens 4
sim Agood
proxy seq sequential P Dbad,Dgood
proxy par parallel P Dbad,Dgood
proxy agg aggregated - Abad,Agood
for name in seq par agg; do
  ask "$(val PROXY_$name)" "$name" "$stream"
  whole_stream "$name" 16 "$name"
  migrated "$name" engine_error "$name"
  [ "$(metric "$(val PROXY_$name)" 'omni_proxy_migrations_total{cause="engine_error",outcome="completed"}')" = 1 ] ||
    fail "$name: migrations_total: $(curl -s "http://$(val PROXY_$name)/metrics" | grep migrations)"
done
# A token-id prompt continues on the generated ids, exactly (vLLM's return_token_ids, asked by
# the proxy and hidden from this client, which did not ask for them).
ids="{$model,\"prompt\":[101,102,103,104,105,106,107],\"max_tokens\":16,\"ignore_eos\":true,\"stream\":true,\"stream_options\":{\"include_usage\":true}}"
ask "$PROXY_agg" agg_ids "$ids"
whole_stream agg_ids 16 "a token-id prompt"
jq -e -s 'map(select(.usage != null)) | last | .usage.prompt_tokens == 7' "$work/agg_ids.events.json" \
  >/dev/null || fail "a token-id prompt: usage.prompt_tokens is not exactly 7"
jq -e -s 'map(.choices[]?) | all(.token_ids == null and .prompt_token_ids == null)' \
  "$work/agg_ids.events.json" >/dev/null || fail "the engine's token ids reached a client that did not ask"
idle P Dbad Dgood Abad Agood

echo "[$SECONDS s] 2. aggregated: the decode process dies mid-stream" >&2
sim Acrash --fault-crash-after-tokens 6
proxy crash aggregated - Acrash,Agood
counted="${stream%\}\}},\"continuous_usage_stats\":true}}"
ask "$PROXY_crash" crash "$counted"
whole_stream crash 16 "a dying decode"
migrated crash connection "a dying decode"
wait "$PID_Acrash" 2>/dev/null && fail "the crashing engine did not crash"
idle Agood

echo "[$SECONDS s] 3. a request whose continuation would differ is not migrated" >&2
# The engine's own error event reaches the client, then [DONE], as from vLLM.
logprobs="${stream%\}},\"logprobs\":1}"
ask "$PROXY_agg" logprobs "$logprobs"
[ "$(tail -1 "$work/logprobs.events")" = "[DONE]" ] || fail "logprobs: no [DONE]"
tail -2 "$work/logprobs.events" | head -1 | jq -e '.error.message | test("injected fault")' >/dev/null ||
  fail "logprobs: no error event: $(cat "$work/logprobs.events")"
[ "$(grep -c '^{"id"' "$work/logprobs.events")" -le 5 ] ||
  fail "logprobs: the stream was continued: $(cat "$work/logprobs.events")"

echo "[$SECONDS s] 4. --migration-max-attempts 0" >&2
proxy off aggregated - Abad,Agood --migration-max-attempts 0
ask "$PROXY_off" off "$stream"
grep -q '"error"' "$work/off.events" || fail "off: the stream was continued: $(cat "$work/off.events")"
[ "$(grep -c '^{"id"' "$work/off.events")" -le 5 ] || fail "off: the stream was continued: $(cat "$work/off.events")"
idle Abad Agood

echo "[$SECONDS s] 5. a drained decode's stream moves once its grace ran out" >&2
# Real time (a token every few ms, 400 tokens: about a second and a half); the drain comes after
# the first events, with timeouts.drain_grace 0s: the stream continues on the other decode.
sim Dslow --disaggregation-mode decode
proxy drain sequential P Dslow,Dgood --timeouts-drain-grace 0s
long="{$model,\"prompt\":\"The capital of France is\",\"max_tokens\":400,\"ignore_eos\":true,\"stream\":true,\"stream_options\":{\"include_usage\":true}}"
curl -sN -o "$work/drain.body" -m 60 -H 'Content-Type: application/json' --data-binary "$long" \
  "http://$PROXY_drain/v1/completions" &
drain_curl=$!
for _ in $(seq 100); do [ -s "$work/drain.body" ] && break; sleep 0.02; done
code=$(curl -s -o "$work/drained.json" -w '%{http_code}' -X POST "http://$PROXY_drain/admin/nodes/127.0.0.1:$PORT_Dslow/drain")
[ "$code" = 200 ] || fail "drain: $code $(cat "$work/drained.json")"
wait "$drain_curl" || fail "drain: the client's stream failed"
grep '^data: ' "$work/drain.body" | sed 's/^data: //' >"$work/drain.events"
whole_stream drain 400 "a drained decode"
migrated drain drain "a drained decode"
idle P Dslow Dgood

for name in seq par agg crash off drain; do
  curl -s -m 2 "http://$(val PROXY_$name)/admin/nodes" |
    jq -e 'all(.nodes[]; .running == 0 and .outstanding_tokens == 0)' >/dev/null ||
    fail "proxy $name: load left on a node: $(curl -s "http://$(val PROXY_$name)/admin/nodes")"
done
if grep -l -E "ERROR: (Address|Leak)Sanitizer|runtime error:" "$work"/*.log 2>/dev/null; then
  fail "sanitizer reports"
fi
echo "[$SECONDS s] PASS"
