#!/usr/bin/env bash
# tests_index.sh — tests/README.md indexes every test: each .sh, .c and .case file under
# tests/ (helpers and fixtures aside) is linked from it, so a newcomer finds a subsystem's or
# a feature's tests there. A new test without its line fails here; tests_index.py prints the
# tables to paste. Prints "N passed, N failed".
src=${GG_SRCDIR:-$(dirname "$0")/../..}
out=$(python3 "$src/tests/docs/tests_index.py" "$src" --check 2>&1); rc=$?
if [ $rc -eq 0 ]; then
  echo "ok - every test file is in tests/README.md"; echo "1 passed, 0 failed"
else
  printf '%s\n' "$out"; echo "not ok - tests missing from tests/README.md (python3 tests/docs/tests_index.py . prints the tables)"; echo "0 passed, 1 failed"
  exit 1
fi
