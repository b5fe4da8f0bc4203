#!/usr/bin/env bash
# rugpull.sh — pinned downstream tool definitions (issue 28). Real SDK servers
# (rugpull_srv.mjs: McpServer + StreamableHTTPServerTransport) change a tool's description
# and schema at runtime and announce tools/list_changed; proxy graphs (`tools: all`) in
# front of them, one per on_change policy:
#  - review: clients keep the pinned definition; the change is pending with its diff
#    (fields, incompatible schema changes) in GET .../downstream; reject keeps the old one
#    (and a re-listing does not propose it again); a newer change is approved and our SDK
#    client gets tools/list_changed, then lists the new definition;
#  - quarantine: the tool disappears from tools/list and its calls are refused with data code
#    tool_definition_changed, until approved — on the graph's endpoint, on _all, on a view
#    selecting it under another name, and at a plain graph's mcp node calling it (the node
#    fails with that code, recorded in the execution's node record);
#  - follow: the new definition is served at once, nothing pending (today's behaviour);
#  - a description hiding a tag character (U+E0041) is a finding at upload (a warning, an
#    error under suspicious_text: reject);
#  - a server whose definitions change in a loop holds one pending change per tool however
#    often it changes, while another tenant's calls stay fast.
# Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
le() { [ "$1" -le "$2" ] || { echo "   $1 > $2" >&2; return 1; }; }
gw_need_sdk
. "$GG_SRCDIR/tests/gateway/lib_listen.sh" # wait_for, metric, metric_at_least

# srv MODE NAME → starts rugpull_srv.mjs in MODE; prints its port
srv() {
  "$NODE" "$GG_SRCDIR/tests/gateway/rugpull_srv.mjs" "$1" >"$GG_TMP/srv_$2.log" 2>&1 &
  echo $! >>"$GG_TMP/listen.pids"
  gw_wait_port "$GG_TMP/srv_$2.log" $!
}
trap 'listen_stop_all; gg_cleanup' EXIT
R=$(srv plain r); Q=$(srv plain q); F=$(srv plain f); T=$(srv tag t); L=$(srv loop l)
[ -n "$R" ] && [ -n "$Q" ] && [ -n "$F" ] && [ -n "$T" ] && [ -n "$L" ] ||
  { echo "a downstream did not start: $(cat "$GG_TMP"/srv_*.log | head -5)"; echo "0 passed, 1 failed"; exit 1; }

# px FILE GRAPH SERVER PORT SERVER_KEYS → a proxy graph of every tool of SERVER
px() {
  cat >"$1" <<YAML
version: "1.0"
server: {name: "$2", version: "1.0.0"}
mcpServers:
  $3: {type: "streamableHttp", url: "http://127.0.0.1:$4/mcp"$5}
proxy:
  - {server: "$3", tools: "all"}
YAML
}
px "$GG_TMP/rv.yaml" rv rs "$R" ""                       # on_change: review (the default)
px "$GG_TMP/qv.yaml" qv qs "$Q" ", on_change: quarantine"
px "$GG_TMP/fw.yaml" fw fs "$F" ", on_change: follow"
px "$GG_TMP/tg.yaml" tg ts "$T" ""
px "$GG_TMP/tr.yaml" tr ts "$T" ", suspicious_text: reject"
px "$GG_TMP/lv.yaml" lv ls "$L" ""
px "$GG_TMP/bad.yaml" bad bs "$R" ", on_change: sometimes"
cat >"$GG_TMP/qn.yaml" <<YAML
version: "1.0"
server: {name: "qn", version: "1.0.0"}
mcpServers:
  qs: {type: "streamableHttp", url: "http://127.0.0.1:$Q/mcp", on_change: quarantine}
tools:
  - name: "sum"
    description: "adds through the quarantined server's add"
    inputSchema: {type: "object"}
    nodes:
      - {id: "entry", type: "entry", next: "call"}
      - {id: "call", type: "mcp", server: "qs", tool: "add", args: {a: 1, b: 2}, next: "exit"}
      - {id: "exit", type: "exit"}
