#!/bin/sh
# The compat suites (index.json lists them), with compat_semantics.
dir=${GG_CONFORMANCE_DIR:-${GG_SHARED:-../shared}/conformance}/jsonlogic/compat-suites
[ -f "$dir/index.json" ] || {
  echo "SKIP: JSON Logic compat suites not found in $dir (set GG_CONFORMANCE_DIR or GG_SHARED; docs/internals.md: where the conformance suites come from)"
  exit 77; }
exec "${GG_BUILDDIR:-.}/tests/jsonlogic/jsonlogic-suite" "$dir/index.json"
