#!/usr/bin/env bash
# bench/placement/run.sh <build-dir>: omni-placement's planners on synthetic DeepSeek-V3-shaped
# loads (58 layers x 256 experts, Zipf skew, seeded): planning time on 64 devices, rebalancing
# time per layer, and, at equal memory on 32 devices with one redundant slot per device, EPLB vs
# uniform vs layer-wise redundancy; then a sweep of memory budgets of 8 to 10 slots per device per
# layer on average (layer-wise with the whole budget vs uniform and EPLB at floor(budget) slots).
# Seeds 1..SEEDS, each timed REPEATS times (median).
#
# Environment: SEEDS (3), REPEATS (5).
# Output: a table on stdout, bench/results/placement.json and a bar chart placement.svg.
set -euo pipefail

build_dir=${1:?usage: run.sh <build-dir>}
seeds=${SEEDS:-3}
repeats=${REPEATS:-5}
repo=$(cd "$(dirname "$0")/../.." && pwd)
bin=$build_dir/bin/omni-placement-bench
[[ -x $bin ]] || { echo "missing $bin (cmake --preset bench && cmake --build build/bench --target omni-placement-bench)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "missing python3" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for seed in $(seq "$seeds"); do
  echo "seed $seed/$seeds" >&2
  "$bin" "$seed" "$repeats" >"$work/seed.$seed.json"
done

mkdir -p "$repo/bench/results"
python3 - "$work" "$seeds" "$repo/bench/results/placement.json" <<'PY'
import datetime, json, os, platform, statistics, sys

work, seeds, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
runs = [json.load(open(os.path.join(work, f"seed.{s}.json"))) for s in range(1, seeds + 1)]
med = lambda f: statistics.median(f(r) for r in runs)
algos = ("eplb", "eplb_global", "uniform", "layerwise")
sections = ("quality", "quality_mixed_skew")

def quality_summary(section):
    q = {a: {k: med(lambda r: r[section][a][k]) for k in runs[0][section][a]} for a in algos}
    for key in ("layerwise_vs_eplb_reduction", "layerwise_vs_eplb_global_reduction",
                "layerwise_vs_uniform_reduction", "layerwise_slots_min", "layerwise_slots_max"):
        q[key] = med(lambda r: r[section][key])
    return q

summary = {
    "planning_ms": {a: med(lambda r: r["planning"][f"{a}_ms"]) for a in ("eplb", "uniform", "layerwise")},
    "rebalance_ms_per_layer": med(lambda r: r["rebalance"]["per_layer_ms"]),
}
for section in sections:
    summary[section] = quality_summary(section)

# Budget sweep: per budget, medians over seeds of every number in the row (rows in the same
# order in every run).
sweeps = ("budget_sweep", "budget_sweep_mixed_skew")
sweep_algos = ("layerwise", "uniform", "eplb_global", "eplb")
def sweep_summary(section):
    rows = []
    for i, first in enumerate(runs[0][section]):
        row = {}
        for k, v in first.items():
            if isinstance(v, dict):
                row[k] = {m: med(lambda r: r[section][i][k][m]) for m in v}
            else:
                row[k] = med(lambda r: r[section][i][k])
        row["layerwise_layers_with_redundancy_per_seed"] = [
            r[section][i]["layerwise_layers_with_redundancy"] for r in runs]
        rows.append(row)
    return rows
for section in sweeps:
    summary[section] = sweep_summary(section)
report = {
    "benchmark": "placement",
    "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    "machine": {"host": platform.node(), "kernel": platform.release(), "cpus": os.cpu_count(),
                "cpu_model": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                                   if l.startswith("model name")), "unknown")},
    "settings": {"SEEDS": seeds, "REPEATS": runs[0]["repeats"]},
    "command": "bench/placement/run.sh <build-dir>",
    "summary_median_over_seeds": summary,
    "runs": runs,
}
with open(out, "w") as f:
    json.dump(report, f, indent=2)

