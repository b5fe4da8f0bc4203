#!/usr/bin/env bash
# matrix.sh — the real gateway driven with curl: the GET stream × {no key, bad key, revoked
# key, other tenant's key, each scope} (every other route × caller with its exact status:
# tests/cases/access_matrix.case); admin REST (graphs, versions, rollback, executions,
# audit; refused uploads: tests/cases/admin_errors.case); internal endpoints only on the
# internal listener; the CLI on the same database; the rate limit.
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
# until_ok CMD...: retried until it succeeds, for up to 10 s (the server polls the database)
until_ok() { local i; for i in $(seq 1 100); do "$@" && return 0; sleep 0.1; done; return 1; }
SWITCH="$GG_SRCDIR/tests/fixtures/graphs/value_switch.yaml"

gw_cli_run tenant create acme >/dev/null
gw_cli_run tenant create beta >/dev/null
ADMIN=$(gw_key acme admin)
READ=$(gw_key acme tools:read)
EXEC=$(gw_key acme tools:execute)
RW=$(gw_key acme tools:read,tools:execute)
GW=$(gw_key acme graphs:write)
HEALTH=$(gw_key acme health:check)
OTHER=$(gw_key beta tools:read,tools:execute,graphs:write)
REVOKED=$(gw_key acme tools:read,tools:execute,graphs:write)
BAD="gg_0123456789abcdef_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
gw_cli_run key revoke "$(echo "$REVOKED" | cut -d_ -f2)" >/dev/null
keys_made() { for k in "$ADMIN" "$READ" "$EXEC" "$RW" "$GW" "$HEALTH" "$OTHER" "$REVOKED"; do [ -n "$k" ] || return 1; done; }
t "setup: the CLI created tenants and 8 keys, revoked one (exit 0, no sanitizer report)" gw_cli_clean
t "setup: every key printed" keys_made
gg_start || { echo "$GG_PASSED passed, $((GG_FAILED + 1)) failed"; exit 1; }

t "admin uploads the switch graph → 201" eq "$(gw_put_graph "$ADMIN" acme switch "$SWITCH")" 201
t "graphs:write uploads a second graph → 201" eq "$(gw_put_graph "$GW" acme other "$GG_SRCDIR/tests/fixtures/conformance/everything.yaml")" 201
t "other tenant's graph upload → 201" eq "$(gw_put_graph "$OTHER" beta mine "$SWITCH")" 201
TOOL=$(jget "$GG_TMP/put.json" 'd["tools"][0]')
MCP="$GG_PUB/mcp/acme/switch"
INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
LIST='{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
CALL="{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"$TOOL\",\"arguments\":{\"value\":42}}}"

# gw_get URL KEY SID → status of a GET stream (held open 1 s, then dropped)
gw_get() {
  local args=(-H 'Accept: text/event-stream')
  [ -n "$2" ] && args+=(-H "Authorization: Bearer $2")
  [ -n "$3" ] && args+=(-H "Mcp-Session-Id: $3")
  curl -sS -m 1 -o /dev/null -w '%{http_code}' "${args[@]}" "$1" 2>/dev/null
}

# ---- the route × caller matrix of single requests (MCP methods on the graph's endpoint and
# the tenant-wide one, admin routes): tests/cases/access_matrix.case. Here: the GET stream,
# held open, needs tools:read like initialize.
for ep in switch _all; do
MCP="$GG_PUB/mcp/acme/$ep"
for who in none bad revoked other read exec rw gw health admin; do
  case $who in none) k="";; bad) k=$BAD;; revoked) k=$REVOKED;; other) k=$OTHER;; read) k=$READ;; exec) k=$EXEC;;
    rw) k=$RW;; gw) k=$GW;; health) k=$HEALTH;; admin) k=$ADMIN;; esac
  case $who in none|bad|revoked) e=401;; read|rw|admin) e=200;; *) e=403;; esac
  sid=""
  [ "$e" = 200 ] && sid=$(gw_init "$MCP" "$k")
  t "matrix $ep $who: GET stream → $e" eq "$(gw_get "$MCP" "$k" "$sid")" "$e"
