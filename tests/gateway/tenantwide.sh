#!/usr/bin/env bash
# tenantwide.sh — /mcp/{tenant}/_all: every active graph's tools as <graph>.<tool> through
# the official SDK client (list + calls across two graphs); the runs go through the graph's
# own provider and are recorded; a tool whose dotted name breaks MCP's tool-name rule is
# left out; another tenant's key gets 403 as on a graph endpoint; the 2026-07-28 era works
# on the same endpoint. Views (admin REST): bad bodies refused with 400s, a view with 2 tools
# and a rename through the SDK client, list_changed when its selection changes. Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
gw_need_sdk

# graph NAME TOOL EXPR [TOOL2 EXPR2]
tool() {
  cat <<YAML
  - name: "$1"
    description: "$1"
    inputSchema: {type: "object"}
    nodes:
      - {id: "entry", type: "entry", next: "out"}
      - {id: "out", type: "transform", transform: {expr: '$2'}, next: "exit"}
      - {id: "exit", type: "exit"}
YAML
}
{ printf 'version: "1.0"\nserver: {name: "alpha", version: "1.0.0"}\ntools:\n'
  tool add '{"sum": $.entry.a + $.entry.b}'; tool neg '{"n": 0 - $.entry.a}'; } >"$GG_TMP/alpha.yaml"
{ printf 'version: "1.0"\nserver: {name: "gamma", version: "1.0.0"}\ntools:\n'
  tool shout '{"out": $uppercase($.entry.s)}'; } >"$GG_TMP/gamma.yaml"
long=$(printf "x%.0s" $(seq 1 125))
{ printf 'version: "1.0"\nserver: {name: "longname", version: "1.0.0"}\ntools:\n'
  tool "$long" '{"x": 1}'; tool ok '{"x": 1}'; } >"$GG_TMP/long.yaml"

gw_cli_run tenant create acme >/dev/null
gw_cli_run tenant create beta >/dev/null
ADMIN=$(gw_key acme admin)
KEY=$(gw_key acme tools:read,tools:execute)
BETA=$(gw_key beta tools:read,tools:execute)
gg_start || { echo "0 passed, 1 failed"; exit 1; }
t "setup: tenants and keys" gw_cli_clean
t "graphs alpha and gamma are accepted" \
  eq "$(gw_put_graph "$ADMIN" acme alpha "$GG_TMP/alpha.yaml") $(gw_put_graph "$ADMIN" acme gamma "$GG_TMP/gamma.yaml")" "201 201"
"$NODE" "$GG_SRCDIR/tests/gateway/tenantwide.mjs" "$GG_PUB/mcp/acme/_all" "$KEY" >"$GG_TMP/sdk.out" 2>&1
gw_fold "$GG_TMP/sdk.out" $?

# the runs are recorded like any call (writer commits a moment after the answer)
for _ in $(seq 1 100); do
  gg_curl "$GG_TMP/ex.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/acme/executions?limit=100" >/dev/null
  [ "$(jget "$GG_TMP/ex.json" 'sum(1 for e in d["executions"] if e["status"] == "succeeded")')" = 2 ] && break
  sleep 0.1
done
t "both calls are recorded as the graphs' own runs (graph, tool, version)" \
  eq "$(jget "$GG_TMP/ex.json" 'sorted((e["graph"], e["tool"], e["version"]) for e in d["executions"] if e["status"] == "succeeded")')" \
  "[('alpha', 'add', 1), ('gamma', 'shout', 1)]"

# a tool whose dotted name would pass 128 characters is left out, its sibling is served
t "graph longname (a 125-character tool name: longname.<it> would pass 128) is accepted" eq "$(gw_put_graph "$ADMIN" acme longname "$GG_TMP/long.yaml")" 201
LIST='{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'
gw_rpc "$GG_TMP/l26.json" "$GG_PUB/mcp/acme/_all" "$KEY" "" "$LIST" -H "MCP-Protocol-Version: 2026-07-28" -H "Mcp-Method: tools/list" >/dev/null
t "2026-07-28 stateless tools/list on the same endpoint" \
  eq "$(jget "$GG_TMP/l26.json" 'sorted(t["name"] for t in d["result"]["tools"])')" \
  "['alpha.add', 'alpha.neg', 'gamma.shout', 'longname.ok']"

# names are stable: removing a graph does not rename the others' tools
gg_curl "$GG_TMP/del.json" -X DELETE -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/acme/graphs/longname" >/dev/null
gw_rpc "$GG_TMP/l26.json" "$GG_PUB/mcp/acme/_all" "$KEY" "" "$LIST" -H "MCP-Protocol-Version: 2026-07-28" -H "Mcp-Method: tools/list" >/dev/null
t "after deleting a graph the others keep their names" \
  eq "$(jget "$GG_TMP/l26.json" 'sorted(t["name"] for t in d["result"]["tools"])')" "['alpha.add', 'alpha.neg', 'gamma.shout']"

INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
t "beta's key on acme's tenant-wide endpoint → 403" eq "$(gw_rpc "$GG_TMP/x.json" "$GG_PUB/mcp/acme/_all" "$BETA" "" "$INIT")" 403
t "no key → 401" eq "$(gw_rpc "$GG_TMP/x.json" "$GG_PUB/mcp/acme/_all" "" "" "$INIT")" 401
t "beta's own tenant-wide endpoint answers (empty list)" eq "$(gw_rpc "$GG_TMP/x.json" "$GG_PUB/mcp/beta/_all" "$BETA" "" "$INIT")" 200
t "an unknown tenant's tenant-wide endpoint → 404" \
  eq "$(gw_rpc "$GG_TMP/x.json" "$GG_INT/internal/mcp/nobody/_all" "" "" "$INIT")" 404
t "the internal twin answers without a key" eq "$(gw_rpc "$GG_TMP/x.json" "$GG_INT/internal/mcp/acme/_all" "" "" "$INIT")" 200
# views: admin REST, bad bodies, the SDK client on a view, list_changed on a change
V="$GG_PUB/admin/tenants/acme/views"
vput() { gg_curl "$GG_TMP/v.json" -X PUT -H "Authorization: Bearer ${3:-$ADMIN}" -H 'Content-Type: application/json' --data-binary "$2" "$V/$1"; }
vcode() { printf '%s %s' "$(vput "$@")" "$(jget "$GG_TMP/v.json" 'd["error"]["code"]')"; }
PICK='{"tools":[{"tool":"alpha.add","name":"plus","description":"adds two numbers"},{"tool":"gamma.shout"},{"tool":"gone.tool"}]}'
t "PUT a view → 201, the tool no graph offers reported under missing"   eq "$(vput pick "$PICK") $(jget "$GG_TMP/v.json" '(d["missing"], d["tool_count"], d["endpoint"])')"   "201 (['gone.tool'], 2, '/mcp/acme/_views/pick')"
gg_curl "$GG_TMP/vl.json" -H "Authorization: Bearer $ADMIN" "$V" >/dev/null
t "GET the list of views" eq "$(jget "$GG_TMP/vl.json" '[v["name"] for v in d["views"]]')" "['pick']"
t "not JSON → 400 invalid_json" eq "$(vcode bad '{')" "400 invalid_json"
t "no tools → 400 invalid_view" eq "$(vcode bad '{"tools":[]}')" "400 invalid_view"
t "an unknown member → 400 invalid_view" eq "$(vcode bad '{"tools":[{"tool":"alpha.add"}],"x":1}')" "400 invalid_view"
t "a tool without a graph part → 400" eq "$(vcode bad '{"tools":[{"tool":"add"}]}')" "400 invalid_view"
t "a rename breaking MCP's name rule → 400 naming the entry"   eq "$(vcode bad '{"tools":[{"tool":"alpha.add","name":"a b"}]}') $(jget "$GG_TMP/v.json" 'd["error"]["message"][:13]')"   "400 invalid_view tools[0].name"
t "two entries serving one name → 400"   eq "$(vcode bad '{"tools":[{"tool":"alpha.add","name":"x"},{"tool":"alpha.neg","name":"x"}]}')" "400 invalid_view"
many=$(python3 -c 'import json; print(json.dumps({"tools": [{"tool": "alpha.add", "name": "t%d" % i} for i in range(201)]}))')
t "201 tools in one view → 400 (at most 200)" eq "$(vcode bad "$many")" "400 invalid_view"
t "a view name with '_' → 400 invalid_name" eq "$(vcode bad_name "$PICK")" "400 invalid_name"
t "a view in an unknown tenant → 404" eq "$(gg_curl "$GG_TMP/x.json" -X PUT -H "Authorization: Bearer $ADMIN" --data-binary "$PICK" "$GG_PUB/admin/tenants/nobody/views/v")" 404
t "beta's key PUTs a view in acme → 403" eq "$(vput pick "$PICK" "$BETA")" 403
t "GET of an unknown view → 404" eq "$(gg_curl "$GG_TMP/x.json" -H "Authorization: Bearer $ADMIN" "$V/nope")" 404
t "MCP on an unknown view → 404" eq "$(gw_rpc "$GG_TMP/x.json" "$GG_PUB/mcp/acme/_views/nope" "$KEY" "" "$INIT")" 404
t "beta's key on acme's view → 403" eq "$(gw_rpc "$GG_TMP/x.json" "$GG_PUB/mcp/acme/_views/pick" "$BETA" "" "$INIT")" 403
"$NODE" "$GG_SRCDIR/tests/gateway/tenantwide_view.mjs" "$GG_PUB/mcp/acme/_views/pick" "$KEY" "$V/pick" "$ADMIN"   "$GG_INT/metrics" "$GG_PUB/admin/tenants/acme/graphs/alpha" "$GG_TMP/alpha.yaml" >"$GG_TMP/sdkv.out" 2>&1
gw_fold "$GG_TMP/sdkv.out" $?
t "DELETE the view → 200, then its endpoint is 404"   eq "$(gg_curl "$GG_TMP/x.json" -X DELETE -H "Authorization: Bearer $ADMIN" "$V/pick") $(gw_rpc "$GG_TMP/x.json" "$GG_PUB/mcp/acme/_views/pick" "$KEY" "" "$INIT")" "200 404"
t "server stops cleanly" gw_stop_clean
gg_finish
