#!/usr/bin/env bash
# async_nodes.sh — fire-and-forget branches (mcp nodes with `async: true`) with real
# downstream servers (server-everything over streamable HTTP) and the official SDK client:
# an audit node whose downstream fails, and one whose downstream hangs (a 30 s operation
# cut by the server's 2000 ms timeout), leave the call's result identical to the call
# without the audit node and its latency within 1 s of it; each branch is its own
# execution row (tool "<server>.<tool>", parent_id = the caller's execution) with its final
# status; past tenants.max_async_branches a branch is skipped (the node's output says why)
# while the call succeeds and another tenant's branches still start; a stop with branches
# outstanding records them as interrupted; `async` on another node type is refused at its
# line. Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
gw_with_everything
url="http://127.0.0.1:$EVPORT/mcp"

cat >"$GG_TMP/audit.yaml" <<YAML
version: "1.0"
server: {name: "audit", version: "1.0.0"}
mcpServers:
  everything: {type: "streamableHttp", url: "$url"}
  bad: {type: "streamableHttp", url: "$url", check: "off"}
  slow: {type: "streamableHttp", url: "$url", timeout: 2000}
  stuck: {type: "streamableHttp", url: "$url", timeout: 60000}
tools:
  - name: "plain"
    description: "echo x"
    inputSchema: {type: "object", properties: {x: {type: "string"}}}
    nodes:
      - {id: "entry", type: "entry", next: "echo"}
      - {id: "echo", type: "mcp", server: "everything", tool: "echo", args: {message: {expr: "\$.entry.x"}}, next: "exit"}
      - {id: "exit", type: "exit"}
  - name: "fail"
    description: "echo x, audited by a call that fails"
    inputSchema: {type: "object", properties: {x: {type: "string"}}}
    nodes:
      - {id: "entry", type: "entry", next: "audit"}
      - {id: "audit", type: "mcp", async: true, server: "bad", tool: "no-such-tool", args: {x: {expr: "\$.entry.x"}}, next: "echo"}
      - {id: "echo", type: "mcp", server: "everything", tool: "echo", args: {message: {expr: "\$.entry.x"}}, next: "exit"}
      - {id: "exit", type: "exit"}
  - name: "hang"
    description: "echo x, audited by a call that hangs"
    inputSchema: {type: "object", properties: {x: {type: "string"}}}
    nodes:
      - {id: "entry", type: "entry", next: "audit"}
      - {id: "audit", type: "mcp", async: true, server: "slow", tool: "trigger-long-running-operation", args: {duration: 30, steps: 1}, next: "echo"}
      - {id: "echo", type: "mcp", server: "everything", tool: "echo", args: {message: {expr: "\$.entry.x"}}, next: "exit"}
      - {id: "exit", type: "exit"}
  - name: "probe"
    description: "start a branch that stays outstanding; the result is the node's output"
    inputSchema: {type: "object"}
    nodes:
      - {id: "entry", type: "entry", next: "audit"}
      - {id: "audit", type: "mcp", async: true, server: "stuck", tool: "trigger-long-running-operation", args: {duration: 60, steps: 1}, next: "exit"}
      - {id: "exit", type: "exit"}
YAML
# a graph-to-graph branch: an async node on a type: graph server
cat >"$GG_TMP/caller.yaml" <<'YAML'
version: "1.0"
server: {name: "caller", version: "1.0.0"}
mcpServers:
  sub: {type: "graph", graph: "audit"}
tools:
  - name: "go"
    description: "has audit's plain echo g2g in the background"
    inputSchema: {type: "object"}
    nodes:
      - {id: "entry", type: "entry", next: "audit"}
      - {id: "audit", type: "mcp", async: true, server: "sub", tool: "plain", args: {x: "g2g"}, next: "exit"}
      - {id: "exit", type: "exit"}
YAML
cat >"$GG_TMP/bad.yaml" <<'YAML'
version: "1.0"
server: {name: "bad", version: "1.0.0"}
tools:
  - name: "t"
    description: "async on a transform"
    inputSchema: {type: "object"}
    nodes:
      - {id: "entry", type: "entry", next: "x"}
      - id: "x"
        type: "transform"
        async: true
        transform: {expr: "1"}
        next: "exit"
      - {id: "exit", type: "exit"}
YAML

gw_cli_run tenant create acme >/dev/null
gw_cli_run tenant create beta >/dev/null
ADMIN=$(gw_key acme admin)
KEY=$(gw_key acme tools:read,tools:execute)
BETA=$(gw_key beta admin)
GRAPHGATE_POLICY_HTTP_HOSTS=127.0.0.1 GRAPHGATE_TENANTS_MAX_ASYNC_BRANCHES=3 gg_start || { echo "0 passed, 1 failed"; exit 1; }
t "setup: tenants and keys" gw_cli_clean
t "the graph with async audit nodes is accepted" eq "$(gw_put_graph "$ADMIN" acme audit "$GG_TMP/audit.yaml")" 201
t "beta's copy is accepted" eq "$(gw_put_graph "$BETA" beta audit "$GG_TMP/audit.yaml")" 201
t "a graph with an async graph-to-graph node is accepted" eq "$(gw_put_graph "$ADMIN" acme caller "$GG_TMP/caller.yaml")" 201
t "async on a transform node → 422 async_not_allowed at its line" \
  eq "$(gw_put_graph "$ADMIN" acme bad "$GG_TMP/bad.yaml") $(jget "$GG_TMP/put.json" '[(e["code"], e["line"]) for e in d["errors"]]')" \
  "422 [('async_not_allowed', 11)]"

