#!/usr/bin/env bash
# The deployment files under deploy/ are checked, not just written:
#   1. Prometheus alert rules: `promtool check rules`, and `promtool test rules` (alerts_test.yml:
#      each alert fires on the series that should fire it, not on healthy ones);
#   2. the Grafana dashboard: valid JSON, and every panel query valid PromQL (promtool checks them
#      as recording rules, Grafana's $__rate_interval and $instance filled in);
#   3. every metric the rules and the dashboard name is one the binaries export: omni-proxy in
#      front of omni-fake-engine (and an unhealthy one, so that a node health change exists) and
#      omni-sim are started, sent a request, and scraped;
#   4. the systemd unit: `systemd-analyze verify` says nothing, and its exposure score is low;
#   5. the Kubernetes manifests: every document parses, the kinds are there, the probes point at
#      /ready and /health, and the ConfigMap's config.yaml is a configuration omni-proxy accepts.
set -euo pipefail
proxy=${1:?usage: deploy_test.sh omni-proxy omni-fake-engine omni-sim SOURCE_DIR}
engine=${2:?missing omni-fake-engine}
sim=${3:?missing omni-sim}
src=${4:?missing the source folder}
deploy=$src/deploy
proxy=$(realpath "$proxy")

. "$(dirname "$0")/lib.sh"

# 1. Alert rules.
promtool check rules "$deploy/prometheus/alerts.yml" >"$work/rules.txt" 2>&1 \
  || { cat "$work/rules.txt"; fail "promtool check rules"; }
(cd "$deploy/prometheus" && promtool test rules alerts_test.yml) >"$work/rules_test.txt" 2>&1 \
  || { cat "$work/rules_test.txt"; fail "promtool test rules"; }

# 2. The dashboard's queries as recording rules.
dashboard=$deploy/grafana/omni-proxy.json
jq -e '.panels | length > 0' "$dashboard" >/dev/null || fail "the dashboard has no panel"
{
  echo "groups:"
  echo "  - name: dashboard"
  echo "    rules:"
  jq -r '[.panels[].targets[].expr] | to_entries[] | "      - record: dashboard:query\(.key)\n        expr: \(.value | gsub("\\$__rate_interval"; "5m") | gsub("\\$instance"; ".*") | @json)"' "$dashboard"
} >"$work/dashboard_rules.yml"
promtool check rules "$work/dashboard_rules.yml" >"$work/dashboard_check.txt" 2>&1 \
  || { cat "$work/dashboard_check.txt"; fail "a dashboard query is not valid PromQL"; }
printf 'groups:\n  - name: x\n    rules:\n      - record: x:y\n        expr: "rate(x[5m]"\n' >"$work/bad_rules.yml"
promtool check rules "$work/bad_rules.yml" >/dev/null 2>&1 && fail "promtool accepts bad PromQL (the check is void)"

# 3. Every metric named is exported.
"$engine" --port-file "$work/engine.port" >"$work/engine.log" 2>&1 &
pids+=($!)
wait_for "$work/engine.port" . "$!"
"$engine" --port-file "$work/sick.port" --unhealthy >"$work/sick.log" 2>&1 &
pids+=($!)
wait_for "$work/sick.port" . "$!"
# One that answers 503: its errors are counted per node and kind (it always passes its probe).
"$engine" --port-file "$work/failing.port" --fail-status 503 >"$work/failing.log" 2>&1 &
pids+=($!)
wait_for "$work/failing.port" . "$!"
"$proxy" --listen-port 0 --pd-mode aggregated --health-interval 100ms \
  --decode-endpoints "127.0.0.1:$(cat "$work/engine.port"),127.0.0.1:$(cat "$work/sick.port"),127.0.0.1:$(cat "$work/failing.port")" \
  >"$work/proxy.log" 2>&1 &
pids+=($!)
wait_for "$work/proxy.log" "listening on http://" "$!"
wait_for "$work/proxy.log" "(decode) down" "$!"
proxy_at=$(sed -n 's|.*listening on http://\([^ ]*\).*|\1|p' "$work/proxy.log" | head -1)
"$sim" --host 127.0.0.1 --port 0 >"$work/sim.log" 2>&1 &
pids+=($!)
wait_for "$work/sim.log" "omni-sim listening on" "$!"
sim_at=$(sed -n 's/.*omni-sim listening on \(127\.0\.0\.1:[0-9]*\).*/\1/p' "$work/sim.log" | head -1)
for at in "$proxy_at" "$sim_at"; do
  for _ in 1 2 3 4; do  # the proxy alternates between its two usable nodes, retrying the 503s
    status=$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
      --data-binary '{"prompt":"Hello","max_tokens":4}' "http://$at/v1/completions")
    [ "$status" = 200 ] || fail "$at: /v1/completions answered $status"
  done
  curl -sf "http://$at/metrics" >>"$work/exported.txt" || fail "$at: /metrics"
