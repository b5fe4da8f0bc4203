#!/usr/bin/env bash
# oauth_downstream.sh — graphgate as the OAuth client of a downstream MCP server, end to end:
# a real SDK server requiring bearer tokens (tests/fixtures/oauth/rs.mjs: requireBearerAuth,
# its RFC 9728 metadata, JWTs checked against the authorization server's JWKS and audience)
# behind a real authorization server (oidc-provider, tests/fixtures/oauth/as.mjs), reached
# through a proxy graph whose mcpServers entry says `auth: {type: client_credentials, ...}`:
#   - the upload lists the protected catalog and a call works: on the first 401 graphgate
#     read the challenge, the protected-resource and authorization-server metadata, and
#     obtained a token with client credentials (RFC 8707 resource = the server's URL);
#   - the token never appears in the graph's GET, the history, the logs, /metrics or the
#     database file (with its WAL);
#   - a token revoked at the server (401 invalid_token) leads to a fresh one on the next
#     call, which works; a token near its expiry (a second authorization server issuing
#     20-second tokens) is renewed in the background: the server sees a new token and never
#     has to refuse one;
#   - a wrong client secret fails the call with a clear downstream_auth error that does not
#     name the secret; `graphgate run` takes the same path; bad `auth:` settings are a 422 at
#     their line:col.
# Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
has() { grep -q -- "$2" "$1" || { echo "   '$2' not in $1: $(head -c 400 "$1")" >&2; return 1; }; }
gw_need_sdk
. "$GG_SRCDIR/tests/fixtures/oauth/lib.sh"
oauth_keys
GG_AS_TTL=20 oauth_start_protected short
RS_short=$RS SHORTBASE=$RSBASE
GG_AS_TTL=600 oauth_start_protected main
SECRET=machine-secret-0123456789

graph() { # FILE SECRET [URL]: a graph calling the protected server's (or URL's) whoami from an mcp node
  { RS=${3:-$RS} oauth_graph_head px "{type: client_credentials, client_id: machine, client_secret: \"$2\", scope: \"tools:read tools:execute\"}"
    cat <<YAML; } >"$1"
tools:
  - name: "who"
    description: "whoami, through an mcp node"
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: call}
      - {id: call, type: mcp, server: api, tool: whoami, args: {}, next: exit}
      - {id: exit, type: exit}
YAML
}
graph "$GG_TMP/px.yaml" "$SECRET"
graph "$GG_TMP/bad.yaml" wrong-secret-4711
graph "$GG_TMP/short.yaml" "$SECRET" "$RS_short"
cat >"$GG_TMP/typo.yaml" <<YAML
version: "1.0"
server: {name: "typo", version: "1.0.0"}
mcpServers:
  api:
    type: streamableHttp
    url: "$RS"
    auth:
      type: client_credential
      client_secret: 7
      colour: red
      dpop: "yes"
tools: []
YAML

gw_cli_run tenant create acme >/dev/null
ADMIN=$(gw_key acme admin)
KEY=$(gw_key acme tools:read,tools:execute)
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$GG_TMP/skey"
export GRAPHGATE_SECRETS_KEY_FILE="$GG_TMP/skey" # the client secret can live in the secret store
GRAPHGATE_POLICY_HTTP_HOSTS=127.0.0.1 gg_start || { echo "0 passed, 1 failed"; exit 1; }
t "setup: tenant and keys" gw_cli_clean
t "the graph with client-credentials auth is accepted" eq "$(gw_put_graph "$ADMIN" acme px "$GG_TMP/px.yaml")" 201

call() { # OUT [GRAPH] → the status of a tools/call of who (a 2025-11-25 session)
  local url="$GG_PUB/mcp/acme/${2:-px}" sid
  sid=$(gw_init "$url" "$KEY")
  gw_rpc "$1" "$url" "$KEY" "$sid" '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"who","arguments":{}}}'
}
t "a call reaches the protected server" eq "$(call "$GG_TMP/c1.json")" 200
t "with a client-credentials token of client 'machine'" has "$GG_TMP/c1.json" '\\"client\\":\\"machine\\"'
TOKS1=$(oauth_rs_tokens "$GG_TMP/tokens1.json")
t "the server saw one token" eq "$(wc -w <<<"$TOKS1")" 1
gg_curl "$GG_TMP/ds.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/acme/downstream" >/dev/null
t "the admin view shows the server's credential state" eq \
  "$(jget "$GG_TMP/ds.json" "[(a['server'], a['state'], a['refresh_token'], a['requests'] >= 2, a['failures'], a['valid_until_ms'] > 0) for a in d['auth']]")" \
  "[('api', 'valid', False, True, 0, True)]"
t "  and /metrics counts the client's requests" eq \
  "$(curl -sS "$GG_INT/metrics" | awk '/^graphgate_downstream_oauth_clients /{c=$2} /^graphgate_downstream_oauth_requests_total /{r=$2} END{print c, (r >= 2)}')" "1 1"

# the token nowhere graphgate keeps or shows anything
gg_curl "$GG_TMP/graph.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/acme/graphs/px" >/dev/null
gg_curl "$GG_TMP/execs.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/acme/executions" >/dev/null
gg_curl "$GG_TMP/metrics.txt" "$GG_INT/metrics" >/dev/null
for tok in $TOKS1; do
  t "the token is in no answer, log, metric or database file" oauth_absent "$tok" "$GG_TMP/graph.json" "$GG_TMP/execs.json" "$GG_TMP/ds.json" \
    "$GG_TMP/metrics.txt" "$GG_TMP/serve.out" "$GG_TMP/serve.err" "$GG_DB" "$GG_DB-wal" "$GG_TMP/c1.json"
