#!/bin/sh
# json-logic-js's own tests.json, with json-logic-js semantics.
dir=${GG_CONFORMANCE_DIR:-${GG_SHARED:-../shared}/conformance}/jsonlogic
[ -f "$dir/tests.json" ] || {
  echo "SKIP: JSON Logic tests.json not found in $dir (set GG_CONFORMANCE_DIR or GG_SHARED; docs/internals.md: where the conformance suites come from)"
  exit 77; }
exec "${GG_BUILDDIR:-.}/tests/jsonlogic/jsonlogic-suite" "$dir/tests.json"
