#!/usr/bin/env bash
# oauth_idjag.sh — enterprise-managed authorization (SEP-990) on behalf of the caller: a
# downstream MCP server's token obtained with an ID-JAG that the enterprise IdP issues for
# the calling user (`auth: {type: id_jag, subject: caller}`, issue 27), end to end. One real
# authorization server (oidc-provider, tests/fixtures/oauth/as.mjs with GG_AS_IDJAG=1) is the
# tenant's (its users call with its JWTs), the enterprise IdP (client "idp-client": the
# caller's access token exchanged, RFC 8693, for an ID-JAG naming the user, audienced to the
# downstream's authorization server) and that authorization server (client "jag-client": the
# ID-JAG taken as a jwt-bearer assertion for an access token of the downstream). The
# downstream is an SDK server with bearer middleware (rs.mjs) whose whoami says the token's
# client, sub, aud and jti. A graph's mcp node calls it.
#   - alice's call: the downstream sees a token for sub alice, audienced to it, of jag-client
#     — not alice's own token; her second call uses the cached token (no new ID-JAG); bob
#     gets his own;
#   - an API-key caller gets principal_required; the IdP refusing the user gives a tool error
#     token_exchange_failed naming the server and the IdP's error code only; the downstream's
#     authorization server refusing the client: token_exchange_failed; a downstream refusing
#     the token: dropped, obtained once more, then token_exchange_failed;
#   - a proxy graph naming the server's tools is uploaded without listing it (no caller);
#     `tools: all` over it is a 422 proxy_tools_unlisted at its line:col;
#   - both client secrets are ${secrets.NAME}; bad settings are a 422 at their line:col;
#   - the callers' tokens, the ID-JAGs and the downstream's tokens are in no log line,
#     answer, /metrics, run record or database file.
# Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
has() { grep -q -- "$2" "$1" || { echo "   '$2' not in $1: $(head -c 400 "$1")" >&2; return 1; }; }
gw_need_sdk
. "$GG_SRCDIR/tests/fixtures/oauth/lib.sh"
oauth_keys
GG_AS_IDJAG=1 GG_AS_IDJAG_DENY=mallory GG_AS_EXCHANGE_MISAUD=carol oauth_start_protected

AUTH() { # CLIENT_ID: the id_jag settings on behalf of the caller
  echo "{type: id_jag, subject: caller, idp_token_endpoint: \"$ISS/token\", idp_client_id: idp-client, idp_client_secret: \"\${secrets.IDP_SECRET}\", client_id: \"$1\", client_secret: \"\${secrets.JAG_SECRET}\", scope: \"tools:read tools:execute\"}"
}
graph() { # FILE CLIENT_ID: a tool "who" calling the protected server's whoami from an mcp node
  { oauth_graph_head jag "$(AUTH "$2")"; cat <<YAML; } >"$1"
tools:
  - name: "who"
    description: "whoami on behalf of the caller, through the enterprise IdP"
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: call}
      - {id: call, type: mcp, server: api, tool: whoami, args: {}, next: exit}
      - {id: exit, type: exit}
