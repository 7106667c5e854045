#!/usr/bin/env python3
"""Scheduling policies compared in omni-cluster: every policy, on the Mooncake and Azure traces,
for several PD cluster sizes and load levels (light to past saturation).

    bench/scheduling/run.py BUILD_DIR [--traces DIR] [--quick] [--out bench/results/scheduling.json]

Writes the results JSON, prints a Markdown table per trace and, per trace, in how many cells omni
is best (ties included) on TTFT p99 and on goodput, and writes SVG charts of TTFT p99 and goodput
against load (docs/img/scheduling/scheduling_<trace>_<size>_<metric>.svg). Goodput here is omni-cluster's
`goodput_offered`: requests within the SLOs per second of the arrival span (docs/omni-cluster.md).
Load level 1.0 is the nominal rate for the cluster size: the trace's own rate scaled by
prefill_instances / 4 (Mooncake) or prefill_instances x 4 (Azure).
"""
import argparse
import json
import os
import subprocess
import sys

POLICIES = ["round-robin", "least-load", "sglang-cache-aware", "llm-d", "dynamo", "omni-anchor", "omni"]
SIZES = [(2, 1), (8, 4), (64, 32)]
LEVELS = [0.5, 1.0, 1.5, 2.0]
SLO = "ttft=10s,tpot=100ms"
COLOURS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000"]


def run_cell(binary, trace, fmt, prefill, decode, level, nominal_per_prefill, extra):
    scale = prefill * nominal_per_prefill * level
    cmd = [binary, "--trace", trace, "--trace-format", fmt,
           "--prefill-instances", str(prefill), "--decode-instances", str(decode),
           "--tensor-parallel-size", "1", "--data-parallel-size", "8",
           "--policy", ",".join(POLICIES), "--slo", SLO, "--time-scale", f"{1 / scale:.6g}",
           "--sample-interval", "1000000", "--out", "/dev/stdout"] + extra
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    text = out[out.index("[{"):] if "[{" in out else out
    end = text.rindex("]") + 1
    return " ".join(cmd[:-2]), json.loads(text[:end])