p = summary["planning_ms"]
print(f"planning 58x256 on 64 devices (median ms): eplb {p['eplb']:.2f}  uniform {p['uniform']:.2f}  "
      f"layerwise {p['layerwise']:.2f}   (target <= 100)")
print(f"rebalancing: {summary['rebalance_ms_per_layer']:.3f} ms per layer   (target <= 10)")
titles = {"quality": "Zipf s=1.0 in every layer", "quality_mixed_skew": "Zipf s from 0.6 to 1.4 across layers"}
for section in sections:
    q = summary[section]
    print(f"\nDeepSeek-V3 shape, 32 devices, 9 slots/device (one redundant), {titles[section]}, median of {seeds} seeds:")
    print(f"{'algorithm':<12} {'mean max/mean':>14} {'sum max load':>14} {'locality max/mean':>18} {'cross-node':>11}")
    for a in algos:
        print(f"{a:<12} {q[a]['mean_imbalance']:>14.4f} {q[a]['sum_max_device_load']:>14.0f} "
              f"{q[a]['locality_mean_imbalance']:>18.4f} {q[a]['cross_node_share']:>11.3f}")
    print(f"layer-wise sum of max load vs EPLB hierarchical: {100 * q['layerwise_vs_eplb_reduction']:.1f}% lower "
          f"(target >= 5%); vs EPLB global: {100 * q['layerwise_vs_eplb_global_reduction']:.1f}%; "
          f"vs uniform: {100 * q['layerwise_vs_uniform_reduction']:.1f}%; layer-wise slots/device "
          f"{q['layerwise_slots_min']:.0f}..{q['layerwise_slots_max']:.0f}")

sweep_titles = {"budget_sweep": titles["quality"], "budget_sweep_mixed_skew": titles["quality_mixed_skew"]}
for section in sweeps:
    print(f"\nBudget sweep, 32 devices, {sweep_titles[section]}, median of {seeds} seeds: sum of max device load "
          f"(mean max/mean); baselines at floor(budget) slots/device, the most that fits the same memory")
    print(f"{'budget':>6} {'slots':>5} {'layer-wise':>18} {'uniform':>18} {'EPLB global':>18} {'EPLB (8 groups)':>18} "
          f"{'vs uniform':>10} {'vs global':>10} {'vs EPLB':>8} {'layers+':>8}")
    for row in summary[section]:
        cells = " ".join(f"{row[a]['sum_max_device_load']:>9.0f} ({row[a]['mean_imbalance']:.4f})" for a in sweep_algos)
        print(f"{row['budget_slots_per_device']:>6.2f} {row['total_slots_per_device']:>5.0f} {cells} "
              f"{100 * row['layerwise_vs_uniform_reduction']:>9.2f}% {100 * row['layerwise_vs_eplb_global_reduction']:>9.2f}% "
              f"{100 * row['layerwise_vs_eplb_reduction']:>7.2f}% {row['layerwise_layers_with_redundancy']:>5.0f}/58")
    print("(slots: total_slots_per_device = round(58 x budget); vs X: layer-wise sum of max load lower by; "
          "layers+: layers given more than 8 slots/device by layer-wise)")

# Charts (SVG, no dependencies): placement.svg — the sum of max device load per algorithm and
# load set, under EPLB's even-split model and under locality-first routing (the load model of
# the routing tables); placement_sweep.svg — the same sum against the memory budget.
svg_path = out[:-len(".json")] + ".svg"
colors = {"eplb": "#c0504d", "eplb_global": "#f79646", "uniform": "#4f81bd", "layerwise": "#9bbb59"}
models = [("sum_max_device_load", "even split"), ("locality_sum_max_device_load", "locality-first routing")]
top = max(summary[s][a][m] for s in sections for a in algos for m, _ in models)
bar, gap, height = 30, 70, 220
groups = [(s, m, label) for s in sections for m, label in models]
width = 60 + len(groups) * (len(algos) * bar + gap) + 120
parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height + 86}" font-family="sans-serif" font-size="11">',
         '<rect width="100%" height="100%" fill="white"/>',
         '<text x="10" y="14">sum over layers of max device load, DeepSeek-V3 shape, 32 devices, 9 slots/device (lower is better)</text>']
