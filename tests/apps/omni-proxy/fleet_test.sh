#!/usr/bin/env bash
# Active-active replicas (issue 19, docs/fleet.md): two omni-proxy replicas share their load over
# a real nats-server on loopback, in front of two fake engines that take one request each
# (limits.node_max_running 1).
#   1. the replicas find each other (/admin/replicas);
#   2. a long stream through replica A runs on one engine; replica B sees it as fleet load on
#      that engine (/admin/nodes, omni_proxy_node_fleet_running) and sends its own request to
#      the other engine — alone it would have picked the busy one (the lowest id on a tie);
#   2b. a placement's KV blocks through A reach B's prefix index (predicted there);
#   2c. B alone is partitioned from NATS (its TCP relay frozen): A forgets B within the lease,
#       B says it is cut off and still serves; healed, they list each other again;
#   3. A is killed (-9): its load is forgotten within the lease, and B no longer lists it;
#   4. nats-server is killed: B says so (/ready body, omni_proxy_fleet_connected 0) and still
#      serves on its own counts; nats-server back on its port: B reconnects.
#   5. a malformed message on the fleet subject is counted and dropped.
source "$(dirname "$0")/lib.sh"

nats_bin=$(command -v nats-server || echo /usr/sbin/nats-server)
[ -x "$nats_bin" ] || fail "nats-server is not installed (scripts/install-deps.sh installs it)"
nats_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
start_nats() {
  "$nats_bin" -a 127.0.0.1 -p "$nats_port" >>"$work/nats.log" 2>&1 &
  PID_nats=$!
  pids+=("$PID_nats")
  for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$nats_port") 2>/dev/null && return 0; sleep 0.05; done
  fail "nats-server did not start"
}
admin() { curl -s -m 2 "http://$1$2"; }
gauge() {  # gauge PROXY NAME-AND-LABELS: the sample's value
  local text
  text=$(curl -s -m 2 "http://$1/metrics")
  awk -v m="$2" '$1 == m {print $2}' <<<"$text"
}
# until_true WHAT CMD...: waits up to 10 s for CMD to succeed.
until_true() {
  local what=$1; shift
  for _ in $(seq 100); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  fail "$what"
}

start_nats
start_engine e1 --token-delay 50ms
start_engine e2 --token-delay 50ms
fleet=(--fleet-nats-url "nats://127.0.0.1:$nats_port" --fleet-name test --fleet-lease 1s
       --fleet-snapshot-period 100ms --hash-seed 0)
pool=(--pd-mode aggregated --decode-endpoints "127.0.0.1:$PORT_e1,127.0.0.1:$PORT_e2"
      --limits-node-max-running 1 --health-interval 0s)
start_proxy A "${pool[@]}" "${fleet[@]}" --fleet-replica-id A
A=$PROXY
# B reaches NATS through a TCP relay that the test can freeze: a network partition of B alone.
relay_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 - "$relay_port" "$nats_port" >"$work/relay.log" 2>&1 <<'PY' &
import asyncio, sys
listen, target = int(sys.argv[1]), int(sys.argv[2])
async def pipe(reader, writer):
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()
async def serve(reader, writer):
    try:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", target)
    except OSError:
        writer.close()
        return
    await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", listen)
    async with server:
        await server.serve_forever()
asyncio.run(main())
PY
PID_relay=$!
pids+=("$PID_relay")
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$relay_port") 2>/dev/null && break; sleep 0.05; done
fleet_b=("${fleet[@]}")
fleet_b[1]="nats://127.0.0.1:$relay_port"
start_proxy B "${pool[@]}" "${fleet_b[@]}" --fleet-replica-id B
B=$PROXY

echo "[$SECONDS s] 1. the replicas find each other" >&2
lists() { admin "$1" /admin/replicas | jq -e --arg r "$2" '.connected and any(.replicas[]; .replica == $r)'; }
until_true "A does not list B: $(admin "$A" /admin/replicas)" lists "$A" B
until_true "B does not list A: $(admin "$B" /admin/replicas)" lists "$B" A

echo "[$SECONDS s] 2. B places on the fleet-wide load" >&2
curl -sN -m 30 -H 'Content-Type: application/json' -H 'X-Request-Id: through-a' \
  --data '{"prompt":"x","max_tokens":100,"stream":true}' "http://$A/v1/completions" \
  >"$work/a.txt" &
a_curl=$!
busy=""
for _ in $(seq 100); do
  busy=$(admin "$B" /admin/nodes | jq -r '.nodes[] | select(.fleet_running == 1) | .name')
  [ -n "$busy" ] && break
  sleep 0.05
