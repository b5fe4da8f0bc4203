#!/usr/bin/env bash
# eval.sh — `graphgate eval jsonata|jsonlogic`: results, undefined, bindings, --file, stdin,
# the compat switch, and the exit codes (1 evaluation error with its code and position, 2
# usage or unreadable input); never a sanitizer report. Prints "N passed, N failed".
. "${GG_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/integration/lib.sh"
T=$GG_TMP
# ev WANT_RC WANT_OUT [ERR_PATTERN] -- ARGS... [< stdin from $T/in]: exit status, stdout, stderr
ev() {
  local rc=$1 want=$2 pat=$3; shift 4
  local got st
  got=$("$GG_BIN" eval "$@" <"$T/in" 2>"$T/err"); st=$?
  [ "$st" = "$rc" ] && [ "$got" = "$want" ] && { [ -z "$pat" ] || grep -qE -- "$pat" "$T/err"; } \
    && ! grep -qE 'Sanitizer|runtime error' "$T/err" \
    || { echo "  exit $st (want $rc), out '$got' (want '$want'), err: $(head -3 "$T/err")"; return 1; }
}
echo '{"a": [1, 2, 3], "x": 5}' >"$T/doc.json"
: >"$T/in"
t "jsonata on a file" ev 0 6 "" -- jsonata '$sum(a)' "$T/doc.json"
cp "$T/doc.json" "$T/in"
t "jsonata on stdin (-)" ev 0 10 "" -- jsonata 'x * 2' -
: >"$T/in"
t "undefined prints nothing, exit 0" ev 0 "" "" -- jsonata 'nothing' "$T/doc.json"
t "--bindings" ev 0 42 "" -- jsonata --bindings '{"x": 41}' '$x + 1'
printf '$sum([1, 2])\n' >"$T/e.jsonata"
t "--file" ev 0 3 "" -- jsonata --file "$T/e.jsonata"
t "objects print as compact JSON" ev 0 '{"n":[1,"b"]}' "" -- jsonata '{"n": [1, "b"]}'
t "a syntax error: exit 1, code and position" ev 1 "" 'S0207.*position 3' -- jsonata '1 +'
t "\$error: exit 1 with D3137" ev 1 "" 'D3137: boom' -- jsonata '$error("boom")'
t "bad --bindings: exit 2" ev 2 "" 'bindings' -- jsonata --bindings '[1]' '1'
t "unreadable input: exit 2" ev 2 "" 'cannot read /nonexistent' -- jsonata '1' /nonexistent
echo '{"a": 1}' >"$T/in"
t "jsonlogic on stdin" ev 0 3 "" -- jsonlogic '{"+": [{"var": "a"}, 2]}'
t "jsonlogic: json-logic-js semantics by default (val unknown → exit 1)" ev 1 "" 'Unrecognized operation val' -- jsonlogic '{"val": "a"}'
t "jsonlogic --compat" ev 0 1 "" -- jsonlogic --compat '{"val": "a"}'
t "jsonlogic --compat throw: exit 1 with the thrown value" ev 1 "" 'thrown: x' -- jsonlogic --compat '{"throw": "x"}'
t "a rule that is not JSON: exit 2" ev 2 "" 'rule is not JSON' -- jsonlogic '{"+":'
t "jsonlogic data from a file" ev 0 '[1,2,3]' "" -- jsonlogic '{"var": "a"}' "$T/doc.json"
t "unknown language: exit 2" ev 2 "" "unknown language 'nope'" -- nope
help_ok() { "$GG_BIN" eval --help >"$T/out" 2>&1 && grep -q '^usage: graphgate eval jsonata' "$T/out"; }
t "--help: exit 0 with the usage" help_ok
gg_finish
