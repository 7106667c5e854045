#!/usr/bin/env bash
# The live status page (GET /dashboard) in a real browser: omni-proxy in front of two omni-sim
# engines (sequential PD), traffic, then headless Chromium loads the page from the proxy's admin
# listener, runs its script, and the rendered DOM is checked:
#   1. both engines are listed by role with their health; the traffic cards count the requests;
#      the recent decisions name the nodes; the TTFT chart has samples;
#   2. numbers change after more traffic (the page reads live state, not a snapshot);
#   3. a client-controlled string (an X-Request-Id made of HTML) is shown as text: no element is
#      created from it and its script never runs;
#   4. the page loads nothing from elsewhere (a Content-Security-Policy of 'none' but itself).
# A screenshot is saved as build/<preset>/dashboard.png. Exits 77 (skipped) without chromium.
set -euo pipefail
proxy_bin=${1:?usage: dashboard_test.sh omni-proxy omni-sim SCREENSHOT}
sim_bin=${2:?missing omni-sim}
screenshot=${3:?missing the screenshot path}
. "$(dirname "$0")/sim_lib.sh"
browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || { echo "skipped: chromium is not installed (scripts/install-deps.sh installs it)"; exit 77; }

sim P --disaggregation-mode prefill
sim D --disaggregation-mode decode
"$proxy_bin" --listen-port 0 --admin-listen 127.0.0.1:0 \
  --prefill-endpoints "127.0.0.1:$PORT_P" --decode-endpoints "127.0.0.1:$PORT_D" \
  --health-interval 200ms >"$work/proxy.log" 2>&1 &
pids+=($!)
for _ in $(seq 200); do grep -q "admin, metrics and probes on" "$work/proxy.log" && break; sleep 0.05; done
traffic=$(sed -n 's|.*listening on http://\([^ ]*\).*|\1|p' "$work/proxy.log" | head -1)
admin=$(sed -n 's|.*admin, metrics and probes on http://\([^ ]*\).*|\1|p' "$work/proxy.log" | head -1)
[ -n "$traffic" ] && [ -n "$admin" ] || fail "omni-proxy did not start"

send() {  # send N [curl args]: N completions through the proxy, each must succeed
  local n=$1; shift
  for _ in $(seq "$n"); do
    code=$(curl -s -o /dev/null -w '%{http_code}' -m 30 -H 'Content-Type: application/json' "$@" \
      --data-binary '{"model":"deepseek-ai/DeepSeek-V3","prompt":"Hello there","max_tokens":4}' \
      "http://$traffic/v1/completions")
    [ "$code" = 200 ] || fail "a completion answered $code"
  done
}

# render OUT: the page's DOM after its script ran (and fetched the admin routes).
render() {
  timeout 60 "$browser" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
    --user-data-dir="$work/chromium" --virtual-time-budget=4000 --dump-dom \
    "http://$admin/dashboard" >"$work/$1.html" 2>"$work/chromium-$1.log" \
    || fail "chromium failed to render the page"
  grep -q 'data-loaded="true"' "$work/$1.html" || { cat "$work/$1.html" | head -50; fail "the page's script did not load its data"; }
}
text_of() {  # text_of FILE ID: the text of the element with that id
  sed -n "s|.*id=\"$2\"[^>]*>\([^<]*\)<.*|\1|p" "$work/$1.html" | head -1
}

# 1. The page after some traffic.
send 3
curl -sf -D "$work/page.headers" -o "$work/page.html" "http://$admin/dashboard" || fail "GET /dashboard"
grep -qi "^content-security-policy: default-src 'none'" "$work/page.headers" || fail "no Content-Security-Policy"
grep -qiE '<script[^>]+src=|<link[^>]+href=|<img|@import|url\(' "$work/page.html" \
  && fail "the page loads something besides itself"
# The only absolute URL allowed is SVG's namespace name (an identifier, never fetched).
others=$(grep -oE 'https?://[^"'"'"' )]+' "$work/page.html" | grep -vx 'http://www.w3.org/2000/svg' || true)
[ -z "$others" ] || fail "the page names other sites: $others"
render first
for role_node in "prefill:127.0.0.1:$PORT_P" "decode:127.0.0.1:$PORT_D"; do
  role=${role_node%%:*}; node=${role_node#*:}
  grep -q "data-node=\"$node\" data-role=\"$role\"" "$work/first.html" || fail "the page does not list $role $node"
done
grep -q 'class="health-up">up<' "$work/first.html" || fail "no engine shown up"
[ "$(text_of first requests-total)" = 3 ] || fail "requests finished: $(text_of first requests-total), want 3"
[ "$(text_of first success-ratio)" = "100.0%" ] || fail "success ratio: $(text_of first success-ratio)"
grep -q "<td>127.0.0.1:$PORT_D</td>" "$work/first.html" || fail "the recent decisions do not name the decode node"
grep -qE 'id="chart-ttft"><div class="summary">p50 [^<]* · 3 samples' "$work/first.html" \
  || fail "the TTFT chart has no samples: $(grep -o 'id="chart-ttft">.\{0,120\}' "$work/first.html")"

# 2. Live: more traffic, new numbers.
send 4
# 3. A request id made of HTML and script: shown as text only.
send 1 -H "X-Request-Id: <img/src=x/onerror=document.body.dataset.pwned=1>"
render second
[ "$(text_of second requests-total)" = 8 ] || fail "after more traffic the page shows $(text_of second requests-total) requests, want 8"
grep -q '&lt;img/src=x/onerror=document.body.dataset.pwned=1&gt;' "$work/second.html" \
  || fail "the hostile request id is not shown as text"
grep -q '<img' "$work/second.html" && fail "a client-provided string became an element"
grep -q 'data-pwned' "$work/second.html" && fail "a client-provided script ran"

# The screenshot, for people.
timeout 60 "$browser" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars \
  --user-data-dir="$work/chromium" --virtual-time-budget=4000 --window-size=1280,1000 \
  --screenshot="$screenshot" "http://$admin/dashboard" >"$work/chromium-shot.log" 2>&1 \
  || fail "chromium failed to take the screenshot"
[ -s "$screenshot" ] || fail "no screenshot at $screenshot"
echo "PASS dashboard (screenshot: $screenshot)"
