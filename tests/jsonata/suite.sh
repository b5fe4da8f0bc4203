#!/bin/sh
# Run the JSONata conformance suite (exit 0 iff every failure is waived).
dir=${GG_CONFORMANCE_DIR:-${GG_SHARED:-../shared}/conformance}/jsonata
[ -d "$dir/groups" ] || {
  echo "SKIP: the JSONata test suite not found in $dir (set GG_CONFORMANCE_DIR or GG_SHARED; docs/internals.md: where the conformance suites come from)"
  exit 77; }
exec "${GG_BUILDDIR:-.}/tests/jsonata/jsonata-suite" "$@" "$dir"