YAML
cat >"$GG_TMP/pure.yaml" <<'YAML'
version: "1.0"
server: {name: "pure", version: "1.0.0"}
tools:
  - name: "double"
    description: "doubles"
    inputSchema: {type: "object", properties: {n: {type: "number"}}, required: ["n"]}
    nodes:
      - {id: "entry", type: "entry", next: "t"}
      - {id: "t", type: "transform", transform: {expr: '{"n": $.entry.n * 2}'}, next: "exit"}
      - {id: "exit", type: "exit"}
YAML

gw_cli_run tenant create acme >/dev/null
gw_cli_run tenant create other >/dev/null
ADMIN=$(gw_key acme admin)
KEY=$(gw_key acme tools:read,tools:execute)
OKEY=$(gw_key other graphs:write,tools:read,tools:execute)
A=(-H "Authorization: Bearer $ADMIN")
GRAPHGATE_POLICY_HTTP_HOSTS=127.0.0.1 GRAPHGATE_DOWNSTREAM_LIST_CHANGED_MIN_INTERVAL=100ms gg_start ||
  { echo "0 passed, 1 failed"; exit 1; }
t "setup: tenants and keys" gw_cli_clean

# ---- uploads: the policies are validated; suspicious text is a finding
t "on_change: sometimes → 422 invalid_server at its line:col" \
  eq "$(gw_put_graph "$ADMIN" acme bad "$GG_TMP/bad.yaml") $(jget "$GG_TMP/put.json" '[(e["code"], e["line"]) for e in d["errors"]]')" \
  "422 [('invalid_server', 4)]"
for g in rv qv fw; do
  t "the $g proxy graph is accepted" eq "$(gw_put_graph "$ADMIN" acme $g "$GG_TMP/$g.yaml")" 201
done
t "a plain graph whose mcp node calls the quarantined server's add is accepted" eq "$(gw_put_graph "$ADMIN" acme qn "$GG_TMP/qn.yaml")" 201
t "a view selecting qv.add as sum is accepted" eq "$(gg_curl "$GG_TMP/v.json" -X PUT "${A[@]}" -H 'Content-Type: application/json' \
  --data-binary '{"tools":[{"tool":"qv.add","name":"sum"},{"tool":"qv.echo"}]}' "$GG_PUB/admin/tenants/acme/views/qview")" 201
# qn_call → "CODE|TEXT" of a tools/call of qn's sum: a failed run's code (_meta) and text, or ok
qn_call() {
  local sid; sid=$(gw_init "$GG_PUB/mcp/acme/qn" "$KEY")
  gw_rpc "$GG_TMP/qn.json" "$GG_PUB/mcp/acme/qn" "$KEY" "$sid" \
    '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"sum","arguments":{}}}' >/dev/null
  jget "$GG_TMP/qn.json" '(lambda e, r: (e.get("data") or {}).get("code", "") + "|" + e.get("message", "") if e else
    ((r.get("_meta") or {}).get("io.graphgate/error") or {}).get("code", "ok") + "|" + r["content"][0]["text"])(d.get("error"), d.get("result"))'
}
t "... its node calls add while nothing changed" eq "$(qn_call | cut -d'|' -f1)" ok
t "... with no suspicious_text finding" eq "$(jget "$GG_TMP/put.json" 'any(w["code"] == "suspicious_text" for w in d["warnings"])')" False
t "a tool description with a tag character (U+E0041): accepted with a suspicious_text warning" \
  eq "$(gw_put_graph "$ADMIN" acme tg "$GG_TMP/tg.yaml") $(jget "$GG_TMP/put.json" '[w["message"].split(":")[0] for w in d["warnings"] if w["code"] == "suspicious_text" and "U+E0041" in w["message"]]')" \
  "201 [\"server 'ts' tool 'echo'\"]"
