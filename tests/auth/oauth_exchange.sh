#!/usr/bin/env bash
# oauth_exchange.sh — on behalf of the caller: a downstream MCP server's token obtained by
# token exchange (RFC 8693) of the calling user's own access token (`auth: {type:
# token_exchange}`, issue 27), end to end. One real authorization server (oidc-provider,
# tests/fixtures/oauth/as.mjs with GG_AS_EXCHANGE=1: the token exchange grant for client
# "exchanger") is both the tenant's (its users call with its JWTs) and the downstream's; the
# downstream is an SDK server with bearer middleware (rs.mjs) whose whoami says the token's
# sub, aud, jti and act. A graph's mcp node calls it.
#   - the SDK client as alice (a 2025-11-25 session; dave: a stateless 2026-07-28 request): the downstream sees a token for sub alice, audienced to it, with
#     act exchanger — not alice's own token (another aud and jti); her second call uses the
#     cached token (no new exchange); bob gets his own;
#   - an API-key caller gets principal_required; the AS refusing the exchange (a subject it
#     refuses; a client it does not know) gives a tool error token_exchange_failed naming the
#     server and the AS's error code; a downstream refusing the exchanged token: dropped,
#     exchanged once more, then token_exchange_failed;
#   - a token revoked at the downstream: the next call exchanges again and works; a
#     short-lived (20 s) exchanged token is reused, not exchanged per request;
#   - a proxy graph naming the server's tools: uploaded without listing it (no caller), alice's
#     call through it reaches the downstream with her exchanged token; `tools: all` over it is
#     a 422 proxy_tools_unlisted at its line:col;
#   - the client secret is a ${secrets.NAME}; bad settings are a 422 at their line:col;
#   - a 403 insufficient_scope (rs.mjs with GG_RS_STEPUP=1): the caller's token exchanged again
#     with the challenge's scope, kept for the next calls; a scope never granted: a bounded
#     number of exchanges, then a tool error;
#   - GET .../downstream counts the callers' clients per server under for_caller (no names);
#   - an async node's branch runs as the caller who started it (an API key's fails
#     principal_required in its row); a proxied resource is read with the caller's token;
#   - the callers' tokens and the exchanged ones are in no log line, answer, /metrics, run
#     record or database file.
# Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
has() { grep -q -- "$2" "$1" || { echo "   '$2' not in $1: $(head -c 400 "$1")" >&2; return 1; }; }
gw_need_sdk
. "$GG_SRCDIR/tests/fixtures/oauth/lib.sh"
oauth_keys
GG_RS_STEPUP=1 GG_AS_EXCHANGE=1 GG_AS_EXCHANGE_DENY=mallory GG_AS_EXCHANGE_MISAUD=carol oauth_start_protected

exauth() { # CLIENT_ID → the protected server's auth: the caller's token exchanged by that client
  echo "{type: token_exchange, client_id: $1, client_secret: \"\${secrets.EX_SECRET}\", audience: \"$RS\", scope: \"tools:read tools:execute\"}"
}
graph() { # FILE CLIENT_ID: a tool "who" calling the protected server's whoami from an mcp node
  { oauth_graph_head ex "$(exauth "\"$2\"")"; cat <<YAML; } >"$1"
tools:
  - name: "who"
    description: "whoami on behalf of the caller"
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: call}
      - {id: call, type: mcp, server: api, tool: whoami, args: {}, next: exit}
      - {id: exit, type: exit}
  - name: "check"
    description: "a downstream tool that needs more scope than the configured one"
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: call}
      - {id: call, type: mcp, server: api, tool: checkup, args: {}, next: exit}
      - {id: exit, type: exit}
  - name: "never"
    description: "a downstream tool whose scope is never granted"
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: call}
      - {id: call, type: mcp, server: api, tool: never, args: {}, next: exit}
      - {id: exit, type: exit}
YAML
}
graph "$GG_TMP/ex.yaml" exchanger
graph "$GG_TMP/unknown.yaml" nobody
proxy() { # FILE TOOLS: a proxy graph re-exporting the protected server's tools
  { oauth_graph_head px "$(exauth exchanger)"; cat <<YAML; } >"$1"
proxy:
  - {server: "api", tools: $2}
YAML
}
proxy "$GG_TMP/px.yaml" '["whoami"]'
proxy "$GG_TMP/pxall.yaml" all
cat >"$GG_TMP/bad.yaml" <<YAML
version: "1.0"
server: {name: "bad", version: "1.0.0"}
mcpServers:
  a:
    type: streamableHttp
    url: "$RS"
    auth: {type: token_exchange, client_id: x, per_user: true}
  b:
    type: streamableHttp
    url: "$RS"
    auth: {type: client_credentials, client_id: x, audience: "$RS"}
  c:
    type: streamableHttp
    url: "$RS"
    auth: {type: token_exchange}
  d:
    type: streamableHttp
    url: "$RS"
    auth: {type: token_exchange, client_id: x, assertion: "eyJ.x.y"}
  e:
    type: streamableHttp
    url: "$RS"
    auth: {type: token_exchange, client_id: x, audience: [1, 2]}
