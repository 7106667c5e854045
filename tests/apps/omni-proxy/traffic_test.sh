#!/usr/bin/env bash
# Traffic management (docs/traffic.md), on one engine that takes one request at a time: priority
# bands (the urgent band goes first whatever its arrival), a sheddable band with its own bound,
# tenants named by their API keys, priorities clamped to what a tenant may ask, each tenant's
# concurrency and token limits (429 with Retry-After), bad priorities (400), and the metrics and
# access-log fields that say who waited, why, and what was refused.
source "$(dirname "$0")/lib.sh"

start_engine busy --stall 1s --io-threads 4
printf 'sk-gold-1\n' >"$work/gold.keys"
printf 'sk-free-1\n' >"$work/free.keys"
printf 'sk-metered-1\n' >"$work/metered.keys"
cat >"$work/traffic.yaml" <<EOF
traffic:
  bands:
    - {name: interactive, max_priority: -1}
    - {name: standard, max_priority: 0}
    - {name: batch, max_priority: 100, sheddable: true, max_waiting: 1, node_share: 0.9}
  aging: 0s
  tenants:
    - {name: gold, api_keys_file: $work/gold.keys, weight: 4, min_priority: -10}
    - {name: free, api_keys_file: $work/free.keys, max_concurrency: 2, node_share: 0.5}
    - {name: metered, api_keys_file: $work/metered.keys, tokens_per_second: 5, burst_tokens: 20}
EOF
start_proxy tm --config "$work/traffic.yaml" --pd-mode aggregated \
  --decode-endpoints "127.0.0.1:$PORT_busy" --limits-node-max-running 1 --timeouts-queue 20s
gold=(-H 'Authorization: Bearer sk-gold-1')
free=(-H 'Authorization: Bearer sk-free-1')

# Tenants' keys guard /v1/*; bad priorities are the client's error, named.
expect_status 401 "$(post /v1/completions '{"prompt":"x","max_tokens":1}')" "no key"
expect_status 400 "$(post /v1/completions '{"prompt":"x","max_tokens":1}' "${gold[@]}" \
  -H 'X-Omni-Priority: urgent')" "priority header not an integer"
body_has '.error.param == "priority" and (.error.message | test("X-Omni-Priority"))' "header error"
expect_status 400 "$(post /v1/completions '{"prompt":"x","max_tokens":1,"priority":1.5}' \
  "${gold[@]}")" "priority not an integer"
body_has '.error.param == "priority" and .error.type == "BadRequestError"' "body error"
expect_status 400 "$(post /v1/completions '{"prompt":"x","max_tokens":1,"priority":4294967296}' \
  "${gold[@]}")" "priority out of range"

# Bands: while the engine serves `first`, a batch request waits, a second batch request finds
# its band full (shed: 429), then a standard and an interactive one arrive. The interactive one
# goes next, then the standard, then the batch one.
send() {  # send NAME BODY [curl args...]: in the background, status to $work/NAME.status
  local name=$1 body=$2; shift 2
  curl -s -o "$work/$name.body" -D "$work/$name.headers" -w '%{http_code}' \
    -H 'Content-Type: application/json' -H "X-Request-Id: $name" --data-binary "$body" "$@" \
    "http://$PROXY/v1/completions" >"$work/$name.status" &
  sleep 0.15
}
send first '{"prompt":"x","max_tokens":1}' "${gold[@]}"
send batch1 '{"prompt":"x","max_tokens":1,"priority":50}' "${gold[@]}"
send batch2 '{"prompt":"x","max_tokens":1,"priority":50}' "${gold[@]}"
send standard '{"prompt":"x","max_tokens":1}' "${gold[@]}"
send urgent '{"prompt":"x","max_tokens":1}' "${gold[@]}" -H 'X-Omni-Priority: -5'
wait_jobs() {
  local job
  for job in $(jobs -p); do
    case " ${pids[*]} " in *" $job "*) ;; *) wait "$job" ;; esac
  done
}
wait_jobs
for name in first batch1 standard urgent; do
  [ "$(cat "$work/$name.status")" = 200 ] || fail "$name: $(cat "$work/$name.status") $(cat "$work/$name.body")"
done
[ "$(cat "$work/batch2.status")" = 429 ] || fail "batch2 should be shed: $(cat "$work/batch2.status")"
jq -e '.error.type == "RateLimitError" and (.error.message | test("band .batch. is shedding"))' \
  "$work/batch2.body" >/dev/null || fail "shed body: $(cat "$work/batch2.body")"
grep -qi '^retry-after: 1' "$work/batch2.headers" || fail "shed 429 without Retry-After"
order=$(jq -r '.x_request_id | split("-")[0]' "$work/busy.jsonl" | tr '\n' ' ')
[ "$order" = "first urgent standard batch1 " ] || fail "engine order: $order"
jq -s -e 'map(select(.request_id == "urgent"))[0] | .band == "interactive" and .priority == -5 and .tenant == "gold"' \
  "$work/tm.access.jsonl" >/dev/null || fail "access log: $(grep urgent "$work/tm.access.jsonl")"
