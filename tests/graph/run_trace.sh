#!/usr/bin/env bash
# run_trace.sh — `graphgate run --trace` prints one JSON record per node on stderr; a node
# that yielded undefined has no "output" key (undefined is not null), a node that yielded
# null has "output": null. Prints "N passed, N failed".
set -uo pipefail
src=${GG_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${GG_BUILDDIR:-$src/build}
gg=$build/src/graphgate
[ -x "$gg" ] || { echo "SKIP: $gg not built"; exit 77; }
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/g.yaml" <<'YAML'
version: "1.0"
server: {name: trace, version: "1.0.0"}
tools:
  - name: t
    description: undefined, null and a value, traced
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: undef}
      - {id: undef, type: transform, transform: {expr: '$.nothing'}, next: nul}
      - {id: nul, type: transform, transform: {expr: 'null'}, next: val}
      - {id: val, type: transform, transform: {expr: '{"v": 1}'}, next: exit}
      - {id: exit, type: exit}
YAML

out=$("$gg" run "$tmp/g.yaml" t --trace 2>"$tmp/trace")
rc=$?
if [ $rc -eq 0 ] && [ "$out" = '{"v":1}' ]; then ok; else bad "run: rc=$rc out='$out' $(head -2 "$tmp/trace")"; fi
if [ "$(wc -l <"$tmp/trace")" = 5 ]; then ok; else bad "expected 5 trace lines: $(cat "$tmp/trace")"; fi
line() { grep "\"nodeId\":\"$1\"" "$tmp/trace"; }
if line undef | grep -q '"nodeType":"transform"' && ! line undef | grep -q '"output"'; then ok
else bad "undefined output must leave the key out: $(line undef)"; fi
if line nul | grep -q '"output":null'; then ok; else bad "null output must be printed: $(line nul)"; fi
if line val | grep -q '"output":{"v":1}'; then ok; else bad "object output: $(line val)"; fi
if line exit | grep -q '"output":{"v":1}'; then ok; else bad "exit output: $(line exit)"; fi
# every record is one JSON object on one line
if ! grep -qv '^{.*}$' "$tmp/trace"; then ok; else bad "trace lines are not single JSON objects: $(cat "$tmp/trace")"; fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
