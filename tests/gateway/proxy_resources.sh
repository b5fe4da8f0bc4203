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
# nobody hears, unsubscribes the downstream); a downstream declaring no resources.subscribe:
# a clear error up front, the downstream never asked (its request count; so for a listen stream).
# The same through _all and a view naming the graph under "resources" ("<graph>." URIs, the
# update mapped back; a URI of a graph the view does not name, an unknown graph, an unselected
# URI or another tenant's graph -32002; unsubscribing the last holder lets the downstream go;
# another view and beta's own _all hear nothing; beta's key refused).
# 2026-07-28 subscriptions/listen streams (raw HTTP): the relayed list_changed on a graph's and
# _all's streams as their filters ask (a burst folded), a proxied URI in resourceSubscriptions
# subscribed at the downstream and its updates relayed (rate-bounded, subscription id), another
# tenant's stream hearing nothing, the streams' end letting the downstream be unsubscribed; the
# same on _all's and a view's streams ("<graph>.<uri>", mapped updates, rate-bounded; another
# view and beta's _all hear nothing, beta's key refused); a view changed under subscribed streams
# followed at the next update (a graph removed stops, one added starts). The
# same through stateless MCP 2026-07-28 requests. Forwarded requests are not runs: no execution is recorded. Upload errors with
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
# _all and a view naming the graph (for resources only), rate-bounded (src/gateway/catalogs.c relay_due)
t "lc (a downstream announcing changed lists) is accepted, view lcv names it for resources" \
  eq "$(gw_put_graph "$ADMIN" acme lc "$GG_TMP/lc.yaml") $(vput lcv '{"resources":["lc"]}')" "201 201"
"$NODE" "$GG_SRCDIR/tests/gateway/proxy_resources.mjs" notify "$GG_PUB/mcp/acme" "$KEY" "$GG_INT/metrics" >"$GG_TMP/notify.out" 2>&1
gw_fold "$GG_TMP/notify.out" $?
t "sub (proxied x://a and x://b under s+) is accepted by acme and by beta" \
  eq "$(gw_put_graph "$ADMIN" acme sub "$GG_TMP/sub.yaml") $(gw_put_graph "$BADMIN" beta sub "$GG_TMP/sub.yaml")" "201 201"
t "the view subv names sub under resources → 201" eq "$(vput subv '{"resources":["sub"]}')" 201
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

# 2026-07-28 subscriptions/listen streams (src/gateway/listen.c): a downstream's list_changed
# relayed to those of lc and _all asking for it, debounced as for sessions; a proxied URI named
# in resourceSubscriptions subscribed to at the downstream, its updates relayed (prefix added,
# rate-bounded per stream and URI); beta's stream on its own sub graph hears nothing of acme's
listen26() { # OUT URL KEY ID NOTIFICATIONS(JSON): a listen stream in the background, its pid in LPIDS
  curl -sN --max-time 120 -X POST -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: subscriptions/listen' -H "Authorization: Bearer $3" \
    --data-binary "{\"jsonrpc\":\"2.0\",\"id\":\"$4\",\"method\":\"subscriptions/listen\",\"params\":{\"notifications\":$5,\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}}}}" \
    "$2" >"$1" 2>/dev/null &
  LPIDS="$LPIDS $!"
}
evs() { # FILE METHOD [URI]: how many such notifications the stream carried
  python3 - "$@" <<'PY'
import json, sys
n = 0
for l in open(sys.argv[1]):
    if l.startswith('data:'):
        e = json.loads(l[5:])
        n += e.get('method') == sys.argv[2] and (len(sys.argv) < 4 or e['params'].get('uri') == sys.argv[3])
print(n)
PY
}
evwait() { # FILE METHOD N [URI]: until the stream carried N of them (10 s at most)
  local f=$1 m=$2 n=$3; shift 3
  for _ in $(seq 1 100); do [ "$(evs "$f" "$m" "$@")" -ge "$n" ] && return 0; sleep 0.1; done
  return 1
}
call26() { # GRAPH_URL KEY TOOL ARGS(JSON) → the tool result's text (the downstream's answer)
  rpc26 "$GG_TMP/c26.json" "$1" "$2" tools/call "\"name\":\"$3\",\"arguments\":$4" "$3" >/dev/null
  jget "$GG_TMP/c26.json" 'd["result"]["content"][0]["text"]'
}
ACK=notifications/subscriptions/acknowledged RLC=notifications/resources/list_changed PLC=notifications/prompts/list_changed
UPD=notifications/resources/updated
LPIDS=
# one kind a stream on lc, so that each relay writes one frame to a connection
listen26 "$GG_TMP/l-lc" "$GG_PUB/mcp/acme/lc" "$KEY" lc-1 '{"resourcesListChanged":true}'
listen26 "$GG_TMP/l-lcp" "$GG_PUB/mcp/acme/lc" "$KEY" lcp-1 '{"promptsListChanged":true}'
listen26 "$GG_TMP/l-all" "$GG_PUB/mcp/acme/_all" "$KEY" all-1 '{"resourcesListChanged":true}'
listen26 "$GG_TMP/l-sub" "$GG_PUB/mcp/acme/sub" "$KEY" sub-1 '{"resourceSubscriptions":["s+x://a"]}'
listen26 "$GG_TMP/l-beta" "$GG_PUB/mcp/beta/sub" "$BKEY" beta-1 '{"resourcesListChanged":true,"promptsListChanged":true,"resourceSubscriptions":["s+x://a","s+x://b"]}'
t "2026 listen: five streams acknowledged (lc twice, _all, sub, beta's sub)" bash -c "for f in l-lc l-lcp l-all l-sub l-beta; do
  for _ in \$(seq 1 100); do grep -q acknowledged '$GG_TMP/'\$f && break; sleep 0.1; done; grep -q acknowledged '$GG_TMP/'\$f || exit 1; done"
