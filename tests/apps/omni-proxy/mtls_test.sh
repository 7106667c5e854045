#!/usr/bin/env bash
# TLS between omni-proxy and its engines, and mutual TLS on the admin listener, against a CA and
# certificates this test makes:
#   1. an engine serving HTTPS and requiring client certificates (vLLM's --ssl-certfile,
#      --ssl-ca-certs, --ssl-cert-reqs 2) behind https://host:port: the proxy verifies it
#      against --engine-tls-ca-file and presents --engine-tls-cert-file; completions and SSE;
#   2. the same engine behind a proxy that trusts only the system store, and one with no client
#      certificate: requests fail with a 5xx and the log says why; the engine is not trusted;
#   3. the admin listener with --admin-tls-client-ca-file: an operator's certificate gets in,
#      no certificate or one from another CA is refused in the handshake, and counted;
#   4. a reload whose CA file is broken is refused and the old files keep serving;
# and a TLS client on the plain traffic port is closed without an answer, the reason logged.
source "$(dirname "$0")/lib.sh"

cd "$work"
newca() {  # newca NAME: NAME.pem / NAME.key, a self-signed CA
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$1.key" \
    -out "$1.pem" -subj "/CN=$1" -days 2 2>/dev/null
}
mkcert() {  # mkcert CA NAME SAN: NAME.pem / NAME.key signed by CA
  local ca=$1 name=$2 san=$3
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$name.key" \
    -out "$name.csr" -subj "/CN=$name" 2>/dev/null
  printf 'subjectAltName=%s\n' "$san" >"$name.ext"
  openssl x509 -req -in "$name.csr" -CA "$ca.pem" -CAkey "$ca.key" -CAcreateserial \
    -out "$name.pem" -extfile "$name.ext" -days 2 2>/dev/null
}
newca ca
newca rogue
mkcert ca engine IP:127.0.0.1
mkcert ca admin IP:127.0.0.1
mkcert ca proxy-client DNS:omni-proxy.test
mkcert ca operator DNS:operator.test
mkcert rogue intruder DNS:operator.test
cp ca.pem live-ca.pem

start_engine engine --tls-cert-file engine.pem --tls-key-file engine.key --tls-client-ca-file ca.pem
engine_url="https://127.0.0.1:$PORT_engine"
# The engine itself refuses a client without a certificate.
curl -s --cacert ca.pem "$engine_url/health" >/dev/null && fail "the engine must require a client certificate"
completion='{"prompt":"hi","max_tokens":3}'
post() {  # post URL BODY [curl flags...]: the status code; the body in out.json
  local url=$1 body=$2; shift 2
  curl -s -o out.json -w '%{http_code}' -H 'Content-Type: application/json' --data-binary "$body" "$@" "$url"
}

# 1. Verified TLS to the engine, with the proxy's client certificate.
start_proxy good --pd-mode aggregated --decode-endpoints "$engine_url" \
  --engine-tls-ca-file "$work/live-ca.pem" --engine-tls-cert-file "$work/proxy-client.pem" \
  --engine-tls-key-file "$work/proxy-client.key" \
  --admin-listen 127.0.0.1:0 --admin-tls-cert-file "$work/admin.pem" \
  --admin-tls-key-file "$work/admin.key" --admin-tls-client-ca-file "$work/ca.pem"
grep -q "decode: https://127.0.0.1:$PORT_engine" good.log || fail "the start-up summary must show the engine as https"
grep -q "engines over https: servers verified against $work/live-ca.pem; client certificate /CN=proxy-client" good.log \
  || fail "the start-up summary must say how engines are verified"
code=$(post "http://$PROXY/v1/completions" "$completion")
[ "$code" = 200 ] || fail "completion through a TLS engine: $code $(cat out.json)"
jq -e '.choices[0].text == " tok0 tok1 tok2"' out.json >/dev/null || fail "completion body: $(cat out.json)"
curl -s -N -H 'Content-Type: application/json' \
  --data-binary '{"prompt":"hi","max_tokens":3,"stream":true}' "http://$PROXY/v1/completions" >stream.txt
[ "$(grep -c '^data: {' stream.txt)" -eq 3 ] && grep -q '^data: \[DONE\]' stream.txt \
  || fail "SSE through a TLS engine: $(cat stream.txt)"

