#!/usr/bin/env bash
# bench/proxy/run.sh <build-dir>: omni-proxy against its baselines, side by side, in
# alternating rounds (A/B/A/B...) so that drift on a shared machine hits both alike.
#
#   latency     one client, one request at a time: engine directly vs through omni-proxy
#               (aggregated mode), non-streaming and streaming; added p50/p99 = proxy - direct;
#               the same through nginx, for the floor a plain reverse proxy reaches here
#   throughput  wrk, small POSTs, 64 connections: omni-proxy on one I/O thread vs nginx as a
#               plain reverse proxy (one worker, upstream keep-alive) to the same engine
#   sse         50 concurrent streams of 200 events: events/s directly vs through omni-proxy,
#               and per second of the proxy's CPU time (/proc/PID/stat)
#
# The engine is omni-fake-engine answering at once (no token delay). Environment: ROUNDS (3),
# DURATION (5s), CONNECTIONS (64). Output: tables on stdout, bench/results/proxy.json.
set -euo pipefail

build_dir=${1:?usage: run.sh <build-dir>}
rounds=${ROUNDS:-3}
duration=${DURATION:-5s}
connections=${CONNECTIONS:-64}
repo=$(cd "$(dirname "$0")/../.." && pwd)
bin=$build_dir/bin
for b in omni-proxy omni-fake-engine omni-proxy-load; do
  [[ -x $bin/$b ]] || { echo "missing $bin/$b (cmake --build $build_dir --target $b)" >&2; exit 1; }
done
. "$repo/bench/lib.sh"
bench_require nginx wrk python3

engine_port=$(free_port)
proxy_port=$(free_port)
nginx_port=$(free_port)
"${server_pin[@]}" "$bin/omni-fake-engine" --port "$engine_port" >"$work/engine.log" 2>&1 &
pids+=($!)
"${server_pin[@]}" "$bin/omni-proxy" --listen-port "$proxy_port" --pd-mode aggregated \
  --decode-endpoints "127.0.0.1:$engine_port" --workers 1 --health-interval 0s \
  --log-level warn >"$work/proxy.log" 2>&1 &
proxy_pid=$!
pids+=("$proxy_pid")
# nginx as a plain reverse proxy to the same engine, SSE relayed as it comes (as omni-proxy does).
write_nginx_conf "$nginx_port" "upstream engine { server 127.0.0.1:$engine_port; keepalive 128; }" \
  'location / { proxy_pass http://engine; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_buffering off; }'
start_nginx
wait_for_port "$engine_port"
wait_for_port "$proxy_port"
wait_for_port "$nginx_port"

body='{"model":"fake-model","prompt":"hello","max_tokens":1}'
stream_body='{"model":"fake-model","prompt":"hello","max_tokens":4,"stream":true}'
sse_body='{"model":"fake-model","prompt":"hello","max_tokens":200,"stream":true}'
cat >"$work/post.lua" <<LUA
wrk.method = "POST"
wrk.body = '$body'
wrk.headers["Content-Type"] = "application/json"
LUA

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

load() {  # load <port> <out> <args...>
  local port=$1 out=$2; shift 2
  "${client_pin[@]}" "$bin/omni-proxy-load" --target "127.0.0.1:$port" "$@" >"$out"
}

echo "warming up..." >&2
for port in "$engine_port" "$proxy_port"; do load "$port" /dev/null --concurrency 4 --duration 1s --body "$body"; done
"${client_pin[@]}" wrk -t1 -c"$connections" -d1s -s "$work/post.lua" "http://127.0.0.1:$nginx_port/v1/completions" >/dev/null

for round in $(seq "$rounds"); do
  echo "round $round/$rounds" >&2
  for arm in direct:$engine_port proxy:$proxy_port nginx:$nginx_port; do
    name=${arm%%:*} port=${arm##*:}
    load "$port" "$work/lat.$name.$round.json" --concurrency 1 --duration "$duration" --body "$body"
    load "$port" "$work/slat.$name.$round.json" --concurrency 1 --duration "$duration" --stream --body "$stream_body"
    [ "$name" = nginx ] && continue
    # The proxy's CPU time (user + system, clock ticks) over its SSE arm: events per CPU-second.
    [ "$name" = proxy ] && cpu_ticks "$proxy_pid" >"$work/sse_ticks.$round.before"
    load "$port" "$work/sse.$name.$round.json" --concurrency 50 --duration "$duration" --stream --body "$sse_body"
    [ "$name" = proxy ] && cpu_ticks "$proxy_pid" >"$work/sse_ticks.$round.after"
  done
  for arm in nginx:$nginx_port proxy:$proxy_port; do
    name=${arm%%:*} port=${arm##*:}
    "${client_pin[@]}" wrk -t1 -c"$connections" -d"$duration" -s "$work/post.lua" \
      "http://127.0.0.1:$port/v1/completions" >"$work/wrk.$name.$round.txt"
  done
done

mkdir -p "$repo/bench/results"
python3 - "$work" "$rounds" "$repo/bench/results/proxy.json" <<'PY'
import datetime, json, os, platform, re, statistics, sys

work, rounds, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
med = statistics.median
def js(kind, name):
    return [json.load(open(os.path.join(work, f"{kind}.{name}.{r}.json"))) for r in range(1, rounds + 1)]
def rps(name):
    runs = []
    for r in range(1, rounds + 1):
        text = open(os.path.join(work, f"wrk.{name}.{r}.txt")).read()
        runs.append(float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1)))
        assert "Non-2xx" not in text, text
    return runs