YAML
}
graph "$GG_TMP/jag.yaml" jag-client
graph "$GG_TMP/unknown.yaml" nobody
proxy() { # FILE TOOLS: a proxy graph re-exporting the protected server's tools
  { oauth_graph_head px "$(AUTH jag-client)"; cat <<YAML; } >"$1"
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
    auth: {type: id_jag, subject: caller, idp_token_endpoint: "http://i/t", idp_client_id: i, client_id: x, assertion: "eyJ.x.y"}
  b:
    type: streamableHttp
    url: "$RS"
    auth: {type: id_jag, subject: user, idp_token_endpoint: "http://i/t", idp_client_id: i, client_id: x}
  c:
    type: streamableHttp
    url: "$RS"
    auth: {type: client_credentials, client_id: x, subject: caller}
  d:
    type: streamableHttp
    url: "$RS"
    auth: {type: id_jag, idp_token_endpoint: "http://i/t", idp_client_id: i, client_id: x}
  e:
    type: streamableHttp
    url: "$RS"
    auth: {type: id_jag, subject: caller, idp_client_id: i, client_id: x}
  f:
    type: streamableHttp
    url: "$RS"
    auth: {type: id_jag, subject: caller, idp_token_endpoint: "http://i/t", idp_client_id: i, client_id: x, per_user: true}
tools:
  - {name: "t", inputSchema: {type: object}, nodes: [{id: entry, type: entry, next: exit}, {id: exit, type: exit}]}
YAML

oauth_serve_trusting '{"tools:read":["tools:read"],"tools:execute":["tools:execute"]}'
t "the IdP's and the authorization server's client secrets are tenant secrets (201 201)" eq \
  "$(oauth_secret IDP_SECRET idp-secret-0123456789) $(oauth_secret JAG_SECRET jag-secret-0123456789)" "201 201"
t "the graph with id_jag on behalf of the caller is accepted (201)" eq "$(gw_put_graph "$ADMIN" acme jag "$GG_TMP/jag.yaml")" 201
t "  and one with a client the authorization server does not know" eq "$(gw_put_graph "$ADMIN" acme unknown "$GG_TMP/unknown.yaml")" 201
t "a proxy graph naming the server's tools is accepted (201)" eq "$(gw_put_graph "$ADMIN" acme px "$GG_TMP/px.yaml")" 201
t "  without trying to list the server at the upload (no caller)" eq \
  "$(jget "$GG_TMP/put.json" "[w['code'] for w in d.get('warnings', []) if w['code'] == 'downstream_unreachable']")" "[]"
t "  and without asking the IdP for anything" eq "$(curl -s "$ISS/_count/idjag")" 0
t "a proxy graph with tools: all over it is a 422" eq "$(gw_put_graph "$ADMIN" acme pxall "$GG_TMP/pxall.yaml")" 422
t "  at the tools (9:28), saying why (auth.type id_jag) and what to do" eq \
  "$(jget "$GG_TMP/put.json" "[(e['code'], e['line'], e['column']) for e in d['errors'] if 'on behalf of the caller (auth.type id_jag)' in e['message'] and 'name them' in e['message']]")" \
  "[('proxy_tools_unlisted', 9, 28)]"
t "bad id_jag settings are a 422" eq "$(gw_put_graph "$ADMIN" acme bad "$GG_TMP/bad.yaml")" 422
cp "$GG_TMP/put.json" "$GG_TMP/bad.json"
at() { jget "$GG_TMP/bad.json" "[(e['line'], e['column']) for e in d['errors'] if '$1' in e['message']]"; }
t "  an assertion with subject: caller, at it (7:120)" eq "$(at 'assertion does not apply to id_jag with subject: caller')" "[(7, 120)]"
t "  a subject other than caller, at it (11:35), and nothing else about b" eq \
  "$(at 'subject must be caller') $(at 'mcpServers.b.')" "[(11, 35)] [(11, 35)]"
t "  a subject without id_jag, at it (15:61)" eq "$(at 'subject is an id_jag setting')" "[(15, 61)]"
t "  id_jag without subject still needs its assertion, at the auth (19:11)" eq "$(at 'mcpServers.d.auth: id_jag needs')" "[(19, 11)]"
t "  with subject: caller the IdP's endpoint is still needed, the assertion is not (23:11)" eq \
  "$(at 'mcpServers.e.auth: id_jag needs')" "[(23, 11)]"
t "  per_user with id_jag, at the type (27:18)" eq "$(at 'per_user needs type oauth')" "[(27, 18)]"

EP=$GG_PUB/mcp/acme/jag
token() { oauth_user_token "$1" "${2:-$EP}" "$1-own-token"; }
TOKA=$(token alice) TOKB=$(token bob) TOKM=$(token mallory) TOKC=$(token carol)
sdk() { oauth_sdk_call "$2" "${3:-$EP}" "$1" "${4:-who}"; }
who() { jget "$1" "json.loads(d['result']['structuredContent']['content'][0]['text'])$2" 2>/dev/null ||
        jget "$1" "json.loads(d['result']['content'][0]['text'])$2"; }
jags() { curl -s "$ISS/_count/idjag"; }
grants() { curl -s "$ISS/_count/jwt_bearer"; }

# ---- alice, then bob: each a token of their own, through an ID-JAG ------------------------------
sdk "$TOKA" "$GG_TMP/a1.json"
t "alice's call reaches the downstream" eq "$(jget "$GG_TMP/a1.json" "d['result'].get('isError', False)")" False
t "  with a token for sub alice" eq "$(who "$GG_TMP/a1.json" "['sub']")" alice
t "  audienced to the downstream, not to graphgate" eq "$(who "$GG_TMP/a1.json" "['aud']")" "$RS"
t "  not alice's own token (another jti)" eq "$(who "$GG_TMP/a1.json" "['jti'] != 'alice-own-token'")" True
t "  issued to graphgate's client at the authorization server (jag-client)" eq "$(who "$GG_TMP/a1.json" "['client']")" jag-client
t "  after one ID-JAG and one jwt-bearer grant" eq "$(jags) $(grants)" "1 1"
t "  and the downstream never saw alice's own token" eq "$(curl -s "$RSBASE/admin/tokens" | grep -cF -- "$TOKA")" 0
JTIA=$(who "$GG_TMP/a1.json" "['jti']")
sdk "$TOKA" "$GG_TMP/a2.json"
t "alice's second call uses the cached token (no new ID-JAG)" eq \
  "$(who "$GG_TMP/a2.json" "['sub']") $(who "$GG_TMP/a2.json" "['jti']" | grep -cxF -- "$JTIA") $(jags)" "alice 1 1"
sdk "$TOKB" "$GG_TMP/b1.json"
t "bob's call: a token of his own (sub bob, another jti)" eq \
  "$(who "$GG_TMP/b1.json" "['sub']") $(who "$GG_TMP/b1.json" "['jti']" | grep -cxF -- "$JTIA") $(jags)" "bob 0 2"

# ---- nobody's token: an API key ----------------------------------------------------------------
SID=$(gw_init "$EP" "$KEY")
gw_rpc "$GG_TMP/k1.json" "$EP" "$KEY" "$SID" '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"who","arguments":{}}}' >/dev/null
t "an API-key caller gets a clear tool error" eq "$(jget "$GG_TMP/k1.json" "d['result']['isError']") $(grep -c 'not an API key' "$GG_TMP/k1.json")" "True 1"
t "  its code is principal_required" has "$GG_TMP/k1.json" "principal_required"
t "  and the IdP was not asked" eq "$(jags)" 2

# ---- refusals ------------------------------------------------------------------------------------
code() { jget "$1" "d['result']['_meta']['io.graphgate/error']['code']"; }
sdk "$TOKM" "$GG_TMP/m1.json"
t "a user the IdP refuses: a tool error token_exchange_failed" eq \
  "$(jget "$GG_TMP/m1.json" "d['result']['isError']") $(code "$GG_TMP/m1.json")" "True token_exchange_failed"
t "  naming the server, the IdP, its HTTP status and error code" eq \
  "$(grep -c "MCP server 'api'" "$GG_TMP/m1.json") $(grep -c 'identity provider refused the token exchange (HTTP 400: invalid_grant)' "$GG_TMP/m1.json")" "1 1"
t "  not the IdP's description" eq "$(grep -c 'may not get an ID-JAG' "$GG_TMP/m1.json")" 0
t "  and no jwt-bearer grant was tried" eq "$(grants)" 2
sdk "$(token alice "$GG_PUB/mcp/acme/unknown")" "$GG_TMP/u1.json" "$GG_PUB/mcp/acme/unknown"
t "a client the authorization server does not know: token_exchange_failed (invalid_client)" eq \
  "$(code "$GG_TMP/u1.json") $(grep -c 'invalid_client' "$GG_TMP/u1.json")" "token_exchange_failed 1"
before=$(jags) refused0=$(curl -s "$RSBASE/admin/refused")
sdk "$TOKC" "$GG_TMP/c1.json"
t "a token the downstream refuses: obtained once more, then token_exchange_failed" eq \
  "$(code "$GG_TMP/c1.json") $(( $(jags) - before )) $(( $(curl -s "$RSBASE/admin/refused") - refused0 ))" \
  "token_exchange_failed 2 2"
t "  saying the server refused it again" has "$GG_TMP/c1.json" 'refused the exchanged token again'

# ---- a proxy graph over the server: the same grant, per caller ----------------------------------
PX=$GG_PUB/mcp/acme/px
TOKPA=$(token alice "$PX")
before=$(jags)
sdk "$TOKPA" "$GG_TMP/p1.json" "$PX" whoami
t "alice's call through the proxy graph: her own token (sub alice, aud the downstream), on one ID-JAG" eq \
  "$(who "$GG_TMP/p1.json" "['sub']") $(who "$GG_TMP/p1.json" "['aud']") $(( $(jags) - before ))" "alice $RS 1"
SID=$(gw_init "$PX" "$KEY")
gw_rpc "$GG_TMP/k2.json" "$PX" "$KEY" "$SID" '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{}}}' >/dev/null
t "  an API-key caller of the proxy gets principal_required" eq \
  "$(jget "$GG_TMP/k2.json" "d['result']['isError']") $(code "$GG_TMP/k2.json")" "True principal_required"

# ---- no token anywhere it should not be ----------------------------------------------------------
TOKS=$(oauth_rs_tokens "$GG_TMP/tokens.json")
curl -s "$ISS/_idjags" >"$GG_TMP/idjags.json"
gg_curl "$GG_TMP/execs.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/acme/executions" >/dev/null
EXEC=$(jget "$GG_TMP/execs.json" "d['executions'][0]['id']")
gg_curl "$GG_TMP/exec.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/executions/$EXEC?tenant=acme" >/dev/null
gg_curl "$GG_TMP/ds.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/acme/downstream" >/dev/null
gg_curl "$GG_TMP/metrics.txt" "$GG_INT/metrics" >/dev/null
t "the run records were read back" eq "$(jget "$GG_TMP/exec.json" "'nodes' in d or 'node_executions' in d or 'records' in d")" True
FILES=("$GG_TMP/ds.json" "$GG_TMP/execs.json" "$GG_TMP/exec.json" "$GG_TMP/metrics.txt" "$GG_TMP/serve.out" "$GG_TMP/serve.err"
  "$GG_DB" "$GG_DB-wal" "$GG_TMP"/[abckmpu][0-9].json "$GG_TMP"/*.json.err)
list() { python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))))' "$1"; }
n=0
for tok in $TOKS; do
  n=$((n + 1))
  t "downstream token $n is in no answer, log, record or database file" oauth_absent "$tok" "${FILES[@]}"
done
t "the downstream saw graphgate's tokens only (alice 2, bob 1, carol 2)" eq "$n" 5
n=0
for tok in $(list "$GG_TMP/idjags.json"); do
  n=$((n + 1))
  t "ID-JAG $n is in no answer, log, record or database file" oauth_absent "$tok" "${FILES[@]}" "$GG_TMP/tokens.json"
done
t "the IdP issued one ID-JAG per grant (alice 2, bob 1, carol 2, alice for unknown 1)" eq "$n" 6
for pair in "alice $TOKA" "alice(proxy) $TOKPA" "bob $TOKB" "mallory $TOKM" "carol $TOKC"; do
  t "${pair%% *}'s own token is in no answer, log, record, /metrics or database file" oauth_absent "${pair#* }" "${FILES[@]}"
done
t "the server stops cleanly" gw_stop_clean
t "  and its logs name no token after the stop either" oauth_absent "$TOKA" "$GG_TMP/serve.out" "$GG_TMP/serve.err" "$GG_DB"
gg_finish
