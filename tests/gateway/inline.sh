#!/usr/bin/env bash
# inline.sh — tools without mcp nodes run on the HTTP thread within inline_budget; a run
# that outgrows the budget is dropped unrecorded and redone on a worker (right answer, one
# execution record); calls that stream notifications and inline_budget: 0 always use
# workers. Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
eq() { [ "$1" = "$2" ] || { echo "   expected $2, got $1" >&2; return 1; }; }
ge() { [ "${1:-0}" -ge "$2" ] 2>/dev/null || { echo "   expected >= $2, got $1" >&2; return 1; }; }

cat >"$GG_TMP/inline.yaml" <<'YAML'
version: "1.0"
server: {name: inline, version: "1.0.0"}
tools:
  - name: quick
    description: doubles n
    inputSchema: {type: object, properties: {n: {type: number}}, required: [n]}
    nodes:
      - {id: entry, type: entry, next: double}
      - {id: double, type: transform, transform: {expr: '{"twice": entry.n * 2}'}, next: exit}
      - {id: exit, type: exit}
  - name: broken
    description: fails in its transform
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: fail}
      - {id: fail, type: transform, transform: {expr: '$error("boom " & entry.who)'}, next: exit}
      - {id: exit, type: exit}
  - name: slow
    description: sums a long range (tens of milliseconds, far past a 1 ms budget)
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: sum}
      - {id: sum, type: transform, transform: {expr: '{"sum": $sum([1..400000].($ * 2))}'}, next: exit}
      - {id: exit, type: exit}
YAML