tools:
  - {name: "t", inputSchema: {type: object}, nodes: [{id: entry, type: entry, next: exit}, {id: exit, type: exit}]}
YAML

oauth_serve_trusting '{"tools:read":["tools:read"],"tools:execute":["tools:execute"]}'
t "the exchange client's secret is a tenant secret (201)" eq "$(oauth_secret EX_SECRET exchanger-secret-0123456789)" 201
t "the graph with token_exchange auth is accepted (201)" eq "$(gw_put_graph "$ADMIN" acme ex "$GG_TMP/ex.yaml")" 201
cp "$GG_TMP/put.json" "$GG_TMP/put_ex.json"
t "  and one with a client the AS does not know" eq "$(gw_put_graph "$ADMIN" acme unknown "$GG_TMP/unknown.yaml")" 201
t "a proxy graph naming the exchange server's tools is accepted (201)" eq "$(gw_put_graph "$ADMIN" acme px "$GG_TMP/px.yaml")" 201
t "  without trying to list the server at the upload (no caller)" eq \
  "$(jget "$GG_TMP/put.json" "[w['code'] for w in d.get('warnings', []) if w['code'] == 'downstream_unreachable']")" "[]"
t "a proxy graph with tools: all over it is a 422" eq "$(gw_put_graph "$ADMIN" acme pxall "$GG_TMP/pxall.yaml")" 422
t "  at the tools (9:28), saying why and what to do" eq \
  "$(jget "$GG_TMP/put.json" "[(e['code'], e['line'], e['column']) for e in d['errors'] if 'on behalf of the caller' in e['message'] and 'name them' in e['message']]")" \
  "[('proxy_tools_unlisted', 9, 28)]"
t "bad token_exchange settings are a 422" eq "$(gw_put_graph "$ADMIN" acme bad "$GG_TMP/bad.yaml")" 422
cp "$GG_TMP/put.json" "$GG_TMP/bad.json"
at() { jget "$GG_TMP/bad.json" "[(e['line'], e['column']) for e in d['errors'] if '$1' in e['message']]"; }
t "  per_user with token_exchange, at the type (7:18)" eq "$(at 'per_user needs type oauth')" "[(7, 18)]"
t "  audience without token_exchange, at it (11:62)" eq "$(at 'audience is a token_exchange setting')" "[(11, 62)]"
t "  token_exchange without client_id, at the auth (15:11)" eq "$(at 'token_exchange needs')" "[(15, 11)]"
t "  an assertion with token_exchange, at it (19:59)" eq "$(at 'assertion does not apply')" "[(19, 59)]"
t "  an audience that is no string, at it (23:58)" eq "$(at 'in mcpServers.e.auth must be a string')" "[(23, 58)]"

EP=$GG_PUB/mcp/acme/ex
token() { oauth_user_token "$1" "${2:-$EP}" "$1-own-token"; }
TOKA=$(token alice) TOKB=$(token bob) TOKM=$(token mallory) TOKC=$(token carol)
sdk() { oauth_sdk_call "$2" "${3:-$EP}" "$1" "${4:-who}"; }
who() { jget "$1" "json.loads(d['result']['structuredContent']['content'][0]['text'])$2" 2>/dev/null ||
        jget "$1" "json.loads(d['result']['content'][0]['text'])$2"; }
exchanges() { curl -s "$ISS/_count/exchange"; }
seen() { oauth_rs_tokens "$GG_TMP/seen.json" | wc -l; }