t "... the acknowledgement of sub names the proxied URI" eq "$(grep -m1 '^data:' "$GG_TMP/l-sub" | cut -c6- | python3 -c 'import json,sys; print(json.load(sys.stdin)["params"]["notifications"]["resourceSubscriptions"])')" "['s+x://a']"
subs_have() { # YES|NO URI: until the URIs acme/sub's downstream is subscribed to (do) or do not include URI
  for _ in $(seq 1 100); do
    case "$(call26 "$GG_PUB/mcp/acme/sub" "$KEY" touch '{"uri":"x://none","n":0}')" in
      *"\"$2\""*) [ "$1" = YES ] && return 0 ;;
      *) [ "$1" = NO ] && return 0 ;;
    esac
    [ "$1" = NO ] && call26 "$GG_PUB/mcp/acme/sub" "$KEY" touch "{\"uri\":\"$2\",\"n\":1}" >/dev/null # one nobody hears
    sleep 0.1
  done
  return 1
}
flood_ms() { # LABEL: five calls making sub's downstream send 300 updates of x://a each; their times in the log
  local took="" t0 i
  for i in 1 2 3 4 5; do
    t0=$(date +%s%N)
    rpc26 "$GG_TMP/c26.json" "$GG_PUB/mcp/acme/sub" "$KEY" tools/call '"name":"touch","arguments":{"uri":"x://a","n":300}' touch >/dev/null
    took="$took $((($(date +%s%N) - t0) / 1000000))"
  done
  echo "# timing: 300 relayed updates a call, $1 (ms):$took"
}
lc_wait() { evwait "$GG_TMP/l-lc" $RLC "$1" && evwait "$GG_TMP/l-lcp" $PLC "$1" && evwait "$GG_TMP/l-all" $RLC "$1"; }
upd_bound() { # LOW HIGH: x://a's updates on the sub stream between them, none of x://b
  local n; n=$(evs "$GG_TMP/l-sub" $UPD)
  [ "$n" -ge "$1" ] && [ "$n" -le "$2" ] && [ "$(evs "$GG_TMP/l-sub" $UPD s+x://b)" = 0 ] || { echo "   $n updates" >&2; return 1; }
}
lcs() { echo "$(evs "$GG_TMP/l-lc" $RLC) $(evs "$GG_TMP/l-lcp" $PLC) $(evs "$GG_TMP/l-all" $RLC) $(evs "$GG_TMP/l-all" $PLC) $(evs "$GG_TMP/l-lc" $PLC) $(evs "$GG_TMP/l-lcp" $RLC)"; }
call26 "$GG_PUB/mcp/acme/lc" "$KEY" change '{"n":1}' >/dev/null
t "2026 listen: a downstream's resources/ and prompts/list_changed reach lc's streams, resources/ _all's" lc_wait 1
call26 "$GG_PUB/mcp/acme/lc" "$KEY" change '{"n":50}' >/dev/null
t "... a burst of 50 of each arrives (at once when the interval had passed, else trailing)" lc_wait 2
call26 "$GG_PUB/mcp/acme/lc" "$KEY" change '{"n":1}' >/dev/null
t "... a later one as the next (a relay pending while another went out is not lost)" lc_wait 3
lc_bound() { # 1 + (1 or 2 for the burst: one at once when the interval had passed, one trailing) + 1
  local c; for c in $(lcs | cut -d' ' -f1-3); do [ "$c" -ge 3 ] && [ "$c" -le 4 ] || { echo "   got $(lcs)" >&2; return 1; }; done
  [ "$(lcs | cut -d' ' -f4-)" = "0 0 0" ] || { echo "   got $(lcs)" >&2; return 1; }
}
t "the listen stream on sub subscribed the downstream to x://a (prefix stripped)" subs_have YES x://a
call26 "$GG_PUB/mcp/acme/sub" "$KEY" touch '{"uri":"x://a","n":1}' >/dev/null
t "2026 listen: the downstream's update reaches the stream with the prefixed URI" evwait "$GG_TMP/l-sub" $UPD 1 's+x://a'
n0=$(evs "$GG_TMP/l-sub" $UPD)
call26 "$GG_PUB/mcp/acme/sub" "$KEY" touch '{"uri":"x://a","n":300}' >/dev/null
t "... a flood of 300: one arrives (at once or trailing)" evwait "$GG_TMP/l-sub" $UPD $((n0 + 1))
t "... the stream's update kept the downstream subscribed (someone heard it)" \
  eq "$(call26 "$GG_PUB/mcp/acme/sub" "$KEY" touch '{"uri":"x://none","n":0}' | grep -c '"x://a"')" 1