t "... refused (422, suspicious_text) under suspicious_text: reject" \
  eq "$(gw_put_graph "$ADMIN" acme tr "$GG_TMP/tr.yaml") $(jget "$GG_TMP/put.json" '[e["code"] for e in d["errors"]]')" "422 ['suspicious_text']"

# add_of GRAPH EXPR → EXPR over the add tool (t; None when not listed) in GRAPH's tools/list
add_of() {
  local sid; sid=$(gw_init "$GG_PUB/mcp/acme/$1" "$KEY")
  gw_rpc "$GG_TMP/tl.json" "$GG_PUB/mcp/acme/$1" "$KEY" "$sid" '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' >/dev/null
  jget "$GG_TMP/tl.json" "(lambda t: $2)(next((x for x in d['result']['tools'] if x['name'] == 'add'), None))"
}
# change SERVER EXPR → EXPR over acme's definition change of SERVER's add (c; None when none)
change() {
  gg_curl "$GG_TMP/ds.json" "${A[@]}" "$GG_PUB/admin/tenants/acme/downstream" >/dev/null
  jget "$GG_TMP/ds.json" "(lambda c: $2)(next((x for x in d.get('changes', []) if x['server'] == '$1' and x['tool'] == 'add'), None))"
}
poison() { curl -fsS -X POST "http://127.0.0.1:$1/poison?n=$2" >/dev/null; }
decide_url() { echo "$GG_PUB/admin/tenants/acme/downstream/changes/$1/$2"; }

# ---- review
t "review: add is listed as uploaded" eq "$(add_of rv 't["description"]')" "Adds two numbers"
poison "$R" 1
t "review: the server's change (description, schema) is pending" wait_for change rs 'c is not None and c["status"] == "pending"'
t "... its diff names the fields" eq "$(change rs 'sorted(c["diff"]["fields"])')" "['description', 'inputSchema']"
t "... and flags the incompatible schema changes" \
  eq "$(change rs '"inputSchema property \x27b\x27 removed" in c["diff"]["incompatible"] and "inputSchema property \x27note\x27 newly required" in c["diff"]["incompatible"]')" True
t "... the pending change carries the new definition and both hashes" \
  eq "$(change rs '"id_rsa" in c["definition"]["description"] and len(c["old_hash"]) == 64 and len(c["new_hash"]) == 64 and c["kind"] == "changed"')" True
t "... clients keep the pinned definition (description and schema)" \
  eq "$(add_of rv 't["description"] + " " + ",".join(sorted(t["inputSchema"]["properties"]))')" "Adds two numbers a,b"
ID1=$(change rs 'c["id"]')
t "reject → 200" eq "$(gg_curl "$GG_TMP/dec.json" -X POST "${A[@]}" "$(decide_url "$ID1" reject)") $(jget "$GG_TMP/dec.json" 'd["status"]')" "200 rejected"
t "... a second decision on it → 409 conflict" eq "$(gg_curl "$GG_TMP/dec.json" -X POST "${A[@]}" "$(decide_url "$ID1" approve)")" 409
t "... an unknown change → 404" eq "$(gg_curl "$GG_TMP/dec.json" -X POST "${A[@]}" "$(decide_url 0123456789abcdef approve)")" 404
t "... another tenant's key may not decide (403)" eq "$(gg_curl "$GG_TMP/dec.json" -X POST -H "Authorization: Bearer $OKEY" "$(decide_url "$ID1" approve)")" 403
t "... the old definition stays" eq "$(add_of rv 't["description"]')" "Adds two numbers"
t "... a sync does not propose the rejected definition again" \
  eq "$(gg_curl "$GG_TMP/sync.json" -X POST "${A[@]}" "$GG_PUB/admin/tenants/acme/downstream/sync") $(change rs 'c["status"] + " " + str(c["id"] == "'"$ID1"'")')" "200 rejected True"
