#!/usr/bin/env bash
# proxy.sh — proxy graphs (`proxy:` entries, src/graph/proxy.c) through the official SDK
# client: a renamed subset of server-everything (streamable HTTP) with a pre-hook that blocks
# one call and uppercases another's argument and a post-hook that rewrites a result; `tools:
# all` listing the downstream catalog; a real SDK server over stdio (proxy_dyn.mjs) that adds
# a tool at runtime shows up in the proxy's tools/list after its list_changed, without
# re-upload. History: a proxied call is an execution with the tool's nodes. taskSupport on a
# proxy entry (2026-07-28 raw JSON-RPC with the tasks extension): tools/list shows it (a listed
# tool's own overriding the entry's, `tools: all` taking the entry's), an optional proxied tool
# becomes a task that completes with the downstream's result (its question during the task
# turns it input_required, tasks/update's answer reaches it), a forbidden one answers at once
# as a forbidden graph tool does, a required one is -32021 without the extension. Attacks: too many
# proxy entries, colliding names, a reserved node id, an unknown server — each a 422 with
# line:col. Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
gw_with_everything
port=$EVPORT

cat >"$GG_TMP/px.yaml" <<YAML
version: "1.0"
server: {name: "px", version: "1.0.0"}
mcpServers:
  everything: {type: "streamableHttp", url: "http://127.0.0.1:$port/mcp"}
proxy:
  - server: "everything"
    tools:
      - {name: "echo", as: "say", description: "says it louder"}
    pre:
      - {id: "guard", type: "switch", conditions: [{rule: {"==": [{var: "entry.message"}, "block"]}, next: "deny"}], next: "loud"}
      - {id: "deny", type: "exit", error: "blocked by policy"}
      - {id: "loud", type: "transform", transform: {expr: "\$merge([entry, {'message': \$uppercase(entry.message)}])"}}
  - server: "everything"
    tools: [{name: "get-sum", as: "sum", annotations: {readOnlyHint: true}}]
    post:
      - {id: "rewrite", type: "transform", transform: {expr: "'sum says: ' & downstream"}}
YAML
cat >"$GG_TMP/all.yaml" <<YAML
version: "1.0"
server: {name: "all", version: "1.0.0"}
mcpServers:
  everything: {type: "streamableHttp", url: "http://127.0.0.1:$port/mcp"}
proxy:
  - {server: "everything", tools: "all", prefix: "ev_"}
YAML
echo alpha >"$GG_TMP/dyn.tools"
cat >"$GG_TMP/dyn.yaml" <<YAML
version: "1.0"
server: {name: "dyn", version: "1.0.0"}
mcpServers:
  dyn: {command: "$NODE", args: ["$GG_SRCDIR/tests/gateway/proxy_dyn.mjs", "$GG_TMP/dyn.tools"], env: {GG_NPM: "$NM"}, on_change: follow}
tools: []
proxy:
  - {server: "dyn", tools: "all", prefix: "dyn_"}
YAML
# attacks: 65 entries; a proxied name taking an ordinary tool's; a reserved id; unknown server
{ printf 'version: "1.0"\nserver: {name: "many", version: "1"}\nmcpServers:\n  everything: {type: "streamableHttp", url: "http://127.0.0.1:%s/mcp"}\nproxy:\n' "$port"
  for i in $(seq 1 65); do printf '  - {server: "everything", tools: [{name: "echo", as: "e%s"}]}\n' "$i"; done; } >"$GG_TMP/many.yaml"
cat >"$GG_TMP/clash.yaml" <<YAML
version: "1.0"
server: {name: "clash", version: "1.0.0"}
mcpServers:
  everything: {type: "streamableHttp", url: "http://127.0.0.1:$port/mcp"}
tools:
  - {name: "say", description: "mine", inputSchema: {type: "object"}, nodes: [{id: "entry", type: "entry", next: "exit"}, {id: "exit", type: "exit"}]}