# Each request's receipt says why it waited: the standard one behind the interactive one.
jq -s -e 'map(select(.request_id == "standard"))[0].queue_wait_ms | .priority > 0 and .no_capacity > 0' \
  "$work/tm.access.jsonl" >/dev/null || fail "queue_wait_ms: $(grep standard "$work/tm.access.jsonl")"
jq -s -e 'map(select(.request_id == "first"))[0].queue_wait_ms | ([.[]] | add // 0) < 5' \
  "$work/tm.access.jsonl" >/dev/null || fail "the first request did not wait"
get /admin/decisions >/dev/null
body_has '[.decisions[] | select(.request_id == "batch1")][0] | .band == "batch" and .tenant == "gold" and .priority == 50 and .queue_wait_ms.priority > 0' \
  "/admin/decisions: $(cat "$work/body")"

# A tenant without the right to raise its priority is clamped to its min_priority (0), counted.
expect_status 200 "$(post /v1/completions '{"prompt":"x","max_tokens":1,"priority":-7}' \
  "${free[@]}" -H 'X-Request-Id: clamped')" "clamped request"
jq -s -e 'map(select(.request_id == "clamped"))[0] | .band == "standard" and .priority == 0 and .tenant == "free"' \
  "$work/tm.access.jsonl" >/dev/null || fail "clamp: $(grep clamped "$work/tm.access.jsonl")"

# The free tenant may have two requests in flight: a third is refused while they last.
send free1 '{"prompt":"x","max_tokens":1}' "${free[@]}"
send free2 '{"prompt":"x","max_tokens":1}' "${free[@]}"
send free3 '{"prompt":"x","max_tokens":1}' "${free[@]}"
wait_jobs
for name in free1 free2; do
  [ "$(cat "$work/$name.status")" = 200 ] || fail "$name: $(cat "$work/$name.status")"
done
[ "$(cat "$work/free3.status")" = 429 ] || fail "free3: $(cat "$work/free3.status")"
jq -e '.error.message | test("concurrent")' "$work/free3.body" >/dev/null || fail "free3 body"

# The metered tenant's bucket holds 20 tokens and refills 5 a second: a 100-token prompt passes
# (debt), the next request is refused with the time the debt takes to repay.
prompt=$(head -c 400 /dev/zero | tr '\0' 'a')
expect_status 200 "$(post /v1/completions "{\"prompt\":\"$prompt\",\"max_tokens\":1}" \
  -H 'Authorization: Bearer sk-metered-1')" "metered first"
expect_status 429 "$(post /v1/completions '{"prompt":"x","max_tokens":1}' \
  -H 'Authorization: Bearer sk-metered-1')" "metered second"
retry=$(sed -n 's/^[Rr]etry-[Aa]fter: *\([0-9]*\).*/\1/p' "$work/headers")
[ "${retry:-0}" -ge 10 ] && [ "${retry:-0}" -le 17 ] || fail "Retry-After $retry, want about 16"
body_has '.error.message | test("token rate limit")' "token 429 body"

get /metrics >/dev/null
metrics=$(cat "$work/body")
has() { grep -qE "$1" <<<"$metrics" || fail "metric missing: $1"; }
has '^omni_proxy_shed_total\{band="batch",reason="band_full"\} 1$'
has '^omni_proxy_tenant_rejected_total\{tenant="free",reason="concurrency"\} 1$'
has '^omni_proxy_tenant_rejected_total\{tenant="metered",reason="tokens"\} 1$'
has '^omni_proxy_priority_clamped_total\{tenant="free"\} 1$'
has '^omni_proxy_class_requests_total\{band="interactive",tenant="gold"\} 1$'
# The standard request waited behind the interactive one (priority) and for the engine.
has '^omni_proxy_queue_wait_seconds_count\{band="standard",cause="priority"\} [1-9]'
has '^omni_proxy_queue_wait_seconds_count\{band="interactive",cause="no_capacity"\} [1-9]'

# X-Omni-Explain: 1 puts the request's receipt in X-Omni-Decision, for operators only: here a
# local client without the admin token gets nothing, one with it gets the receipt.
printf 'admin-secret\n' >"$work/admin_token"
stop_pid "$PID_tm"
start_proxy explain --config "$work/traffic.yaml" --pd-mode aggregated \
  --decode-endpoints "127.0.0.1:$PORT_busy" --admin-token-file "$work/admin_token"
expect_status 200 "$(post /v1/completions '{"prompt":"x","max_tokens":1}' "${gold[@]}" \
  -H 'X-Omni-Explain: 1')" "explain without the admin token"
if grep -qi '^x-omni-decision' "$work/headers"; then fail "a receipt without the admin token"; fi
expect_status 200 "$(post /v1/completions '{"prompt":"x","max_tokens":1,"stream":true}' \
  "${gold[@]}" -H 'X-Omni-Explain: 1' -H 'X-Omni-Admin-Token: admin-secret' \
  -H 'X-Omni-Priority: -2')" "explain with the admin token"
receipt=$(sed -n 's/^[Xx]-[Oo]mni-[Dd]ecision: *//p' "$work/headers" | tr -d '\r')
case "$receipt" in
  "band=interactive; priority=-2; tenant=gold; decode=127.0.0.1:$PORT_busy; queue_wait_ms="*) ;;
  *) fail "receipt: '$receipt'" ;;
esac

echo "PASS"