# ---- alice, then bob: each their own exchanged token -------------------------------------------
sdk "$TOKA" "$GG_TMP/a1.json"
t "alice's call reaches the downstream" eq "$(jget "$GG_TMP/a1.json" "d['result'].get('isError', False)")" False
t "  with a token for sub alice" eq "$(who "$GG_TMP/a1.json" "['sub']")" alice
t "  audienced to the downstream, not to graphgate" eq "$(who "$GG_TMP/a1.json" "['aud']")" "$RS"
t "  not alice's own token (another jti)" eq "$(who "$GG_TMP/a1.json" "['jti'] != 'alice-own-token'")" True
t "  exchanged by graphgate's client (act)" eq "$(who "$GG_TMP/a1.json" "['act']['sub']")" exchanger
t "  after one exchange" eq "$(exchanges)" 1
t "  and the downstream never saw alice's own token" eq "$(curl -s "$RSBASE/admin/tokens" | grep -cF -- "$TOKA")" 0
JTIA=$(who "$GG_TMP/a1.json" "['jti']")
sdk "$TOKA" "$GG_TMP/a2.json"
t "alice's second call uses the cached token (no new exchange)" eq \
  "$(who "$GG_TMP/a2.json" "['sub']") $(who "$GG_TMP/a2.json" "['jti']" | grep -cxF -- "$JTIA") $(exchanges)" "alice 1 1"
sdk "$TOKB" "$GG_TMP/b1.json"
t "bob's call: a token of his own (sub bob, another jti)" eq \
  "$(who "$GG_TMP/b1.json" "['sub']") $(who "$GG_TMP/b1.json" "['jti']" | grep -cxF -- "$JTIA") $(exchanges)" "bob 0 2"

