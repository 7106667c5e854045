#!/usr/bin/env bash
# omni-proxy's secure defaults (docs/operations.md): secrets from files and the environment, never
# on the command line nor in --print-config; keys rotated by a reload, a bad key file refused with
# the old keys still serving; the key sent to engines (vLLM's --api-key); the trace context and
# X-Forwarded-For passed to engines; operator routes (/admin/*, /metrics) only for local clients or
# the admin token on the traffic port; a separate admin listener that takes them off that port.
source "$(dirname "$0")/lib.sh"

umask 077
printf '# client keys\nkey-one\n\n  key-two  \n' >"$work/api_keys"
printf 'admin-secret\n' >"$work/admin_token"
printf 'engine-secret\n' >"$work/engine_key"

# 1. Start-up errors name the file; an empty key file is refused (it would leave /v1/* open).
status=0
"$proxy_bin" --decode-endpoints h:1 --pd-mode aggregated --api-keys-file "$work/none" \
  >/dev/null 2>"$work/err.txt" || status=$?
[ "$status" -eq 2 ] && grep -q "$work/none" "$work/err.txt" || fail "a missing key file must exit 2 naming it"
: >"$work/empty_keys"
status=0
"$proxy_bin" --decode-endpoints h:1 --pd-mode aggregated --api-keys-file "$work/empty_keys" \
  >/dev/null 2>"$work/err.txt" || status=$?
[ "$status" -eq 2 ] && grep -q "no key" "$work/err.txt" || fail "an empty key file must exit 2"

# 2. --print-config redacts secrets given as flags; the environment is a source too.
"$proxy_bin" --decode-endpoints h:1 --pd-mode aggregated --api-keys flag-key-123 \
  --admin-token flag-token-456 --print-config >"$work/effective.yaml" || fail "--print-config failed"
grep -q "flag-key-123\|flag-token-456" "$work/effective.yaml" && fail "--print-config shows a secret"
grep -q "api_keys: <redacted>" "$work/effective.yaml" || fail "--print-config must say the keys are redacted"
"$proxy_bin" --help >"$work/help.txt"
for flag in --api-keys-file --admin-token-file --engine-api-key-file --admin-listen; do
  grep -q -- "$flag" "$work/help.txt" || fail "--help does not document $flag"
done

start_engine engine --api-key engine-secret
OMNI_API_KEYS="env-key" start_proxy proxy --pd-mode aggregated --decode-endpoints "127.0.0.1:$PORT_engine" \
  --api-keys-file "$work/api_keys" --admin-token-file "$work/admin_token" \
  --engine-api-key-file "$work/engine_key" --api-keys visible-key
grep -q "secret" "/proc/$PID_proxy/cmdline" && fail "a secret is on the command line"
grep -q -- "--api-keys carries a secret on the command line" "$work/proxy.log" \
  || fail "a key given as a flag must be warned about"

# 3. Every source's key works; /v1/models too needs one, and reaches the engine with the engine's key.
completion='{"model":"fake-model","prompt":"hi","max_tokens":2}'
expect_status 401 "$(get /v1/models)" "/v1/models without a key"
for key in key-one key-two env-key visible-key; do
  expect_status 200 "$(get /v1/models -H "Authorization: Bearer $key")" "/v1/models with $key"
done
expect_status 401 "$(post /v1/completions "$completion" -H 'Authorization: Bearer key')" "a prefix of a key"

# 4. What reaches the engine: its own key (never the client's), the trace context, X-Forwarded-For.
trace='00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
status=$(post /v1/completions "$completion" -H 'Authorization: Bearer key-one' -H 'X-Request-Id: rid-t' \
  -H "traceparent: $trace" -H 'tracestate: vendor=1' -H 'X-Forwarded-For: 203.0.113.9')
expect_status 200 "$status" "a completion with a trace context"
line=$(records engine rid-t)
echo "$line" | jq -e --arg t "$trace" '.traceparent == $t and .tracestate == "vendor=1"
  and .["X-Forwarded-For"] == "203.0.113.9, 127.0.0.1" and .Authorization == "Bearer engine-secret"' \
  >/dev/null || fail "engine request headers wrong: $line"

