#!/usr/bin/env bash
# HTTPS on omni-proxy's client listener, against certificates this test makes (a CA and two
# server certificates for 127.0.0.1):
#   1. start-up refuses a missing file, a key that does not match, an expired certificate, or a
#      certificate without its key — each exit 2 naming the problem;
#   2. completions, SSE streams and keep-alive over TLS (curl, verifying against the CA); TLS 1.3
#      and 1.2 accepted, 1.1 refused; ALPN http/1.1;
#   3. plain HTTP to the HTTPS port gets a plain 400 and is closed; a broken handshake is closed
#      and counted; both logged;
#   4. SIGHUP with a new certificate: new connections see it; a reload with a key that does not
#      match is refused and the current TLS files keep serving.
source "$(dirname "$0")/lib.sh"

cd "$work"
mkcert() {  # mkcert NAME CN [openssl x509 args...]: NAME.pem / NAME.key signed by the test CA
  local name=$1 cn=$2; shift 2
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$name.key" \
    -out "$name.csr" -subj "/CN=$cn" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1\n' >"$name.ext"
  openssl x509 -req -in "$name.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -out "$name.pem" \
    -extfile "$name.ext" "$@" 2>/dev/null
}
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem \
  -subj /CN=omni-test-ca -days 2 2>/dev/null
mkcert one proxy-one -days 2
mkcert two proxy-two -days 2
# An expired certificate: signed by a throw-away CA database with an end date in the past.
mkdir -p ca_db && : >ca_db/index.txt && echo 01 >ca_db/serial
cat >ca.cnf <<CNF
[ca]
default_ca = test
[test]
database = ca_db/index.txt
serial = ca_db/serial
new_certs_dir = ca_db
default_md = sha256
policy = any
copy_extensions = copy
[any]
commonName = supplied
CNF
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout old.key -out old.csr \
  -subj /CN=proxy-old 2>/dev/null
openssl ca -batch -config ca.cnf -cert ca.pem -keyfile ca.key -in old.csr -out old.pem \
  -startdate 20200101000000Z -enddate 20200102000000Z >/dev/null 2>&1 || fail "cannot make an expired certificate"

# 1. Start-up errors.
start_refused() {  # start_refused WHAT PATTERN [flags...]
  local what=$1 pattern=$2 status=0; shift 2
  "$proxy_bin" --decode-endpoints h:1 --pd-mode aggregated "$@" >/dev/null 2>"$work/err.txt" || status=$?
  [ "$status" -eq 2 ] && grep -q -- "$pattern" "$work/err.txt" \
    || fail "$what: exit $status, $(cat "$work/err.txt"), want 2 and '$pattern'"
}
start_refused "a missing certificate" "no such file: $work/none.pem" --tls-cert-file "$work/none.pem" --tls-key-file one.key
start_refused "a key that does not match" "does not match" --tls-cert-file one.pem --tls-key-file two.key
start_refused "an expired certificate" "expired on 2020-01-02" --tls-cert-file old.pem --tls-key-file old.key
start_refused "a certificate without its key" "give both" --tls-cert-file one.pem
start_refused "a key file that is no key" "not a PEM private key" --tls-cert-file one.pem --tls-key-file ca.pem

start_engine engine
cp one.pem live.pem && cp one.key live.key
start_proxy proxy --pd-mode aggregated --decode-endpoints "127.0.0.1:$PORT_engine" \
  --tls-cert-file "$work/live.pem" --tls-key-file "$work/live.key"
grep -q "listening on https://" proxy.log || fail "the start line must say https"
url="https://$PROXY"
tls_curl() { curl -s --cacert ca.pem "$@"; }

# 2. Serving over TLS.
code=$(tls_curl -o body.json -w '%{http_code}' -H 'Content-Type: application/json' \
  --data-binary '{"prompt":"hi","max_tokens":3}' "$url/v1/completions")