# ---- a stateless 2026-07-28 request (dave): the same exchange --------------------------------
M26='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'
TOKD=$(token dave)
st=$(gg_curl "$GG_TMP/d1.json" -X POST -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
  -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: who' -H "Authorization: Bearer $TOKD" \
  --data-binary "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"who\",\"arguments\":{},$M26}}" "$EP")
t "a 2026-07-28 call by dave: a token of his own" eq "$st $(who "$GG_TMP/d1.json" "['sub']") $(exchanges)" "200 dave 3"

# ---- nobody's token: an API key ----------------------------------------------------------------
SID=$(gw_init "$EP" "$KEY")
gw_rpc "$GG_TMP/k1.json" "$EP" "$KEY" "$SID" '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"who","arguments":{}}}' >/dev/null
t "an API-key caller gets a clear tool error" eq "$(jget "$GG_TMP/k1.json" "d['result']['isError']") $(grep -c 'not an API key' "$GG_TMP/k1.json")" "True 1"
t "  its code is principal_required" has "$GG_TMP/k1.json" "principal_required"
t "  and nothing was exchanged" eq "$(exchanges)" 3

# ---- the authorization server refuses ----------------------------------------------------------
code() { jget "$1" "d['result']['_meta']['io.graphgate/error']['code']"; }
sdk "$TOKM" "$GG_TMP/m1.json"
t "a subject the AS refuses: a tool error token_exchange_failed" eq \
  "$(jget "$GG_TMP/m1.json" "d['result']['isError']") $(code "$GG_TMP/m1.json")" "True token_exchange_failed"
t "  naming the server and the AS's error code" eq \
  "$(grep -c "MCP server 'api'" "$GG_TMP/m1.json") $(grep -c 'invalid_grant' "$GG_TMP/m1.json")" "1 1"
t "  not the AS's description" eq "$(grep -c 'may not be exchanged' "$GG_TMP/m1.json")" 0
sdk "$(token alice "$GG_PUB/mcp/acme/unknown")" "$GG_TMP/u1.json" "$GG_PUB/mcp/acme/unknown"
t "a client the AS does not know: token_exchange_failed (invalid_client)" eq \
  "$(code "$GG_TMP/u1.json") $(grep -c 'invalid_client' "$GG_TMP/u1.json")" "token_exchange_failed 1"

# ---- the downstream refuses the exchanged token ------------------------------------------------
before=$(exchanges) refused0=$(curl -s "$RSBASE/admin/refused")
sdk "$TOKC" "$GG_TMP/c1.json"
t "a token the downstream refuses: exchanged once more, then token_exchange_failed" eq \
  "$(code "$GG_TMP/c1.json") $(( $(exchanges) - before )) $(( $(curl -s "$RSBASE/admin/refused") - refused0 ))" \
  "token_exchange_failed 2 2"
t "  saying the server refused it again" has "$GG_TMP/c1.json" 'refused the exchanged token again'

# ---- revoked at the downstream: dropped and exchanged again ------------------------------------
curl -s -X POST "$RSBASE/admin/revoke" >/dev/null
before=$(exchanges)
sdk "$TOKA" "$GG_TMP/a3.json"
t "after a revocation alice's next call works, on a new exchange" eq \
  "$(who "$GG_TMP/a3.json" "['sub']") $(who "$GG_TMP/a3.json" "['jti']" | grep -cxF -- "$JTIA") $(( $(exchanges) - before ))" \
  "alice 0 1"

# ---- a proxy graph over the exchange server: the same exchange, per caller ----------------------
PX=$GG_PUB/mcp/acme/px
TOKPA=$(token alice "$PX")
before=$(exchanges)
sdk "$TOKPA" "$GG_TMP/p1.json" "$PX" whoami
t "alice's call through the proxy graph reaches the downstream" eq "$(jget "$GG_TMP/p1.json" "d['result'].get('isError', False)")" False
t "  with her exchanged token (sub alice, aud the downstream, act exchanger), on one exchange" eq \
  "$(who "$GG_TMP/p1.json" "['sub']") $(who "$GG_TMP/p1.json" "['aud']") $(who "$GG_TMP/p1.json" "['act']['sub']") $(( $(exchanges) - before ))" \
  "alice $RS exchanger 1"
SID=$(gw_init "$PX" "$KEY")
gw_rpc "$GG_TMP/k2.json" "$PX" "$KEY" "$SID" '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{}}}' >/dev/null
t "  an API-key caller of the proxy gets principal_required" eq \
  "$(jget "$GG_TMP/k2.json" "d['result']['isError']") $(code "$GG_TMP/k2.json")" "True principal_required"

# ---- step-up: a 403 insufficient_scope exchanges the caller's token again for more scope ---------
TOKF=$(token frank) seen0=$(seen)
before=$(exchanges)
sdk "$TOKF" "$GG_TMP/f1.json" "$EP" check
t "step-up: frank's call of a tool needing health:check succeeds" eq \
  "$(jget "$GG_TMP/f1.json" "d['result'].get('isError', False)") $(who "$GG_TMP/f1.json" "['sub']") $(who "$GG_TMP/f1.json" "['scopes'].count('health:check')")" \
  "False frank 1"
t "  after two exchanges (the configured scope, then with health:check)" eq "$(( $(exchanges) - before ))" 2
sdk "$TOKF" "$GG_TMP/f2.json" "$EP" who
t "  frank's next call keeps the stepped-up token (no exchange)" eq \
  "$(who "$GG_TMP/f2.json" "['scopes'].count('health:check')") $(( $(exchanges) - before ))" "1 2"
sdk "$TOKF" "$GG_TMP/f3.json" "$EP" never
t "a scope the server never grants: a tool error after a bounded number of exchanges" eq \
  "$(jget "$GG_TMP/f3.json" "d['result']['isError']") $(( $(exchanges) - before <= 2 + 3 ))" "True 1"
t "  saying the server wants more scope" has "$GG_TMP/f3.json" "still wants more scope after 2 step-ups"
seen1=$(seen)

# ---- no token anywhere it should not be ----------------------------------------------------------
TOKS=$(oauth_rs_tokens "$GG_TMP/tokens.json")
gg_curl "$GG_TMP/execs.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/acme/executions" >/dev/null
EXEC=$(jget "$GG_TMP/execs.json" "d['executions'][0]['id']")
gg_curl "$GG_TMP/exec.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/executions/$EXEC?tenant=acme" >/dev/null
gg_curl "$GG_TMP/ds.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/acme/downstream" >/dev/null
gg_curl "$GG_TMP/metrics.txt" "$GG_INT/metrics" >/dev/null
t "the admin view has a for_caller row per server: its callers' clients counted, none named" eq \
  "$(jget "$GG_TMP/ds.json" "sorted((r['server'], r['callers'] >= 4, r['valid'] >= 3, r['requests'] >= r['callers'], sorted(r)) for r in d['for_caller'])[0]")" \
  "('api', True, True, True, ['callers', 'failures', 'last_failure', 'last_failure_ms', 'requests', 'server', 'url', 'valid'])"
t "  and no per-caller client among the shared clients (auth)" eq "$(jget "$GG_TMP/ds.json" "len(d['auth'])")" 0
t "the run records were read back" eq "$(jget "$GG_TMP/exec.json" "'nodes' in d or 'node_executions' in d or 'records' in d")" True
FILES=("$GG_TMP/ds.json" "$GG_TMP/execs.json" "$GG_TMP/exec.json" "$GG_TMP/metrics.txt" "$GG_TMP/serve.out" "$GG_TMP/serve.err"
  "$GG_DB" "$GG_DB-wal" "$GG_TMP"/[abcdkmpu][0-9].json "$GG_TMP"/*.json.err)
n=0
for tok in $TOKS; do
  n=$((n + 1))
  t "exchanged token $n is in no answer, log, record or database file" oauth_absent "$tok" "${FILES[@]}"
done
t "the downstream saw the exchanged tokens only (alice 3, bob 1, dave 1, carol 2, frank's)" eq "$n" $((7 + seen1 - seen0))
for pair in "alice $TOKA" "alice(proxy) $TOKPA" "bob $TOKB" "mallory $TOKM" "carol $TOKC" "dave $TOKD" "frank $TOKF"; do
  t "${pair%% *}'s own token is in no answer, log, record, /metrics or database file" oauth_absent "${pair#* }" "${FILES[@]}"
done
# ---- short-lived exchanged tokens (20 s): used for half their life, not exchanged per request --
GG_AS_TTL=20 GG_AS_EXCHANGE=1 oauth_restart_as as2
t "the authorization server restarts with 20 s tokens" eq "$(oauth_ready "$GG_TMP/as2.log")" "$ISS"
TOKE=$(token erin)
sdk "$TOKE" "$GG_TMP/e1.json"
sdk "$TOKE" "$GG_TMP/e2.json"
t "erin's two calls: one exchange, the short-lived token reused" eq \
  "$(who "$GG_TMP/e1.json" "['sub']") $(who "$GG_TMP/e2.json" "['sub']") $(exchanges)" "erin erin 1"
# ---- an async branch and a proxied resource act for the caller too --------------------------
# the branch's client is the caller's, chosen when the call starts it; the caller's token is held
# by it until the branch ends (then wiped); the resource goes with the caller's exchanged token
oauth_branch_graph "$GG_TMP/bg.yaml" bg "$(exauth exchanger)" 'resources: ["who://me"]'
t "a graph with an async node and a proxied resource over the exchange server is accepted (201)" eq \
  "$(gw_put_graph "$ADMIN" acme bg "$GG_TMP/bg.yaml")" 201
EPB=$GG_PUB/mcp/acme/bg
sdk "$(token erin "$EPB")" "$GG_TMP/g1.json" "$EPB" bg
t "erin's call starting the branch answers at once" eq "$(jget "$GG_TMP/g1.json" "d['result'].get('isError', False)")" False
SK=$(gw_init "$EPB" "$KEY")
gw_rpc "$GG_TMP/g2.json" "$EPB" "$KEY" "$SK" '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"bg","arguments":{}}}' >/dev/null
gw_wait_runs "$GG_TMP/gex.json" "$ADMIN" acme api.whoami 2
t "two branch rows: erin's succeeded, the API key's needs a principal" eq "$(jget "$GG_TMP/gex.json" \
  'sorted((e["status"], (e["error"] or "").split(":")[0]) for e in d["executions"] if e["tool"] == "api.whoami")')" \
  "[('failed', 'principal_required'), ('succeeded', '')]"
GID=$(jget "$GG_TMP/gex.json" '[e["id"] for e in d["executions"] if e["tool"] == "api.whoami" and e["status"] == "succeeded"][0]')
gg_curl "$GG_TMP/gone.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/executions/$GID" >/dev/null
t "  erin's branch reached the downstream as erin, with an exchanged token (act exchanger)" eq \
  "$(grep -cE 'sub[\\"]+:[\\"]+erin' "$GG_TMP/gone.json") $(grep -cE 'act[\\"]+:[{\\"]+sub[\\"]+:[\\"]+exchanger' "$GG_TMP/gone.json")" "1 1"
TOKG=$(token erin "$EPB")
SE=$(gw_init "$EPB" "$TOKG")
gw_rpc "$GG_TMP/g3.json" "$EPB" "$TOKG" "$SE" '{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"who://me"}}' >/dev/null
t "erin reads the proxied resource as erin" eq "$(jget "$GG_TMP/g3.json" "json.loads(d['result']['contents'][0]['text'])['sub']")" erin
gw_rpc "$GG_TMP/g4.json" "$EPB" "$KEY" "$SK" '{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"who://me"}}' >/dev/null
t "  an API key reading it gets principal_required's message" eq "$(jget "$GG_TMP/g4.json" "'not an API key' in d['error']['message']")" True
t "  erin's own token is in no answer, record or log" oauth_absent "$TOKG" "$GG_TMP/g3.json" "$GG_TMP/gone.json" "$GG_TMP/gex.json" \
  "$GG_TMP/serve.out" "$GG_TMP/serve.err"
t "the server stops cleanly" gw_stop_clean
t "  and its logs name no token after the stop either" oauth_absent "$TOKA" "$GG_TMP/serve.out" "$GG_TMP/serve.err" "$GG_DB"
gg_finish
