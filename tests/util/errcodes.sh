#!/usr/bin/env bash
# errcodes.sh — the one table of error codes (src/util/errcode.c) stays honest: every code
# it lists is set somewhere in src/, and the merged synonyms are set nowhere.
set -u
src=${GG_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
passed=0 failed=0
t() { if "${@:2}"; then passed=$((passed + 1)); echo "ok - $1"; else failed=$((failed + 1)); echo "not ok - $1"; fi; }
table=$(sed -n 's/^ *{"\([a-z_]*\)", [0-9]*, .*/\1/p' "$src/src/util/errcode.c")
t "the table lists codes" test -n "$table"
used() { grep -rqE "(set|error|fail|err|add|extra)\([^\"]*\"$1\"" "$src/src" --include=*.c --exclude=errcode.c; }
for code in $table; do t "'$code' is set somewhere in src/" used "$code"; done
for syn in out_of_memory invalid_yaml internal; do
  t "the synonym '$syn' is set nowhere (one word per meaning)" bash -c "! grep -rqE '(gg_error_set|gg_graph_diag_add|gg_http_res_error)\([^\"]*\"$syn\"' '$src/src' --include=*.c"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