report = {"benchmark": "proxy",
          "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
          "machine": {"cpus": os.cpu_count(), "kernel": platform.release(),
                      "cpu_model": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                                         if l.startswith("model name")), "unknown")},
          "settings": {k: os.environ.get(k) for k in ("ROUNDS", "DURATION", "CONNECTIONS")},
          "command": "bench/proxy/run.sh <build-dir>"}
print(f"{'latency (us)':<28} {'direct p50':>11} {'proxy p50':>10} {'added p50':>10} {'direct p99':>11} {'proxy p99':>10} {'added p99':>10}")
for kind, label in (("lat", "non-streaming"), ("slat", "streaming, 4 events")):
    d, p = js(kind, "direct"), js(kind, "proxy")
    d50, p50 = med(x["p50_us"] for x in d), med(x["p50_us"] for x in p)
    d99, p99 = med(x["p99_us"] for x in d), med(x["p99_us"] for x in p)
    added = {"p50_us": p50 - d50, "p99_us": p99 - d99}
    report[f"latency_{kind}"] = {"direct": d, "proxy": p, "median_added": added,
                                 "median_direct_p50_us": d50, "median_proxy_p50_us": p50,
                                 "median_direct_p99_us": d99, "median_proxy_p99_us": p99}
    print(f"{label:<28} {d50:>11.1f} {p50:>10.1f} {added['p50_us']:>10.1f} {d99:>11.1f} {p99:>10.1f} {added['p99_us']:>10.1f}")
    # The floor this machine allows: nginx as a plain reverse proxy, measured the same way.
    g = js(kind, "nginx")
    g50, g99 = med(x["p50_us"] for x in g), med(x["p99_us"] for x in g)
    report[f"latency_{kind}"].update({"nginx": g, "median_nginx_p50_us": g50, "median_nginx_p99_us": g99,
                                      "median_nginx_added": {"p50_us": g50 - d50, "p99_us": g99 - d99}})
    print(f"{'  same through nginx':<28} {d50:>11.1f} {g50:>10.1f} {g50 - d50:>10.1f} {d99:>11.1f} {g99:>10.1f} {g99 - d99:>10.1f}")
n, p = rps("nginx"), rps("proxy")
ratio = med(p) / med(n)
report["throughput"] = {"nginx_rps": n, "proxy_rps": p, "ratio_proxy_over_nginx": ratio}
print(f"\nthroughput, 1 I/O thread, {os.environ.get('CONNECTIONS', '64')} connections: "
      f"nginx {med(n):.0f} req/s, omni-proxy {med(p):.0f} req/s, ratio {ratio:.3f}"
      f"   (rounds: nginx {' '.join(f'{x:.0f}' for x in n)}; proxy {' '.join(f'{x:.0f}' for x in p)})")
d, p = js("sse", "direct"), js("sse", "proxy")
de, pe = med(x["events_per_second"] for x in d), med(x["events_per_second"] for x in p)
complete = all(x["complete_streams"] == x["requests"] for x in d + p)
# Events relayed per second of the proxy's CPU time (its user + system ticks over the arm).
hz = os.sysconf("SC_CLK_TCK")
per_cpu = []
for r, run in enumerate(p, start=1):
    ticks = (int(open(os.path.join(work, f"sse_ticks.{r}.after")).read())
             - int(open(os.path.join(work, f"sse_ticks.{r}.before")).read()))
    per_cpu.append(run["events"] / (ticks / hz) if ticks > 0 else float("nan"))
report["sse"] = {"direct": d, "proxy": p, "median_direct_events_per_s": de,
                 "median_proxy_events_per_s": pe, "ratio": pe / de, "all_streams_complete": complete,
                 "proxy_events_per_cpu_second": per_cpu}
print(f"SSE relay, 50 streams x 200 events: direct {de:.0f} events/s, through omni-proxy {pe:.0f} "
      f"events/s, ratio {pe / de:.3f}, every stream complete: {complete}; "
      f"{med(per_cpu):.0f} events per proxy CPU-second")
with open(out, "w") as f:
    json.dump(report, f, indent=2)
print(f"written: {out}")
PY
