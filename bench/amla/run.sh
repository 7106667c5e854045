#!/usr/bin/env bash
# bench/amla/run.sh <build-dir>: the CPU figures of MLA decode attention (docs/amla.md).
# amla-bench times the GEMM baseline (OpenBLAS), our FlashAttention-style kernel (flash) and
# AMLA (amla), interleaved in one process, on h_q = 128, s_q in {1, 2}, b in {1, 4, 16},
# s_k in {1024, 4096, 16384}, with the CPU's bf16 peak measured in the same run. Prints the
# ratios amla/gemm and amla/flash and the peak fractions; writes bench/results/amla.json.
#
# Environment: ITERS (3), THREADS (0 = all CPUs), BATCH, SEQLEN_K, SEQLEN_Q (comma lists),
# OPENBLAS_CORETYPE (passed through; see docs/amla.md for the choice).
set -euo pipefail

build_dir=${1:?usage: run.sh <build-dir>}
repo=$(cd "$(dirname "$0")/../.." && pwd)
bin=$build_dir/bin/amla-bench
[[ -x $bin ]] || { echo "missing $bin (cmake --build $build_dir --target amla-bench)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "missing python3" >&2; exit 1; }

args=(--batch "${BATCH:-1,4,16}" --seqlen-k "${SEQLEN_K:-1024,4096,16384}" --seqlen-q "${SEQLEN_Q:-1,2}"
      --heads 128 --iters "${ITERS:-3}" --threads "${THREADS:-0}" --json)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin" "${args[@]}" >"$work/rows.json"

mkdir -p "$repo/bench/results"
python3 - "$work/rows.json" "$repo/bench/results/amla.json" "${args[*]}" <<'PY'
import datetime, json, os, platform, sys

rows, out, args = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
by_shape = {}
for r in rows:
    by_shape.setdefault((r["seqlen_q"], r["batch"], r["seqlen_k"]), {})[r["kernel"]] = r
first = rows[0]
print(f"CPU peak (best sample, per core-second): bf16 dot {first['peak_bf16_dot_gflops_1core']:.1f} GFLOP/s, "
      f"fp32 FMA {first['peak_fp32_fma_gflops_1core']:.1f} GFLOP/s; threads {first['threads']}; "
      f"gemm baseline: {by_shape[next(iter(by_shape))].get('gemm', {}).get('isa', '-')}")
print(f"{'s_q':>3} {'b':>3} {'s_k':>6} | {'gemm ms':>9} {'flash ms':>9} {'amla ms':>9} | {'amla/gemm':>9} {'amla/flash':>10} | "
      f"{'amla %pk':>8} {'flash %pk':>9} {'gemm %pk':>8}")
summary = []
for (sq, b, sk), k in sorted(by_shape.items()):
    g, f, a = k.get("gemm"), k.get("flash"), k.get("amla")
    ms = lambda r: f"{r['time_ms']:9.2f}" if r else f"{'-':>9}"
    pk = lambda r, w: f"{100 * r['peak_fraction']:{w}.1f}" if r else f"{'-':>{w}}"
    vs_gemm = g["time_ms"] / a["time_ms"] if g and a else None
    vs_flash = f["time_ms"] / a["time_ms"] if f and a else None
    # CPU-time ratios too: the wall-time ones move with whatever else runs on the machine.
    vs_gemm_cpu = g["cpu_ms"] / a["cpu_ms"] if g and a else None
    vs_flash_cpu = f["cpu_ms"] / a["cpu_ms"] if f and a else None
    summary.append({"seqlen_q": sq, "batch": b, "seqlen_k": sk, "amla_vs_gemm": vs_gemm, "amla_vs_flash": vs_flash,
                    "amla_vs_gemm_cpu_time": vs_gemm_cpu, "amla_vs_flash_cpu_time": vs_flash_cpu,
                    "amla_peak_fraction": a["peak_fraction"] if a else None})
    fmt = lambda v, w: f"{v:{w}.2f}x" if v is not None else f"{'-':>{w + 1}}"
    print(f"{sq:>3} {b:>3} {sk:>6} | {ms(g)} {ms(f)} {ms(a)} | {fmt(vs_gemm, 8)} {fmt(vs_flash, 9)} | "
          f"{pk(a, 8)} {pk(f, 9)} {pk(g, 8)}")
print("(ms: median wall time; %pk: FLOPs per CPU-second over one core's measured bf16 peak;"
      " ratios: wall time, CPU-time ratios in the JSON)")
report = {
    "benchmark": "amla",
    "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    "machine": {"host": platform.node(), "cpus": os.cpu_count(),
                "cpu_model": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                                   if l.startswith("model name")), "unknown")},
    "command": f"bench/amla/run.sh <build-dir>  (amla-bench {args})",
    "summary": summary,
    "rows": rows,
}
json.dump(report, open(out, "w"), indent=2)
print(f"written: {out}")
PY
