#!/usr/bin/env bash
# oauth_consent.sh — per-user consent for a downstream MCP server (`auth: {type: oauth,
# per_user: true}`, issue 27), end to end: one real authorization server (oidc-provider,
# tests/fixtures/oauth/as.mjs) is both the tenant's (its users call with its JWTs) and the
# downstream's; the downstream is an SDK server with bearer middleware (rs.mjs) whose whoami
# says whose token it got; a proxy graph re-exports it.
#   - the SDK client (tests/auth/oauth_consent.mjs) calling as alice gets -32042 with one
#     url-mode elicitation naming graphgate's connect page; bob gets his own;
#   - the browser part is a user agent following redirects with cookies (curl -L; the test
#     server signs in whoever X-Test-Account names): bob opening alice's URL signs in at the
#     tenant's server and gets 403, nothing stored; alice opening it signs in, consents at the
#     downstream's server and lands on graphgate's "Connected" page; her retry of the call
#     reaches the downstream with her own token (sub alice); bob still gets -32042;
#   - a graph with mcp nodes calling the server uploads (201: its tools are checked at the
#     first call, not at the upload), gets -32042 for alice too and works with her grant; a node
#     naming a tool the server lacks fails at the call with the downstream's word; a proxy with
#     `tools: all` over the server is a 422 proxy_tools_unlisted at its line:col;
#   - a forged or changed state is a 400 page, a replayed callback too; an API-key caller gets
#     principal_required; bad per_user settings are a 422 at their line:col;
#   - a token revoked at the downstream: the next call asks for consent again (grant deleted);
#   - the admin view counts alice's grant, never a token; the tokens are in no log line,
#     answer or database file;
#   - a 2026-07-28 caller (oauth_consent2026.mjs) gets an input-required round with a URL-mode
#     elicitation instead (-32021 without the URL capability), bounded, declinable; the SDK v2
#     client consents through it; a 2025-11-25 session connected while its user consents gets
#     notifications/elicitation/complete;
#   - ${secrets.NAME} in per_user servers: a header's secret reaches the downstream and its echo
#     is [secret:RS_KEY] in the answer; a client registered for graphgate's callback, configured
#     as two secrets, carries erin's consent (its id redacted in the answer too); a secret in a
#     per_user url is a 422 at it; no secret's value is in an answer, page, log or database file.
# Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
has() { grep -q -- "$2" "$1" || { echo "   '$2' not in $1: $(head -c 400 "$1")" >&2; return 1; }; }
gw_need_sdk
. "$GG_SRCDIR/tests/fixtures/oauth/lib.sh"
oauth_keys
oauth_start_protected

PERUSER='{type: oauth, per_user: true}'
{ oauth_graph_head px "$PERUSER"; cat <<YAML; } >"$GG_TMP/px.yaml"
proxy:
  - {server: "api", tools: ["whoami"]}
YAML
{ oauth_graph_head mn "$PERUSER"; cat <<YAML; } >"$GG_TMP/mn.yaml"
tools:
  - name: "who"
    description: "whoami from an mcp node"
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: call}
      - {id: call, type: mcp, server: api, tool: whoami, args: {}, next: exit}
      - {id: exit, type: exit}
  - name: "gone"
    description: "a tool the server lacks"
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: call}
      - {id: call, type: mcp, server: api, tool: no_such_tool, args: {}, next: exit}
      - {id: exit, type: exit}
YAML
cat >"$GG_TMP/bad.yaml" <<YAML
version: "1.0"
server: {name: "bad", version: "1.0.0"}
mcpServers:
  api:
    type: streamableHttp
    url: "$RS"
    auth:
      type: client_credentials
      client_id: machine
      per_user: "yes"
  two:
    type: streamableHttp
    url: "$RS"
    auth: {type: client_credentials, client_id: machine, per_user: true}
tools: []
YAML

# grants are sealed with the secrets key, as tenant secrets are
oauth_serve_trusting '{"tools:read":["tools:read"],"tools:execute":["tools:execute"],"graphs:write":["graphs:write"]}'
t "the proxy graph with per_user auth is accepted" eq "$(gw_put_graph "$ADMIN" acme px "$GG_TMP/px.yaml")" 201
t "an mcp-node graph over the per_user server is accepted (201)" eq "$(gw_put_graph "$ADMIN" acme mn "$GG_TMP/mn.yaml")" 201
t "  its nodes' tools are not checked at the upload (no user to list them as)" eq \
  "$(jget "$GG_TMP/put.json" "[e['code'] for e in d.get('errors', []) + d.get('warnings', []) if e['code'].startswith('downstream_')]")" "[]"
