#!/usr/bin/env bash
# proxy_resources.sh — `proxy:` entries with `resources` and `prompts` (src/graph/proxy_extras.c):
# a downstream's resources, resource templates, prompts and completions re-exported through the
# graph's endpoint, driven by the official SDK client (proxy_resources.mjs). server-everything
# over stdio behind `resources: all` + `uri_prefix` and `prompts: all` + `prefix` (every page
# listed, static and templated reads, a blob, a prompt with arguments, completions with
# context); a chosen and renamed subset with URIs unchanged (nothing else listed or
# reachable; the graph's own resources and prompts first, a proxied prompt of the same name
# left out); an entry with tools only (no capability, -32601); a hostile stdio downstream
# (proxy_resources_srv.mjs: an item without a uri, 5000 templates, a content without text or
# blob, 6 MiB of text, a role "system" message, numeric completions, a 4 KiB cursor) — each a
# clear JSON-RPC error, the gateway unharmed, its well-formed pages passed through with their
# cursor. The same through the tenant-wide endpoint (names and URIs under "<graph>.", every
# page across graphs, the failing graph skipped and named, a graph's own items, unselected
# URIs and another tenant's graph not reachable) and a view naming graphs under "resources" and
# "prompts" (only theirs; bad selections 400). A downstream's resources/ and prompts/list_changed
# reach the GET streams of its graph, _all and a view naming it, a burst folded into one.
# resources/subscribe of a proxied URI reaches the downstream (prefix stripped) and its
# resources/updated the subscribed sessions (prefix added), 300 of them as at most 2, never
# another tenant's; an unselected URI -32002; unsubscribe stops them (and, at the next update
# nobody hears, unsubscribes the downstream); a downstream without subscribe: a clear error. The same through stateless MCP 2026-07-28 requests. Forwarded requests are not runs: no execution is recorded. Upload errors with
# line:col: a bad selection, an unknown key, a bad uri_prefix, overlapping URIs and prompt
# names. Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
gw_need_sdk
EV="$NM/@modelcontextprotocol/server-everything/dist/index.js"
[ -f "$EV" ] || { echo "SKIP: server-everything not under tests/npm (run tests/npm-deps.sh)"; exit 77; }
HOSTILE="$GG_SRCDIR/tests/gateway/proxy_resources_srv.mjs"

hdr() { printf 'version: "1.0"\nserver: {name: "%s", version: "1.0.0"}\nmcpServers:\n' "$1"; }
{ hdr ev; cat <<YAML
  everything: {command: "$NODE", args: ["$EV", "stdio"]}
proxy:
  - {server: "everything", resources: "all", uri_prefix: "ev+", prompts: "all", prefix: "ev_"}
YAML
} >"$GG_TMP/ev.yaml"
{ hdr sel; cat <<YAML
  everything: {command: "$NODE", args: ["$EV", "stdio"]}
proxy:
  - server: "everything"
    tools: ["echo"]
    resources:
      - "demo://resource/static/document/architecture.md"
      - {uri: "demo://resource/dynamic/text/{resourceId}", description: "text by id"}
    prompts:
      - {name: "args-prompt", as: "weather", description: "asks the weather"}
      - "completable-prompt"
resources:
  - {uri: "docs://mine", name: "mine", mimeType: "text/plain", text: "my own"}
prompts:
  - {name: "hello", messages: "Say hello."}
  - {name: "completable-prompt", description: "mine", messages: "my own wins"}
YAML
} >"$GG_TMP/sel.yaml"
{ hdr none; cat <<YAML
  everything: {command: "$NODE", args: ["$EV", "stdio"]}
proxy:
  - {server: "everything", tools: ["echo"]}
YAML
} >"$GG_TMP/none.yaml"
{ hdr hostile; cat <<YAML
  hostile: {command: "$NODE", args: ["$HOSTILE"]}
proxy:
  - {server: "hostile", resources: "all", prompts: "all"}
YAML
} >"$GG_TMP/hostile.yaml"
{ hdr sub; cat <<YAML
  notifier: {command: "$NODE", args: ["$HOSTILE", "notify"]}
proxy:
  - {server: "notifier", tools: ["touch"], resources: ["x://a", "x://b"], uri_prefix: "s+"}
YAML
} >"$GG_TMP/sub.yaml"
{ hdr lc; cat <<YAML
  notifier: {command: "$NODE", args: ["$HOSTILE", "notify"]}
proxy:
  - {server: "notifier", tools: ["change"], resources: "all", prompts: "all"}
YAML
} >"$GG_TMP/lc.yaml"
# line numbers matter below (has FILE CODE LINE)
{ hdr bad; cat <<YAML
  a: {command: "$NODE", args: ["$HOSTILE"]}
  b: {command: "$NODE", args: ["$HOSTILE", "b"]}
proxy:
  - {server: "a", resources: 42}
  - {server: "a", resources: "all", prompts: [{name: "p1", bogus: 1}]}
  - {server: "b", resources: ["x://1"]}
  - {server: "b", resources: "all", uri_prefix: "b{x}"}
  - {server: "a", prompts: "all"}
  - {server: "b", prompts: "all"}
  - {server: "b", uri_prefix: "z+"}
  - {server: "a", resources: "all"}
  - {server: "a", prompts: ["p1", {name: "p2", as: "q_p1"}], prefix: "q_"}
YAML
} >"$GG_TMP/bad.yaml"