gw_cli tenant create acme >/dev/null 2>&1
admin=$(gw_key acme admin)
gw_cli graph put acme inl "$GG_TMP/inline.yaml" >/dev/null 2>"$GG_TMP/put.err" || { cat "$GG_TMP/put.err"; echo "0 passed, 1 failed"; exit 1; }
GRAPHGATE_INLINE_BUDGET=1ms gg_start || { echo "0 passed, 1 failed"; exit 1; }
url="$GG_INT/internal/mcp/acme/inl"
sid=$(gw_init "$url" "")
metric() { curl -s "$GG_INT/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
call() { # ID TOOL ARGS [META] → result JSON (compact) of the call
  local meta=${4:+,\"_meta\":$4}
  gw_rpc "$GG_TMP/c.json" "$url" "" "$sid" \
    "{\"jsonrpc\":\"2.0\",\"id\":$1,\"method\":\"tools/call\",\"params\":{\"name\":\"$2\",\"arguments\":$3$meta}}" >/dev/null
  # an SSE answer: the last data line is the response
  if grep -q '^data:' "$GG_TMP/c.json"; then grep '^data:' "$GG_TMP/c.json" | tail -1 | sed 's/^data: *//' >"$GG_TMP/c1.json"
  else cp "$GG_TMP/c.json" "$GG_TMP/c1.json"; fi
  jget "$GG_TMP/c1.json" 'json.dumps(d["result"].get("structuredContent"), separators=(",", ":"))'
}
executions() { # TOOL WANT → how many execution records the tool has: polls (up to 10 s)
  # until WANT are there — the history writer flushes every few ms, later on a loaded
  # machine — then reads once more a little later, so a record too many would show
  local n i
  for i in $(seq 1 100); do
    gg_curl "$GG_TMP/e.json" -H "Authorization: Bearer $admin" "$GG_PUB/admin/tenants/acme/executions?graph=inl&tool=$1&limit=100" >/dev/null
    n=$(jget "$GG_TMP/e.json" 'len(d["executions"])')
    [ "${n:-0}" -ge "$2" ] && break
    sleep 0.1
  done
  sleep 0.3
  gg_curl "$GG_TMP/e.json" -H "Authorization: Bearer $admin" "$GG_PUB/admin/tenants/acme/executions?graph=inl&tool=$1&limit=100" >/dev/null
  jget "$GG_TMP/e.json" 'len(d["executions"])'
}

before=$(metric graphgate_tool_calls_inline_total); over0=$(metric graphgate_tool_calls_inline_over_budget_total)
for i in 1 2 3 4 5; do r=$(call $((10 + i)) quick "{\"n\":$i}"); done
t "a pure tool answers correctly when run inline" eq "$r" '{"twice":10}'
# each call ran inline, or (a thread preempted past the 1 ms budget on a loaded machine)
# was counted over budget and redone on a worker: never both, never neither
inl=$(( $(metric graphgate_tool_calls_inline_total) - before )); over=$(( $(metric graphgate_tool_calls_inline_over_budget_total) - over0 ))
t "the five calls ran on the HTTP thread ($inl inline, $over redone)" eq "$((inl + over)):$([ "$inl" -ge 1 ] && echo y)" "5:y"
t "each inline run is recorded once" eq "$(executions quick 5)" 5
gg_curl "$GG_TMP/x.json" -H "Authorization: Bearer $admin" "$GG_PUB/admin/executions/$(jget "$GG_TMP/e.json" 'd["executions"][0]["id"]')" >/dev/null
t "an inline run's record has its node history" eq "$(jget "$GG_TMP/x.json" '",".join(n["node_id"] for n in d["nodes"])')" 'entry,double,exit'
t "... with the node outputs (newest run first: n=5)" eq "$(jget "$GG_TMP/x.json" 'd["nodes"][1]["output"]')" "{'twice': 10}"

call 15 broken '{"who":"ann"}' >/dev/null
t "a failing pure tool answers isError" eq "$(jget "$GG_TMP/c1.json" 'd["result"]["isError"]')" True
executions broken 1 >/dev/null
gg_curl "$GG_TMP/x.json" -H "Authorization: Bearer $admin" "$GG_PUB/admin/executions/$(jget "$GG_TMP/e.json" 'd["executions"][0]["id"]')" >/dev/null
t "its record is failed" eq "$(jget "$GG_TMP/x.json" 'd["status"]')" failed
t "the failed node keeps its error" eq "$(jget "$GG_TMP/x.json" '"boom ann" in d["nodes"][1]["error"]')" True
# the engine's code, the position and the node reach the result, the run and the node (issue 29)
why="node 'fail': D3137 at position 7: boom ann"
t "the isError text names node, code and position" eq "$(jget "$GG_TMP/c1.json" 'd["result"]["content"][0]["text"]')" "$why"
t "... and _meta carries them as data" eq "$(jget "$GG_TMP/c1.json" 'sorted((k, v) for k, v in d["result"]["_meta"]["io.graphgate/error"].items() if k != "text")')" \
  "[('code', 'D3137'), ('message', 'boom ann'), ('node', 'fail'), ('position', 7)]"
t "... the run's record keeps them" eq "$(jget "$GG_TMP/x.json" 'd["error"]')" "$why"
t "... and so does the failed node's" eq "$(jget "$GG_TMP/x.json" 'd["nodes"][1]["error"]')" "$why"
t "... and graphgate executions show prints it" grep -qF "$why" <(gw_cli executions show "$(jget "$GG_TMP/e.json" 'd["executions"][0]["id"]')")
t "... and the input it saw" eq "$(jget "$GG_TMP/x.json" 'd["nodes"][1]["input"]["entry"]["who"]')" ann
t "... and no output" eq "$(jget "$GG_TMP/x.json" 'd["nodes"][1]["output"]')" None

over0=$(metric graphgate_tool_calls_inline_over_budget_total)
r=$(call 20 slow '{}')
t "a run past the budget still answers (redone on a worker)" eq "$r" '{"sum":160000400000}'
t "the dropped attempt is counted" eq "$(( $(metric graphgate_tool_calls_inline_over_budget_total) - over0 ))" 1
t "... and not recorded: one execution" eq "$(executions slow 1)" 1
r=$(call 21 slow '{}')
t "a second slow call answers too" eq "$r" '{"sum":160000400000}'
t "two slow runs, two records" eq "$(executions slow 2)" 2

before=$(metric graphgate_tool_calls_inline_total)
r=$(call 30 quick '{"n":21}' '{"progressToken":"p1"}')
t "a call with a progressToken answers" eq "$r" '{"twice":42}'
t "... on a worker, streaming its progress" eq "$(grep -c 'notifications/progress' "$GG_TMP/c.json")" 3
t "... not inline" eq "$(( $(metric graphgate_tool_calls_inline_total) - before ))" 0
t "server stops cleanly" gw_stop_clean

# inline_budget: 0 turns the inline path off
GRAPHGATE_INLINE_BUDGET=0 gg_start || { t "restart with inline_budget 0" false; gg_finish; }
url="$GG_INT/internal/mcp/acme/inl"
sid=$(gw_init "$url" "")
r=$(call 40 quick '{"n":4}')
t "with inline_budget 0 the call answers" eq "$r" '{"twice":8}'
t "... from a worker" eq "$(metric graphgate_tool_calls_inline_total)" 0
t "server stops cleanly (budget 0)" gw_stop_clean
gg_finish