poison "$R" 2
t "a newer change of the same tool is pending again (one row per tool)" wait_for change rs 'c["status"] == "pending" and "(v2)" in c["definition"]["description"]'
ID2=$(change rs 'c["id"]')
"$NODE" "$GG_SRCDIR/tests/gateway/rugpull.mjs" "$GG_PUB/mcp/acme/rv" "$KEY" "$(decide_url "$ID2" approve)" "$ADMIN" \
  "Adds two numbers" "(v2)" "$GG_INT/metrics" >"$GG_TMP/sdk_rv.out" 2>&1
gw_fold "$GG_TMP/sdk_rv.out" $?
t "... approved: no change pending for the server" eq "$(change rs 'c')" None
t "... new sessions list the approved definition and schema" eq "$(add_of rv '",".join(sorted(t["inputSchema"]["properties"]))')" "a,note"
gg_curl "$GG_TMP/audit.json" "${A[@]}" "$GG_PUB/admin/audit?tenant=acme" >/dev/null
t "... the changes and decisions are in the audit log" \
  eq "$(jget "$GG_TMP/audit.json" 'sorted(e["action"] for e in d["entries"] if e["action"].startswith("downstream.") and e["target"] == "rs")')" \
  "['downstream.change', 'downstream.change', 'downstream.change.approve', 'downstream.change.reject']"

# ---- quarantine
poison "$Q" 1
t "quarantine: add disappears from tools/list" wait_for add_of qv 't is None'
sid=$(gw_init "$GG_PUB/mcp/acme/qv" "$KEY")
gw_rpc "$GG_TMP/call.json" "$GG_PUB/mcp/acme/qv" "$KEY" "$sid" \
  '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}' >/dev/null
t "... its calls are refused with data code tool_definition_changed" \
  eq "$(jget "$GG_TMP/call.json" 'd["error"]["data"]["code"] + " " + str(d["error"]["code"])')" "tool_definition_changed -32602"
asid=$(gw_init "$GG_PUB/mcp/acme/_all" "$KEY")
gw_rpc "$GG_TMP/call.json" "$GG_PUB/mcp/acme/_all" "$KEY" "$asid" \
  '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"qv.add","arguments":{"a":1,"b":2}}}' >/dev/null
t "... and so on the tenant-wide endpoint (qv.add)" eq "$(jget "$GG_TMP/call.json" 'd["error"]["data"]["code"]')" tool_definition_changed
vsid=$(gw_init "$GG_PUB/mcp/acme/_views/qview" "$KEY")
gw_rpc "$GG_TMP/call.json" "$GG_PUB/mcp/acme/_views/qview" "$KEY" "$vsid" \
  '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"sum","arguments":{"a":1,"b":2}}}' >/dev/null
t "... and on a view that selected it as sum (-32602, not unknown tool)" \
  eq "$(jget "$GG_TMP/call.json" 'd["error"]["data"]["code"] + " " + str(d["error"]["code"])')" "tool_definition_changed -32602"
gw_rpc "$GG_TMP/call.json" "$GG_PUB/mcp/acme/_views/qview" "$KEY" "$vsid" \
  '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"nosuch","arguments":{}}}' >/dev/null
t "... while a name the view never selected stays unknown" \
  eq "$(jget "$GG_TMP/call.json" '(d["error"].get("data") or {}).get("code") != "tool_definition_changed" and d["error"]["message"].startswith("Unknown tool")')" True
t "... and a plain graph's mcp node calling add fails with tool_definition_changed" \
  wait_for eval '[ "$(qn_call | cut -d"|" -f1)" = tool_definition_changed ] && echo True'
t "... its message names the node, the server and the tool" \
  eq "$(qn_call | cut -d'|' -f2- | grep -o "node 'call': tool_definition_changed: tool 'add' of server 'qs' is withheld")" \
  "node 'call': tool_definition_changed: tool 'add' of server 'qs' is withheld"