x = 50
for section, metric, label in groups:
    for a in algos:
        v = summary[section][a][metric]
        h = height * v / top
        parts.append(f'<rect x="{x}" y="{30 + height - h:.1f}" width="{bar - 4}" height="{h:.1f}" fill="{colors[a]}"/>')
        parts.append(f'<text x="{x}" y="{26 + height - h:.1f}" font-size="9">{v / 1000:.0f}k</text>')
        x += bar
    parts.append(f'<text x="{x - len(algos) * bar}" y="{height + 46}" font-size="9">{titles[section]}</text>')
    parts.append(f'<text x="{x - len(algos) * bar}" y="{height + 60}" font-size="10">{label}</text>')
    x += gap
for i, a in enumerate(algos):
    parts.append(f'<rect x="{x}" y="{40 + 18 * i}" width="12" height="12" fill="{colors[a]}"/><text x="{x + 16}" y="{50 + 18 * i}">{a}</text>')
parts.append("</svg>")
with open(svg_path, "w") as f:
    f.write("\n".join(parts))

sweep_path = out[:-len(".json")] + "_sweep.svg"
pw, ph, left, top_pad = 300, 200, 60, 40
parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + len(sweeps) * (pw + 40) + 130}" height="{ph + 90}" font-family="sans-serif" font-size="11">',
         '<rect width="100%" height="100%" fill="white"/>',
         '<text x="10" y="14">sum of max device load against memory (slots per device per layer, on average); baselines use floor(budget)</text>']
for k, section in enumerate(sweeps):
    rows = summary[section]
    xs = [r["budget_slots_per_device"] for r in rows]
    ymax = max(r[a]["sum_max_device_load"] for r in rows for a in sweep_algos)
    x0 = left + k * (pw + 40)
    px = lambda b: x0 + pw * (b - xs[0]) / (xs[-1] - xs[0])
    py = lambda v: top_pad + ph - ph * v / ymax
    parts.append(f'<line x1="{x0}" y1="{top_pad + ph}" x2="{x0 + pw}" y2="{top_pad + ph}" stroke="black"/>')
    parts.append(f'<line x1="{x0}" y1="{top_pad}" x2="{x0}" y2="{top_pad + ph}" stroke="black"/>')
    for b in xs:
        parts.append(f'<text x="{px(b) - 10:.1f}" y="{top_pad + ph + 14}" font-size="9">{b:g}</text>')
    parts.append(f'<text x="{x0 - 50}" y="{top_pad + 8}" font-size="9">{ymax / 1000:.0f}k</text>')
    parts.append(f'<text x="{x0 - 20}" y="{top_pad + ph}" font-size="9">0</text>')
    for a in sweep_algos:
        pts = " ".join(f"{px(r['budget_slots_per_device']):.1f},{py(r[a]['sum_max_device_load']):.1f}" for r in rows)
        parts.append(f'<polyline points="{pts}" fill="none" stroke="{colors[a]}" stroke-width="2"/>')
    parts.append(f'<text x="{x0}" y="{top_pad + ph + 32}" font-size="10">{sweep_titles[section]}</text>')
for i, a in enumerate(sweep_algos):
    lx = left + len(sweeps) * (pw + 40)
    parts.append(f'<rect x="{lx}" y="{40 + 18 * i}" width="12" height="12" fill="{colors[a]}"/><text x="{lx + 16}" y="{50 + 18 * i}">{a}</text>')
parts.append("</svg>")
with open(sweep_path, "w") as f:
    f.write("\n".join(parts))
print(f"written: {out}, {svg_path}, {sweep_path}")
PY