def svg_chart(title, ylabel, series, levels):
    width, height, left, top, pw, ph = 560, 300, 60, 30, 340, 220
    ys = [y for _, pts in series for y in pts if y is not None]
    ymax = max(ys) if ys else 1
    ymax = ymax * 1.05 or 1
    px = lambda i: left + i * pw / max(1, len(levels) - 1)
    py = lambda y: top + ph - y / ymax * ph
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">',
             f'<text x="{left}" y="16" font-size="13" font-weight="bold">{title}</text>',
             f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>']
    for k in range(6):
        y = ymax * k / 5
        parts.append(f'<text x="{left - 4}" y="{py(y) + 4:.1f}" text-anchor="end">{y:.3g}</text>')
        parts.append(f'<line x1="{left}" x2="{left + pw}" y1="{py(y):.1f}" y2="{py(y):.1f}" stroke="#eee"/>')
    for i, level in enumerate(levels):
        parts.append(f'<text x="{px(i):.1f}" y="{top + ph + 14}" text-anchor="middle">{level:g}x</text>')
    parts.append(f'<text x="{left + pw / 2}" y="{height - 6}" text-anchor="middle">load (x nominal)</text>')
    parts.append(f'<text x="12" y="{top + ph / 2}" transform="rotate(-90 12 {top + ph / 2})" text-anchor="middle">{ylabel}</text>')
    for n, (name, pts) in enumerate(series):
        colour = COLOURS[n % len(COLOURS)]
        d = " ".join(f"{'M' if i == 0 else 'L'}{px(i):.1f},{py(y):.1f}" for i, y in enumerate(pts))
        parts.append(f'<path d="{d}" fill="none" stroke="{colour}" stroke-width="{2.5 if name == "omni" else 1.5}"/>')
        ly = top + 12 + n * 16
        parts.append(f'<line x1="{left + pw + 10}" x2="{left + pw + 28}" y1="{ly - 4}" y2="{ly - 4}" stroke="{colour}" stroke-width="3"/>')
        parts.append(f'<text x="{left + pw + 32}" y="{ly}">{name}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build")
    parser.add_argument("--traces", default=os.path.join(os.path.dirname(__file__), "../../../shared/traces"))
    parser.add_argument("--quick", action="store_true", help="2P1D and 8P4D, two load levels")
    parser.add_argument("--out", default="bench/results/scheduling.json")
    parser.add_argument("--charts", default="docs/img/scheduling")
    args = parser.parse_args()
    binary = os.path.join(args.build, "bin", "omni-cluster")
    traces = [("mooncake", os.path.join(args.traces, "mooncake_synthetic_trace.jsonl"), 0.25, []),
              ("azure", os.path.join(args.traces, "azure_llm_2023_code.csv"), 4.0,
               ["--system-prompt-tokens", "2048"])]
    sizes = SIZES[:2] if args.quick else SIZES
    levels = [1.0, 2.0] if args.quick else LEVELS
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    os.makedirs(args.charts, exist_ok=True)
    results, md, summary = [], [], []
    for name, path, nominal, extra in traces:
        if not os.path.exists(path):
            print(f"skipping {name}: {path} not found", file=sys.stderr)
            continue
        md.append(f"\n### {name} trace (SLO {SLO})\n")
        md.append("| cluster | load | policy | TTFT p50 (s) | TTFT p99 (s) | TPOT p50 (ms) | goodput offered (req/s) | throughput (req/s) | cache hit | vs oracle |")
        md.append("|---|---|---|---|---|---|---|---|---|---|")
        wins = {"p99": 0, "goodput": 0, "p99_alone": 0, "goodput_alone": 0, "cells": 0, "vs_oracle": []}
        for prefill, decode in sizes:
            curves = {p: {"ttft_p99": [], "goodput": []} for p in POLICIES}
            for level in levels:
                command, cell = run_cell(binary, path, name, prefill, decode, level, nominal, extra)
                oracle = None
                if name == "mooncake":
                    oracle = 0.6512  # tokens hit by an infinite prefix cache (README + our count)
                best_p99 = min(r["ttft_ms"]["p99"] for r in cell)
                best_good = max(r["goodput_offered"] for r in cell)
                ours = next(r for r in cell if r["config"]["policy"] == "omni")
                wins["cells"] += 1
                wins["p99"] += ours["ttft_ms"]["p99"] <= best_p99
                wins["goodput"] += ours["goodput_offered"] >= best_good
                others = [r for r in cell if r is not ours]
                wins["p99_alone"] += all(ours["ttft_ms"]["p99"] < r["ttft_ms"]["p99"] for r in others)
                wins["goodput_alone"] += all(ours["goodput_offered"] > r["goodput_offered"] for r in others)
                if oracle is not None and prefill > 2:
                    wins["vs_oracle"].append(ours["prefix_cache_hit_rate"] / oracle)
                for r in cell:
                    p = r["config"]["policy"]
                    curves[p]["ttft_p99"].append(r["ttft_ms"]["p99"] / 1e3)
                    curves[p]["goodput"].append(r["goodput_offered"])
                    hit = r["prefix_cache_hit_rate"]
                    p99 = r["ttft_ms"]["p99"]
                    p99_text = f"{p99 / 1e3:.2f}"
                    good_text = f"{r['goodput_offered']:.3f}"
                    if p99 <= best_p99:
                        p99_text = f"**{p99_text}**"
                    if r["goodput_offered"] >= best_good:
                        good_text = f"**{good_text}**"
                    vs_oracle = "" if oracle is None else f"{hit / oracle:.0%}"
                    md.append(f"| {prefill}P{decode}D | {level:g}x | {p} | {r['ttft_ms']['p50'] / 1e3:.2f} | "
                              f"{p99_text} | {r['tpot_ms']['p50']:.1f} | {good_text} | "
                              f"{r['request_throughput']:.3f} | {hit:.3f} | {vs_oracle} |")
                    results.append({"trace": name, "prefill": prefill, "decode": decode, "level": level,
                                    "command": command, **r})
                tied = lambda ok: ",".join(r["config"]["policy"] for r in cell if ok(r))
                print(f"{name} {prefill}P{decode}D {level:g}x: best p99 "
                      f"{tied(lambda r: r['ttft_ms']['p99'] <= best_p99)}, best goodput "
                      f"{tied(lambda r: r['goodput_offered'] >= best_good)}", file=sys.stderr)
            for metric, label in (("ttft_p99", "TTFT p99 (s)"), ("goodput", "goodput (req/s)")):
                svg = svg_chart(f"{name} {prefill}P{decode}D: {label}", label,
                                [(p, curves[p][metric]) for p in POLICIES], levels)
                with open(os.path.join(args.charts, f"scheduling_{name}_{prefill}p{decode}d_{metric}.svg"), "w") as f:
                    f.write(svg)
        line = (f"{name}: omni best (ties included) on TTFT p99 in {wins['p99']}/{wins['cells']} cells "
                f"(alone in {wins['p99_alone']}), on goodput in {wins['goodput']}/{wins['cells']} "
                f"(alone in {wins['goodput_alone']})")
        if wins["vs_oracle"]:
            line += (f"; cache hit {min(wins['vs_oracle']):.0%}-{max(wins['vs_oracle']):.0%} of the oracle "
                     f"at 8P4D and larger")
        summary.append(line)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)
    print("\n".join(md) + "\n")
    print("\n".join(summary))


if __name__ == "__main__":
    main()
