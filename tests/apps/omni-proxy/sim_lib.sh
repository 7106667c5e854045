# Shared helpers of the omni-proxy tests that run real omni-sim engines (sourced after the script
# has read its arguments). Every process started here is stopped on exit; `fail` prints the
# tail of every log in $work.
work=$(mktemp -d)
pids=()
cleanup() {
  # SIGCONT too: a test may have stopped an engine (SIGSTOP), which would never see the TERM.
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; kill -CONT "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; for f in "$work"/*.log; do echo "--- $f"; tail -20 "$f"; done; exit 1; }
. "$(dirname "${BASH_SOURCE[0]}")/../free_port.sh"
wait_port() {
  for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done
  fail "nothing listens on $1"
}
# start_omni_proxy NAME [flags...]: $proxy_bin on an ephemeral port, read back from its log (a port
# picked in advance can be taken by another test's process before the proxy binds it, and the
# requests would then go to that process); sets PROXY_PORT and PROXY_PID; logs to $work/NAME.log.
start_omni_proxy() {
  local name=$1; shift
  "$proxy_bin" --listen-port 0 "$@" >"$work/$name.log" 2>&1 &
  PROXY_PID=$!
  pids+=("$PROXY_PID")
  for _ in $(seq 200); do
    grep -q "listening on http" "$work/$name.log" 2>/dev/null && break
    kill -0 "$PROXY_PID" 2>/dev/null || fail "omni-proxy $name exited: $(tail -3 "$work/$name.log")"
    sleep 0.05
  done
  PROXY_PORT=$(sed -n 's|.*listening on https\{0,1\}://[^ ]*:\([0-9]*\) .*|\1|p' "$work/$name.log" | head -1)
  [ -n "$PROXY_PORT" ] || fail "omni-proxy $name did not start"
}
nixl='{"kv_connector":"NixlConnector","kv_role":"kv_both"}'
# start_sim NAME PORT [flags...]: one omni-sim (DeepSeek-V3 on 8 x H800, NixlConnector or
# $KV_CONFIG, a small KV cache) on PORT with $SIM_ARGS and the extra flags; waits until it
# listens. Its pid is ${pids[-1]}.
start_sim() {
  local name=$1 port=$2; shift 2
  "$sim_bin" --host 127.0.0.1 --port "$port" --model deepseek-ai/DeepSeek-V3 --hardware h800 \
    --tensor-parallel-size 8 --max-model-len 8192 --num-gpu-blocks-override 4096 \
    --kv-transfer-config "${KV_CONFIG:-$nixl}" "${SIM_ARGS[@]}" "$@" >"$work/$name.log" 2>&1 &
  pids+=($!)
  wait_port "$port"
}

# sim NAME [flags...]: one omni-sim (DeepSeek-V3 on 8 x H800, a small KV cache, NixlConnector,
# $SIM_SPEED (default 100) x model time unless a flag says otherwise) on a free port. Sets
# PORT_<NAME>, PID_<NAME> and, in SGLang prefill mode, BOOT_<NAME> (its bootstrap port).
sim() {
  local name=$1; shift
  "$sim_bin" --host 127.0.0.1 --port 0 --model deepseek-ai/DeepSeek-V3 --hardware h800 \
    --tensor-parallel-size 8 --max-model-len 8192 --num-gpu-blocks-override 4096 \
    --kv-transfer-config "$nixl" --disaggregation-bootstrap-port 0 --bootstrap-timeout 5s \
    --speed "${SIM_SPEED:-100}" "$@" >"$work/$name.log" 2>&1 &
  pids+=($!)
  eval "PID_$name=$!"
  for _ in $(seq 200); do grep -q "omni-sim listening on" "$work/$name.log" && break; sleep 0.05; done
  local port boot
  port=$(sed -n 's/.*omni-sim listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$work/$name.log" | head -1)
  [ -n "$port" ] || fail "omni-sim $name did not start"
  boot=$(sed -n 's/.*omni-sim bootstrap listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$work/$name.log" | head -1)
  eval "PORT_$name=$port BOOT_$name=${boot:-0}"
}
