#!/usr/bin/env bash
# bench/proxy/tls.sh <build-dir>: HTTPS on omni-proxy against nginx terminating TLS in front of
# the same engine, side by side in alternating rounds. Both: one worker pinned to core 0, TLS 1.3
# with the same OpenSSL and the suite it picks (TLS_AES_256_GCM_SHA384), a P-256 ECDSA
# certificate, keep-alive to the client and to the engine (omni-fake-engine, answering at once).
# wrk (core 1) measures requests/s with 64 connections, and latency with one connection; the
# plain-HTTP omni-proxy runs as a third arm, for TLS's own cost.
# Environment: ROUNDS (3), DURATION (5s), CONNECTIONS (64). Output: a table on stdout.
set -euo pipefail
build_dir=${1:?usage: tls.sh <build-dir>}
rounds=${ROUNDS:-3}
duration=${DURATION:-5s}
connections=${CONNECTIONS:-64}
repo=$(cd "$(dirname "$0")/../.." && pwd)
bin=$build_dir/bin
. "$repo/bench/lib.sh"
bench_require nginx wrk openssl python3

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$work/key.pem" \
  -out "$work/cert.pem" -subj /CN=127.0.0.1 -days 2 2>/dev/null
engine_port=$(free_port); proxy_port=$(free_port); plain_port=$(free_port)
nginx_plain=$(free_port); nginx_port=$(free_port)
"${server_pin[@]}" "$bin/omni-fake-engine" --port "$engine_port" >"$work/engine.log" 2>&1 &
pids+=($!)
common=(--pd-mode aggregated --decode-endpoints "127.0.0.1:$engine_port" --workers 1
        --health-interval 0s --log-level warn)
"${server_pin[@]}" "$bin/omni-proxy" --listen-port "$proxy_port" "${common[@]}" \
  --tls-cert-file "$work/cert.pem" --tls-key-file "$work/key.pem" >"$work/proxy.log" 2>&1 &
pids+=($!)
"${server_pin[@]}" "$bin/omni-proxy" --listen-port "$plain_port" "${common[@]}" >"$work/plain.log" 2>&1 &
pids+=($!)
write_nginx_conf "$nginx_plain" "upstream engine { server 127.0.0.1:$engine_port; keepalive 128; }" \
  "listen 127.0.0.1:$nginx_port ssl; ssl_certificate $work/cert.pem; ssl_certificate_key $work/key.pem;
   ssl_protocols TLSv1.2 TLSv1.3; ssl_session_cache shared:SSL:10m;
   location / { proxy_pass http://engine; proxy_http_version 1.1; proxy_set_header Connection \"\"; proxy_buffering off; }"
start_nginx
for p in "$engine_port" "$proxy_port" "$plain_port" "$nginx_port"; do wait_for_port "$p"; done

cat >"$work/post.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"model":"fake-model","prompt":"hello","max_tokens":1}'
wrk.headers["Content-Type"] = "application/json"
LUA
run_wrk() {  # run_wrk URL CONNECTIONS OUT
  "${client_pin[@]}" wrk -t1 -c"$2" -d"$duration" --latency -s "$work/post.lua" "$1/v1/completions" >"$3"
}
echo | openssl s_client -connect "127.0.0.1:$proxy_port" 2>/dev/null | grep -E "^(New|Protocol|Cipher)" | head -2 >&2
echo | openssl s_client -connect "127.0.0.1:$nginx_port" 2>/dev/null | grep -E "^(New|Protocol|Cipher)" | head -2 >&2
for url in "https://127.0.0.1:$proxy_port" "https://127.0.0.1:$nginx_port" "http://127.0.0.1:$plain_port"; do
  "${client_pin[@]}" wrk -t1 -c8 -d1s -s "$work/post.lua" "$url/v1/completions" >/dev/null
done
for round in $(seq "$rounds"); do
  echo "round $round/$rounds" >&2
  for arm in "proxy_tls https://127.0.0.1:$proxy_port" "nginx_tls https://127.0.0.1:$nginx_port" \
             "proxy_plain http://127.0.0.1:$plain_port"; do
    set -- $arm
    run_wrk "$2" "$connections" "$work/rps.$1.$round.txt"
    run_wrk "$2" 1 "$work/lat.$1.$round.txt"
  done
done
python3 - "$work" "$rounds" <<'PY'
import re, statistics, sys, os
work, rounds = sys.argv[1], int(sys.argv[2])
def unit(v, u): return float(v) * {"us": 1, "ms": 1e3, "s": 1e6}[u]
def rps(name): return [float(re.search(r"Requests/sec:\s+([\d.]+)", open(f"{work}/rps.{name}.{r}.txt").read()).group(1)) for r in range(1, rounds + 1)]
def p50(name):
    out = []
    for r in range(1, rounds + 1):
        text = open(f"{work}/lat.{name}.{r}.txt").read()
        assert "Non-2xx" not in text, text
        m = re.search(r"50%\s+([\d.]+)(us|ms|s)", text)
        out.append(unit(m.group(1), m.group(2)))
    return out
med = statistics.median
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
print(f"machine: {os.cpu_count()} cores, {cpu}")
print(f"{'arm':<24} {'req/s (64 conn)':>16} {'p50 us (1 conn)':>16}")
for name, label in (("proxy_tls", "omni-proxy, HTTPS"), ("nginx_tls", "nginx, HTTPS"), ("proxy_plain", "omni-proxy, plain HTTP")):
    print(f"{label:<24} {med(rps(name)):>16.0f} {med(p50(name)):>16.1f}   rounds: {' '.join(f'{x:.0f}' for x in rps(name))}")
print(f"omni-proxy HTTPS / nginx HTTPS requests/s: {med(rps('proxy_tls')) / med(rps('nginx_tls')):.3f}; "
      f"p50 difference {med(p50('proxy_tls')) - med(p50('nginx_tls')):+.1f} us; "
      f"HTTPS / plain for omni-proxy: {med(rps('proxy_tls')) / med(rps('proxy_plain')):.3f}")
PY