proxy:
  - server: "everything"
    tools:
      - {name: "echo", as: "say"}
      - {name: "get-sum", as: "twice"}
      - {name: "echo", as: "twice"}
      - {name: "ecko"}
  - server: "everything"
    tools: ["echo"]
    pre:
      - {id: "downstream", type: "transform", transform: {expr: "entry"}}
  - {server: "nowhere", tools: "all"}
YAML

gw_cli_run tenant create acme >/dev/null
ADMIN=$(gw_key acme admin)
KEY=$(gw_key acme tools:read,tools:execute)
GRAPHGATE_POLICY_HTTP_HOSTS=127.0.0.1 GRAPHGATE_POLICY_STDIO_COMMANDS="$NODE" gg_start || { echo "0 passed, 1 failed"; exit 1; }
t "setup: tenant and keys" gw_cli_clean
t "the hooks proxy graph is accepted" eq "$(gw_put_graph "$ADMIN" acme px "$GG_TMP/px.yaml") $(jget "$GG_TMP/put.json" 'sorted(d["tools"])')" "201 ['say', 'sum']"
"$NODE" "$GG_SRCDIR/tests/gateway/proxy.mjs" hooks "$GG_PUB/mcp/acme/px" "$KEY" >"$GG_TMP/hooks.out" 2>&1
gw_fold "$GG_TMP/hooks.out" $?

# history: the blocked call is an execution that failed at the exit, never reaching downstream
for _ in $(seq 1 100); do
  gg_curl "$GG_TMP/ex.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/acme/executions?graph=px&limit=100" >/dev/null
  [ "$(jget "$GG_TMP/ex.json" 'sum(1 for e in d["executions"] if e["status"] != "running")')" = 4 ] && break
  sleep 0.1
done
t "each proxied call that passed the inputSchema is an execution of the graph (3)" \
  eq "$(jget "$GG_TMP/ex.json" 'sum(1 for e in d["executions"] if e["status"] != "invalid_input")')" 3
t "... and the one refused by the inputSchema is recorded as invalid_input" \
  eq "$(jget "$GG_TMP/ex.json" '[len(e.get("nodes") or []) for e in d["executions"] if e["status"] == "invalid_input"]')" "[0]"
id=$(jget "$GG_TMP/ex.json" '[e["id"] for e in d["executions"] if e["tool"] == "say" and e["status"] not in ("succeeded", "invalid_input")][0]')
gg_curl "$GG_TMP/one.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/executions/$id" >/dev/null
t "... the blocked one ran entry, guard, deny (no downstream)" \
  eq "$(jget "$GG_TMP/one.json" '[n.get("node_id", n.get("nodeId")) for n in d["nodes"]]')" "['entry', 'guard', 'deny']"

t "tools: all is accepted" eq "$(gw_put_graph "$ADMIN" acme all "$GG_TMP/all.yaml")" 201
gg_curl "$GG_TMP/cat.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/acme/downstream" >/dev/null
names=$(jget "$GG_TMP/cat.json" '",".join(t["name"] for c in d["catalogs"] if c["server"] == "everything" for t in c["tools"])')
t "the stored catalog of everything has echo" eval "echo '$names' | grep -q echo"
"$NODE" "$GG_SRCDIR/tests/gateway/proxy.mjs" all "$GG_PUB/mcp/acme/all" "$KEY" "$names" >"$GG_TMP/all.out" 2>&1
gw_fold "$GG_TMP/all.out" $?

t "the dyn proxy graph (tools: all of a stdio SDK server) is accepted" eq "$(gw_put_graph "$ADMIN" acme dyn "$GG_TMP/dyn.yaml")" 201
"$NODE" "$GG_SRCDIR/tests/gateway/proxy.mjs" dyn "$GG_PUB/mcp/acme/dyn" "$KEY" >"$GG_TMP/dyn.out" 2>&1
gw_fold "$GG_TMP/dyn.out" $?
gg_curl "$GG_TMP/g.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/acme/graphs/dyn" >/dev/null
t "... still version 1: nothing was uploaded again" eq "$(jget "$GG_TMP/g.json" 'd.get("active_version", d.get("version"))')" 1

