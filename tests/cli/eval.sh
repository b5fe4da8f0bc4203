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
# --history: the history functions read a run's node records (issue 29)
: >"$T/in"
t "a history function without --history: exit 1, says it needs one" \
  ev 1 "" 'no_history: \$previousNode reads the history of a graph run.*--history FILE' -- jsonata '$previousNode()'
t "  \$nodeExecutions too" ev 1 "" 'no_history: \$nodeExecutions ' -- jsonata '$count($nodeExecutions("a"))'
echo '[{"nodeId":"entry","output":{"n":3}},{"nodeId":"spin","output":1},{"nodeId":"spin","output":2}]' >"$T/h.json"
t "--history: the functions read the records" ev 0 '[2,2,1,[1,2],{"n":3},null]' "" -- jsonata --history "$T/h.json" \
  '[$previousNode(), $executionCount("spin"), $nodeExecution("spin", 0), [$nodeExecutions("spin")], $previousNode(3), $previousNode(4)]'
t "--history without INPUT: \$ is the context, latest first" ev 0 '["spin","entry"]' "" -- jsonata --history "$T/h.json" '$keys($)'
t "--history with INPUT: \$ is the input" ev 0 8 "" -- jsonata --history "$T/h.json" '$sum(a) + $executionCount("spin")' "$T/doc.json"
echo '{"history":[{"nodeId":"a"}]}' >"$T/h2.json"
t "--history: an object with a history array; no output is undefined" ev 0 '[1,false]' "" -- jsonata --history "$T/h2.json" \
  '[$executionCount("a"), $exists($nodeExecution("a", 0))]'
echo '{"nodeId":"a"}' >"$T/h3.json"
t "--history that is not a list of records: exit 2" ev 2 "" 'a history is an array of node records' -- jsonata --history "$T/h3.json" '1'
echo '[{"output":1}]' >"$T/h4.json"
t "--history record without nodeId: exit 2" ev 2 "" 'record 0: needs "nodeId"' -- jsonata --history "$T/h4.json" '1'
t "--history unreadable: exit 2" ev 2 "" 'cannot read /nonexistent' -- jsonata --history /nonexistent '1'
# the same answer as in a run: a real run's trace up to node b, and b's expression on it
fx=$GG_SRCDIR/tests/fixtures/graphs
"$GG_BIN" run "$fx/history.yaml" p --args '{"x":1}' --trace >/dev/null 2>"$T/trace"
n=$(grep -n '"nodeId":"b"' "$T/trace" | head -1 | cut -d: -f1)
{ echo '['; head -n $((n - 1)) "$T/trace" | paste -sd, -; echo ']'; } >"$T/hist.json"
want=$(sed -n "${n}p" "$T/trace" | sed -e 's/.*"output"://' -e 's/}$//')
bexpr=$(grep -o "expr: '{\"prev\": \$previousNode(), \"prev1\".*}'" "$fx/history.yaml" | sed -e "s/^expr: '//" -e "s/'\$//")
same_as_run() { [ -n "$want" ] && [ -n "$bexpr" ] && ev 0 "$want" "" -- jsonata --history "$T/hist.json" "$bexpr"; }
t "--history on a run's trace: node b's output, as the run computed it" same_as_run
help_ok() { "$GG_BIN" eval --help >"$T/out" 2>&1 && grep -q '^usage: graphgate eval jsonata' "$T/out"; }
t "--help: exit 0 with the usage" help_ok
gg_finish
