#!/usr/bin/env bash
# proxy.sh — proxy graphs (`proxy:` entries, src/graph/proxy.c) through the official SDK
# client: a renamed subset of server-everything (streamable HTTP) with a pre-hook that blocks
# one call and uppercases another's argument and a post-hook that rewrites a result; `tools:
# all` listing the downstream catalog; a real SDK server over stdio (proxy_dyn.mjs) that adds
# a tool at runtime shows up in the proxy's tools/list after its list_changed, without
# re-upload. History: a proxied call is an execution with the tool's nodes. Attacks: too many
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