# TLS to the plain traffic port: closed without an answer, the reason logged and counted.
echo | openssl s_client -connect "$PROXY" >s_client_plain.txt 2>&1 && fail "a TLS handshake to a plain port must fail"
for _ in $(seq 50); do grep -q "a TLS handshake sent to a plain HTTP port" good.log && break; sleep 0.1; done
grep -q "TLS handshakes failed: a TLS handshake sent to a plain HTTP port (client 127.0.0.1:" good.log \
  || fail "TLS to a plain port must be logged with the reason"
jq -e -s 'map(select(.outcome == "tls_handshake_failed" and .error == "a TLS handshake sent to a plain HTTP port")) | length == 1' \
  good.access.jsonl >/dev/null || fail "TLS to a plain port must reach the access log: $(cat good.access.jsonl)"

# 3. Mutual TLS on the admin listener.
admin=$(sed -n 's|.*admin, metrics and probes on https://\([^ ]*\).*|\1|p' good.log | head -1)
[ -n "$admin" ] || fail "the admin listener must announce https"
code=$(curl -s -o metrics.txt -w '%{http_code}' --cacert ca.pem --cert operator.pem --key operator.key "https://$admin/metrics")
[ "$code" = 200 ] || fail "an operator's certificate must open the admin listener: $code"
grep -q '^omni_proxy_requests_total' metrics.txt || fail "metrics over mutual TLS: $(head -5 metrics.txt)"
status=0
curl -s -o /dev/null --cacert ca.pem "https://$admin/metrics" 2>curl_none.txt || status=$?
[ "$status" -ne 0 ] || fail "the admin listener must refuse a client without a certificate"
status=0
curl -s -o /dev/null --cacert ca.pem --cert intruder.pem --key intruder.key "https://$admin/metrics" || status=$?
[ "$status" -ne 0 ] || fail "the admin listener must refuse a certificate from another CA"
# (The log line is throttled behind the plain-port one above; the access log has each.)
for _ in $(seq 50); do grep -q "peer did not return a certificate" good.access.jsonl && break; sleep 0.1; done
jq -e -s 'map(select(.outcome == "tls_handshake_failed" and (.error | test("peer did not return a certificate")))) | length == 1' \
  good.access.jsonl >/dev/null || fail "a client without a certificate must be in the access log"
curl -s --cacert ca.pem --cert operator.pem --key operator.key "https://$admin/metrics" >metrics.txt
grep -q '^omni_proxy_tls_handshake_failures_total [3-9]' metrics.txt \
  || fail "refused client certificates must be counted: $(grep tls_handshake metrics.txt)"

# 4. A reload with a broken CA file is refused; the old one keeps verifying the engine.
echo "not a certificate" >live-ca.pem
kill -HUP "$PID_good"
for _ in $(seq 50); do grep -q "the current TLS files keep serving" good.log && break; sleep 0.1; done
grep -q "reload refused: TLS: $work/live-ca.pem holds no PEM CA certificate" good.log \
  || fail "a broken CA file must refuse the reload with the reason: $(grep reload good.log)"
code=$(post "http://$PROXY/v1/completions" "$completion")
[ "$code" = 200 ] || fail "serving after a refused reload: $code $(cat out.json)"

# 2. An engine the proxy cannot verify, and one that wants a certificate it does not have.
start_proxy untrusting --pd-mode aggregated --decode-endpoints "$engine_url" --retries-decode-attempts 1 --timeouts-queue 2s
code=$(post "http://$PROXY/v1/completions" "$completion")
case "$code" in 5??) ;; *) fail "an engine the system store does not trust must fail the request: $code" ;; esac
jq -e '.error.message | length > 0' out.json >/dev/null || fail "the failure must be an OpenAI-style error: $(cat out.json)"
for _ in $(seq 50); do grep -q "certificate verify failed" untrusting.log && break; sleep 0.1; done
grep -q "certificate verify failed" untrusting.log || fail "the log must say the engine's certificate did not verify"
start_proxy anonymous --pd-mode aggregated --decode-endpoints "$engine_url" \
  --engine-tls-ca-file "$work/ca.pem" --retries-decode-attempts 1 --timeouts-queue 2s
code=$(post "http://$PROXY/v1/completions" "$completion")
case "$code" in 5??) ;; *) fail "an engine that requires a client certificate must refuse a proxy without one: $code" ;; esac
engine_seen=$(grep -c '"/v1/completions"' engine.jsonl || true)
[ "$engine_seen" -eq 3 ] || fail "only the verified proxy's three requests may reach the engine, saw $engine_seen"
echo "PASS mtls"