done
t "the client secret is in no log or metric" oauth_absent "$SECRET" "$GG_TMP/metrics.txt" "$GG_TMP/serve.out" "$GG_TMP/serve.err" "$GG_TMP/execs.json"

# a token revoked at the server: the next call gets a fresh one and works
curl -s -X POST "$RSBASE/admin/revoke" >/dev/null
t "after a revocation the next call works" eq "$(call "$GG_TMP/c2.json") $(jget "$GG_TMP/c2.json" '"error" in d or d["result"].get("isError", False)')" "200 False"
count() { RSBASE=${1:-$RSBASE} oauth_rs_tokens "$GG_TMP/count.json" | wc -l; } # [BASE]: the tokens the server saw so far
t "with a fresh token" eq "$(count)" 2
t "and the next one too, on the same token" eq "$(call "$GG_TMP/c3.json") $(count)" "200 2"

# a wrong secret: a clear error, without the secret
gw_put_graph "$ADMIN" acme bad "$GG_TMP/bad.yaml" >/dev/null
call "$GG_TMP/c4.json" bad >/dev/null
t "a wrong client secret fails the call, saying why" has "$GG_TMP/c4.json" 'token request refused (HTTP 401: invalid_client)'
t "without naming the secret" oauth_absent wrong-secret-4711 "$GG_TMP/c4.json" "$GG_TMP/serve.err"
gg_curl "$GG_TMP/ds2.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/acme/downstream" >/dev/null
t "the admin view shows that server failing, with the last failure's reason and time" eq \
  "$(jget "$GG_TMP/ds2.json" "[(a['state'], 'invalid_client' in a['last_failure'], a['last_failure_ms'] > 0) for a in d['auth'] if a['server'] == 'api' and a['url'] == '$RS' and a['state'] != 'valid']")" \
  "[('failing', True, True)]"
t "  without the secret" oauth_absent wrong-secret-4711 "$GG_TMP/ds2.json"

# the client secret from the tenant's secret store: never in the graph, rotated without an upload
t "the client secret goes into the secret store" eq "$(oauth_secret CC_SECRET "$SECRET")" 201
graph "$GG_TMP/sec.yaml" '${secrets.CC_SECRET}'
t "a graph naming it is accepted" eq "$(gw_put_graph "$ADMIN" acme sec "$GG_TMP/sec.yaml")" 201
t "  and one naming a missing secret is a 422 at its line" eq \
  "$(graph "$GG_TMP/sec2.yaml" '${secrets.NOPE}'; gw_put_graph "$ADMIN" acme sec2 "$GG_TMP/sec2.yaml") $(jget "$GG_TMP/put.json" "[e['code'] for e in d['errors']][0]")" "422 unknown_secret"
t "a call with the stored secret works" eq "$(call "$GG_TMP/c6.json" sec) $(grep -c '\\"client\\":\\"machine\\"' "$GG_TMP/c6.json")" "200 1"
gg_curl "$GG_TMP/graph2.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/acme/graphs/sec" >/dev/null
t "the graph shows the reference, not the secret" eq "$(grep -c 'secrets.CC_SECRET' "$GG_TMP/graph2.json") $(grep -cF -- "$SECRET" "$GG_TMP/graph2.json")" "1 0"
oauth_secret CC_SECRET wrong-secret-0815 >/dev/null
call "$GG_TMP/c7.json" sec >/dev/null
t "a wrong secret set in the store: the next call fails, saying why" has "$GG_TMP/c7.json" 'invalid_client'
t "  without naming it" oauth_absent wrong-secret-0815 "$GG_TMP/c7.json" "$GG_TMP/serve.err"
oauth_secret CC_SECRET "$SECRET" >/dev/null
t "set back: the next call works again, with no upload" eq "$(call "$GG_TMP/c8.json" sec) $(grep -c '\\"client\\":\\"machine\\"' "$GG_TMP/c8.json")" "200 1"

# a token near its expiry: renewed in the background by a call made meanwhile, never refused
gw_put_graph "$ADMIN" acme short "$GG_TMP/short.yaml" >/dev/null
ok=0
for _ in $(seq 1 100); do # each call may start the renewal; the next ones show whether it came
  [ "$(call "$GG_TMP/c5.json" short)" = 200 ] && has "$GG_TMP/c5.json" machine 2>/dev/null || break
  [ "$(count "$SHORTBASE")" -ge 2 ] && { ok=1; break; }
  sleep 0.1
done
t "a token near its expiry is renewed before it expires" eq "$ok" 1
t "  and none was refused on the way" eq "$(curl -s "$SHORTBASE/admin/refused")" 0

# graphgate run (no server): the same client, the same flow
"$GG_BIN" run "$GG_TMP/px.yaml" who >"$GG_TMP/run.out" 2>"$GG_TMP/run.err"
t "graphgate run gets its own token and calls" has "$GG_TMP/run.out" '"client\\*":\\*"machine'

# bad settings: 422 at their line:col
t "bad auth settings are refused" eq "$(gw_put_graph "$ADMIN" acme typo "$GG_TMP/typo.yaml")" 422
t "  the unknown key at its line" has "$GG_TMP/put.json" "unknown key 'colour'"
t "  the type at 8:13" has "$GG_TMP/put.json" '"line": *8, *"column": *13'
t "  client_credentials without client_id" has "$GG_TMP/put.json" "needs 'client_id'\|auth.type must be"
t "  dpop not a boolean" has "$GG_TMP/put.json" "dpop must be true or false"
t "the server stops cleanly" gw_stop_clean
gg_finish