done
awk '$1 == "#" && $2 == "TYPE" { print $3 }' "$work/exported.txt" | sort -u >"$work/families.txt"
echo up >>"$work/families.txt"  # Prometheus's own, per scrape target
grep -ohE '\b(omni_proxy_[a-z0-9_]+|process_[a-z_]+|vllm:[a-z0-9_:]+|up)\b' \
  "$deploy/prometheus/alerts.yml" "$dashboard" | sort -u >"$work/named.txt"
[ "$(wc -l <"$work/named.txt")" -gt 10 ] || fail "too few metric names found in the deploy files"
missing=()
while read -r name; do
  family=$name
  grep -qxF "$family" "$work/families.txt" || family=$(echo "$name" | sed -E 's/_(bucket|sum|count)$//')
  grep -qxF "$family" "$work/families.txt" || missing+=("$name")
done <"$work/named.txt"
[ "${#missing[@]}" -eq 0 ] || fail "deploy files name metrics nothing exports: ${missing[*]}"

# 4. The systemd unit, pointed at the built binary.
if command -v systemd-analyze >/dev/null; then
  sed "s|/usr/local/bin/omni-proxy|$proxy|" "$deploy/systemd/omni-proxy.service" >"$work/omni-proxy.service"
  systemd-analyze verify "$work/omni-proxy.service" >"$work/verify.txt" 2>&1 \
    || { cat "$work/verify.txt"; fail "systemd-analyze verify"; }
  [ ! -s "$work/verify.txt" ] || { cat "$work/verify.txt"; fail "systemd-analyze verify has remarks"; }
  printf '[Service]\nExecStart=/bin/true\nBogusKey=1\n' >"$work/bogus.service"
  systemd-analyze verify "$work/bogus.service" 2>&1 | grep -q BogusKey \
    || fail "systemd-analyze verify does not report an unknown key (the check is void)"
  exposure=$(systemd-analyze security --offline=yes "$work/omni-proxy.service" 2>&1 \
    | sed -n 's/.*Overall exposure level for .*: \([0-9.]*\).*/\1/p')
  [ -n "$exposure" ] || fail "no exposure level from systemd-analyze security"
  awk -v e="$exposure" 'BEGIN { exit !(e <= 2.0) }' || fail "the unit's exposure level is $exposure (want <= 2.0)"
else
  echo "skipped: systemd-analyze is not installed, the systemd unit is not verified"
fi

# 5. Kubernetes manifests.
python3 - "$deploy/kubernetes/omni-proxy.yaml" "$work/k8s_config.yaml" <<'PY' || fail "Kubernetes manifests"
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
kinds = {d["kind"]: d for d in docs}
for kind in ("ConfigMap", "Deployment", "Service", "PodDisruptionBudget"):
    assert kind in kinds, f"no {kind}"
    assert kinds[kind]["metadata"]["name"], f"{kind} without a name"
dep = kinds["Deployment"]["spec"]
labels = dep["selector"]["matchLabels"]
assert dep["template"]["metadata"]["labels"].items() >= labels.items(), "selector does not match the pods"
c = dep["template"]["spec"]["containers"][0]
assert c["readinessProbe"]["httpGet"]["path"] == "/ready", "readiness must be /ready"
assert c["livenessProbe"]["httpGet"]["path"] == "/health", "liveness must be /health"
assert kinds["Service"]["spec"]["selector"].items() <= labels.items(), "the Service selects no pod"
assert kinds["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"] == labels
assert dep["replicas"] >= 2 and kinds["PodDisruptionBudget"]["spec"]["minAvailable"] >= 1
open(sys.argv[2], "w").write(kinds["ConfigMap"]["data"]["config.yaml"])
PY
"$proxy" --config "$work/k8s_config.yaml" --print-config >"$work/k8s_effective.yaml" 2>"$work/k8s_err.txt" \
  || { cat "$work/k8s_err.txt"; fail "omni-proxy refuses the ConfigMap's config.yaml"; }

echo "ok: alert rules, dashboard, systemd unit and Kubernetes manifests checked; $(wc -l <"$work/named.txt") metric names all exported"