{ hdr vault; cat <<YAML
  everything: {command: "$NODE", args: ["$EV", "stdio"]}
proxy:
  - {server: "everything", resources: "all", prompts: "all"}
YAML
} >"$GG_TMP/vault.yaml"

gw_cli_run tenant create acme >/dev/null
gw_cli_run tenant create beta >/dev/null
ADMIN=$(gw_key acme admin)
KEY=$(gw_key acme tools:read,tools:execute)
BADMIN=$(gw_key beta admin)
BKEY=$(gw_key beta tools:read,tools:execute)
GRAPHGATE_POLICY_STDIO_COMMANDS="$NODE" GRAPHGATE_DOWNSTREAM_LIST_CHANGED_MIN_INTERVAL=1s gg_start || { echo "0 passed, 1 failed"; exit 1; }
t "setup: tenant and keys" gw_cli_clean

sdk() { # MODE GRAPH: the SDK client's checks folded into ours
  "$NODE" "$GG_SRCDIR/tests/gateway/proxy_resources.mjs" "$1" "$GG_PUB/mcp/acme/$2" "$KEY" >"$GG_TMP/$1.out" 2>&1
  gw_fold "$GG_TMP/$1.out" $?
}
t "ev (resources: all, uri_prefix, prompts: all, prefix) is accepted" eq "$(gw_put_graph "$ADMIN" acme ev "$GG_TMP/ev.yaml")" 201
sdk ev ev
t "sel (a chosen, renamed subset) is accepted" eq "$(gw_put_graph "$ADMIN" acme sel "$GG_TMP/sel.yaml")" 201
sdk sel sel
t "none (tools only) is accepted" eq "$(gw_put_graph "$ADMIN" acme none "$GG_TMP/none.yaml")" 201
sdk none none
t "hostile is accepted" eq "$(gw_put_graph "$ADMIN" acme hostile "$GG_TMP/hostile.yaml")" 201
sdk hostile hostile