[ "$code" = 200 ] || fail "completion over TLS: $code"
jq -e '.choices[0].text == " tok0 tok1 tok2"' body.json >/dev/null || fail "completion body: $(cat body.json)"
tls_curl -N -H 'Content-Type: application/json' --data-binary '{"prompt":"hi","max_tokens":3,"stream":true}' \
  "$url/v1/completions" >stream.txt
[ "$(grep -c '^data: {' stream.txt)" -eq 3 ] && [ "$(tail -2 stream.txt | head -1)" = "data: [DONE]" ] \
  || fail "SSE over TLS: $(cat stream.txt)"
tls_curl -v "$url/health" "$url/health" >/dev/null 2>keepalive.txt
grep -qiE "re-?using existing connection" keepalive.txt || fail "keep-alive over TLS: the second request did not reuse the connection"
grep -q "ALPN: server accepted http/1.1" keepalive.txt || fail "ALPN http/1.1 not negotiated"
for version in tls1_3 tls1_2; do
  echo | openssl s_client -connect "$PROXY" -"$version" -CAfile ca.pem >"s_client_$version.txt" 2>&1 \
    || fail "openssl s_client -$version failed: $(tail -5 "s_client_$version.txt")"
  grep -q "Verify return code: 0 (ok)" "s_client_$version.txt" || fail "$version: the chain does not verify"
done
echo | openssl s_client -connect "$PROXY" -tls1_1 -CAfile ca.pem >s_client_tls1_1.txt 2>&1 \
  && fail "TLS 1.1 must be refused"

# 3. Plain HTTP on the HTTPS port; a broken handshake.
code=$(curl -s -o plain.txt -w '%{http_code}' "http://$PROXY/health")
[ "$code" = 400 ] && grep -q "speaks HTTPS" plain.txt || fail "plain HTTP to the HTTPS port: $code $(cat plain.txt)"
# A handshake record that is not a ClientHello, then the connection closed.
( exec 3<>"/dev/tcp/127.0.0.1/${PROXY##*:}"; printf '\x16\x03\x01\x00\x05hello' >&3; sleep 0.3; exec 3>&- ) || true
for _ in $(seq 50); do grep -q "TLS handshakes failed" proxy.log && break; sleep 0.1; done
grep -q "TLS handshakes failed: TLS handshake failed" proxy.log || fail "a failed handshake must be logged"
jq -e -s 'map(select(.outcome == "tls_handshake_failed")) | length >= 1' proxy.access.jsonl >/dev/null \
  || fail "a failed handshake must reach the access log"
jq -e -s 'map(select(.status == 400 and .error == "plain HTTP sent to the HTTPS port")) | length == 1' \
  proxy.access.jsonl >/dev/null || fail "plain HTTP to the HTTPS port must reach the access log"
tls_curl "$url/metrics" >metrics.txt
grep -q '^omni_proxy_tls_handshake_failures_total [1-9]' metrics.txt || fail "handshake failures not counted"

# 4. Certificate reload.
subject() { echo | openssl s_client -connect "$PROXY" -CAfile ca.pem 2>/dev/null | openssl x509 -noout -subject; }
subject | grep -q "CN = proxy-one" || fail "the first certificate is not served"
cp two.pem live.pem && cp two.key live.key
kill -HUP "$PID_proxy"
for _ in $(seq 50); do grep -q "reload: TLS certificate /CN=proxy-two" proxy.log && break; sleep 0.1; done
subject | grep -q "CN = proxy-two" || fail "after SIGHUP new connections must get the new certificate"
cp one.key live.key  # now the key does not match the certificate
kill -HUP "$PID_proxy"
for _ in $(seq 50); do grep -q "the current TLS files keep serving" proxy.log && break; sleep 0.1; done
grep -q "reload refused: TLS: the key in .* does not match" proxy.log || fail "a bad reload must be refused with the reason"
subject | grep -q "CN = proxy-two" || fail "after a refused reload the current certificate must keep serving"
code=$(tls_curl -o /dev/null -w '%{http_code}' "$url/health")
[ "$code" = 200 ] || fail "serving after a refused reload: $code"
echo "PASS tls"
