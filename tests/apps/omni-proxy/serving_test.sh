#!/usr/bin/env bash
# omni-proxy serving path in sequential PD mode (vLLM NixlConnector) against fake engines:
# both legs' bodies exactly, SSE relay, request ids, probes, metrics, access log, admin API,
# OpenAI-style errors for bad input, API keys.
source "$(dirname "$0")/lib.sh"

"$proxy_bin" --help >"$work/help.txt" || fail "--help exited with $?"
for flag in --listen-host --listen-port --prefill-endpoints --decode-endpoints --pd-mode --workers --config; do
  grep -q -- "$flag" "$work/help.txt" || fail "--help does not document $flag"
done

status=0
"$proxy_bin" --pd-mode both --decode-endpoints h:1 >/dev/null 2>"$work/bad_flag.txt" || status=$?
[ "$status" -eq 2 ] && grep -q "pd_mode" "$work/bad_flag.txt" || fail "a bad flag must exit 2 naming it"
"$proxy_bin" --decode-endpoints h:1 --pd-mode aggregated --print-config >"$work/effective.yaml" \
  || fail "--print-config failed"
grep -q "pd_mode: aggregated" "$work/effective.yaml" || fail "--print-config lacks pd_mode"

start_engine prefill
start_engine decode
start_proxy proxy --prefill-endpoints "127.0.0.1:$PORT_prefill" --decode-endpoints "127.0.0.1:$PORT_decode" \
  --workers 2

# 1. Non-streaming completion: the prefill leg per NixlConnector, the decode leg with its params.
status=$(post /v1/completions '{"model":"fake-model","prompt":"hello","max_tokens":5,"min_tokens":2,"temperature":0.70,"foo_bar":{"x":[1,2]},"stream_options":null}' -H 'X-Request-Id: rid-1')
expect_status 200 "$status" "completion"
body_has '.choices[0].text == " tok0 tok1 tok2 tok3 tok4"' "decode answer not relayed"
grep -qi '^x-request-id: rid-1' "$work/headers" || fail "X-Request-Id not echoed"
p=$(records prefill rid-1); d=$(records decode rid-1)
[ -n "$p" ] && [ -n "$d" ] || fail "both legs must carry X-Request-Id rid-1"
echo "$p" | jq -e '.body.max_tokens == 1 and .body.stream == false and (.body | has("stream_options") | not)
  and (.body | has("min_tokens") | not) and .body.kv_transfer_params.do_remote_decode == true
  and .body.kv_transfer_params.do_remote_prefill == false and .body.foo_bar == {"x":[1,2]}' >/dev/null \
  || fail "prefill body wrong: $p"
echo "$p" | jq -e '.raw | contains("\"temperature\":0.70")' >/dev/null || fail "numbers must pass untouched: $p"
echo "$d" | jq -e --arg e "fake-$PORT_prefill" '.body.max_tokens == 5 and .body.min_tokens == 2
  and .body.kv_transfer_params.remote_engine_id == $e and .body.kv_transfer_params.do_remote_prefill == true
  and .body.kv_transfer_params.remote_block_ids == [[1,2,3]] and .body.foo_bar == {"x":[1,2]}' >/dev/null \
  || fail "decode body wrong: $d"

# 2. Streaming chat: relayed event by event, ending with [DONE]; a request id is generated.
curl -sN -D "$work/headers" -H 'Content-Type: application/json' \
  --data '{"messages":[{"role":"user","content":"hi"}],"max_tokens":6,"stream":true,"stream_options":{"include_usage":true}}' \
  "http://$PROXY/v1/chat/completions" >"$work/stream.txt"