# 5. Operator routes on the traffic port: local clients or the admin token; a relayed request
#    (X-Forwarded-For) is not local. Refusals are counted by route and status.
expect_status 200 "$(get /metrics)" "local /metrics"
expect_status 401 "$(get /metrics -H 'X-Forwarded-For: 198.51.100.4')" "relayed /metrics without the token"
expect_status 200 "$(get /metrics -H 'X-Forwarded-For: 198.51.100.4' -H 'Authorization: Bearer admin-secret')" \
  "relayed /metrics with the token"
expect_status 401 "$(get /admin/nodes)" "/admin without the token, even locally"
expect_status 401 "$(get /admin/nodes -H 'Authorization: Bearer key-one')" "/admin with a client key"
expect_status 200 "$(get /admin/nodes -H 'Authorization: Bearer admin-secret')" "/admin with the token"
get /metrics >/dev/null
grep -q 'omni_proxy_http_responses_total{route="/admin",code="401"} 2$' "$work/body" \
  && grep -q 'omni_proxy_http_responses_total{route="/metrics",code="401"} 1$' "$work/body" \
  || fail "refused admin requests must be counted: $(grep http_responses_total "$work/body")"

# 6. Rotation: a new key file and SIGHUP; the old key is refused, the new one accepted.
printf 'key-three\n' >"$work/api_keys"
kill -HUP "$PID_proxy"
for _ in $(seq 100); do
  [ "$(get /v1/models -H 'Authorization: Bearer key-three')" = 200 ] && break
  sleep 0.05
done
expect_status 200 "$(get /v1/models -H 'Authorization: Bearer key-three')" "the rotated key"
expect_status 401 "$(get /v1/models -H 'Authorization: Bearer key-one')" "a key removed by rotation"
# 7. A key file emptied by mistake: the reload is refused and the current keys keep serving.
: >"$work/api_keys"
status=$(post /admin/reload '' -H 'Authorization: Bearer admin-secret')
[ "$status" != 200 ] || fail "a reload with an empty key file must be refused"
grep -q "no key" "$work/body" || fail "the refused reload must say why: $(cat "$work/body")"
expect_status 200 "$(get /v1/models -H 'Authorization: Bearer key-three')" "keys after a refused reload"

# 8. A proxy without an admin token: operator routes for local clients only (403 otherwise).
start_engine open_engine
start_proxy open --pd-mode aggregated --decode-endpoints "127.0.0.1:$PORT_open_engine"
expect_status 200 "$(get /admin/nodes)" "local /admin without a token configured"
expect_status 403 "$(get /admin/nodes -H 'X-Forwarded-For: 198.51.100.4')" "relayed /admin"
body_has '.error.message | contains("admin-listen")' "the 403 must say how to reach admin routes"
expect_status 403 "$(post /admin/reload '' -H 'Forwarded: for=198.51.100.4')" "relayed reload"
expect_status 200 "$(get /health -H 'X-Forwarded-For: 198.51.100.4')" "probes stay open"

# 9. A separate admin listener: operator routes leave the traffic port (404 there), and the admin
#    port serves them, the probes and nothing else.
start_proxy split --pd-mode aggregated --decode-endpoints "127.0.0.1:$PORT_open_engine" \
  --admin-listen 127.0.0.1:0
traffic=$PROXY
admin=$(sed -n 's|.*admin, metrics and probes on http://\([^ ]*\).*|\1|p' "$work/split.log" | head -1)
[ -n "$admin" ] || fail "the admin listener's address must be printed"
expect_status 404 "$(get /metrics)" "/metrics on the traffic port with an admin listener"
expect_status 404 "$(get /admin/nodes)" "/admin on the traffic port with an admin listener"
expect_status 200 "$(get /health)" "/health on the traffic port"
PROXY=$admin
expect_status 200 "$(get /metrics)" "/metrics on the admin listener"
expect_status 200 "$(get /admin/nodes -H 'X-Forwarded-For: 198.51.100.4')" "/admin on the admin listener"
expect_status 200 "$(get /ready)" "/ready on the admin listener"
expect_status 404 "$(get /v1/models)" "/v1/models on the admin listener"
expect_status 404 "$(post /v1/completions "$completion")" "generation on the admin listener"
PROXY=$traffic
expect_status 200 "$(post /v1/completions "$completion")" "generation on the traffic port"

echo "PASS secure_defaults"
