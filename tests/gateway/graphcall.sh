#!/usr/bin/env bash
# graphcall.sh — graph-to-graph calls (an mcp node whose server is `type: graph`) through
# the official SDK client: the callee runs in-process (itself waiting on server-everything
# over streamable HTTP) on a server with ONE worker, so a caller holding its thread while
# the callee waits would hang; the callee's run is its own execution whose parent_id is the
# caller's. Attacks: a graph reaching itself (directly or through another) is refused at
# upload with the path; an 11-graph chain stops at the depth limit (8) with depth_exceeded;
# another tenant's graph naming ours gets not_found (names resolve in the caller's tenant
# only) and its key is refused on our endpoint. Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
gw_with_everything
port=$EVPORT

# the callee: doubles x and has server-everything echo it
cat >"$GG_TMP/inner.yaml" <<YAML
version: "1.0"
server: {name: "inner", version: "1.0.0"}
mcpServers:
  everything: {type: "streamableHttp", url: "http://127.0.0.1:$port/mcp"}
tools:
  - name: "double"
    description: "2x, and the downstream's echo of x"
    inputSchema: {type: "object", properties: {x: {type: "number"}}, required: ["x"]}
    nodes:
      - {id: "entry", type: "entry", next: "echo"}
      - {id: "echo", type: "mcp", server: "everything", tool: "echo", args: {message: {expr: "\$string(\$.entry.x)"}}, next: "out"}
      - {id: "out", type: "transform", transform: {expr: '{"y": \$.entry.x * 2, "said": \$.echo}'}, next: "exit"}
      - {id: "exit", type: "exit"}
YAML
# caller GRAPH TARGET_GRAPH TOOL: one tool `go` passing x on to TARGET_GRAPH's TOOL
caller() {
  cat >"$GG_TMP/$1.yaml" <<YAML
version: "1.0"
server: {name: "$1", version: "1.0.0"}
mcpServers:
  next: {type: "graph", graph: "$2"}
tools:
  - name: "go"
    description: "calls $2.$3"
    inputSchema: {type: "object", properties: {x: {type: "number"}}}
    nodes:
      - {id: "entry", type: "entry", next: "call"}
      - {id: "call", type: "mcp", server: "next", tool: "$3", args: {x: {expr: "\$.entry.x"}}, next: "exit"}
      - {id: "exit", type: "exit"}
YAML
}
caller outer inner double
caller self self go
caller ping pong go
caller pong ping go
caller spy inner double
for i in 0 1 2 3 4 5 6 7 8 9; do caller "c$i" "c$((i + 1))" go; done
cat >"$GG_TMP/c10.yaml" <<'YAML'
version: "1.0"
server: {name: "c10", version: "1.0.0"}
tools:
  - name: "go"
    description: "the end of the chain"
    inputSchema: {type: "object"}
    nodes:
      - {id: "entry", type: "entry", next: "exit"}
      - {id: "exit", type: "exit"}
YAML
cat >"$GG_TMP/badname.yaml" <<'YAML'
version: "1.0"
server: {name: "badname", version: "1.0.0"}
mcpServers:
  next: {type: "graph", graph: "../beta/inner", url: "http://x"}
tools:
  - name: "go"
    description: "d"
    inputSchema: {type: "object"}
    nodes:
      - {id: "entry", type: "entry", next: "call"}
      - {id: "call", type: "mcp", server: "next", tool: "go", next: "exit"}
      - {id: "exit", type: "exit"}
YAML

gw_cli_run tenant create acme >/dev/null
gw_cli_run tenant create beta >/dev/null
ADMIN=$(gw_key acme admin)
KEY=$(gw_key acme tools:read,tools:execute)
BETA=$(gw_key beta admin)
BETA_EXEC=$(gw_key beta tools:read,tools:execute)
GRAPHGATE_POLICY_HTTP_HOSTS=127.0.0.1 GRAPHGATE_WORKERS=1 gg_start || { echo "0 passed, 1 failed"; exit 1; }
t "setup: tenants and keys" gw_cli_clean
t "the callee graph is accepted" eq "$(gw_put_graph "$ADMIN" acme inner "$GG_TMP/inner.yaml")" 201
t "a graph with a type: graph server is accepted (no downstream check of it)" \
  eq "$(gw_put_graph "$ADMIN" acme outer "$GG_TMP/outer.yaml") $(jget "$GG_TMP/put.json" 'len(d["warnings"])')" "201 0"
"$NODE" "$GG_SRCDIR/tests/gateway/graphcall.mjs" "$GG_PUB/mcp/acme/outer" "$KEY" >"$GG_TMP/sdk.out" 2>&1
gw_fold "$GG_TMP/sdk.out" $?

