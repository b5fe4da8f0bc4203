#!/usr/bin/env bash
# selftest.sh — caserun can fail: tests/fixtures/cases/failing.case holds ten cases that
# must fail (wrong status, subset, exact JSON, path pattern, header, raw body, an unknown
# variable, no expected status, a stray line, a directive inside a case) and one that
# passes; each failure is reported with its FILE:LINE, the case as written, the reason and
# the response received. And every tests/cases/*.case is registered, so make check runs it.
. "$GG_SRCDIR/tests/integration/lib.sh"
RUN="$GG_BUILDDIR/tests/cases/caserun"
F="$GG_SRCDIR/tests/fixtures/cases/failing.case"
OUT="$GG_TMP/out.txt"
TMPDIR="$GG_TMP" "$RUN" "$F" > "$OUT" 2>&1
rc=$?
t "caserun exits 1 when a case fails" [ "$rc" = 1 ]
t "the closing line counts 2 passed (a case, the clean stop) and 10 failed" grep -qx '2 passed, 10 failed' "$OUT"
for line in 8 12 17 22 27 32 37 42 51 55; do
  t "the failure at failing.case:$line is named by FILE:LINE" grep -q "^not ok - .*($F:$line)\$" "$OUT"
done
t "the passing case is reported ok" grep -q "^ok - the one case that passes ($F:46)\$" "$OUT"
t "a failure shows the case as written" grep -qx '  | > 201' "$OUT"
t "a failure says why" grep -qx '  # status 200, expected 201' "$OUT"
t "a failure shows the response received" grep -q '^  actual: HTTP 200$' "$OUT"
t "a subset mismatch names the path and both values" grep -qx '  # .jsonrpc: "2.0", expected "1.0"' "$OUT"
t "an exact match names the keys not expected" grep -qx '  # .result: not expected' "$OUT"
t "an unknown variable is named" grep -qx '  # unknown variable $nokey' "$OUT"
t "a case without a status is refused" grep -qx '  # no expected status line (> NNN)' "$OUT"
t "a stray line in the request is refused" grep -qx '  # not a header line (Name: value): 200' "$OUT"
t "a directive inside a case is refused" grep -q '^  # a directive inside a case' "$OUT"
# make check runs every case file: each is listed in tests/cases/Makefile.inc
for f in "$GG_SRCDIR"/tests/cases/*.case; do
  t "$(basename "$f") is registered in tests/cases/Makefile.inc" \
    grep -q "^GG_CASE_FILES = .*tests/cases/$(basename "$f")" "$GG_SRCDIR/tests/cases/Makefile.inc"
done
[ "$GG_FAILED" = 0 ] || cat "$OUT"
gg_finish
