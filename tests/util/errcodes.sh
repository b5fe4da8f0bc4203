#!/usr/bin/env bash
# errcodes.sh — the one table of error codes (src/util/errcode.c) stays honest, both ways: every
# code it lists is set somewhere in src/, every code set in src/ is listed (or follows one of the
# two documented patterns), and the merged synonyms are set nowhere.
set -u
src=${GG_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
passed=0 failed=0
t() { if "${@:2}"; then passed=$((passed + 1)); echo "ok - $1"; else failed=$((failed + 1)); echo "not ok - $1"; fi; }
table=$(sed -n 's/^ *{"\([a-z_]*\)", [0-9]*, .*/\1/p' "$src/src/util/errcode.c")
t "the table lists codes" test -n "$table"
used() { grep -rqE "(set|error|fail|err|add|extra|finish)\([^\"]*\"$1\"" "$src/src" --include=*.c --exclude=errcode.c; }
for code in $table; do t "'$code' is set somewhere in src/" used "$code"; done
# The other way: every code set in src/ is in the table, or another invalid_* code (400 by rule),
# or one of JSONata's own codes (a letter and four digits). A code is the first string literal
# of a call to one of the functions that set codes (gg_error_set and the helpers that wrap it).
# (src/cli's own fail() takes what the command was doing, not a code.)
setters='gg_error_set|gg_http_res_error[a-z_]*|gg_http_res_fail|gg_graph_diag_add|gw_toolkit_error|error_of|token_error|send_error|finish|yt_err'
set_codes=$({ grep -rhoE "\b($setters)\([^\"()]*\"[a-zA-Z0-9_]+\"" "$src/src" --include=*.c --exclude=errcode.c
  grep -rhoE "\bfail\([^\"()]*\"[a-zA-Z0-9_]+\"" "$src/src" --include=*.c --exclude-dir=cli; } |
  sed -E 's/.*"([a-zA-Z0-9_]+)"$/\1/' | sort -u)
t "codes are set in src/" test -n "$set_codes"
listed() { grep -qx "$1" <<<"$table" || [[ "$1" == invalid_* ]] || [[ "$1" =~ ^[DSTU][0-9]{4}$ ]]; }
for code in $set_codes; do t "'$code', set in src/, is in the table (or an invalid_* or JSONata code)" listed "$code"; done
for syn in out_of_memory invalid_yaml internal; do
  t "the synonym '$syn' is set nowhere (one word per meaning)" bash -c "! grep -rqE '(gg_error_set|gg_graph_diag_add|gg_http_res_error)\([^\"]*\"$syn\"' '$src/src' --include=*.c"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
