#!/usr/bin/env bash
# bench/run-all.sh <build-dir>: runs every benchmark's run.sh (bench/<name>/run.sh) in turn.
# Each prints its table and writes bench/results/<name>.json. `make bench` calls this.
set -euo pipefail
build_dir=${1:?usage: run-all.sh <build-dir>}
here=$(cd "$(dirname "$0")" && pwd)
status=0
for script in "$here"/*/run.sh; do
  name=$(basename "$(dirname "$script")")
  echo "== bench/$name"
  "$script" "$build_dir" || { echo "bench/$name failed" >&2; status=1; }
done
exit $status