call26 "$GG_PUB/mcp/acme/sub" "$KEY" touch '{"uri":"x://b","n":1}' >/dev/null # round trips for a late update to show
t "... rate-bounded: at most 2 of the 300 relayed, none of x://b (not named)" \
  upd_bound $((n0 + 1)) $((n0 + 2))
t "... every frame tagged with the stream's subscription id" python3 -c "
import json
ev=[json.loads(l[5:]) for l in open('$GG_TMP/l-sub') if l.startswith('data:')]
assert len(ev) >= 3 and all(e['params']['_meta']['io.modelcontextprotocol/subscriptionId'] == 'sub-1' for e in ev), ev"
t "beta's stream on its own sub graph heard nothing of acme's (acknowledgement only)" \
  eq "$(grep -c '^data:' "$GG_TMP/l-beta")" 1
# checked after the round trips above, so that a late relay would show
t "2026 listen: 3 or 4 list_changed of each on lc's streams and resources/ on _all (50 folded into at most 2), none a filter left out" lc_bound
flood_ms "subscribers on the graph's endpoint only"
for p in $LPIDS; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
t "the streams gone, an update nobody hears unsubscribes the downstream from x://a" subs_have NO x://a
# the same on _all and views (tenantwide.c, catalogs.c relay_tenantwide): "sub.s+x://a" in
# resourceSubscriptions subscribed at sub's downstream, its updates mapped back; the view px
# (names sel, not sub) and beta's own _all naming the same URI hear none of acme's
LPIDS=
listen26 "$GG_TMP/l-tw" "$GG_PUB/mcp/acme/_all" "$KEY" tw-1 '{"resourceSubscriptions":["sub.s+x://a","sub.s+x://c","nope.s+x://a"]}'
t "2026 listen on _all: the stream naming sub.s+x://a subscribed sub's downstream to x://a" subs_have YES x://a
listen26 "$GG_TMP/l-twv" "$GG_PUB/mcp/acme/_views/subv" "$KEY" twv-1 '{"resourceSubscriptions":["sub.s+x://a"]}'
listen26 "$GG_TMP/l-twpx" "$GG_PUB/mcp/acme/_views/px" "$KEY" twpx-1 '{"resourceSubscriptions":["sub.s+x://a"]}'
listen26 "$GG_TMP/l-twb" "$GG_PUB/mcp/beta/_all" "$BKEY" twb-1 '{"resourceSubscriptions":["sub.s+x://a"]}'
t "... the view subv's, px's and beta's _all's streams acknowledged" bash -c "for f in l-tw l-twv l-twpx l-twb; do
  for _ in \$(seq 1 100); do grep -q acknowledged '$GG_TMP/'\$f && break; sleep 0.1; done; grep -q acknowledged '$GG_TMP/'\$f || exit 1; done"