done
done
MCP="$GG_PUB/mcp/acme/switch"
t "PUT tenant → 201" eq "$(gg_curl "$GG_TMP/a.json" -X PUT -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/delta")" 201
t "PUT of an existing tenant → 200 (created false)" eq "$(gg_curl "$GG_TMP/a.json" -X PUT -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/delta"; jget "$GG_TMP/a.json" 'd["created"]')" "200False"
t "the tenant exists once" eq "$(gg_curl "$GG_TMP/a.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants"; jget "$GG_TMP/a.json" '[x["name"] if isinstance(x, dict) else x for x in d["tenants"]].count("delta")')" 2001

# ---- admin REST behaviour (uploads refused one request at a time, with their error bodies:
# tests/cases/admin_errors.case)
t "second version → 201" eq "$(gw_put_graph "$ADMIN" acme switch "$GG_SRCDIR/tests/fixtures/conformance/everything.yaml")" 201
t "version number 2" eq "$(jget "$GG_TMP/put.json" 'd["version"]')" 2
sid=$(gw_init "$MCP" "$RW")
gw_rpc "$GG_TMP/l.json" "$MCP" "$RW" "$sid" "$LIST" >/dev/null
t "the new version serves at once" grep -q test_simple_text "$GG_TMP/l.json"
gg_curl "$GG_TMP/v.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/acme/graphs/switch/versions" >/dev/null
t "versions lists 2, newest first" eq "$(jget "$GG_TMP/v.json" '[v["version"] for v in d["versions"]]')" "[2, 1]"
t "rollback → 200" eq "$(gg_curl "$GG_TMP/a.json" -X POST -H "Authorization: Bearer $ADMIN" --data-binary '{"version":1}' "$GG_PUB/admin/tenants/acme/graphs/switch/activate")" 200
sid=$(gw_init "$MCP" "$RW")
gw_rpc "$GG_TMP/l.json" "$MCP" "$RW" "$sid" "$LIST" >/dev/null
t "rolled-back version serves" grep -q "\"$TOOL\"" "$GG_TMP/l.json"
t "activate a missing version → 404" eq "$(gg_curl "$GG_TMP/a.json" -X POST -H "Authorization: Bearer $ADMIN" --data-binary '{"version":9}' "$GG_PUB/admin/tenants/acme/graphs/switch/activate")" 404
gg_curl "$GG_TMP/g.json" -H "Authorization: Bearer $GW" "$GG_PUB/admin/tenants/acme/graphs/switch" >/dev/null
t "GET graph: active version, source, tools" python3 -c "import json; d=json.load(open('$GG_TMP/g.json')); assert d['version']==1 and 'switch_node' in d['source'] and d['tools'][0]['name']=='$TOOL', d"
gw_rpc "$GG_TMP/c.json" "$MCP" "$RW" "$sid" "$CALL" >/dev/null
t "tools/call result" grep -q '"structuredContent":{"result":"high"}' "$GG_TMP/c.json"
# the history writer flushes every few ms (later on a loaded machine): poll, bounded
for _ in $(seq 1 100); do
  gg_curl "$GG_TMP/e.json" -H "Authorization: Bearer $GW" "$GG_PUB/admin/tenants/acme/executions?graph=switch&limit=5" >/dev/null
  [ "$(jget "$GG_TMP/e.json" 'len(d["executions"])')" -ge 1 ] 2>/dev/null && break
  sleep 0.1
done
EID=$(jget "$GG_TMP/e.json" 'd["executions"][0]["id"]')
t "executions list shows the run" eq "$(jget "$GG_TMP/e.json" 'd["executions"][0]["status"]')" succeeded
gg_curl "$GG_TMP/x.json" -H "Authorization: Bearer $GW" "$GG_PUB/admin/executions/$EID" >/dev/null
t "execution show has the node history" python3 -c "import json; d=json.load(open('$GG_TMP/x.json')); assert [n['node_id'] for n in d['nodes']]==['entry','switch_node','high_path','exit'] and d['arguments']=={'value':42}, d"
for who in none bad read exec; do
  case $who in none) k="";; bad) k=$BAD;; read) k=$READ;; exec) k=$EXEC;; esac
  e=403; [ $who = none ] || [ $who = bad ] && e=401
  args=(); [ -n "$k" ] && args=(-H "Authorization: Bearer $k")
  t "execution show as $who (no graphs:write) → $e" eq "$(gg_curl "$GG_TMP/a.json" "${args[@]}" "$GG_PUB/admin/executions/$EID")" $e