sed 's/tools: \["whoami"\]/tools: all/' "$GG_TMP/px.yaml" >"$GG_TMP/pxall.yaml"
t "a proxy graph with tools: all over the per_user server is a 422 (no user to list it as)" eq \
  "$(gw_put_graph "$ADMIN" acme pxall "$GG_TMP/pxall.yaml") $(jget "$GG_TMP/put.json" "[(e['code'], e['line'], e['column']) for e in d['errors']]")" \
  "422 [('proxy_tools_unlisted', 9, 28)]"
t "bad per_user settings are a 422" eq "$(gw_put_graph "$ADMIN" acme bad "$GG_TMP/bad.yaml")" 422
t "  per_user not a boolean, at its line:col (10:17)" eq \
  "$(jget "$GG_TMP/put.json" "[(e['line'], e['column']) for e in d['errors'] if 'per_user must be true or false' in e['message']]")" "[(10, 17)]"
t "  per_user with client_credentials, at the type" has "$GG_TMP/put.json" 'per_user needs type oauth'

EP=$GG_PUB/mcp/acme/px
token() { oauth_user_token "$1" "${2:-$EP}"; }
TOKA=$(token alice)
TOKB=$(token bob)
sdk() { oauth_sdk_call "$2" "$EP" "$1" whoami; }
MN=$GG_PUB/mcp/acme/mn
mn() { oauth_sdk_call "$2" "$MN" "$(token alice "$MN")" "$1"; }
el() { jget "$1" "d['error']['data']['elicitations'][0]$2"; }

# ---- no grant: a URL elicitation, each user their own --------------------------------------
sdk "$TOKA" "$GG_TMP/a1.json"
t "alice's call without a grant: -32042" eq "$(jget "$GG_TMP/a1.json" "d['error']['code']")" -32042
t "  one url-mode elicitation naming the server" eq \
  "$(jget "$GG_TMP/a1.json" "len(d['error']['data']['elicitations'])") $(el "$GG_TMP/a1.json" "['mode']") $(el "$GG_TMP/a1.json" "['message']" | grep -c "'api'")" "1 url 1"
t "  its id is 32 hex digits" eq "$(el "$GG_TMP/a1.json" "['elicitationId']" | grep -cE '^[0-9a-f]{32}$')" 1
URLA=$(el "$GG_TMP/a1.json" "['url']")
t "  its URL is graphgate's connect page" eq "${URLA%%\?*}" "$GG_PUB/oauth/connect"
sdk "$TOKB" "$GG_TMP/b1.json"
URLB=$(el "$GG_TMP/b1.json" "['url']")
t "bob's call: -32042 with a URL of his own" eq "$(jget "$GG_TMP/b1.json" "d['error']['code']") $([ -n "$URLB" ] && [ "$URLB" != "$URLA" ] && echo own)" "-32042 own"
mn who "$GG_TMP/m1.json"
t "alice's call of the mcp-node graph without a grant: -32042 too" eq \
  "$(jget "$GG_TMP/m1.json" "d['error']['code']") $(el "$GG_TMP/m1.json" "['mode']")" "-32042 url"
t "the downstream was never called with a token" eq "$(curl -s "$RSBASE/admin/tokens")" "[]"

# ---- an API key acts for nobody ----------------------------------------------------------------
SID=$(gw_init "$EP" "$KEY")
gw_rpc "$GG_TMP/k1.json" "$EP" "$KEY" "$SID" '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{}}}' >/dev/null
t "an API-key caller gets a clear error" eq "$(jget "$GG_TMP/k1.json" "d['result']['isError']") $(grep -c 'not an API key' "$GG_TMP/k1.json")" "True 1"
t "  its code is principal_required" has "$GG_TMP/k1.json" "principal_required"

