// GET /dashboard: omni-proxy's live status page. One document with its style and script inline
// (served with a Content-Security-Policy that allows nothing else): it works offline, loads
// nothing from elsewhere, and reads only this proxy's own routes — /admin/nodes,
// /admin/requests, /admin/decisions and /metrics — every two seconds. Every string that comes
// from an engine, a client or the configuration is put in the page with textContent, never as
// HTML. Tested in headless Chromium (tests/apps/omni-proxy/dashboard_test.sh).
#include "gateway_impl.hpp"

namespace omni::proxy {

std::string_view dashboard_page() noexcept {
  static constexpr std::string_view kPage = R"page(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>omni-proxy</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; background: #f6f7f9; color: #1d2330; }
header { background: #1d2330; color: #fff; padding: 10px 16px; display: flex; gap: 16px; align-items: baseline; flex-wrap: wrap; }
header h1 { font-size: 18px; margin: 0; }
header .sub { color: #b9c0cc; }
main { padding: 12px 16px; display: grid; gap: 12px; grid-template-columns: repeat(auto-fit, minmax(320px, 1fr)); }
section { background: #fff; border: 1px solid #dde1e7; border-radius: 6px; padding: 10px 12px; overflow-x: auto; }
section.wide { grid-column: 1 / -1; }
h2 { font-size: 14px; margin: 0 0 8px; color: #4a5568; text-transform: uppercase; letter-spacing: .04em; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { text-align: left; padding: 3px 6px; border-bottom: 1px solid #eef0f3; white-space: nowrap; }
th { color: #718096; font-weight: 600; }
.cards { display: flex; gap: 10px; flex-wrap: wrap; }
.card { flex: 1 1 120px; border: 1px solid #eef0f3; border-radius: 4px; padding: 6px 8px; }
.card .v { font-size: 22px; font-weight: 600; }
.card .k { color: #718096; font-size: 12px; }
.health-up { color: #2f855a; font-weight: 600; }
.health-trial { color: #b7791f; font-weight: 600; }
.health-down, .health-ejected { color: #c53030; font-weight: 600; }
.bar { background: #edf2f7; width: 80px; height: 8px; border-radius: 4px; display: inline-block; vertical-align: middle; }
.bar > span { display: block; height: 8px; border-radius: 4px; background: #3182ce; }
svg { display: block; }
#error { color: #c53030; }
</style>
</head>
<body>
<header>
  <h1>omni-proxy</h1>
  <span class="sub" id="mode">loading…</span>
  <span class="sub">updated <span id="updated">never</span></span>
  <span id="error"></span>
  <span id="token-box" hidden><label>admin token <input id="token" type="password" autocomplete="off"></label></span>
</header>
<main>
  <section class="wide">
    <h2>Traffic</h2>
    <div class="cards">
      <div class="card"><div class="v" id="requests-total">0</div><div class="k">requests finished</div></div>
      <div class="card"><div class="v" id="success-ratio">–</div><div class="k">succeeded</div></div>
      <div class="card"><div class="v" id="in-flight">0</div><div class="k">in flight</div></div>
      <div class="card"><div class="v" id="queue-waiting">0</div><div class="k">waiting for a node</div></div>
      <div class="card"><div class="v" id="prefix-median">–</div><div class="k">median prefix match (tokens)</div></div>
      <div class="card"><div class="v" id="retries">0</div><div class="k">retries</div></div>
    </div>
  </section>
  <section class="wide">
    <h2>Engines</h2>
    <table id="engines">
      <thead><tr><th>node</th><th>role</th><th>group</th><th>health</th><th>draining</th><th>running</th>
        <th>outstanding tokens</th><th>engine running / waiting</th><th>KV usage</th><th>KV events</th><th>failures</th></tr></thead>
      <tbody></tbody>
    </table>
  </section>
  <section><h2>Time to first token</h2><div id="chart-ttft"></div></section>
  <section><h2>Time per output token</h2><div id="chart-tpot"></div></section>
  <section><h2>Queue wait</h2><div id="chart-queue"></div></section>
  <section class="wide">
    <h2>Recent routing decisions</h2>
    <table id="decisions">
      <thead><tr><th>time</th><th>request</th><th>route</th><th>prefill</th><th>decode</th><th>status</th>
        <th>outcome</th><th>retries</th><th>TTFT ms</th><th>e2e ms</th></tr></thead>
      <tbody></tbody>
    </table>
  </section>
</main>
<script>
"use strict";
const token = () => sessionStorage.getItem("omni-admin-token") || "";
document.getElementById("token").addEventListener("change", (e) => {
  sessionStorage.setItem("omni-admin-token", e.target.value);
  refresh();
});

async function get(path, asJson) {
  const headers = token() ? { Authorization: "Bearer " + token() } : {};
  const answer = await fetch(path, { headers, cache: "no-store" });
  if (answer.status === 401 || answer.status === 403) {
    document.getElementById("token-box").hidden = false;
    throw new Error(path + ": " + answer.status + " (an admin token is needed)");
  }
  if (!answer.ok) throw new Error(path + ": " + answer.status);
  return asJson ? answer.json() : answer.text();
}

// Prometheus text format → [{name, labels, value}].
function parseMetrics(text) {
  const samples = [];
  const line = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
  const label = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
  for (const row of text.split("\n")) {
    if (!row || row[0] === "#") continue;
    const m = line.exec(row);
    if (!m) continue;
    const labels = {};
    if (m[2]) for (const l of m[2].matchAll(label)) labels[l[1]] = l[2].replace(/\\(.)/g, "$1");
    samples.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return samples;
}

function total(samples, name, filter) {
  let sum = 0;
  for (const s of samples) {
    if (s.name !== name) continue;
    if (filter && !Object.entries(filter).every(([k, v]) => (v instanceof RegExp ? v.test(s.labels[k]) : s.labels[k] === v))) continue;
    sum += s.value;
  }
  return sum;
}

// A histogram's buckets summed over the samples that pass `filter`: [{le, count}] (not cumulative).
function buckets(samples, family, filter) {
  const cumulative = new Map();
  for (const s of samples) {
    if (s.name !== family + "_bucket") continue;
    if (filter && !Object.entries(filter).every(([k, v]) => (v instanceof RegExp ? v.test(s.labels[k]) : s.labels[k] === v))) continue;
    const le = s.labels.le === "+Inf" ? Infinity : Number(s.labels.le);
    cumulative.set(le, (cumulative.get(le) || 0) + s.value);
  }
  const bounds = [...cumulative.keys()].sort((a, b) => a - b);
  let before = 0;
  return bounds.map((le) => { const c = cumulative.get(le); const out = { le, count: c - before }; before = c; return out; });
}

function quantile(bs, q) {
  const n = bs.reduce((a, b) => a + b.count, 0);
  if (n === 0) return null;
  let seen = 0, lower = 0;
  for (const b of bs) {
    if (seen + b.count >= q * n) {
      if (b.le === Infinity) return lower;
      return lower + (b.le - lower) * ((q * n - seen) / Math.max(b.count, 1));
    }
    seen += b.count;
    if (b.le !== Infinity) lower = b.le;
  }
  return lower;
}

function seconds(v) {
  if (v === null) return "–";
  if (v < 1e-3) return (v * 1e6).toFixed(0) + " µs";
  if (v < 1) return (v * 1e3).toFixed(1) + " ms";
  return v.toFixed(2) + " s";
}

const SVG = "http://www.w3.org/2000/svg";
function chart(id, bs) {
  const box = document.getElementById(id);
  box.replaceChildren();
  const used = bs.filter((b) => b.count > 0);
  const summary = document.createElement("div");
  summary.className = "summary";
  const n = bs.reduce((a, b) => a + b.count, 0);
  summary.textContent = n === 0 ? "no samples yet"
    : `p50 ${seconds(quantile(bs, 0.5))} · p90 ${seconds(quantile(bs, 0.9))} · p99 ${seconds(quantile(bs, 0.99))} · ${n} samples`;
  box.appendChild(summary);
  if (used.length === 0) return;
  const first = bs.indexOf(used[0]), last = bs.indexOf(used[used.length - 1]);
  const shown = bs.slice(first, last + 1);
  const max = Math.max(...shown.map((b) => b.count));
  const w = 300, h = 70, bw = w / shown.length;
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("width", w); svg.setAttribute("height", h + 14);
  shown.forEach((b, i) => {
    const r = document.createElementNS(SVG, "rect");
    const bh = max ? (b.count / max) * h : 0;
    r.setAttribute("x", i * bw + 1); r.setAttribute("y", h - bh);
    r.setAttribute("width", Math.max(bw - 2, 1)); r.setAttribute("height", bh);
    r.setAttribute("fill", "#3182ce");
    const t = document.createElementNS(SVG, "title");
    t.textContent = `≤ ${b.le === Infinity ? "+Inf" : seconds(b.le)}: ${b.count}`;
    r.appendChild(t);
    svg.appendChild(r);
  });
  const axis = document.createElementNS(SVG, "text");
  axis.setAttribute("x", 0); axis.setAttribute("y", h + 12); axis.setAttribute("font-size", "10");
  axis.textContent = `${seconds(first > 0 ? bs[first - 1].le : 0)} … ${shown[shown.length - 1].le === Infinity ? "+Inf" : seconds(shown[shown.length - 1].le)}`;
  svg.appendChild(axis);
  box.appendChild(svg);
}

function cell(row, text, className) {
  const td = document.createElement("td");
  td.textContent = text;
  if (className) td.className = className;
  row.appendChild(td);
  return td;
}

function renderNodes(body) {
  document.getElementById("mode").textContent = `pd_mode ${body.pd_mode} · policy ${body.policy}`;
  const tbody = document.querySelector("#engines tbody");
  tbody.replaceChildren();
  const order = { prefill: 0, decode: 1 };
  const nodes = [...body.nodes].sort((a, b) => (order[a.role] - order[b.role]) || a.name.localeCompare(b.name));
  for (const n of nodes) {
    const tr = document.createElement("tr");
    tr.dataset.node = n.name;
    tr.dataset.role = n.role;
    cell(tr, n.name);
    cell(tr, n.role);
    cell(tr, n.group || "–");
    cell(tr, n.removed ? "removed" : n.health, "health-" + n.health);
    cell(tr, n.draining ? "yes" : "no");
    cell(tr, String(n.running + (n.fleet_running || 0)));
    cell(tr, String(n.outstanding_tokens + (n.fleet_outstanding_tokens || 0)));
    cell(tr, `${n.engine_running} / ${n.engine_waiting}`);
    const kv = cell(tr, "");
    const bar = document.createElement("span"); bar.className = "bar";
    const fill = document.createElement("span"); fill.style.width = Math.round(Math.min(n.engine_kv_usage, 1) * 100) + "%";
    bar.appendChild(fill); kv.appendChild(bar);
    kv.appendChild(document.createTextNode(" " + Math.round(n.engine_kv_usage * 100) + "%"));
    cell(tr, n.kv_events_stale ? "stale" : "ok");
    cell(tr, String(n.failures));
    tbody.appendChild(tr);
  }
}

function renderDecisions(body) {
  const tbody = document.querySelector("#decisions tbody");
  tbody.replaceChildren();
  for (const d of body.decisions.slice(0, 20)) {
    const tr = document.createElement("tr");
    cell(tr, d.time.slice(11, 23));
    cell(tr, d.request_id);
    cell(tr, d.route);
    cell(tr, d.prefill_node || "–");
    cell(tr, d.decode_node || "–");
    cell(tr, String(d.status));
    cell(tr, d.outcome);
    cell(tr, String(d.retries));
    cell(tr, d.ttft_ms === undefined ? "–" : d.ttft_ms.toFixed(1));
    cell(tr, d.e2e_ms.toFixed(1));
    tbody.appendChild(tr);
  }
}

function renderMetrics(samples) {
  const finished = total(samples, "omni_proxy_requests_total");
  const ok = total(samples, "omni_proxy_requests_total", { outcome: "success" });
  document.getElementById("requests-total").textContent = String(finished);
  document.getElementById("success-ratio").textContent = finished ? (100 * ok / finished).toFixed(1) + "%" : "–";
  document.getElementById("in-flight").textContent = String(total(samples, "omni_proxy_requests_in_flight"));
  document.getElementById("queue-waiting").textContent = String(total(samples, "omni_proxy_queue_waiting"));
  document.getElementById("retries").textContent = String(total(samples, "omni_proxy_retries_total"));
  const matched = quantile(buckets(samples, "omni_proxy_prefix_matched_tokens"), 0.5);
  document.getElementById("prefix-median").textContent = matched === null ? "–" : String(Math.round(matched));
  chart("chart-ttft", buckets(samples, "omni_proxy_time_to_first_token_seconds"));
  chart("chart-tpot", buckets(samples, "omni_proxy_time_per_output_token_seconds"));
  chart("chart-queue", buckets(samples, "omni_proxy_request_stage_seconds", { stage: /^waiting_(prefill|decode)$/ }));
}

async function refresh() {
  try {
    const [nodes, decisions, metrics] = await Promise.all([
      get("/admin/nodes", true), get("/admin/decisions", true), get("/metrics", false)]);
    renderNodes(nodes);
    renderDecisions(decisions);
    renderMetrics(parseMetrics(metrics));
    document.getElementById("updated").textContent = new Date().toLocaleTimeString();
    document.getElementById("error").textContent = "";
    document.body.dataset.loaded = "true";
  } catch (e) {
    document.getElementById("error").textContent = String(e.message || e);
  }
}
refresh();
setInterval(refresh, 2000);
</script>
</body>
</html>
)page";
  return kPage;
}

}  // namespace omni::proxy
