#!/usr/bin/env bash
# The `make run` demo must serve every request of its workload through the gateway, write its
# results, and leave no process behind.
set -euo pipefail
demo=$1
build=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# SLOs are judged in model time (the engines run 20x): a 1 ms TTFT objective fails for every
# request, which wall-time SLOs (20x looser) could hide.
BUILD=$build REQUESTS=24 RATE=12 SLO=ttft=1ms OUT=$out bash "$demo" > "$out/stdout" 2>&1 || {
  cat "$out/stdout"; exit 1; }
# The pids the demo started (from its logs' "listening" lines we know the ports; from /proc we
# know who listens): none of them may outlive it.
ports=$(grep -ohE "listening on (http://)?[0-9.]+:[0-9]+" "$out"/*.log | grep -oE "[0-9]+$" || true)
grep -q "Successful requests: *24" "$out/stdout" || { cat "$out/stdout"; echo "FAIL: not all served"; exit 1; }
grep -q "Failed requests: *0" "$out/stdout" || { cat "$out/stdout"; echo "FAIL: failures"; exit 1; }
python3 -c "import json,sys;r=json.load(open(sys.argv[1]));assert r['completed']==24 and r['failed']==0, r" \
  "$out/results.json"
[ "$(wc -l < "$out/requests.jsonl")" -eq 24 ] || { echo "FAIL: per-request lines"; exit 1; }
python3 -c "import json,sys;r=json.load(open(sys.argv[1]));assert r['goodput']==0 and r['time_base']=='model' and r['server_speed']==20, r" \
  "$out/results.json" || { echo "FAIL: the demo's SLOs are not judged in model time"; exit 1; }
grep -q "Times are model time" "$out/stdout" || { echo "FAIL: the table does not say model time"; exit 1; }
# Every request went through the proxy's lifecycle: one access-log outcome each.
outcomes=$(grep '"route":"/v1/completions"' "$out/access.jsonl" | grep -c '"outcome":"success"' || true)
[ "$outcomes" -eq 24 ] || { echo "FAIL: $outcomes successful outcomes in the access log"; exit 1; }
# Nothing left running from this demo.
for port in $ports; do
  if curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$port/health"; then
    echo "FAIL: something still answers on port $port after the demo"; exit 1
  fi
done
echo "make run demo: OK"