done
[ -n "$busy" ] || fail "B never saw A's stream: $(admin "$B" /admin/nodes)"
[ "$(gauge "$B" "omni_proxy_node_fleet_running{pool=\"decode\",node=\"$busy\"}")" = 1 ] ||
  fail "omni_proxy_node_fleet_running on B: $(curl -s "http://$B/metrics" | grep fleet)"
free=127.0.0.1:$PORT_e1
[ "$busy" = "$free" ] && free=127.0.0.1:$PORT_e2
code=$(curl -s -o "$work/b.json" -w '%{http_code}' -m 10 -H 'Content-Type: application/json' \
  -H 'X-Request-Id: through-b' --data '{"prompt":"y","max_tokens":2}' "http://$B/v1/completions")
[ "$code" = 200 ] || fail "B: $code $(cat "$work/b.json")"
on=127.0.0.1:$PORT_e2
jq -e -s 'any(.x_request_id // "" | startswith("through-b"))' "$work/e1.jsonl" >/dev/null 2>&1 &&
  on=127.0.0.1:$PORT_e1
[ "$on" = "$free" ] || fail "B sent its request to $on, the engine A keeps busy"

echo "[$SECONDS s] 2b. a placement's blocks reach the other replica's prefix index" >&2
# 64 token ids: 4 blocks of 16, hashed by both replicas alike (the same --hash-seed).
ids=$(seq -s, 1000 1063)
entries() { gauge "$B" omni_proxy_prefix_index_entries; }
before=$(entries)
code=$(curl -s -o /dev/null -w '%{http_code}' -m 10 -H 'Content-Type: application/json' \
  --data "{\"prompt\":[$ids],\"max_tokens\":2}" "http://$A/v1/completions")
[ "$code" = 200 ] || fail "A: $code"
grown() { [ "$(entries)" -ge $((before + 4)) ]; }
until_true "B's prefix index did not learn A's blocks: $before -> $(entries)" grown

echo "[$SECONDS s] 2c. B alone is cut off from NATS (a partition), then heals" >&2
kill -STOP "$PID_relay"
start=$SECONDS
forgot_b() { admin "$A" /admin/replicas | jq -e 'all(.replicas[]; .replica != "B")'; }
until_true "A still lists B, cut off: $(admin "$A" /admin/replicas)" forgot_b
b_cut() { admin "$B" /ready | jq -e '.fleet.connected == false'; }
until_true "B does not say it is cut off: $(admin "$B" /ready)" b_cut
echo "  A forgot B after $((SECONDS - start)) s; B noticed the partition" >&2
code=$(curl -s -o /dev/null -w '%{http_code}' -m 10 -H 'Content-Type: application/json' \
  --data '{"prompt":"w","max_tokens":2}' "http://$B/v1/completions")
[ "$code" = 200 ] || fail "B stopped serving while partitioned: $code"
kill -CONT "$PID_relay"
until_true "A does not list B after the partition healed: $(admin "$A" /admin/replicas)" lists "$A" B
until_true "B does not list A after the partition healed: $(admin "$B" /admin/replicas)" lists "$B" A

echo "[$SECONDS s] 3. A dies: its load expires within the lease" >&2
kill -9 "$PID_A"
wait "$PID_A" 2>/dev/null || true
wait "$a_curl" 2>/dev/null || true
start=$SECONDS
gone() { admin "$B" /admin/nodes | jq -e 'all(.nodes[]; .fleet_running == 0)' &&
         admin "$B" /admin/replicas | jq -e 'all(.replicas[]; .replica != "A")'; }
until_true "A's load stayed on B: $(admin "$B" /admin/nodes) $(admin "$B" /admin/replicas)" gone
echo "  forgotten after $((SECONDS - start)) s (lease 1 s)" >&2

echo "[$SECONDS s] 4. NATS down, then back" >&2
kill -9 "$PID_nats"
wait "$PID_nats" 2>/dev/null || true
cut_off() { admin "$B" /ready | jq -e '.fleet.connected == false'; }
until_true "B does not say it lost NATS: $(admin "$B" /ready)" cut_off
[ "$(gauge "$B" omni_proxy_fleet_connected)" = 0 ] || fail "omni_proxy_fleet_connected is not 0"
code=$(curl -s -o /dev/null -w '%{http_code}' -m 10 -H 'Content-Type: application/json' \
  --data '{"prompt":"z","max_tokens":2}' "http://$B/v1/completions")
[ "$code" = 200 ] || fail "B stopped serving without NATS: $code"
start_nats
back() { admin "$B" /ready | jq -e '.fleet.connected == true'; }
until_true "B did not reconnect: $(admin "$B" /ready)" back
[ "$(gauge "$B" omni_proxy_fleet_connected)" = 1 ] || fail "omni_proxy_fleet_connected is not 1"

echo "[$SECONDS s] 5. a malformed message is counted and dropped" >&2
python3 - "$nats_port" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.recv(4096)  # INFO
junk = b'{"v":1,"fleet":"test","replica":"evil","kind":"delta"}'
s.sendall(b'CONNECT {"verbose":false}\r\nPUB test.load %d\r\n%s\r\nPING\r\n' % (len(junk), junk))
s.recv(4096)  # PONG
PY
dropped() { [ "$(gauge "$B" 'omni_proxy_fleet_dropped_total{reason="malformed"}')" = 1 ]; }
until_true "the malformed message was not counted: $(curl -s "http://$B/metrics" | grep fleet_dropped)" dropped
admin "$B" /admin/replicas | jq -e 'all(.replicas[]; .replica != "evil")' >/dev/null ||
  fail "a malformed message made a replica"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://$B/health")" = 200 ] || fail "B died"
echo "[$SECONDS s] PASS"
