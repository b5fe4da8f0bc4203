#!/usr/bin/env bash
# Expected diagnostics next to the fixtures: every graph under tests/fixtures/graphs/invalid/
# (or the files given as arguments) carries `# expect: LINE:COL CODE MESSAGE-SUBSTRING` lines;
# `graphgate graph validate FILE` must print exactly those diagnostics (errors and warnings,
# same count, each at its position with its code and a message containing the substring) and
# exit 2. One fixture alone: bash tests/cli/expect.sh tests/fixtures/graphs/invalid/targets.yaml
# Prints "N passed, N failed" (one case per fixture).
set -uo pipefail
src=${GG_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${GG_BUILDDIR:-$src/build}
gg=$build/src/graphgate
[ -x "$gg" ] || { echo "SKIP: $gg not built"; exit 77; }
pass=0 fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ $# -gt 0 ]; then files=("$@"); else files=("$src"/tests/fixtures/graphs/invalid/*.yaml); fi

# check_fixture FILE: 0 when the diagnostics match the file's expect lines; reasons on stdout
check_fixture() {
  local f=$1 rc
  "$gg" graph validate "$f" >/dev/null 2>"$tmp/err"; rc=$?
  grep -E 'Sanitizer|runtime error' "$tmp/err" && return 1
  grep -n '^# expect: ' "$f" | sed 's/^\([0-9]*\):# expect: /\1 /' >"$tmp/want"
  [ -s "$tmp/want" ] || { echo "no '# expect:' lines"; return 1; }
  # got: "LINE:COL CODE MESSAGE" per diagnostic
  sed -nE 's#^.*:([0-9]+:[0-9]+): (error|warning): (.*) \[([a-z_0-9]+)\]$#\1 \4 \3#p' "$tmp/err" >"$tmp/got"
  local bad=0 at pos code sub
  while read -r at pos code sub; do
    if ! awk -v p="$pos" -v c="$code" -v s="$sub" \
        '$1 == p && $2 == c && index(substr($0, length($1) + length($2) + 3), s) { found = 1 } END { exit !found }' "$tmp/got"; then
      echo "$f:$at: expected $pos $code '$sub', not printed"; bad=1
    fi
  done <"$tmp/want"
  if [ "$(wc -l <"$tmp/got")" != "$(wc -l <"$tmp/want")" ]; then
    echo "$f: $(wc -l <"$tmp/want") expected diagnostics, $(wc -l <"$tmp/got") printed"; bad=1
  fi
  if grep -q ' error: ' "$tmp/err" && [ $rc -ne 2 ]; then echo "$f: exit $rc, want 2"; bad=1; fi
  [ $bad = 0 ] || { echo "  got:"; sed 's/^/    /' "$tmp/got"; }
  return $bad
}

for f in "${files[@]}"; do
  if out=$(check_fixture "$f"); then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $out" >&2; fi
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
