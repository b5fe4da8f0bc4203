#!/usr/bin/env bash
# inline.sh — tools without mcp nodes run on the HTTP thread within inline_budget; a run
# that outgrows the budget is dropped unrecorded and redone on a worker (right answer, one
# execution record); calls that stream notifications and inline_budget: 0 always use
# workers. Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
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
# history (issue 29): what each node received, durations to the microsecond, numbers
# printed alike by the API and the CLI, a refused call recorded, a sub-ms timeline
t "... and a succeeded transform's input: the context it evaluated" eq "$(jget "$GG_TMP/x.json" 'd["nodes"][1]["input"]["entry"]["n"]')" 5
decimals() { # FILE → the most decimals of any "duration_ms" in it (run and nodes)
  python3 -c "import re,sys; v=re.findall(r'\"duration_ms\": ?([-0-9.eE+]+)', open(sys.argv[1]).read()); assert len(v) >= 4, v; print(max(len(x.split('.')[1]) if '.' in x else (9 if 'e' in x.lower() else 0) for x in v))" "$1"
}
t "the API's durations have at most 3 decimals" test "$(decimals "$GG_TMP/x.json")" -le 3
# node times are stored as ms after the run's start (a fifth of a record's bytes: the
# history writer's cost is its bytes), and the API gives them back as times within the run
xid=$(jget "$GG_TMP/x.json" 'd["id"]')
stored=$(python3 -c "import ggdb, json, sys
db = ggdb.connect(sys.argv[1])
n = json.loads(db.execute('SELECT nodes FROM executions WHERE id = ?', (sys.argv[2],)).fetchone()[0])
print(max(max(abs(x[3]), abs(x[4])) for x in n))" "$GG_DB" "$xid")
t "... node times stored as offsets from the run's start ($stored ms at most)" test "$stored" -lt 60000
t "... and shown as times within the run" python3 -c "import json; d=json.load(open('$GG_TMP/x.json'))
iso = lambda s: s[:23]
assert all(iso(d['started_at']) <= iso(n['started_at']) <= iso(n['finished_at']) <= iso(d['finished_at']) for n in d['nodes']), d"
r=$(call 16 quick '{"n":24.3}')
t "a fractional result" eq "$r" '{"twice":48.6}'
executions quick 6 >/dev/null
eid=$(jget "$GG_TMP/e.json" 'd["executions"][0]["id"]')
gw_cli executions show "$eid" >"$GG_TMP/show.json"
t "executions show prints 48.6 as the API does" grep -q '"twice": 48.6$' "$GG_TMP/show.json"
t "... never 48.600000000000001" eq "$(grep -c '48.60000' "$GG_TMP/show.json")" 0
t "... and durations with at most 3 decimals" test "$(decimals "$GG_TMP/show.json")" -le 3
gw_cli executions show "$eid" --timeline >"$GG_TMP/tl.txt"
# rows: START DUR STATUS NODE TYPE |bar| ...; a node starts where the one before ended (or
# later): a fast run's offsets are fractions of a millisecond, not every node at 0.000
t "--timeline offsets are sub-millisecond, each node after the previous one's end" python3 -c "
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.split() and l.split()[0].replace('.', '', 1).isdigit()]
assert [r[3] for r in rows] == ['entry', 'double', 'exit'], rows
s = [(float(r[0]), float(r[1])) for r in rows]
assert all(s[i][0] >= s[i - 1][0] + s[i - 1][1] - 0.0015 for i in (1, 2)), s
assert s[2][0] % 1 > 0, s" "$GG_TMP/tl.txt"
call 17 quick '{"n":"five"}' >/dev/null
t "a call its inputSchema refuses answers isError" eq "$(jget "$GG_TMP/c1.json" 'd["result"]["isError"]')" True
for i in $(seq 1 100); do # the history writer flushes every few ms, later on a loaded machine
  gw_cli executions list acme --status invalid_input --json >"$GG_TMP/inv.json" 2>/dev/null
  [ "$(jget "$GG_TMP/inv.json" 'len(d["executions"])')" = 1 ] && break
  sleep 0.1
done
t "... and is recorded with status invalid_input (CLI --status)" eq "$(jget "$GG_TMP/inv.json" '[(e["tool"], e["status"]) for e in d["executions"]]')" "[('quick', 'invalid_input')]"
gg_curl "$GG_TMP/inv2.json" -H "Authorization: Bearer $admin" "$GG_PUB/admin/tenants/acme/executions?status=invalid_input" >/dev/null
t "... listed by the API's status filter" eq "$(jget "$GG_TMP/inv2.json" 'len(d["executions"])')" 1
gg_curl "$GG_TMP/inv3.json" -H "Authorization: Bearer $admin" "$GG_PUB/admin/executions/$(jget "$GG_TMP/inv.json" 'd["executions"][0]["id"]')" >/dev/null
t "... with the arguments sent, the refusal as its error and no nodes" eq "$(jget "$GG_TMP/inv3.json" '(d["arguments"], d["error"], d["nodes"])')" \
  "({'n': 'five'}, 'Invalid arguments for tool quick: /n: $(jget "$GG_TMP/c1.json" 'd["result"]["content"][0]["text"].split(": ", 2)[2]')', [])"

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