# history: the callee's runs are executions of inner whose parent is an execution of outer
# (the writer commits a moment after the answers: wait for all 18 rows)
for _ in $(seq 1 100); do
  gg_curl "$GG_TMP/ex.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/acme/executions?limit=100" >/dev/null
  [ "$(jget "$GG_TMP/ex.json" 'sum(1 for e in d["executions"] if e["status"] != "running")')" = 18 ] && break
  sleep 0.1
done
t "each of the 9 callee runs is recorded with its caller's execution as parent" eq "$(jget "$GG_TMP/ex.json" '
sum(1 for e in d["executions"] if e["graph"] == "inner" and e["status"] == "succeeded" and
    any(o["id"] == e["parent_id"] and o["graph"] == "outer" for o in d["executions"]))')" 9
t "... and the callers have no parent" eq "$(jget "$GG_TMP/ex.json" '
sum(1 for e in d["executions"] if e["graph"] == "outer" and e["parent_id"] is None)')" 9
id=$(jget "$GG_TMP/ex.json" '[e["id"] for e in d["executions"] if e["graph"] == "inner"][0]')
gg_curl "$GG_TMP/one.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/executions/$id" >/dev/null
t "GET /admin/executions/{callee}: parent_id and the callee's own nodes" eq "$(jget "$GG_TMP/one.json" '
d["parent_id"] is not None and [n.get("node_id", n.get("nodeId")) for n in d["nodes"]] == ["entry", "echo", "out", "exit"]')" True
t "... each with its input: the arguments the mcp node sent, the context the transform saw" eq "$(jget "$GG_TMP/one.json" '
(d["nodes"][1]["input"] == {"message": str(d["arguments"]["x"])}, d["nodes"][2]["input"]["entry"] == d["arguments"])')" "(True, True)"

# attacks
t "a graph calling itself → 422 graph_cycle" \
  eq "$(gw_put_graph "$ADMIN" acme self "$GG_TMP/self.yaml") $(jget "$GG_TMP/put.json" 'd["error"]["code"]')" "422 graph_cycle"
t "ping calling pong (not there yet) is accepted" eq "$(gw_put_graph "$ADMIN" acme ping "$GG_TMP/ping.yaml")" 201
t "pong calling ping → 422 with the path" \
  eq "$(gw_put_graph "$ADMIN" acme pong "$GG_TMP/pong.yaml") $(jget "$GG_TMP/put.json" 'd["error"]["message"]')" \
  "422 graph 'pong' calls itself: pong -> ping -> pong"
t "a graph name with a path in it, and a foreign key → 422 at their line" \
  eq "$(gw_put_graph "$ADMIN" acme badname "$GG_TMP/badname.yaml") $(jget "$GG_TMP/put.json" '
sorted({(e["code"], e["line"]) for e in d["errors"]})')" "422 [('invalid_server', 4), ('unknown_key', 4)]"
ok=1
for i in 10 9 8 7 6 5 4 3 2 1 0; do [ "$(gw_put_graph "$ADMIN" acme "c$i" "$GG_TMP/c$i.yaml")" = 201 ] || ok=0; done
t "a chain of 11 graphs (c0 → ... → c10) is accepted: no cycle" eq $ok 1
call() { gg_curl "$GG_TMP/call.json" -X POST --data-binary "$3" "$GG_INT/internal/tenants/$1/graphs/$2/tools/go/call"; }
call acme c2 '{}' >/dev/null
t "c2 → ... → c10 (8 nested calls) answers" eval "! grep -q 'nested graph calls' '$GG_TMP/call.json' && grep -q '{}' '$GG_TMP/call.json'"
call acme c0 '{}' >/dev/null
t "c0 → ... stops at the depth limit: depth_exceeded" eval "grep -q 'more than 8 nested graph calls' '$GG_TMP/call.json'"
t "beta's graph naming acme's inner is accepted (a name, resolved at call time)" \
  eq "$(gw_put_graph "$BETA" beta spy "$GG_TMP/spy.yaml")" 201
call beta spy '{"x": 1}' >/dev/null
t "... and its call finds no graph 'inner' in beta" eval "grep -q \"graph 'inner' not found\" '$GG_TMP/call.json'"
gg_curl "$GG_TMP/ex2.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/acme/executions?graph=inner&limit=100" >/dev/null
t "... nothing of acme's ran for it" eq "$(jget "$GG_TMP/ex2.json" 'len(d["executions"])')" 9
t "beta's tools key on acme's endpoint → 403" \
  eq "$(gw_rpc "$GG_TMP/x.json" "$GG_PUB/mcp/acme/outer" "$BETA_EXEC" "" \
     '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}')" 403
t "server stops cleanly" gw_stop_clean
gg_finish
