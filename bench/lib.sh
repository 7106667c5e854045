# Shared by the benchmark scripts (sourced): a work folder and the pids of everything started,
# both cleaned up on exit; servers pinned to core 0 and load generators to core 1 when there
# are two cores (on a small machine they would otherwise compete for CPU); ports; nginx.
#
#   bench_require TOOL...                   exits naming the first missing tool
#   free_port, wait_for_port PORT
#   write_nginx_conf PORT HTTP_BLOCK SERVER_BLOCK   $work/nginx/nginx.conf: one worker, no
#                                           access log, endless keep-alive, temp paths in $work
#   start_nginx                             nginx on that config, pinned like a server
work=$(mktemp -d)
pids=()
bench_cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap bench_cleanup EXIT INT TERM

server_pin=()
client_pin=()
if command -v taskset >/dev/null && [[ $(nproc) -ge 2 ]]; then
  server_pin=(taskset -c 0)
  client_pin=(taskset -c 1)
fi

bench_require() {
  local tool
  for tool; do command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 1; }; done
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

wait_for_port() {
  for _ in $(seq 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 0.05
  done
  echo "nothing listens on port $1" >&2
  return 1
}

write_nginx_conf() {  # PORT HTTP_BLOCK SERVER_BLOCK
  mkdir -p "$work/nginx/logs"
  cat >"$work/nginx/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $work/nginx/nginx.pid;
error_log $work/nginx/logs/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 100000000;
  keepalive_timeout 60s;
  client_body_temp_path $work/nginx/client_body;
  proxy_temp_path $work/nginx/proxy;
  fastcgi_temp_path $work/nginx/fastcgi;
  uwsgi_temp_path $work/nginx/uwsgi;
  scgi_temp_path $work/nginx/scgi;
  $2
  server {
    listen 127.0.0.1:$1;
    $3
  }
}
CONF
}

start_nginx() {
  "${server_pin[@]}" nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" 2>"$work/nginx/stderr" &
  pids+=($!)
}