[ "$(grep -c '^data: ' "$work/stream.txt")" -eq 7 ] || { cat "$work/stream.txt"; fail "want 6 chunks + [DONE]"; }
tail -2 "$work/stream.txt" | grep -q '^data: \[DONE\]' || fail "stream must end with [DONE]"
grep -qi '^content-type: text/event-stream' "$work/headers" || fail "engine content type not passed"
rid=$(sed -n 's/^[Xx]-[Rr]equest-[Ii]d: \([0-9a-f]*\).*/\1/p' "$work/headers" | tr -d '\r')
[ ${#rid} -eq 32 ] || fail "generated request id missing: '$rid'"
records decode "$rid" | jq -e '.body.stream == true and .body.stream_options.include_usage == true' >/dev/null \
  || fail "decode leg must stream with the client's stream_options"
records prefill "$rid" | jq -e '.path == "/v1/chat/completions"' >/dev/null || fail "prefill route wrong"

# 3. Probes, models, metrics, admin.
expect_status 200 "$(get /health)" "/health"
expect_status 200 "$(get /ready)" "/ready"
expect_status 200 "$(get /v1/models)" "/v1/models"
body_has '.data[0].id == "fake-model" and (.data | length) == 1' "/v1/models not aggregated"
expect_status 200 "$(get /metrics)" "/metrics"
for metric in 'omni_proxy_requests_total{route="/v1/completions",outcome="success"} 1' \
              'omni_proxy_request_stage_seconds_bucket{stage="prefilling",pool="prefill",le=' 'omni_proxy_time_to_first_token_seconds_count 2' \
              'omni_proxy_scheduling_latency_seconds_count' 'omni_proxy_node_usable{pool="decode",node="127.0.0.1:'; do
  grep -qF -- "$metric" "$work/body" || fail "metric missing: $metric"
done
# Per node, the build, the process; round SLO buckets; every name clean under promtool's lint
# (which would flag a ':' in a name, a missing HELP, a counter without _total, ...).
for metric in "omni_proxy_node_legs_total{pool=\"prefill\",node=\"127.0.0.1:$PORT_prefill\",outcome=\"success\"} 2" \
              "omni_proxy_node_leg_seconds_count{pool=\"decode\",node=\"127.0.0.1:$PORT_decode\"} 2" \
              'omni_proxy_build_info{version="' 'process_cpu_seconds_total ' 'process_resident_memory_bytes ' \
              'process_open_fds ' 'process_start_time_seconds ' \
              'omni_proxy_time_to_first_token_seconds_bucket{le="0.5"}' \
              'omni_proxy_time_to_first_token_seconds_bucket{le="2"}' \
              'omni_proxy_time_to_first_token_seconds_bucket{le="5"}'; do
  grep -qF -- "$metric" "$work/body" || fail "metric missing: $metric"
done
promtool check metrics <"$work/body" >"$work/promtool.txt" 2>&1 || { cat "$work/promtool.txt"; fail "promtool rejected /metrics"; }
[ ! -s "$work/promtool.txt" ] || { cat "$work/promtool.txt"; fail "promtool's lint flagged the proxy's metrics"; }
printf 'omni_proxy:bad_name_total 1\n' | promtool check metrics >/dev/null 2>&1 \
  && fail "promtool's lint accepts a ':' in a name (the check above is void)"
expect_status 200 "$(get /admin/nodes)" "/admin/nodes"
body_has '(.nodes | length) == 2 and (.nodes | map(.health) | unique) == ["up"]' "admin nodes wrong"
expect_status 200 "$(get /admin/requests)" "/admin/requests"
body_has '.requests == []' "no request should be in flight"

# 4. Bad input: OpenAI-style errors.
expect_status 400 "$(post /v1/completions '{"prompt": "x",')" "malformed JSON"
body_has '.error.type == "BadRequestError" and .error.code == 400' "malformed JSON error body"
expect_status 400 "$(post /v1/completions '{"model":"m"}')" "missing prompt"
body_has '.error.param == "prompt"' "missing prompt: param"
expect_status 400 "$(post /v1/chat/completions '{"messages":"x"}')" "bad messages"
expect_status 400 "$(post /v1/completions '[1]')" "not an object"
head -c 9000000 /dev/zero | tr '\0' 'a' >"$work/big.txt"
status=$(curl -s -o "$work/body" -w '%{http_code}' -H 'Content-Type: application/json' \
  --data-binary @"$work/big.txt" "http://$PROXY/v1/completions")
expect_status 413 "$status" "oversized body"
body_has '.error.code == 413' "413 error body"
expect_status 405 "$(get /v1/completions)" "GET on a POST route"
expect_status 404 "$(get /v2/nothing)" "unknown route"
expect_status 431 "$(get /health -H "X-Big: $(head -c 20000 /dev/zero | tr '\0' 'b')")" "oversized head"

# 5. Access log: one line per generation request, each with exactly one outcome and timestamps;
#    and one line for every other request, the HTTP server's own refusals included.
generation_lines "$work/proxy.access.jsonl" >"$work/gen.jsonl"
lines=$(wc -l <"$work/gen.jsonl")
[ "$lines" -eq 6 ] || fail "access log has $lines generation lines, want 6"
jq -e -s 'map(.outcome) == ["success","success","client_error","client_error","client_error","client_error"]' \
  "$work/gen.jsonl" >/dev/null || fail "outcomes wrong: $(jq -c .outcome "$work/gen.jsonl")"
jq -e -s '.[0] | .request_id == "rid-1" and (.engine_request_id | startswith("rid-1-"))
  and .stages_ms.received == 0 and (.stages_ms | has("prefilling"))
  and (.stages_ms | has("decoding")) and (.stages_ms | has("done")) and .prefill_node != "" and .ttft_ms > 0' \
  "$work/gen.jsonl" >/dev/null || fail "access log line incomplete: $(head -1 "$work/gen.jsonl")"
for want in '/v1/models 200' '/admin/nodes 200' '/admin/requests 200' '/v1/completions 405' \
            '/v2/nothing 404' '/v1/completions 413' '/health 431'; do
  route=${want% *}; code=${want#* }
  jq -e -s --arg r "$route" --argjson c "$code" 'any(.[]; .pd_mode == null and .route == $r and .status == $c)' \
    "$work/proxy.access.jsonl" >/dev/null || fail "no access-log line for $want"
done
get /metrics >/dev/null
for metric in 'omni_proxy_http_responses_total{route="/v1/completions",code="413"} 1' \
              'omni_proxy_http_responses_total{route="other",code="404"} 1' \
              'omni_proxy_http_responses_total{route="/v1/completions",code="200"} 1'; do
  grep -qF -- "$metric" "$work/body" || fail "metric missing: $metric"
done
stop_pid "$PID_proxy"

# 6. API keys and the admin token.
start_proxy secured --prefill-endpoints "127.0.0.1:$PORT_prefill" --decode-endpoints "127.0.0.1:$PORT_decode" \
  --api-keys key1,key2 --admin-token sesame
expect_status 401 "$(post /v1/completions '{"prompt":"x"}')" "no API key"
body_has '.error.code == 401' "401 body"
expect_status 401 "$(post /v1/completions '{"prompt":"x"}' -H 'Authorization: Bearer nope')" "wrong API key"
expect_status 200 "$(post /v1/completions '{"prompt":"x"}' -H 'Authorization: Bearer key2')" "good API key"
expect_status 401 "$(get /admin/nodes)" "admin without token"
expect_status 401 "$(get /admin/nodes -H 'Authorization: Bearer key1')" "admin with a client key"
expect_status 200 "$(get /admin/nodes -H 'Authorization: Bearer sesame')" "admin with its token"
# /v1/models is guarded like every /v1/* route; a second Authorization header is refused.
expect_status 401 "$(get /v1/models)" "/v1/models without a key"
expect_status 200 "$(get /v1/models -H 'Authorization: Bearer key1')" "/v1/models with a key"
expect_status 400 "$(post /v1/completions '{"prompt":"x"}' -H 'Authorization: Bearer key2' -H 'Authorization: Bearer nope')" \
  "two Authorization headers"
# The key is checked on the head: a client without one never gets to send its body.
printf 'POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n' \
  >"$work/head_only.txt"
head_answer=$(timeout 5 bash -c "exec 3<>/dev/tcp/${PROXY%:*}/${PROXY##*:}; cat '$work/head_only.txt' >&3; head -1 <&3" || true)
case "$head_answer" in "HTTP/1.1 401 "*) ;; *) fail "a keyless head must be answered 401 at once: '$head_answer'";; esac
if grep -q "sesame\|key2" "$work/secured.log" "$work/secured.access.jsonl"; then fail "secrets in logs"; fi
stop_pid "$PID_secured"

# 7. Request ids: two concurrent requests with one client id reach the engines with distinct
#    ids (a shared id let one request take the other's KV); a non-ASCII id is refused.
start_proxy ids --prefill-endpoints "127.0.0.1:$PORT_prefill" --decode-endpoints "127.0.0.1:$PORT_decode"
same_pids=()
for i in 1 2; do
  curl -s -o "$work/same$i" -H 'Content-Type: application/json' -H 'X-Request-Id: same' \
    --data '{"prompt":"x","max_tokens":2}' "http://$PROXY/v1/completions" &
  same_pids+=($!)
done
wait "${same_pids[@]}"
[ "$(records prefill same | jq -r .x_request_id | sort -u | wc -l)" -eq 2 ] || fail "one client id, one engine id"
for leg in prefill decode; do
  [ "$(records $leg same | wc -l)" -eq 2 ] || fail "$leg legs of the two 'same' requests"
done
status=$(curl -s -o "$work/body" -w '%{http_code}' -H 'Content-Type: application/json' \
  -H $'X-Request-Id: bad\x80id' --data '{"prompt":"x"}' "http://$PROXY/v1/completions")
expect_status 400 "$status" "a non-ASCII X-Request-Id"
body_has '.error.param == "X-Request-Id"' "X-Request-Id refusal names the header"
jq -e -s 'any(.[]; .status == 400 and (.request_id // "" | contains("\\x80")))' "$work/ids.access.jsonl" \
  >/dev/null || fail "the refused id must be logged escaped: $(tail -2 "$work/ids.access.jsonl")"

# 8. Client-supplied PD fields never reach an engine (SSRF): stripped by default, 400 on request.
expect_status 200 "$(post /v1/completions '{"prompt":"x","max_tokens":2,"kv_transfer_params":{"do_remote_prefill":true,"remote_host":"10.9.9.9","remote_port":22},"bootstrap_host":"10.9.9.9","bootstrap_port":22,"bootstrap_room":1,"rid":"x"}' -H 'X-Request-Id: ssrf-1')" "PD fields stripped"
records prefill ssrf-1 | jq -e '(.raw | contains("10.9.9.9") | not) and (.body | has("bootstrap_host") | not)
  and (.body | has("rid") | not) and .body.kv_transfer_params.do_remote_decode == true' >/dev/null \
  || fail "client PD fields reached the prefill: $(records prefill ssrf-1)"
records decode ssrf-1 | jq -e '(.raw | contains("10.9.9.9") | not) and (.body | has("bootstrap_port") | not)' \
  >/dev/null || fail "client PD fields reached the decode: $(records decode ssrf-1)"
stop_pid "$PID_ids"
start_proxy strict --prefill-endpoints "127.0.0.1:$PORT_prefill" --decode-endpoints "127.0.0.1:$PORT_decode" \
  --client-pd-fields reject
expect_status 400 "$(post /v1/completions '{"prompt":"x","bootstrap_host":"10.9.9.9"}' -H 'X-Request-Id: ssrf-2')" \
  "PD fields refused"
body_has '.error.param == "bootstrap_host"' "the refusal names the field"
[ -z "$(records prefill ssrf-2)" ] || fail "a refused request reached an engine"
stop_pid "$PID_strict"

# 9. The HTTP layer's own refusals are logged and counted like every answer: a head that never
#    completes gets 408 at timeouts.client_header; a client over limits.max_connections while
#    every connection is busy gets 503. /v1/models never blocks on a stalled engine: an engine
#    stopped with SIGSTOP (its kernel still accepts connections) costs at most timeouts.models.
start_engine stalled
kill -STOP "$PID_stalled"
start_proxy edge --prefill-endpoints "127.0.0.1:$PORT_prefill" \
  --decode-endpoints "127.0.0.1:$PORT_decode,127.0.0.1:$PORT_stalled" --health-interval 0s \
  --timeouts-client-header 500ms --timeouts-models 1s --limits-max-connections 3
slow_head=$(timeout 5 bash -c "exec 3<>/dev/tcp/${PROXY%:*}/${PROXY##*:};
  printf 'POST /v1/completions HTTP/1.1\r\nHost: t\r\n' >&3; head -1 <&3" || true)
case "$slow_head" in "HTTP/1.1 408 "*) ;; *) fail "an incomplete head must get 408: '$slow_head'";; esac
started=$(date +%s%N)
expect_status 200 "$(get /v1/models)" "/v1/models with one engine stalled"
elapsed_ms=$(( ($(date +%s%N) - started) / 1000000 ))
[ "$elapsed_ms" -lt 4000 ] || fail "/v1/models took ${elapsed_ms} ms with a stalled engine (bound: 1 s)"
body_has '.data | map(.id) | index("fake-model") != null' "/v1/models lists the answering engines' models"
# Two connections busy with heads in progress hold the cap (with the third, curl's own, over it).
exec 5<>"/dev/tcp/${PROXY%:*}/${PROXY##*:}" 6<>"/dev/tcp/${PROXY%:*}/${PROXY##*:}" \
  7<>"/dev/tcp/${PROXY%:*}/${PROXY##*:}"
printf 'GET /health HTTP/1.1\r\n' >&5; printf 'GET /health HTTP/1.1\r\n' >&6
printf 'GET /health HTTP/1.1\r\n' >&7
sleep 0.1
expect_status 503 "$(get /health)" "a connection over the cap while every connection is busy"
exec 5>&- 6>&- 7>&-
kill -CONT "$PID_stalled"
sleep 0.6  # the busy heads time out (408) and free the cap
get /metrics >/dev/null
for code in 408 503; do
  jq -e -s --argjson c "$code" 'any(.[]; .pd_mode == null and .status == $c)' "$work/edge.access.jsonl" \
    >/dev/null || fail "no access-log line for the HTTP layer's $code"
  grep -q "omni_proxy_http_responses_total{.*code=\"$code\"} [1-9]" "$work/body" \
    || fail "no http_responses_total for $code"
done

echo "PASS"