done
t "another tenant's execution → 404" eq "$(gg_curl "$GG_TMP/a.json" -H "Authorization: Bearer $OTHER" "$GG_PUB/admin/executions/$EID")" 404
gg_curl "$GG_TMP/e2.json" -H "Authorization: Bearer $OTHER" "$GG_PUB/admin/tenants/beta/executions" >/dev/null
t "other tenant's execution list does not show acme runs" python3 -c "import json; d=json.load(open('$GG_TMP/e2.json')); assert all(e['tenant']=='beta' for e in d['executions'])"
t "executions: bad status filter → 400" eq "$(gg_curl "$GG_TMP/a.json" -H "Authorization: Bearer $GW" "$GG_PUB/admin/tenants/acme/executions?status=nope")" 400
gg_curl "$GG_TMP/au.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/audit?tenant=acme" >/dev/null
t "audit log records graph.put and graph.activate (views and keys: access_matrix.case)" python3 -c "import json; d=json.load(open('$GG_TMP/au.json')); a={e['action'] for e in d['entries']}; assert {'graph.put','graph.activate'} <= a, a"
t "delete graph → 200" eq "$(gg_curl "$GG_TMP/a.json" -X DELETE -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/acme/graphs/other")" 200
t "deleted graph's endpoint → 404" eq "$(gw_rpc "$GG_TMP/m.json" "$GG_PUB/mcp/acme/other" "$RW" "" "$INIT")" 404
NEWKEY=$(gg_curl "$GG_TMP/k.json" -X POST -H "Authorization: Bearer $ADMIN" --data-binary '{"scopes":"tools:read","name":"tmp"}' "$GG_PUB/admin/tenants/acme/keys" >/dev/null; jget "$GG_TMP/k.json" 'd["key"]')
NEWID=$(jget "$GG_TMP/k.json" 'd["id"]')
t "a created key works" eq "$(gw_rpc "$GG_TMP/m.json" "$MCP" "$NEWKEY" "" "$INIT")" 200
gg_curl "$GG_TMP/kl.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/acme/keys" >/dev/null
t "key list never shows a secret" python3 -c "import sys; s=open('$GG_TMP/kl.json').read(); assert '$NEWID' in s and '$NEWKEY' not in s"
t "revoke via admin → 200" eq "$(gg_curl "$GG_TMP/a.json" -X DELETE -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/keys/$NEWID")" 200
t "a revoked key → 401 at once" eq "$(gw_rpc "$GG_TMP/m.json" "$MCP" "$NEWKEY" "" "$INIT")" 401
# a key revoked by the CLI (another process, same database) while serve runs: refused once
# the server's key cache sees it (polled, bounded)
CLIKEY=$(gw_key acme tools:read)
t "a CLI-created key works on the running server" eq "$(gw_rpc "$GG_TMP/m.json" "$MCP" "$CLIKEY" "" "$INIT")" 200
t "CLI key revoke → 0" gw_cli_run key revoke "$(echo "$CLIKEY" | cut -d_ -f2)"
refused() { eq "$(gw_rpc "$GG_TMP/m.json" "$MCP" "$CLIKEY" "" "$INIT")" 401 2>/dev/null; }
t "... then refused by the running server (401)" until_ok refused
# a deleted tenant's keys stop working
gw_cli_run tenant create gamma >/dev/null
GAMMA=$(gw_key gamma tools:read,graphs:write)
t "gamma's key works" eq "$(gg_curl "$GG_TMP/a.json" -H "Authorization: Bearer $GAMMA" "$GG_PUB/admin/tenants/gamma/graphs")" 200
t "tenant DELETE → 200" eq "$(gg_curl "$GG_TMP/a.json" -X DELETE -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/gamma")" 200
t "a deleted tenant's key → 401" eq "$(gg_curl "$GG_TMP/a.json" -H "Authorization: Bearer $GAMMA" "$GG_PUB/admin/tenants/gamma/graphs")" 401
t "... on MCP too" eq "$(gw_rpc "$GG_TMP/m.json" "$MCP" "$GAMMA" "" "$INIT")" 401