# the tenant-wide endpoint and a view (src/gateway/tenantwide.c): every graph's proxied
# resources, templates, prompts and completions under "<graph>."; beta's graph vault proxies
# the same server and is not reachable through acme's endpoints
t "beta's vault (resources: all, prompts: all, no prefix) is accepted" eq "$(gw_put_graph "$BADMIN" beta vault "$GG_TMP/vault.yaml")" 201
sdk tenantwide _all
V="$GG_PUB/admin/tenants/acme/views"
vput() { gg_curl "$GG_TMP/v.json" -X PUT -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' --data-binary "$2" "$V/$1"; }
t "a view naming graphs under resources and prompts → 201" \
  eq "$(vput px '{"tools":[{"tool":"sel.echo"}],"resources":["sel"],"prompts":["ev"]}')" 201
sdk view _views/px
t "a view with prompts only (no tools) → 201" eq "$(vput po '{"prompts":["ev"]}') $(jget "$GG_TMP/v.json" 'd["tool_count"]')" "201 0"
t "views: resources not a list of graph names → 400 invalid_view" \
  eq "$(vput bad '{"resources":"ev"}') $(vput bad '{"prompts":["Not A Graph"]}') $(vput bad '{"resources":["ev","ev"]}') $(jget "$GG_TMP/v.json" 'd["error"]["code"]')" \
  "400 400 400 invalid_view"
t "views: neither tools nor resources nor prompts → 400" eq "$(vput bad '{"resources":[]}')" 400
# a downstream's resources/ and prompts/list_changed relayed to the GET streams of its graph,
# _all and a view naming the graph (for resources only), rate-bounded (downstream.c relay_due)
t "lc (a downstream announcing changed lists) is accepted, view lcv names it for resources" \
  eq "$(gw_put_graph "$ADMIN" acme lc "$GG_TMP/lc.yaml") $(vput lcv '{"resources":["lc"]}')" "201 201"
"$NODE" "$GG_SRCDIR/tests/gateway/proxy_resources.mjs" notify "$GG_PUB/mcp/acme" "$KEY" "$GG_INT/metrics" >"$GG_TMP/notify.out" 2>&1
gw_fold "$GG_TMP/notify.out" $?
t "sub (proxied x://a and x://b under s+) is accepted by acme and by beta" \
  eq "$(gw_put_graph "$ADMIN" acme sub "$GG_TMP/sub.yaml") $(gw_put_graph "$BADMIN" beta sub "$GG_TMP/sub.yaml")" "201 201"
"$NODE" "$GG_SRCDIR/tests/gateway/proxy_resources.mjs" subscribe "$GG_PUB/mcp" "$KEY" "$GG_INT/metrics" "$BKEY" >"$GG_TMP/subscribe.out" 2>&1
gw_fold "$GG_TMP/subscribe.out" $?
# the same in the stateless 2026-07-28 era; beta's key on acme's _all is refused as for tools
rpc26() { # OUT URL KEY METHOD PARAMS NAME → HTTP status
  gg_curl "$1" -X POST -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H 'MCP-Protocol-Version: 2026-07-28' -H "Mcp-Method: $4" -H "Mcp-Name: $6" -H "Authorization: Bearer $3" \
    --data-binary "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"$4\",\"params\":{$5,\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}}}}" "$2"
}
U='ev.ev+demo://resource/dynamic/text/5'
t "2026-07-28: resources/read through _all" \
  eq "$(rpc26 "$GG_TMP/r.json" "$GG_PUB/mcp/acme/_all" "$KEY" resources/read "\"uri\":\"$U\"" "$U") $(jget "$GG_TMP/r.json" 'd["result"]["contents"][0]["uri"]')" "200 $U"
t "2026-07-28: prompts/get through the view" eq "$(rpc26 "$GG_TMP/r.json" "$GG_PUB/mcp/acme/_views/px" "$KEY" prompts/get \
  '"name":"ev.ev_args-prompt","arguments":{"city":"Rome"}' ev.ev_args-prompt) $(jget "$GG_TMP/r.json" 'str("Rome" in d["result"]["messages"][0]["content"]["text"])')" "200 True"
t "beta's key reading a URI on acme's _all → 403" \
  eq "$(rpc26 "$GG_TMP/r.json" "$GG_PUB/mcp/acme/_all" "$BKEY" resources/read "\"uri\":\"$U\"" "$U")" 403