# the node record of the refused run (the writer commits a moment after the answer)
qn_node() {
  gg_curl "$GG_TMP/ex.json" "${A[@]}" "$GG_PUB/admin/tenants/acme/executions?graph=qn&limit=1" >/dev/null
  local id; id=$(jget "$GG_TMP/ex.json" 'd["executions"][0]["id"] if d["executions"] and d["executions"][0]["status"] == "failed" else ""')
  [ -n "$id" ] || return 1
  gg_curl "$GG_TMP/one.json" "${A[@]}" "$GG_PUB/admin/executions/$id" >/dev/null
  jget "$GG_TMP/one.json" '[n["node_id"] for n in d["nodes"] if n["node_id"] == "call" and "tool_definition_changed" in json.dumps(n["error"])] == ["call"]'
}
t "... recorded in the execution's node record (call's error: tool_definition_changed)" wait_for qn_node
t "... echo, unchanged, still serves" eq "$(add_of qv 'True') $(jget "$GG_TMP/tl.json" '[x["name"] for x in d["result"]["tools"]]')" "True ['echo']"
ID3=$(change qs 'c["id"]')
t "... the change is pending" test -n "$ID3"
"$NODE" "$GG_SRCDIR/tests/gateway/rugpull.mjs" "$GG_PUB/mcp/acme/qv" "$KEY" "$(decide_url "$ID3" approve)" "$ADMIN" \
  absent "(v1)" "$GG_INT/metrics" >"$GG_TMP/sdk_qv.out" 2>&1
gw_fold "$GG_TMP/sdk_qv.out" $?
t "... approved: qn's node calls add again" wait_for eval '[ "$(qn_call | cut -d"|" -f1)" != tool_definition_changed ] && echo True'

# ---- follow
poison "$F" 1
t "follow: the new definition is served at once" wait_for add_of fw '"(v1)" in t["description"]'
t "... nothing pending for it" eq "$(change fs 'c')" None

t "/metrics counts the recorded changes" \
  metric_at_least "$(metric 'graphgate_downstream_definition_changes_total{outcome="recorded"}')" 3
t "/metrics counts the suspicious definitions listed" \
  metric_at_least "$(metric 'graphgate_downstream_suspicious_text_total{seen="listed"}')" 1

# ---- definitions changing in a loop: bounded, and no one else slowed down
t "other's plain graph is accepted" eq "$(gw_put_graph "$OKEY" other pure "$GG_TMP/pure.yaml")" 201
before=$(metric 'graphgate_downstream_definition_changes_total{outcome="recorded"}')
t "the looping server's proxy graph is accepted" eq "$(gw_put_graph "$ADMIN" acme lv "$GG_TMP/lv.yaml")" 201
t "... its definition changes are recorded again and again" \
  wait_for eval 'metric_at_least "$(metric "graphgate_downstream_definition_changes_total{outcome=\"recorded\"}")" $((before + 10))'
osid=$(gw_init "$GG_PUB/mcp/other/pure" "$OKEY")
worst=0
for i in $(seq 1 20); do
  ms=$(curl -sS -o /dev/null -w '%{time_total}' -X POST "$GG_PUB/mcp/other/pure" -H "Authorization: Bearer $OKEY" \
    -H "Mcp-Session-Id: $osid" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H 'MCP-Protocol-Version: 2025-11-25' \
    -d "{\"jsonrpc\":\"2.0\",\"id\":$i,\"method\":\"tools/call\",\"params\":{\"name\":\"double\",\"arguments\":{\"n\":$i}}}" |
    python3 -c 'import sys; print(int(float(sys.stdin.read()) * 1000))')
  [ "$ms" -gt "$worst" ] && worst=$ms
done
echo "# other tenant's slowest of 20 calls during the loop: $worst ms"
t "... another tenant's calls stay fast (slowest of 20: $worst ms < 500)" le "$worst" 499
rows=$(gg_curl "$GG_TMP/ds.json" "${A[@]}" "$GG_PUB/admin/tenants/acme/downstream" >/dev/null;
  jget "$GG_TMP/ds.json" 'len([c for c in d["changes"] if c["server"] == "ls"])')
t "... the looping server holds at most one pending change per tool ($rows rows)" le "$rows" 2
t "server stops cleanly" gw_stop_clean
gg_finish