# ---- internal listener
t "internal MCP needs no key" eq "$(gw_rpc "$GG_TMP/m.json" "$GG_INT/internal/mcp/acme/switch" "" "" "$INIT")" 200
t "internal tool call → 200" eq "$(gg_curl "$GG_TMP/i.json" -X POST --data-binary '{"value":3}' "$GG_INT/internal/tenants/acme/graphs/switch/tools/$TOOL/call")" 200
t "internal tool call: plain JSON result" eq "$(cat "$GG_TMP/i.json")" '{"result":"low"}'
t "internal tool call: bad arguments → 400" eq "$(gg_curl "$GG_TMP/i.json" -X POST --data-binary '{"value":"x"}' "$GG_INT/internal/tenants/acme/graphs/switch/tools/$TOOL/call")" 400
t "internal tool call: unknown tool → 404" eq "$(gg_curl "$GG_TMP/i.json" -X POST --data-binary '{}' "$GG_INT/internal/tenants/acme/graphs/switch/tools/nope/call")" 404
t "internal endpoints do not exist on the public listener" eq "$(gg_curl "$GG_TMP/i.json" -X POST --data-binary '{}' "$GG_PUB/internal/tenants/acme/graphs/switch/tools/$TOOL/call")" 404
t "internal MCP does not exist on the public listener" eq "$(gw_rpc "$GG_TMP/m.json" "$GG_PUB/internal/mcp/acme/switch" "$ADMIN" "" "$INIT")" 404
t "admin does not exist on the internal listener" eq "$(gg_curl "$GG_TMP/a.json" "$GG_INT/admin/tenants")" 404

# ---- the CLI on the same database; the running server follows within a second
t "CLI graph put → 0" eq "$(gw_cli graph put acme from-cli "$SWITCH" >/dev/null; echo $?)" 0
t "CLI graph put of an invalid file → 2" eq "$(gw_cli graph put acme broken "$GG_TMP/bad.yaml" 2>/dev/null; echo $?)" 2
served() { eq "$(gw_rpc "$GG_TMP/m.json" "$GG_PUB/mcp/acme/from-cli" "$RW" "" "$INIT")" 200 2>/dev/null; }
t "a graph put by the CLI is served" until_ok served
t "CLI graph list shows it" grep -q from-cli <(gw_cli graph list acme)
t "CLI graph activate (rollback) → 0" eq "$(gw_cli graph activate acme switch 2 >/dev/null; echo $?)" 0
follows() {
  sid=$(gw_init "$MCP" "$RW")
  gw_rpc "$GG_TMP/l.json" "$MCP" "$RW" "$sid" "$LIST" >/dev/null
  grep -q test_simple_text "$GG_TMP/l.json"
}
t "the server follows a CLI activation" until_ok follows
gw_cli executions list acme --json > "$GG_TMP/ex.json"
t "CLI executions list" python3 -c "import json; d=json.load(open('$GG_TMP/ex.json')); assert any(e['id']=='$EID' for e in d['executions'])"
t "CLI executions show has the nodes" grep -q switch_node <(gw_cli executions show "$EID")

# ---- per-key rate limit and per-tenant concurrency cap (restart with tight limits)
gg_stop
rm -f "$GG_TMP/serve.out"
GRAPHGATE_RATE_LIMIT_RATE=1 GRAPHGATE_RATE_LIMIT_BURST=2 gg_restart "restart with a tight rate limit"
MCP="$GG_PUB/mcp/acme/switch"
gw_rpc "$GG_TMP/r1.json" "$MCP" "$RW" "" "$INIT" >/dev/null
gw_rpc "$GG_TMP/r2.json" "$MCP" "$RW" "" "$INIT" >/dev/null
t "rate limit → 429" eq "$(gw_rpc "$GG_TMP/r3.json" "$MCP" "$RW" "" "$INIT")" 429
t "429 carries Retry-After" grep -qi '^retry-after: [1-9]' "$GG_TMP/r3.json.h"
t "another key has its own bucket" eq "$(gw_rpc "$GG_TMP/r4.json" "$MCP" "$ADMIN" "" "$INIT")" 200
t "server stops cleanly (exit 0, no sanitizer report)" gw_stop_clean
gg_finish