t "beta's own _all reads its vault, not acme's graphs" eq "$(rpc26 "$GG_TMP/r.json" "$GG_PUB/mcp/beta/_all" "$BKEY" resources/read \
  '"uri":"vault.demo://resource/dynamic/text/5"' vault.demo://resource/dynamic/text/5) $(rpc26 "$GG_TMP/r2.json" "$GG_PUB/mcp/beta/_all" "$BKEY" resources/read "\"uri\":\"$U\"" "$U") $(jget "$GG_TMP/r2.json" 'd["error"]["code"]')" \
  "200 400 -32602"

# the same through a stateless MCP 2026-07-28 request (no session): the answer shaped for that era
m26() { # OUT METHOD PARAMS (without braces) NAME (prompt name or URI) → HTTP status
  gg_curl "$1" -X POST -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H 'MCP-Protocol-Version: 2026-07-28' -H "Mcp-Method: $2" -H "Mcp-Name: $4" -H "Authorization: Bearer $KEY" \
    --data-binary "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"$2\",\"params\":{$3,\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}}}}" \
    "$GG_PUB/mcp/acme/ev"
}
t "2026-07-28: prompts/get of a proxied prompt, resultType complete" eq "$(m26 "$GG_TMP/r.json" prompts/get \
  '"name":"ev_args-prompt","arguments":{"city":"Rome"}' ev_args-prompt) $(jget "$GG_TMP/r.json" 'd["result"]["resultType"] + " " + str("Rome" in d["result"]["messages"][0]["content"]["text"])')" "200 complete True"
t "2026-07-28: resources/read of a proxied URI" eq "$(m26 "$GG_TMP/r.json" resources/read \
  '"uri":"ev+demo://resource/dynamic/text/3"' 'ev+demo://resource/dynamic/text/3') $(jget "$GG_TMP/r.json" 'd["result"]["contents"][0]["uri"]')" \
  "200 ev+demo://resource/dynamic/text/3"
m26 "$GG_TMP/r.json" resources/read '"uri":"ev+demo://resource/static/document/none.md"' 'ev+demo://resource/static/document/none.md' >/dev/null
t "2026-07-28: a proxied URI the downstream lacks → that era's -32602" eq "$(jget "$GG_TMP/r.json" 'd["error"]["code"]')" -32602

gg_curl "$GG_TMP/ex.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/acme/executions?graph=ev&limit=100" >/dev/null
t "forwarded requests are not runs (graph, _all or view): graph ev has no execution" eq "$(jget "$GG_TMP/ex.json" 'len(d["executions"])')" 0

# has FILE CODE LINE: the 422 lists an error CODE at LINE with a column
has() { jget "$1" "any(e['code'] == '$2' and e['line'] == $3 and e['column'] > 0 for e in d['errors'])"; }
t "bad selections → 422" eq "$(gw_put_graph "$ADMIN" acme bad "$GG_TMP/bad.yaml")" 422
t "... resources: 42 (not all, not a list)" eq "$(has "$GG_TMP/put.json" invalid_type 7)" True
t "... an unknown key in a proxied prompt" eq "$(has "$GG_TMP/put.json" unknown_key 8)" True
t "... a uri_prefix with a brace" eq "$(has "$GG_TMP/put.json" invalid_type 10)" True
t "... two 'prompts: all' without distinct prefixes" eq "$(has "$GG_TMP/put.json" duplicate_prompt 12)" True
t "... an entry with neither tools, resources nor prompts" eq "$(has "$GG_TMP/put.json" missing_key 13)" True
t "... two entries whose URIs could collide (no uri_prefix)" eq "$(has "$GG_TMP/put.json" proxy_uri_collision 14)" True
t "... two proxied prompts under one name" eq "$(has "$GG_TMP/put.json" duplicate_prompt 15)" True
t "nothing refused was stored" eq "$(gg_curl "$GG_TMP/x.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/acme/graphs/bad")" 404
t "server stops cleanly (stdio children included)" gw_stop_clean
gg_finish