gg_curl "$GG_TMP/g2g.json" -X POST --data-binary '{}' "$GG_INT/internal/tenants/acme/graphs/caller/tools/go/call" >/dev/null
t "the graph-to-graph branch started" eq "$(jget "$GG_TMP/g2g.json" 'd["started"]')" True
"$NODE" "$GG_SRCDIR/tests/gateway/async_nodes.mjs" "$GG_PUB/mcp/acme/audit" "$KEY" >"$GG_TMP/sdk.out" 2>&1
gw_fold "$GG_TMP/sdk.out" $?


# history: 11 calls (a warm-up plain, 3 of each, caller's go), 7 branches and the callee
# of the graph-to-graph one, all final once the hanging downstream's 2000 ms timeout fired
ex() { gg_curl "$GG_TMP/ex.json" -H "Authorization: Bearer $1" "$GG_PUB/admin/tenants/$2/executions?limit=200" >/dev/null; }
for _ in $(seq 1 150); do
  ex "$ADMIN" acme
  [ "$(jget "$GG_TMP/ex.json" 'sum(1 for e in d["executions"] if e["status"] != "running")')" = 19 ] && break
  sleep 0.1
done
branch() { # TOOL CALLER → "count [statuses] [error codes]" of branch rows under CALLER runs
  python3 - "$GG_TMP/ex.json" "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ex = d["executions"]
rows = [e for e in ex if e["tool"] == sys.argv[2] and any(o["id"] == e["parent_id"] and o["tool"] == sys.argv[3] for o in ex)]
print(len(rows), sorted({e["status"] for e in rows}), sorted({(e["error"] or "").split(":")[0] for e in rows}))
PY
}
t "the failing audit: 3 rows 'bad.no-such-tool' under the 'fail' runs, failed with the tool's error" \
  eq "$(branch bad.no-such-tool fail)" "3 ['failed'] ['tool_error']"
t "the hanging audit: 3 rows 'slow.trigger-long-running-operation' under the 'hang' runs, failed by timeout" \
  eq "$(branch slow.trigger-long-running-operation hang)" "3 ['failed'] ['timeout']"
t "the graph-to-graph branch: a row 'sub.plain' under caller's run, succeeded" \
  eq "$(branch sub.plain go)" "1 ['succeeded'] ['']"
t "... and the callee's run (audit's plain) recorded under the branch" eq "$(jget "$GG_TMP/ex.json" '
[e["graph"] + "/" + e["tool"] + " " + e["status"] for e in d["executions"]
 if any(o["id"] == e["parent_id"] and o["tool"] == "sub.plain" for o in d["executions"])]')" "['audit/plain succeeded']"
t "the calls themselves all succeeded" \
  eq "$(jget "$GG_TMP/ex.json" 'sorted({e["status"] for e in d["executions"] if e["parent_id"] is None})')" "['succeeded']"
id=$(jget "$GG_TMP/ex.json" '[e["id"] for e in d["executions"] if e["tool"] == "hang"][0]')
gg_curl "$GG_TMP/one.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/executions/$id" >/dev/null
t "the caller's trace shows the audit node's output {started: true, branch}" eq "$(jget "$GG_TMP/one.json" '
[n["output"]["started"] and len(n["output"]["branch"]) == 32 for n in d["nodes"] if n.get("node_id", n.get("nodeId")) == "audit"]')" "[True]"

# the per-tenant bound (3): three branches that stay outstanding, then a fourth is skipped
probe() { gg_curl "$GG_TMP/probe.json" -X POST --data-binary '{}' "$GG_INT/internal/tenants/$1/graphs/audit/tools/probe/call" >/dev/null; jget "$GG_TMP/probe.json" "$2"; }
started=""
for i in 1 2 3; do started="$started$(probe acme 'd["started"]')"; done
t "three outstanding branches start" eq "$started" "TrueTrueTrue"
t "a fourth is skipped, the call succeeds and its output says why" \
  eq "$(probe acme '(d["started"], d["skipped"])')" "(False, 'too many outstanding async branches for this tenant (3)')"
t "another tenant's branch still starts" eq "$(probe beta 'd["started"]')" True
gg_curl "$GG_TMP/metrics.txt" "$GG_INT/metrics" >/dev/null
t "/metrics: 4 outstanding, 1 skipped" eq "$(grep -E '^graphgate_async_branches_(outstanding|total\{event="skipped"\})' "$GG_TMP/metrics.txt" | awk '{print $2}' | tr '\n' ' ')" "4 1 "

# a stop with 4 branches outstanding (60 s operations): waits 5 s, then records them interrupted
t "server stops cleanly with branches outstanding" gw_stop_clean
GRAPHGATE_POLICY_HTTP_HOSTS=127.0.0.1 gg_start || { echo "0 passed, 1 failed"; exit 1; }
ex "$ADMIN" acme
t "acme's three outstanding branches are recorded as interrupted" \
  eq "$(jget "$GG_TMP/ex.json" 'sorted(e["status"] for e in d["executions"] if e["tool"] == "stuck.trigger-long-running-operation")')" \
  "['interrupted', 'interrupted', 'interrupted']"
ex "$BETA" beta
t "... and beta's one" \
  eq "$(jget "$GG_TMP/ex.json" '[e["status"] for e in d["executions"] if e["tool"] == "stuck.trigger-long-running-operation"]')" "['interrupted']"
t "server stops cleanly" gw_stop_clean
gg_finish
