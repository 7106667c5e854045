#!/usr/bin/env bash
# The command-line convention of every binary (CONTRIBUTING.md, "Command lines"): --version prints
# one line "<binary> <version> ..." and exits 0; --help exits 0 and lists --version; an unknown
# flag is a message on stderr naming it, nothing on stdout, and status 2; a near miss of a flag
# gets "did you mean".
set -euo pipefail
version=${1:?usage: cli_convention_test.sh VERSION BINARY...}
shift
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

for bin in "$@"; do
  name=$(basename "$bin")
  st=0; "$bin" --version >"$work/version" 2>"$work/err" || st=$?
  [ "$st" -eq 0 ] || fail "$name --version: exit $st ($(cat "$work/err"))"
  [ "$(wc -l <"$work/version")" -eq 1 ] || fail "$name --version: not one line: $(cat "$work/version")"
  read -r first second _ <"$work/version"
  [ "$first $second" == "$name $version" ] ||
    fail "$name --version printed '$(cat "$work/version")', want '$name $version ...'"

  st=0; "$bin" --help >"$work/help" 2>&1 || st=$?
  [ "$st" -eq 0 ] || fail "$name --help: exit $st"
  grep -q -- "--version" "$work/help" || fail "$name --help does not list --version"

  st=0; "$bin" --no-such-flag-anywhere >"$work/out" 2>"$work/err" || st=$?
  [ "$st" -eq 2 ] || fail "$name with an unknown flag: exit $st, want 2"
  if [ -s "$work/out" ]; then fail "$name with an unknown flag wrote to stdout: $(cat "$work/out")"; fi
  grep -q -- "--no-such-flag-anywhere" "$work/err" || fail "$name does not name the flag: $(cat "$work/err")"

  # The binaries whose first argument is not a flag (omni-serve: the model) or that take no
  # flags (omni-cuda-info) have nothing to suggest at that position.
  case $name in omni-serve | omni-cuda-info) continue ;; esac
  st=0; "$bin" --verison >"$work/out" 2>"$work/err" || st=$?
  [ "$st" -eq 2 ] || fail "$name --verison: exit $st, want 2"
  grep -q -- "did you mean --version?" "$work/err" || fail "$name --verison: no hint: $(cat "$work/err")"
done
echo "PASS: $# binaries"