call26 "$GG_PUB/mcp/acme/sub" "$KEY" touch '{"uri":"x://a","n":1}' >/dev/null
tw_upd() { evwait "$GG_TMP/l-tw" $UPD 1 sub.s+x://a && evwait "$GG_TMP/l-twv" $UPD 1 sub.s+x://a; }
tw_bound() { # LOW: at most 2 more than LOW on _all's stream, every one sub.s+x://a
  local n; n=$(evs "$GG_TMP/l-tw" $UPD)
  [ $((n - $1)) -le 2 ] && [ "$(evs "$GG_TMP/l-tw" $UPD sub.s+x://a)" = "$n" ] || { echo "   $n updates" >&2; return 1; }
}
t "... the downstream's update reaches _all's and subv's streams as sub.s+x://a" tw_upd
n0=$(evs "$GG_TMP/l-tw" $UPD)
call26 "$GG_PUB/mcp/acme/sub" "$KEY" touch '{"uri":"x://a","n":300}' >/dev/null
t "... a flood of 300: one arrives on _all's stream (at once or trailing)" evwait "$GG_TMP/l-tw" $UPD $((n0 + 1))
call26 "$GG_PUB/mcp/acme/sub" "$KEY" touch '{"uri":"x://b","n":1}' >/dev/null # round trips for a late update to show
call26 "$GG_PUB/mcp/acme/sub" "$KEY" touch '{"uri":"x://none","n":0}' >/dev/null
t "... rate-bounded: at most 2 of the 300 on _all's stream, every one sub.s+x://a" tw_bound "$n0"
t "... px's stream (its view names sel, not sub) and beta's _all's heard nothing (acknowledgement only)" \
  eq "$(grep -c '^data:' "$GG_TMP/l-twpx") $(grep -c '^data:' "$GG_TMP/l-twb")" "1 1"
flood_ms "subscribers on _all and the views subv and px"
# a view changed while streams on it are subscribed: the next relayed update follows the new
# selection on this replica (views.c: the cached selections are read again after the change).
# Fresh streams, so that no update of theirs is pending from the flood above
listen26 "$GG_TMP/l-vr" "$GG_PUB/mcp/acme/_views/subv" "$KEY" vr-1 '{"resourceSubscriptions":["sub.s+x://a"]}'
listen26 "$GG_TMP/l-va" "$GG_PUB/mcp/acme/_views/px" "$KEY" va-1 '{"resourceSubscriptions":["sub.s+x://a"]}'
t "views changed under subscribed streams: both acknowledged" bash -c "for f in l-vr l-va; do
  for _ in \$(seq 1 100); do grep -q acknowledged '$GG_TMP/'\$f && break; sleep 0.1; done; grep -q acknowledged '$GG_TMP/'\$f || exit 1; done"
PX='{"tools":[{"tool":"sel.echo"}],"resources":["sel"],"prompts":["ev"]}'
t "... subv loses sub, px gains it → 200 200" \
  eq "$(vput subv '{"resources":["lc"]}') $(vput px '{"tools":[{"tool":"sel.echo"}],"resources":["sel","sub"],"prompts":["ev"]}')" "200 200"
call26 "$GG_PUB/mcp/acme/sub" "$KEY" touch '{"uri":"x://a","n":1}' >/dev/null
t "... the next update reaches px's stream (a graph added to the view)" evwait "$GG_TMP/l-va" $UPD 1 sub.s+x://a
call26 "$GG_PUB/mcp/acme/sub" "$KEY" touch '{"uri":"x://none","n":0}' >/dev/null # a round trip for a late update to show
t "... and not subv's (a graph removed from the view): acknowledgement only" eq "$(grep -c '^data:' "$GG_TMP/l-vr")" 1
t "... subv given sub back, px restored → 200 200" eq "$(vput subv '{"resources":["sub"]}') $(vput px "$PX")" "200 200"
call26 "$GG_PUB/mcp/acme/sub" "$KEY" touch '{"uri":"x://a","n":1}' >/dev/null
t "... the next update reaches subv's stream" evwait "$GG_TMP/l-vr" $UPD 1 sub.s+x://a
call26 "$GG_PUB/mcp/acme/sub" "$KEY" touch '{"uri":"x://none","n":0}' >/dev/null
t "... and not px's again (it had one)" eq "$(evs "$GG_TMP/l-va" $UPD)" 1
for p in $LPIDS; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
t "... the streams gone, an update nobody hears unsubscribes the downstream from x://a" subs_have NO x://a
t "beta's key: a listen stream on acme's _all → 403" eq "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 -X POST \
  -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2026-07-28' \
  -H 'Mcp-Method: subscriptions/listen' -H "Authorization: Bearer $BKEY" --data-binary '{"jsonrpc":"2.0","id":"x","method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["sub.s+x://a"]},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}' \
  "$GG_PUB/mcp/acme/_all")" 403
# a listen stream naming a URI of hostile (its downstream declares resources without
# subscribe): nothing is asked of that downstream (src/graph/proxy_extras.c subscribe_step)
hostile_asked() { # → the resources/subscribe requests hostile's downstream received so far
  rpc26 "$GG_TMP/hc.json" "$GG_PUB/mcp/acme/hostile" "$KEY" resources/read '"uri":"count://requests"' count://requests >/dev/null
  jget "$GG_TMP/hc.json" 'json.loads(d["result"]["contents"][0]["text"]).get("resources/subscribe", 0)'
}
LPIDS=
listen26 "$GG_TMP/l-h" "$GG_PUB/mcp/acme/hostile" "$KEY" h-1 '{"resourceSubscriptions":["ok://a"]}'
t "2026 listen on hostile naming ok://a: acknowledged" evwait "$GG_TMP/l-h" $ACK 1
t "... and its downstream (declaring no resources.subscribe) never received a resources/subscribe" eq "$(hostile_asked)" 0
for p in $LPIDS; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
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