# ---- the browser: a user agent following redirects, with its own cookies --------------------
browse() { # JAR ACCOUNT URL → the final status; the page in $GG_TMP/page.html, its URL in $GG_TMP/last.url
  curl -sS -L --max-redirs 20 --max-time 60 -c "$1" -b "$1" -H "X-Test-Account: $2" -o "$GG_TMP/page.html" \
    -w '%{http_code} %{url_effective}' "$3" >"$GG_TMP/browse.out" 2>&1
  sed 's/ .*//' "$GG_TMP/browse.out"; sed 's/^[^ ]* //' "$GG_TMP/browse.out" >"$GG_TMP/last.url"
}
grants() { gg_curl "$GG_TMP/ds.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/acme/downstream" >/dev/null
  jget "$GG_TMP/ds.json" "[(g['server'], g['users']) for g in d['per_user']]"; }
t "bob opening alice's URL signs in and is refused (403)" eq "$(browse "$GG_TMP/jar.b" bob "$URLA")" 403
t "  the page says it is not his request" has "$GG_TMP/page.html" 'made for another user'
t "  and nothing is stored" eq "$(grants)" "[]"
t "alice opening her URL signs in, consents and is connected (200)" eq "$(browse "$GG_TMP/jar.a" alice "$URLA")" 200
t "  the page says to return to the client" has "$GG_TMP/page.html" 'Return to your MCP client'
CALLBACK=$(cat "$GG_TMP/last.url")
t "  through graphgate's callback" eq "${CALLBACK%%\?*}" "$GG_PUB/oauth/callback"
t "the admin view counts one user's grant for api" eq "$(grants)" "[('api', 1)]"
sdk "$TOKA" "$GG_TMP/a2.json"
t "alice's retry reaches the downstream" eq "$(jget "$GG_TMP/a2.json" "d['result'].get('isError', False)")" False
t "  with her own token (sub alice)" has "$GG_TMP/a2.json" '\\"sub\\":\\"alice\\"'
mn who "$GG_TMP/m2.json"
t "alice's call of the mcp-node graph works with the same grant (sub alice)" eq \
  "$(jget "$GG_TMP/m2.json" "d['result'].get('isError', False)") $(grep -cE 'sub[\\"]+:[\\"]+alice' "$GG_TMP/m2.json")" "False 1"
mn gone "$GG_TMP/m3.json"
t "  a node naming a tool the server lacks fails at the call: a tool error, the downstream's word" eq \
  "$(jget "$GG_TMP/m3.json" "d['result']['isError']") $(grep -c 'Tool no_such_tool not found' "$GG_TMP/m3.json")" "True 1"
sdk "$TOKB" "$GG_TMP/b2.json"
t "bob still gets his own -32042 (no sharing)" eq "$(jget "$GG_TMP/b2.json" "d['error']['code']")" -32042

# ---- forged, changed, replayed -----------------------------------------------------------------
t "a forged state: 400" eq "$(gg_curl "$GG_TMP/f1.html" "$GG_PUB/oauth/connect?state=AAAAforged")" 400
t "  saying it is not graphgate's" has "$GG_TMP/f1.html" 'not one graphgate made'
ST=${URLA#*state=}
FLIP=$(printf %s "$ST" | sed 's/^\(.\{20\}\)./\1A/; s/^\(.\{20\}\)AA/\1BA/')
[ "$FLIP" = "$ST" ] && FLIP=$(printf %s "$ST" | sed 's/^\(.\{20\}\)./\1B/')
t "a changed state: 400" eq "$(gg_curl "$GG_TMP/f2.html" "$GG_PUB/oauth/connect?state=$FLIP")" 400
t "a callback with a forged state: 400" eq "$(gg_curl "$GG_TMP/f3.html" "$GG_PUB/oauth/callback?code=x&state=AAAAforged")" 400
t "the elicitation's state is no callback state: 400" eq "$(gg_curl "$GG_TMP/f4.html" "$GG_PUB/oauth/callback?code=x&state=$ST")" 400
t "a replayed callback: 400" eq "$(gg_curl "$GG_TMP/f5.html" "$CALLBACK")" 400
t "  saying it was used" has "$GG_TMP/f5.html" 'used already'
t "  and alice's grant is still there" eq "$(grants)" "[('api', 1)]"

# ---- no token anywhere it should not be -----------------------------------------------------
TOKS=$(oauth_rs_tokens "$GG_TMP/tokens.json")
gg_curl "$GG_TMP/execs.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/acme/executions" >/dev/null
gg_curl "$GG_TMP/metrics.txt" "$GG_INT/metrics" >/dev/null
n=0
for tok in $TOKS; do
  n=$((n + 1))
  t "alice's downstream token is in no answer, log or database file" oauth_absent "$tok" "$GG_TMP/ds.json" "$GG_TMP/execs.json" \
    "$GG_TMP/metrics.txt" "$GG_TMP/serve.out" "$GG_TMP/serve.err" "$GG_DB" "$GG_DB-wal" "$GG_TMP/a2.json" "$GG_TMP/m2.json" "$GG_TMP/m3.json" "$GG_TMP/page.html"
done
t "the downstream saw one token" eq "$n" 1

# ---- revoked at the downstream: refreshed; the refresh refused too: consent again ------------
curl -s -X POST "$RSBASE/admin/revoke" >/dev/null
sdk "$TOKA" "$GG_TMP/a3.json"
t "after a revocation alice's next call works (refresh token)" eq \
  "$(jget "$GG_TMP/a3.json" "d['result'].get('isError', False)") $(grep -c '\\"sub\\":\\"alice\\"' "$GG_TMP/a3.json")" "False 1"
t "  on a new token" eq "$(oauth_rs_tokens "$GG_TMP/tokens.json" | wc -l)" 2
t "  and her grant is kept (refreshed)" eq "$(grants)" "[('api', 1)]"
# the authorization server restarted: its refresh tokens (and clients) are gone
oauth_restart_as as2
t "the authorization server restarts on its port" eq "$(oauth_ready "$GG_TMP/as2.log")" "$ISS"
curl -s -X POST "$RSBASE/admin/revoke" >/dev/null
sdk "$TOKA" "$GG_TMP/a4.json"
t "revoked again, the refresh refused: alice's next call asks for consent again" eq "$(jget "$GG_TMP/a4.json" "d['error']['code']")" -32042
t "  and her grant is gone" eq "$(grants)" "[]"

# ---- grants are sealed with the secrets key: the startup check and `secret rekey` cover them --
t "alice consents again" eq "$(browse "$GG_TMP/jar.a2" alice "$(el "$GG_TMP/a4.json" "['url']")")" 200
t "the server stops cleanly" gw_stop_clean
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$GG_TMP/skey2"
refuses() { # → true when serve exits nonzero without serving
  if gg_start >/dev/null 2>&1; then gg_stop; return 1; fi
  wait "$GG_PID" 2>/dev/null; local rc=$?; GG_PID=""
  [ $rc -ne 0 ] || { echo "   serve exited $rc" >&2; return 1; }
}
GRAPHGATE_SECRETS_KEY_FILE="$GG_TMP/skey2" refuses
t "with another key and a grant stored, serve refuses to start" eq $? 0
t "  saying why" has "$GG_TMP/serve.err" 'sealed under another key'
gw_cli secret rekey --new-key-file "$GG_TMP/skey2" >"$GG_TMP/rekey.out" 2>&1
t "secret rekey re-encrypts the grant too" has "$GG_TMP/rekey.out" '0 secret(s) and 1 per-user grant(s) re-encrypted'
export GRAPHGATE_SECRETS_KEY_FILE="$GG_TMP/skey2"
GRAPHGATE_POLICY_HTTP_HOSTS=127.0.0.1 gg_restart "serve starts with the new key"
EP=$GG_PUB/mcp/acme/px # a new port: a new audience
oauth_wait_keys
sdk "$(token alice)" "$GG_TMP/a5.json"
t "after the rekey alice's call works with her grant" eq \
  "$(jget "$GG_TMP/a5.json" "d['result'].get('isError', False)") $(grep -c '\\"sub\\":\\"alice\\"' "$GG_TMP/a5.json")" "False 1"

# ---- a 2026-07-28 caller (stateless): an input-required round instead of -32042 ----------------
# carol has no grant: the raw rounds (no URL capability: -32021; decline; accept without
# consenting, bounded), then the SDK v2 client whose handler consents in the browser
GG_NPM="$NM" "$NODE" "$GG_SRCDIR/tests/auth/oauth_consent2026.mjs" "$EP" "$(token carol)" carol "$GG_PUB/oauth/connect" \
  "$GG_TMP" >"$GG_TMP/c2026.out" 2>&1
gw_fold "$GG_TMP/c2026.out" $?
t "carol's grant is stored beside alice's" eq "$(grants)" "[('api', 2)]"

# ---- 2025-11-25: the session that got the -32042 is told when the user has consented ----------
# through a graph whose server names token_endpoint_auth_method client_secret_post: the client
# registers so, and the authorization server refuses the code's exchange in any other method
sed 's/auth: {type: oauth, per_user: true}/auth: {type: oauth, per_user: true, token_endpoint_auth_method: client_secret_post}/' \
  "$GG_TMP/px.yaml" >"$GG_TMP/pxpost.yaml"
t "a per_user graph with token_endpoint_auth_method client_secret_post is accepted" eq \
  "$(gw_put_graph "$ADMIN" acme pxpost "$GG_TMP/pxpost.yaml")" 201
EP2=$GG_PUB/mcp/acme/pxpost
posted() { curl -s "$ISS/_count/token_post"; } # token requests without HTTP Basic client authentication
POST0=$(posted)
oauth_sdk_call "$GG_TMP/d1.json" "$EP2" "$(token dave "$EP2")" whoami dave "$GG_TMP"
t "dave's call gets -32042; he opens the URL while connected and consents (200)" eq \
  "$(jget "$GG_TMP/d1.json" "d['error']['code']") $(jget "$GG_TMP/d1.json" "d['opened']")" "-32042 200"
t "  his session gets notifications/elicitation/complete with the -32042's elicitationId" eq \
  "$(jget "$GG_TMP/d1.json" "d['complete']")" "$(el "$GG_TMP/d1.json" "['elicitationId']")"
t "  and his retry on the same session reaches the downstream as dave" eq \
  "$(jget "$GG_TMP/d1.json" "d['retry']['result'].get('isError', False)") $(grep -c '\\"sub\\":\\"dave\\"' "$GG_TMP/d1.json")" "False 1"
curl -s -X POST "$RSBASE/admin/revoke" >/dev/null
sdk2() { oauth_sdk_call "$2" "$EP2" "$1" whoami; }
sdk2 "$(token dave "$EP2")" "$GG_TMP/d2.json"
t "  revoked at the downstream, his next call works (refresh token)" eq \
  "$(jget "$GG_TMP/d2.json" "d['result'].get('isError', False)") $(grep -c '\\"sub\\":\\"dave\\"' "$GG_TMP/d2.json")" "False 1"
t "  the code's exchange and the refresh both authenticated by client_secret_post" eq "$(($(posted) - POST0))" 2
# ---- ${secrets.NAME} in a per_user server: a header, and the configured client -----------------
# The downstream gets the header's value; whoami echoes it, and the answer carries [secret:RS_KEY]
# instead. A client registered here for graphgate's callback is configured from two secrets:
# erin's consent goes through it (its secret authenticates the code's exchange).
RSKEY=rs-key-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
t "the header's secret is put (201)" eq "$(oauth_secret RS_KEY "$RSKEY")" 201
REGEP=$(curl -s "$ISS/.well-known/openid-configuration" | python3 -c 'import json,sys; print(json.load(sys.stdin)["registration_endpoint"])')
curl -s -H 'Content-Type: application/json' -o "$GG_TMP/reg.json" --data-binary \
  "{\"redirect_uris\":[\"$GG_PUB/oauth/callback\"],\"grant_types\":[\"authorization_code\",\"refresh_token\"],\"response_types\":[\"code\"],\"scope\":\"tools:read tools:execute offline_access\",\"token_endpoint_auth_method\":\"client_secret_basic\"}" "$REGEP"
CID=$(jget "$GG_TMP/reg.json" "d['client_id']")
CSEC=$(jget "$GG_TMP/reg.json" "d['client_secret']")
t "a client is registered for graphgate's callback; its id and secret are put as secrets" eq \
  "$([ ${#CSEC} -gt 16 ] && echo reg) $(oauth_secret RS_CID "$CID") $(oauth_secret RS_CSECRET "$CSEC")" "reg 201 201"
cat >"$GG_TMP/pxs.yaml" <<YAML
version: "1.0"
server: {name: "pxs", version: "1.0.0"}
mcpServers:
  api:
    type: streamableHttp
    url: "$RS"
    headers: {X-Api-Key: "\${secrets.RS_KEY}"}
    auth: {type: oauth, per_user: true}
  own:
    type: streamableHttp
    url: "$RS"
    headers: {X-Api-Key: "\${secrets.RS_KEY}"}
    auth: {type: oauth, per_user: true, client_id: "\${secrets.RS_CID}", client_secret: "\${secrets.RS_CSECRET}"}
proxy:
  - {server: "api", tools: ["whoami"]}
  - {server: "own", tools: ["whoami"], prefix: "own_"}
YAML
sed "s|url: \"$RS\"|url: \"$RS?k=\\\${secrets.RS_KEY}\"|" "$GG_TMP/px.yaml" >"$GG_TMP/pxurl.yaml"
t "a per_user server with a secret in its url is a 422 at the url (the resource users consent to)" eq \
  "$(gw_put_graph "$ADMIN" acme pxurl "$GG_TMP/pxurl.yaml") $(jget "$GG_TMP/put.json" "[(e['code'], e['line'], e['column']) for e in d['errors']]")" \
  "422 [('invalid_server', 6, 10)]"
t "a per_user graph whose header and client come from secrets is accepted (201)" eq "$(gw_put_graph "$ADMIN" acme pxs "$GG_TMP/pxs.yaml")" 201
EPS=$GG_PUB/mcp/acme/pxs
sdks() { oauth_sdk_call "$3" "$EPS" "$(token "$1" "$EPS")" "$2"; }
sdks alice whoami "$GG_TMP/s1.json"
t "alice's call (her grant for api) reaches the downstream as alice" eq \
  "$(jget "$GG_TMP/s1.json" "d['result'].get('isError', False)") $(grep -c '\\"sub\\":\\"alice\\"' "$GG_TMP/s1.json")" "False 1"
t "  with the secret's value in its header" eq "$(curl -s "$RSBASE/admin/keys")" "[\"$RSKEY\"]"
t "  the echoed value is redacted in the answer" eq "$(grep -c 'secret:RS_KEY' "$GG_TMP/s1.json") $(grep -cF -- "$RSKEY" "$GG_TMP/s1.json")" "1 0"
sdks erin own_whoami "$GG_TMP/e1.json"
t "erin's call of the server with a configured client: -32042" eq "$(jget "$GG_TMP/e1.json" "d['error']['code']")" -32042
t "  her URL holds neither the client's id nor its secret in clear" eq \
  "$(el "$GG_TMP/e1.json" "['url']" | grep -cF -e "$CID" -e "$CSEC")" 0
t "erin consents through the client made of secrets (200)" eq "$(browse "$GG_TMP/jar.e" erin "$(el "$GG_TMP/e1.json" "['url']")")" 200
sdks erin own_whoami "$GG_TMP/e2.json"
who() { jget "$1" "(lambda w: w['sub'] + ' ' + w['client'])(json.loads(d['result']['content'][0]['text']))"; }
t "erin's retry reaches the downstream as erin, her token issued to the configured client (its id a secret: redacted)" eq \
  "$(who "$GG_TMP/e2.json")" "erin [secret:RS_CID]"
gg_curl "$GG_TMP/execs2.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/acme/executions" >/dev/null
for v in "$RSKEY" "$CID" "$CSEC"; do
  t "a secret's value is in no answer, page, log or database file" oauth_absent "$v" "$GG_TMP/s1.json" "$GG_TMP/e1.json" \
    "$GG_TMP/e2.json" "$GG_TMP/execs2.json" "$GG_TMP/page.html" "$GG_TMP/put.json" "$GG_TMP/serve.out" "$GG_TMP/serve.err" "$GG_DB" "$GG_DB-wal"
done

# ---- async branches and proxied resources/prompts act for the caller too ------------------------
# alice holds a grant for api, bob none; an API key acts for nobody. A branch runs with the
# principal of the call that started it; a resource or prompt goes with the caller's own grant,
# and a caller without one gets the same -32042 as a tools call.
oauth_branch_graph "$GG_TMP/ex.yaml" ex "$PERUSER" 'resources: ["who://me"], prompts: ["greet"]'
t "a graph with an async node and proxied resources/prompts over the per_user server is accepted (201)" eq \
  "$(gw_put_graph "$ADMIN" acme ex "$GG_TMP/ex.yaml")" 201
EX=$GG_PUB/mcp/acme/ex
exinit() { gw_rpc "$GG_TMP/exinit.json" "$EX" "$1" "" '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{},"url":{}}},"clientInfo":{"name":"t","version":"1"}}}' >/dev/null
  sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: *\([^[:space:]]*\).*/\1/p' "$GG_TMP/exinit.json.h" | tr -d '\r'; }
excall() { # WHO(token or key) SESSION OUT METHOD PARAMS
  gw_rpc "$3" "$EX" "$1" "$2" "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"$4\",\"params\":$5}" >/dev/null; }
TEA=$(token alice "$EX"); TEB=$(token bob "$EX")
SA=$(exinit "$TEA"); SB=$(exinit "$TEB"); SK=$(exinit "$KEY")
excall "$TEA" "$SA" "$GG_TMP/xr1.json" resources/read '{"uri":"who://me"}'
t "alice reads the proxied resource with her grant (sub alice)" eq \
  "$(jget "$GG_TMP/xr1.json" "json.loads(d['result']['contents'][0]['text'])['sub']")" alice
excall "$TEA" "$SA" "$GG_TMP/xp1.json" prompts/get '{"name":"greet"}'
t "alice gets the proxied prompt with her grant" eq "$(jget "$GG_TMP/xp1.json" "d['result']['messages'][0]['content']['text']")" "hello alice"
excall "$TEB" "$SB" "$GG_TMP/xr2.json" resources/read '{"uri":"who://me"}'
t "bob (no grant) reading it gets -32042 with his url elicitation, as for a tools call" eq \
  "$(jget "$GG_TMP/xr2.json" "d['error']['code']") $(el "$GG_TMP/xr2.json" "['mode']") $(el "$GG_TMP/xr2.json" "['url']" | sed 's/?.*//')" \
  "-32042 url $GG_PUB/oauth/connect"
excall "$TEB" "$SB" "$GG_TMP/xp2.json" prompts/get '{"name":"greet"}'
t "  getting the prompt too" eq "$(jget "$GG_TMP/xp2.json" "d['error']['code']")" -32042
excall "$KEY" "$SK" "$GG_TMP/xr3.json" resources/read '{"uri":"who://me"}'
t "an API key reading it gets principal_required's message" eq \
  "$(jget "$GG_TMP/xr3.json" "d['error']['code'] != -32042 and 'not an API key' in d['error']['message']")" True
for w in "$TEA:$SA" "$TEB:$SB" "$KEY:$SK"; do excall "${w%%:*}" "${w##*:}" "$GG_TMP/xb.json" tools/call '{"name":"bg","arguments":{}}'
  t "the call starting a branch answers at once (started)" eq "$(jget "$GG_TMP/xb.json" "d['result'].get('isError', False)")" False; done
gw_wait_runs "$GG_TMP/xex.json" "$ADMIN" acme api.whoami 3
t "three branch rows: one succeeded, bob's asks for consent, the key's needs a principal" eq "$(jget "$GG_TMP/xex.json" \
  'sorted((e["status"], (e["error"] or "").split(":")[0]) for e in d["executions"] if e["tool"] == "api.whoami")')" \
  "[('failed', 'principal_required'), ('failed', 'url_elicitation_required'), ('succeeded', '')]"
XID=$(jget "$GG_TMP/xex.json" '[e["id"] for e in d["executions"] if e["tool"] == "api.whoami" and e["status"] == "succeeded"][0]')
gg_curl "$GG_TMP/xone.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/executions/$XID" >/dev/null
t "  alice's branch reached the downstream as alice" eq "$(grep -cE 'sub[\\"]+:[\\"]+alice' "$GG_TMP/xone.json")" 1
for tok in $(oauth_rs_tokens "$GG_TMP/tokens2.json"); do
  oauth_absent "$tok" "$GG_TMP/xr1.json" "$GG_TMP/xp1.json" "$GG_TMP/xone.json" "$GG_TMP/xex.json" "$GG_TMP/serve.out" "$GG_TMP/serve.err" || echo "$tok"
done >"$GG_TMP/leaked"
t "no downstream token in those answers, the branch's row or the logs" eq "$(wc -l <"$GG_TMP/leaked")" 0

t "the server stops cleanly" gw_stop_clean
gg_finish