# ---- taskSupport on proxy entries: graphgate runs the proxied call as its own task (the
# downstream gets a plain tools/call); "own" is a graph tool without taskSupport, to compare
cat >"$GG_TMP/tk.yaml" <<YAML
version: "1.0"
server: {name: "tk", version: "1.0.0"}
mcpServers:
  everything: {type: "streamableHttp", url: "http://127.0.0.1:$port/mcp"}
tools:
  - {name: "own", description: "a graph tool", inputSchema: {type: "object"}, nodes: [{id: "entry", type: "entry", next: "exit"}, {id: "exit", type: "exit"}]}
proxy:
  - server: "everything"
    taskSupport: optional
    tools:
      - {name: "trigger-long-running-operation", as: "long"}
      - {name: "echo", as: "now", taskSupport: forbidden}
      - {name: "trigger-elicitation-request", as: "ask"}
  - {server: "everything", tools: "all", prefix: "t_", taskSupport: required}
YAML
TCAPS='{"extensions":{"io.modelcontextprotocol/tasks":{}}}'
# call26 OUT METHOD NAME PARAMS [CAPS] → status: a 2026-07-28 request to graph tk (NAME → Mcp-Name)
call26() {
  local body; body=$(python3 -c "
import json,sys; p=json.loads(sys.argv[2]); p['_meta']={'io.modelcontextprotocol/protocolVersion':'2026-07-28','io.modelcontextprotocol/clientCapabilities':json.loads(sys.argv[3])}
print(json.dumps({'jsonrpc':'2.0','id':7,'method':sys.argv[1],'params':p}))" "$2" "$4" "${5:-$TCAPS}")
  local args=(-X POST -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream'
              -H 'MCP-Protocol-Version: 2026-07-28' -H "Mcp-Method: $2" -H "Authorization: Bearer $KEY")
  [ -n "$3" ] && args+=(-H "Mcp-Name: $3")
  gg_curl "$1" "${args[@]}" --data-binary "$body" "$GG_PUB/mcp/acme/tk"
}
t "a proxy graph with taskSupport entries is accepted" eq "$(gw_put_graph "$ADMIN" acme tk "$GG_TMP/tk.yaml")" 201
call26 "$GG_TMP/tl.json" tools/list "" '{}' >/dev/null
t "tools/list: the entry's optional on long, the listed forbidden on now (no execution), the graph tool none" \
  eq "$(jget "$GG_TMP/tl.json" '[(t["name"], t.get("execution")) for t in d["result"]["tools"] if t["name"] in ("long", "now", "own")]')" \
  "[('own', None), ('long', {'taskSupport': 'optional'}), ('now', None)]"
t "... tools: all: every tool it adds lists the entry's required" eq True \
  "$(jget "$GG_TMP/tl.json" '(lambda ts: len(ts) > 5 and all(t.get("execution") == {"taskSupport": "required"} for t in ts))([t for t in d["result"]["tools"] if t["name"].startswith("t_")])')"
st=$(call26 "$GG_TMP/tc.json" tools/call long '{"name":"long","arguments":{"duration":1,"steps":2}}')
TASK=$(jget "$GG_TMP/tc.json" 'd["result"]["taskId"]')
t "an optional proxied tool called by a client with the tasks extension is answered with a task at once" \
  eq "$st $(jget "$GG_TMP/tc.json" '(d["result"]["resultType"], d["result"]["status"])')" "200 ('task', 'working')"
# task_is WANT: true once tasks/get reports TASK's status WANT (bounded: 20 s); the answer in tg.json
task_is() {
  local _; for _ in $(seq 1 200); do
    call26 "$GG_TMP/tg.json" tasks/get "$TASK" "{\"taskId\":\"$TASK\"}" >/dev/null
    [ "$(jget "$GG_TMP/tg.json" 'd["result"]["status"]')" = "$1" ] && return 0; sleep 0.1
  done; echo "   task $TASK: $(head -c 300 "$GG_TMP/tg.json")" >&2; return 1
}
t "... the task completes (tasks/get)" task_is completed
t "... with the downstream's result" eq "$(jget "$GG_TMP/tg.json" 'd["result"]["result"]["content"][0]["text"]')" \
  "Long running operation completed. Duration: 1 seconds, Steps: 2."
st=$(call26 "$GG_TMP/tn.json" tools/call now '{"name":"now","arguments":{"message":"at once"}}')
call26 "$GG_TMP/to.json" tools/call own '{"name":"own","arguments":{}}' >/dev/null
t "a forbidden proxied tool called with the tasks extension answers at once, as a forbidden graph tool does" \
  eq "$st $(jget "$GG_TMP/tn.json" '(d["result"]["content"][0]["text"], d["result"].get("resultType"), "taskId" in d["result"])') $(jget "$GG_TMP/to.json" '(d["result"].get("resultType"), "taskId" in d["result"])')" \
  "200 ('Echo: at once', 'complete', False) ('complete', False)"
# the downstream asks its client during the task: the task waits input_required with the question
ECAPS='{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}'
call26 "$GG_TMP/ta.json" tools/call ask '{"name":"ask","arguments":{}}' "$ECAPS" >/dev/null
TASK=$(jget "$GG_TMP/ta.json" 'd["result"]["taskId"]')
asked() { task_is input_required && eq "$(jget "$GG_TMP/tg.json" '[(k[:6], q["method"]) for k, q in d["result"]["inputRequests"].items()]')" \
  "[('relay-', 'elicitation/create')]"; }
t "a proxied task whose downstream asks its client turns input_required, with the downstream's elicitation" asked
ASKED=$(jget "$GG_TMP/tg.json" 'list(d["result"]["inputRequests"])[0]')
call26 "$GG_TMP/tu.json" tasks/update "$TASK" "{\"taskId\":\"$TASK\",\"inputResponses\":{\"$ASKED\":{\"action\":\"accept\",\"content\":{\"name\":\"by a task\"}}}}" "$ECAPS" >/dev/null
answered() {
  task_is completed && jget "$GG_TMP/tg.json" '" ".join(c["text"] for c in d["result"]["result"]["content"])' | grep -q "Name: by a task" ||
    { echo "   update: $(head -c 300 "$GG_TMP/tu.json"); task: $(head -c 600 "$GG_TMP/tg.json")" >&2; return 1; }
}
t "... tasks/update answers it: the task completes with the downstream's result that used the answer" answered
st=$(call26 "$GG_TMP/tr.json" tools/call t_echo '{"name":"t_echo","arguments":{"message":"x"}}' '{}')
t "a required proxied tool without the tasks extension → -32021" eq "$st $(jget "$GG_TMP/tr.json" 'd["error"]["code"]')" "400 -32021"

# has FILE CODE LINE: the 422 lists an error CODE at LINE with a column
has() { jget "$1" "any(e['code'] == '$2' and e['line'] == $3 and e['column'] > 0 for e in d['errors'])"; }
t "65 proxy entries → 422 too_large at proxy's line" \
  eq "$(gw_put_graph "$ADMIN" acme many "$GG_TMP/many.yaml") $(has "$GG_TMP/put.json" too_large 6)" "422 True"
gw_put_graph "$ADMIN" acme clash "$GG_TMP/clash.yaml" >"$GG_TMP/clash.code"
t "colliding names → 422" eq "$(cat "$GG_TMP/clash.code")" 422
t "... a proxied name taking an ordinary tool's, at its 'as'" eq "$(has "$GG_TMP/put.json" duplicate_tool 10)" True
t "... two proxied tools with one name, at the second" eq "$(has "$GG_TMP/put.json" duplicate_tool 12)" True
t "... a downstream tool that does not exist" eq "$(has "$GG_TMP/put.json" downstream_unknown_tool 13)" True
t "... a hook node taking the reserved id 'downstream'" eq "$(has "$GG_TMP/put.json" reserved_id 17)" True
t "... a server not in mcpServers" eq "$(has "$GG_TMP/put.json" unknown_server 18)" True
t "nothing refused was stored" eq "$(gg_curl "$GG_TMP/x.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/acme/graphs/clash")" 404
t "server stops cleanly (stdio children included)" gw_stop_clean
gg_finish
