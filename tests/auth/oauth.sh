#!/usr/bin/env bash
# oauth.sh — graphgate as an MCP OAuth resource server, end to end with a real authorization
# server (oidc-provider, tests/fixtures/oauth/as.mjs) for each of two tenants:
#   - admin REST for a tenant's issuers (admin scope; bad definitions refused), its keys
#     fetched in the background; RFC 9728 metadata for graph, _all and view endpoints; the
#     401 challenge naming it (and none for a tenant without issuers);
#   - the official SDK clients (v1: 2025-11-25 session, v2: 2026-07-28) through their own
#     OAuth support: discovery, dynamic registration, PKCE, resource, token, list and call;
#   - the attack matrix: each token below must be refused (expired, not yet valid, another
#     issuer, another tenant's issuer, another endpoint's or tenant's audience, alg none, HS256
#     keyed with the public key, unknown kid, truncated, oversized, a scope missing → 403 with
#     the step-up challenge, a session opened by another principal); 1,000 unknown kids cost
#     at most 2 key fetches and leave the other tenant's calls fast; a JWKS endpoint that
#     hangs answers its tenant's tokens 503 at once and holds nobody else;
#   - DPoP (RFC 9449): tokens bound by the authorization server, proofs checked (replay, URL,
#     method, key, age, ath, scheme), an issuer requiring DPoP with server nonces;
#   - key rotation at the authorization server followed without a restart; an issuer removed
#     by an admin refused at once, also by a second process on the same database within 2 s.
# Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
has() { grep -q -- "$2" "$1" || { echo "   '$2' not in $1: $(head -c 400 "$1")" >&2; return 1; }; }
gw_need_sdk
. "$GG_SRCDIR/tests/fixtures/oauth/lib.sh"
trap 'kill ${PID_A:-} ${PID_B:-} ${HANGPID:-} ${PID2:-} ${OTLPPID:-} 2>/dev/null; gg_cleanup' EXIT

# two authorization servers, each with its own keys; A signs with ES256, B with RS256
JWT keys "$GG_TMP/a.json" ES256 RS256 EdDSA >"$GG_TMP/a.kids"
JWT keys "$GG_TMP/b.json" RS256 >/dev/null
oauth_start_as A 0 "$GG_TMP/a.json" ES256
oauth_start_as B 0 "$GG_TMP/b.json" RS256
oauth_start_hang # a "JWKS endpoint" that accepts connections and never answers
oauth_need_as A B

# an OTLP receiver: spans name the caller, never the token
python3 "$GG_SRCDIR/tests/telemetry/otlp_receiver.py" "$GG_TMP/spans.jsonl" ok "$GG_TMP/otlp.port" 2>/dev/null &
OTLPPID=$!
for _ in $(seq 1 100); do [ -s "$GG_TMP/otlp.port" ] && break; sleep 0.05; done
cat >"$GG_TMP/gg.yaml" <<YAML
oauth:
  unknown_kid_interval: 1s
  fetch_timeout: 1s
telemetry:
  otlp_endpoint: "http://127.0.0.1:$(cat "$GG_TMP/otlp.port")/v1/traces"
  flush_interval: 50ms
YAML
for t in acme beta slow; do gw_cli_run tenant create $t >/dev/null; done
ADMIN=$(gw_key acme admin)
KB=$(gw_key beta tools:read,tools:execute)
gg_start --config "$GG_TMP/gg.yaml" || { echo "0 passed, 1 failed"; exit 1; }
for t in acme beta slow; do gw_put_graph "$ADMIN" $t g "$GG_SRCDIR/examples/collatz.yaml" >/dev/null; done
# $caller: who called, routed on (a switch on its scopes) and returned
cat >"$GG_TMP/who.yaml" <<'YAML'
version: "1.0"
server: {name: who, version: "1.0.0"}
tools:
  - name: who
    description: "Says who called"
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: route}
      - id: route
        type: switch
        conditions:
          - {rule: {"in": ["admin", {var: "$caller.scopes"}]}, target: boss}
          - {target: done}
      - {id: boss, type: transform, transform: {expr: '$merge([$caller, {"boss": true}])'}, next: out}
      - {id: done, type: transform, transform: {expr: '$caller ? $caller : {"nobody": true}'}, next: out}
      - {id: out, type: transform, transform: {expr: '$exists($.boss) ? $.boss : $.done'}, next: exit}
      - {id: exit, type: exit}
YAML
gw_put_graph "$ADMIN" acme who "$GG_TMP/who.yaml" >/dev/null
EP=$GG_PUB/mcp/acme/g
WK=$GG_PUB/.well-known/oauth-protected-resource

# ---- admin REST ------------------------------------------------------------------------
put_oauth() { gg_curl "$GG_TMP/oauth.json" -X PUT -H "Authorization: Bearer $1" -H 'Content-Type: application/json' \
  --data-binary "$3" "$GG_PUB/admin/tenants/$2/oauth"; }
t "a definition without issuers is refused (400)" eq "$(put_oauth "$ADMIN" acme '{"issuers":[]}')" 400
t "  with the error shape" eq "$(jget "$GG_TMP/oauth.json" "d['error']['code']")" invalid_argument
t "alg none is refused (400)" eq "$(put_oauth "$ADMIN" acme "{\"issuers\":[{\"issuer\":\"$ISS_A\",\"algorithms\":[\"none\"]}]}")" 400
t "a tools key may not set issuers (403)" eq "$(put_oauth "$KB" beta "{\"issuers\":[{\"issuer\":\"$ISS_B\"}]}")" 403
t "acme's issuer set (200)" eq "$(put_oauth "$ADMIN" acme "{\"issuers\":[{\"issuer\":\"$ISS_A\"}]}")" 200
t "beta's issuer set (200)" eq "$(put_oauth "$ADMIN" beta "{\"issuers\":[{\"issuer\":\"$ISS_B\"}]}")" 200
t "slow's issuer set, with a JWKS endpoint that hangs (200)" \
  eq "$(put_oauth "$ADMIN" slow "{\"issuers\":[{\"issuer\":\"$ISS_A\",\"jwks_uri\":\"http://127.0.0.1:$HANG/jwks\"}]}")" 200
keys_loaded() { # TENANT → the issuer's key count once fetched
  for _ in $(seq 1 100); do
    gg_curl "$GG_TMP/get.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/$1/oauth" >/dev/null
    n=$(jget "$GG_TMP/get.json" "d['definition']['issuers'][0]['status']['keys']")
    [ "${n:-0}" -gt 0 ] && { echo "$n"; return; }
    sleep 0.1
  done; echo 0; }
t "acme's keys fetched (RFC 8414 discovery, then the JWKS)" eq "$(keys_loaded acme)" 3
t "beta's keys fetched" eq "$(keys_loaded beta)" 1
t "the definition came back normalized (defaults written in)" eq \
  "$(jget "$GG_TMP/oauth.json" "d['definition']['issuers'][0]['clock_skew_s']")" 60

# ---- protected-resource metadata and challenges -------------------------------------------
t "metadata of a graph endpoint (200)" eq "$(gg_curl "$GG_TMP/prm.json" "$WK/mcp/acme/g")" 200
t "  resource is the endpoint's public URL" eq "$(jget "$GG_TMP/prm.json" "d['resource']")" "$EP"
t "  authorization_servers: the tenant's" eq "$(jget "$GG_TMP/prm.json" "d['authorization_servers']")" "['$ISS_A']"
t "  scopes and bearer methods" eq "$(jget "$GG_TMP/prm.json" "('tools:execute' in d['scopes_supported'], d['bearer_methods_supported'])")" "(True, ['header'])"
t "metadata of the tenant-wide endpoint and of a view" eq \
  "$(gg_curl "$GG_TMP/p2.json" "$WK/mcp/acme/_all") $(jget "$GG_TMP/p2.json" "d['resource']") $(gg_curl "$GG_TMP/p3.json" "$WK/mcp/beta/_views/v1") $(jget "$GG_TMP/p3.json" "d['resource']")" \
  "200 $GG_PUB/mcp/acme/_all 200 $GG_PUB/mcp/beta/_views/v1"
gw_cli_run tenant create plain >/dev/null
t "no metadata for a tenant without issuers, nor an unknown one (404 alike)" eq \
  "$(gg_curl "$GG_TMP/p4.json" "$WK/mcp/plain/g") $(gg_curl "$GG_TMP/p5.json" "$WK/mcp/nosuch/g")" "404 404"
st=$(gg_curl "$GG_TMP/c401.json" -X POST -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
  --data-binary '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' "$EP")
t "no credentials: 401" eq "$st" 401
t "  the challenge names the metadata and the scopes" has "$GG_TMP/c401.json.h" \
  "WWW-Authenticate: Bearer resource_metadata=\"$WK/mcp/acme/g\", scope=\"tools:read tools:execute health:check\""
gg_curl "$GG_TMP/c401p.json" -X POST -H 'Content-Type: application/json' --data-binary '{}' "$GG_PUB/mcp/plain/g" >/dev/null
t "a tenant without issuers keeps the plain challenge" has "$GG_TMP/c401p.json.h" "WWW-Authenticate: Bearer\s*$"

# ---- the official SDK clients through their OAuth support -------------------------------------
"$NODE" "$GG_SRCDIR/tests/auth/oauth_client.mjs" v1 "$EP" collatz '{"n":6}' >"$GG_TMP/sdk1.out" 2>&1; gw_fold "$GG_TMP/sdk1.out" $?
"$NODE" "$GG_SRCDIR/tests/auth/oauth_client.mjs" v2 "$GG_PUB/mcp/beta/g" collatz '{"n":7}' >"$GG_TMP/sdk2.out" 2>&1; gw_fold "$GG_TMP/sdk2.out" $?

# ---- tokens by curl: a client-credentials token, then the attack matrix ------------------------
call() { # TOKEN [URL] → status of a 2026-era tools/call (body in $GG_TMP/call.json)
  gg_curl "$GG_TMP/call.json" -X POST -H "Authorization: Bearer $1" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: collatz' \
    --data-binary '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"collatz","arguments":{"n":3},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}' \
    "${2:-$EP}"; }
CC=$(JWT cc "$ISS_A" "$EP")
t "a client-credentials token calls a tool (200)" eq "$(call "$CC")" 200
t "  and the run is done" eq "$(jget "$GG_TMP/call.json" "d['result']['structuredContent']['steps']")" 7
refused() { # DESCRIPTION TOKEN [URL]: 401 invalid_token with the challenge
  local st; st=$(call "$2" "${3:-$EP}")
  t "refused: $1" eq "$st $(jget "$GG_TMP/call.json" "d['error']['code']")" "401 invalid_token"
}
# $caller in a graph: the token's principal, never the token; an API key's id and scopes
WHO=$GG_PUB/mcp/acme/who
whocall() { # CREDENTIAL [URL] → the who tool's structured result, as Python reprs of chosen fields
  gg_curl "$GG_TMP/who.json" -X POST -H "Authorization: Bearer $1" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: who' \
    --data-binary '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"who","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}' \
    "${2:-$WHO}" >/dev/null
  jget "$GG_TMP/who.json" "$3"; }
WT=$(JWT cc "$ISS_A" "$WHO")
t "\$caller of a client-credentials token: kind, issuer, client and scopes" eq \
  "$(whocall "$WT" "$WHO" "(lambda c: (c['kind'], c['issuer'], c['client_id'], c['scopes'], 'boss' in c))(d['result']['structuredContent'])")" \
  "('oauth', '$ISS_A', 'machine', ['tools:read', 'tools:execute'], False)"
t "  its key_id is the stable hash, never the token" eq \
  "$(jget "$GG_TMP/who.json" "(len(d['result']['structuredContent']['key_id']), '$WT'.split('.')[2] in json.dumps(d))")" "(16, False)"
t "\$caller of an admin API key: routed on its scopes" eq \
  "$(whocall "$ADMIN" "$WHO" "(lambda c: (c['kind'], c['boss'], 'admin' in c['scopes'], 'issuer' in c))(d['result']['structuredContent'])")" \
  "('api_key', True, True, False)"
spans_of_who() { python3 -c "
import json, sys
for line in open(sys.argv[1]):
    for rs in json.loads(line)['body'].get('resourceSpans', []):
        for ss in rs.get('scopeSpans', []):
            for sp in ss.get('spans', []):
                a = {x['key']: list(x['value'].values())[0] for x in sp.get('attributes', [])}
                if sp['name'] == 'tools/call who' and 'enduser.id' in a:
                    print(a['enduser.id'], a['graphgate.caller.client_id'], a['graphgate.caller.issuer'] == sys.argv[2], a['enduser.scope'])
" "$GG_TMP/spans.jsonl" "$ISS_A" 2>/dev/null | head -1; }
for _ in $(seq 1 100); do [ -n "$(spans_of_who)" ] && break; sleep 0.1; done
t "the call's span names the principal (enduser.id, client, issuer, scopes)" eq "$(spans_of_who)" "machine machine True tools:read,tools:execute"
t "the internal listener names no caller: undefined" eq \
  "$(curl -sS -X POST -H 'Content-Type: application/json' --data-binary '{}' "$GG_INT/internal/tenants/acme/graphs/who/tools/who/call" | python3 -c "import json,sys; print(json.load(sys.stdin))")" \
  "{'nobody': True}"

# the node-spec service and the toolkit under the tenant take its tokens; the bare mounts do not
list() { # TOKEN URL → status of a 2026-era tools/list (body in $GG_TMP/list.json)
  gg_curl "$GG_TMP/list.json" -X POST -H "Authorization: Bearer $1" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/list' \
    --data-binary '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}' "$2"; }
NODES=$(JWT cc "$ISS_A" "$GG_PUB/mcp/acme/_nodes")
t "a token for /mcp/acme/_nodes lists the node-spec tools" eq \
  "$(list "$NODES" "$GG_PUB/mcp/acme/_nodes") $(jget "$GG_TMP/list.json" "sorted(x['name'] for x in d['result']['tools'])[0]")" "200 get_node_details"
t "  metadata of /mcp/acme/_nodes names it as the resource" eq \
  "$(gg_curl "$GG_TMP/pn.json" "$WK/mcp/acme/_nodes") $(jget "$GG_TMP/pn.json" "d['resource']")" "200 $GG_PUB/mcp/acme/_nodes"
t "  the graph endpoint's token is refused there (audience)" eq "$(list "$CC" "$GG_PUB/mcp/acme/_nodes")" 401
t "  the bare /mcp/nodes takes API keys only (401 for the token)" eq "$(list "$NODES" "$GG_PUB/mcp/nodes")" 401
t "  another tenant's URL with acme's token: refused" eq "$(list "$NODES" "$GG_PUB/mcp/beta/_nodes")" 401
TK=$(JWT cc "$ISS_A" "$GG_PUB/mcp/acme/_toolkit")
t "a token for /mcp/acme/_toolkit lists the toolkit" eq \
  "$(list "$TK" "$GG_PUB/mcp/acme/_toolkit") $(jget "$GG_TMP/list.json" "'validate_graph' in [x['name'] for x in d['result']['tools']]")" "200 True"
t "  beta's key at /mcp/acme/_toolkit: 403 wrong tenant" eq "$(list "$KB" "$GG_PUB/mcp/acme/_toolkit")" 403
KID_ES=$(cut -d' ' -f1 "$GG_TMP/a.kids"); KID_ED=$(cut -d' ' -f3 "$GG_TMP/a.kids")
claims() { echo "{\"iss\":\"${2:-$ISS_A}\",\"aud\":\"${3:-$EP}\",\"sub\":\"mallory\",\"scope\":\"tools:read tools:execute\",\"exp\":\"${1:-+300}\",\"iat\":\"-5\"}"; }
GOOD=$(JWT mint "$GG_TMP/a.json" "$KID_ES" "$(claims)")
t "a token minted with the issuer's key is accepted (the matrix's control)" eq "$(call "$GOOD")" 200
ED=$(JWT mint "$GG_TMP/a.json" "$KID_ED" "$(claims)")
t "an EdDSA token of the issuer is accepted" eq "$(call "$ED")" 200
refused "expired" "$(JWT mint "$GG_TMP/a.json" "$KID_ES" "$(claims -120)")"
refused "not yet valid" "$(JWT mint "$GG_TMP/a.json" "$KID_ES" "{\"iss\":\"$ISS_A\",\"aud\":\"$EP\",\"sub\":\"m\",\"exp\":\"+600\",\"nbf\":\"+300\"}")"
refused "another issuer's name, the issuer's key" "$(JWT mint "$GG_TMP/a.json" "$KID_ES" "$(claims +300 http://127.0.0.1:1)")"
refused "another tenant's issuer (beta's token at acme)" "$(JWT cc "$ISS_B" "$EP")"
refused "the audience of another endpoint" "$(JWT cc "$ISS_A" "$GG_PUB/mcp/acme/other")"
refused "the audience of another tenant's endpoint" "$(JWT mint "$GG_TMP/a.json" "$KID_ES" "$(claims +300 "$ISS_A" "$GG_PUB/mcp/beta/g")")"
b64() { printf %s "$1" | base64 -w0 | tr '+/' '-_' | tr -d '='; }
P=$(echo "$GOOD" | cut -d. -f2)
refused "alg none" "$(b64 '{"alg":"none","typ":"at+jwt"}').$P."
PUBJWK=$(python3 -c "import json,sys; k=json.load(open(sys.argv[1]))['keys'][1]; print(json.dumps({x:k[x] for x in ('kty','n','e','kid')}))" "$GG_TMP/a.json")
HS=$(python3 -c "
import hmac, hashlib, base64, sys
b = lambda s: base64.urlsafe_b64encode(s).rstrip(b'=').decode()
h = b(b'{\"alg\":\"HS256\",\"kid\":\"' + sys.argv[2].encode() + b'\"}')
m = h + '.' + sys.argv[1]
print(m + '.' + b(hmac.new(sys.argv[3].encode(), m.encode(), hashlib.sha256).digest()))" "$P" "$(cut -d' ' -f2 "$GG_TMP/a.kids")" "$PUBJWK")
refused "HS256 keyed with the issuer's public key" "$HS"
refused "an unknown kid" "$(JWT mint "$GG_TMP/b.json" "$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['keys'][0]['kid'])" "$GG_TMP/b.json")" "$(claims)")"
refused "a truncated token" "${GOOD%?????}"
refused "a signature of another token" "$(echo "$GOOD" | cut -d. -f1-2).$(echo "$ED" | cut -d. -f3)"
BIG=$(python3 -c "print('eyJhbGciOiJFUzI1NiJ9.' + 'A' * 9000 + '.AAAA')")
refused "an oversized token (9 KB, over the 8 KiB bound)" "$BIG"
st=$(call "$(python3 -c "print('eyJhbGciOiJFUzI1NiJ9.' + 'A' * 70000 + '.AAAA')")")
t "a 70 KB header is refused by the HTTP layer (431)" eq "$st" 431
RO=$(JWT cc "$ISS_A" "$EP" tools:read)
st=$(call "$RO")
t "a token without tools:execute: 403 insufficient_scope" eq "$st $(jget "$GG_TMP/call.json" "d['error']['code']")" "403 insufficient_scope"
t "  with the step-up challenge" has "$GG_TMP/call.json.h" 'error="insufficient_scope"'
t "  naming the metadata" has "$GG_TMP/call.json.h" "resource_metadata=\"$WK/mcp/acme/g\""
t "  the body names the scope" eq "$(jget "$GG_TMP/call.json" "d['error']['required_scope']")" tools:execute

# a 2025-era session is bound to the principal that opened it
SID=$(gw_init "$EP" "$CC")
t "a session opened with a token" test -n "$SID"
st=$(gw_rpc "$GG_TMP/s2.json" "$EP" "$GOOD" "$SID" '{"jsonrpc":"2.0","id":2,"method":"tools/list"}')
t "another principal's token on that session is refused (404)" eq "$st" 404
st=$(gw_rpc "$GG_TMP/s3.json" "$EP" "$CC" "$SID" '{"jsonrpc":"2.0","id":3,"method":"tools/list"}')
t "the opener's token goes on (200)" eq "$st" 200

# ---- floods and dead endpoints hold nobody else ---------------------------------------------
metric() { curl -sS "$GG_INT/metrics" | sed -n "s/^$1 //p"; }
f0=$(metric graphgate_oauth_key_fetches_total)
python3 - "$GG_TMP/a.json" "$KID_ES" "$ISS_A" "$EP" >"$GG_TMP/kids.txt" <<'PY'
# 1,000 tokens with invented kids (their signatures do not matter: the kid is unknown)
import base64, json, sys, random
b = lambda s: base64.urlsafe_b64encode(s).rstrip(b'=').decode()
for i in range(1000):
    h = b(json.dumps({"alg": "ES256", "kid": "x%06d" % i}).encode())
    p = b(json.dumps({"iss": sys.argv[3], "aud": sys.argv[4], "sub": "f", "exp": 9999999999}).encode())
    print(h + "." + p + "." + b(random.randbytes(64)))
PY
python3 "$FX/flood.py" "$EP" "$GG_TMP/kids.txt" 8 "$GG_PUB/mcp/beta/g" "$KB" >"$GG_TMP/flood.out"
cat "$GG_TMP/flood.out" | sed 's/^/   /'
f1=$(metric graphgate_oauth_key_fetches_total)
t "1,000 unknown kids: every one refused (401)" grep -q "r401 1000 r503 0 other 0 of 1000" "$GG_TMP/flood.out"
t "  at most 2 key fetches for them (metadata + JWKS count as 2 per refetch)" test $((f1 - f0)) -le 4
t "  beta's calls meanwhile: all 200, p90 under 300 ms" python3 -c "
import re,sys; t=open(sys.argv[1]).read(); m=re.search(r'beta_calls (\d+) beta_p90_ms (\d+)', t)
sys.exit(0 if m and int(m.group(1)) > 0 and int(m.group(2)) < 300 and 'beta status' not in t else 1)" "$GG_TMP/flood.out"
SLOWTOK=$(JWT mint "$GG_TMP/a.json" "$KID_ES" "$(claims +300 "$ISS_A" "$GG_PUB/mcp/slow/g")")
a=$(date +%s%N); st=$(call "$SLOWTOK" "$GG_PUB/mcp/slow/g"); b=$(date +%s%N)
t "a tenant whose JWKS endpoint hangs: its token answered 503 at once (keys not loaded)" eq "$st" 503
t "  within 500 ms" test $(( (b - a) / 1000000 )) -lt 500
t "  and acme is not held meanwhile" eq "$(call "$CC")" 200

# ---- sender-constrained tokens (DPoP, RFC 9449) ------------------------------------------------
JWT keys "$GG_TMP/client.json" ES256 EdDSA >"$GG_TMP/client.kids"
CK=$(cut -d' ' -f1 "$GG_TMP/client.kids"); CK2=$(cut -d' ' -f2 "$GG_TMP/client.kids")
BOUND=$(JWT ccdpop "$ISS_A" "$EP" "$GG_TMP/client.json" "$CK")
t "the authorization server binds a token to the client's key (cnf.jkt)" test "$(python3 -c "
import base64,json,sys; p=sys.argv[1].split('.')[1]; print(json.loads(base64.urlsafe_b64decode(p+'=='))['cnf']['jkt'])" "$BOUND")" = "$(JWT jkt "$GG_TMP/client.json" "$CK")"
dcall() { # TOKEN PROOF [URL] [SCHEME] → status of a DPoP tools/call
  local args=(-H "Authorization: ${4:-DPoP} $1")
  [ -n "$2" ] && args+=(-H "DPoP: $2")
  gg_curl "$GG_TMP/call.json" -X POST "${args[@]}" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: collatz' \
    --data-binary '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"collatz","arguments":{"n":3},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}' \
    "${3:-$EP}"; }
PROOF=$(JWT proof "$GG_TMP/client.json" "$CK" POST "$EP" "$BOUND")
t "a DPoP-bound token with its proof calls a tool (200)" eq "$(dcall "$BOUND" "$PROOF")" 200
dref() { # DESCRIPTION CODE STATUS...: the last call refused with CODE and a DPoP challenge
  t "refused: $1" eq "$2 $(jget "$GG_TMP/call.json" "d['error']['code']")" "401 $3"
  t "  with a DPoP challenge" has "$GG_TMP/call.json.h" "WWW-Authenticate: DPoP algs="
}
dref "the same proof again (replay)" "$(dcall "$BOUND" "$PROOF")" invalid_dpop_proof
dref "the bound token as a bearer token, no proof" "$(call "$BOUND")" invalid_token
dref "the DPoP scheme without a proof" "$(dcall "$BOUND" "")" invalid_dpop_proof
dref "a proof for another URL" "$(dcall "$BOUND" "$(JWT proof "$GG_TMP/client.json" "$CK" POST "$GG_PUB/mcp/acme/other" "$BOUND")")" invalid_dpop_proof
dref "a proof for another method" "$(dcall "$BOUND" "$(JWT proof "$GG_TMP/client.json" "$CK" GET "$EP" "$BOUND")")" invalid_dpop_proof
dref "a proof made with another key" "$(dcall "$BOUND" "$(JWT proof "$GG_TMP/client.json" "$CK2" POST "$EP" "$BOUND")")" invalid_dpop_proof
dref "a proof two minutes old" "$(dcall "$BOUND" "$(JWT proof "$GG_TMP/client.json" "$CK" POST "$EP" "$BOUND" "" -120)")" invalid_dpop_proof
dref "a proof for another access token (ath)" "$(dcall "$BOUND" "$(JWT proof "$GG_TMP/client.json" "$CK" POST "$EP" "$CC")")" invalid_dpop_proof
dref "an unbound token with the DPoP scheme" "$(dcall "$CC" "$(JWT proof "$GG_TMP/client.json" "$CK" POST "$EP" "$CC")")" invalid_token
t "an EdDSA proof of an EdDSA-bound token (200)" eq "$(B2=$(JWT ccdpop "$ISS_A" "$EP" "$GG_TMP/client.json" "$CK2"); dcall "$B2" "$(JWT proof "$GG_TMP/client.json" "$CK2" POST "$EP" "$B2")")" 200
# beta: DPoP required, with server nonces
t "beta's issuer now requires DPoP with nonces (200)" eq \
  "$(put_oauth "$ADMIN" beta "{\"issuers\":[{\"issuer\":\"$ISS_B\",\"dpop\":\"required\",\"dpop_nonce\":true}]}")" 200
BEP=$GG_PUB/mcp/beta/g
keys_loaded beta >/dev/null
dref "beta: an unbound bearer token" "$(call "$(JWT cc "$ISS_B" "$BEP")" "$BEP")" invalid_token
BB=$(JWT ccdpop "$ISS_B" "$BEP" "$GG_TMP/client.json" "$CK")
st=$(dcall "$BB" "$(JWT proof "$GG_TMP/client.json" "$CK" POST "$BEP" "$BB")" "$BEP")
t "beta: a proof without a nonce → 401 use_dpop_nonce" eq "$st $(jget "$GG_TMP/call.json" "d['error']['code']")" "401 use_dpop_nonce"
NONCE=$(sed -n 's/^DPoP-Nonce: *\([^[:space:]]*\).*/\1/p' "$GG_TMP/call.json.h" | tr -d '\r')
t "  with a DPoP-Nonce header" test -n "$NONCE"
t "  the proof again with the nonce (200)" eq "$(dcall "$BB" "$(JWT proof "$GG_TMP/client.json" "$CK" POST "$BEP" "$BB" "$NONCE")" "$BEP")" 200
dref "beta: a made-up nonce" "$(dcall "$BB" "$(JWT proof "$GG_TMP/client.json" "$CK" POST "$BEP" "$BB" AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA)" "$BEP")" use_dpop_nonce
t "beta's API keys are unaffected (200)" eq "$(call "$KB" "$BEP")" 200

# ---- rotation and removal --------------------------------------------------------------------
PORT_A=${ISS_A##*:} OLD_A=$PID_A
JWT keys "$GG_TMP/new.json" ES256 >/dev/null
python3 -c "import json,sys; n=json.load(open(sys.argv[1])); o=json.load(open(sys.argv[2])); json.dump({'keys': n['keys']+o['keys']}, open(sys.argv[3],'w'))" \
  "$GG_TMP/new.json" "$GG_TMP/a.json" "$GG_TMP/a2.json"
# the new one listens on the port before the old one stops (SO_REUSEPORT): no other process
# can take the port in between
oauth_start_as A "$PORT_A" "$GG_TMP/a2.json" ES256
kill $OLD_A; wait $OLD_A 2>/dev/null
t "the authorization server restarts on its port" eq "$ISS_A" "http://127.0.0.1:$PORT_A" || cat "$GG_TMP/as_A.log"
NEW=$(JWT cc "$ISS_A" "$EP")
t "after rotation the authorization server signs with the new key" test "$(python3 -c "import base64,json,sys; h=sys.argv[1].split('.')[0]; print(json.loads(base64.urlsafe_b64decode(h+'==')) ['kid'])" "$NEW")" = "$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['keys'][0]['kid'])" "$GG_TMP/new.json")"
ok=""; for _ in $(seq 1 50); do [ "$(call "$NEW")" = 200 ] && { ok=1; break; }; sleep 0.2; done
t "  the new key is followed without a restart (unknown kid → refetch)" test -n "$ok"
t "  tokens of the old key still work while it is published" eq "$(call "$GOOD")" 200

# a second process on the same database (as a second replica on SQLite would be)
gw_serve "$GG_TMP/s2" --internal-listen ""
PID2=$GW_SRV_PID PUB2=$GW_SRV_PUB
EP2=$PUB2/mcp/acme/g
CC2=$(JWT cc "$ISS_A" "$EP2")
ok=""; for _ in $(seq 1 50); do [ "$(call "$CC2" "$EP2")" = 200 ] && { ok=1; break; }; sleep 0.1; done
t "the second process takes tokens for its own endpoint" test -n "$ok"
t "  but not the first's (audience)" eq "$(call "$CC" "$EP2")" 401
t "the admin removes acme's issuer (200)" eq "$(gg_curl "$GG_TMP/del.json" -X DELETE -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/acme/oauth")" 200
t "  this process refuses its tokens at once (cached ones too)" eq "$(call "$CC")" 401
a=$(date +%s%N); ok=""
for _ in $(seq 1 40); do [ "$(call "$CC2" "$EP2")" = 401 ] && { ok=1; break; }; sleep 0.05; done
b=$(date +%s%N)
echo "   the second process refused the removed issuer's token after $(( (b - a) / 1000000 )) ms"
t "  the second process refuses them within 2 s" test -n "$ok"
kill $PID2 2>/dev/null; wait $PID2 2>/dev/null
t "API keys are unchanged on the same endpoint" eq "$(call "$KB" "$GG_PUB/mcp/beta/g")" 200
gg_curl "$GG_TMP/audit.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/audit" >/dev/null
t "audit entries for the changes (4 puts, 1 delete)" eq "$(python3 -c "
import json,sys; d=json.load(open(sys.argv[1])); a=[e['action'] for e in d.get('entries', d.get('audit', [])) if e['action'].startswith('oauth.')]
print(a.count('oauth.put'), a.count('oauth.delete'))" "$GG_TMP/audit.json")" "4 1"
# who called: principals noted by the background thread, the run's caller
for _ in $(seq 1 100); do
  gg_curl "$GG_TMP/pr.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/acme/principals" >/dev/null
  [ "$(jget "$GG_TMP/pr.json" "sorted(p['subject'] for p in d['principals'])")" = "['alice', 'machine', 'mallory']" ] && break
  sleep 0.1
done
t "the callers with tokens are listed: alice (SDK), machine (client credentials), mallory (minted)" \
  eq "$(jget "$GG_TMP/pr.json" "sorted(p['subject'] for p in d['principals'])")" "['alice', 'machine', 'mallory']"
t "  with their issuer and scopes" eq "$(jget "$GG_TMP/pr.json" "[(p['issuer'], p['scopes']) for p in d['principals'] if p['subject'] == 'alice'][0]")" "('$ISS_A', 'tools:read,tools:execute,health:check')"
AID=$(jget "$GG_TMP/pr.json" "[p['id'] for p in d['principals'] if p['subject'] == 'alice'][0]")
gg_curl "$GG_TMP/ex.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/acme/executions?limit=1000" >/dev/null
EID=$(jget "$GG_TMP/ex.json" "[e['id'] for e in d['executions'] if e['key_id'] == '$AID'][0]")
gg_curl "$GG_TMP/one.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/executions/$EID" >/dev/null
t "alice's run names its caller" eq "$(jget "$GG_TMP/one.json" "(d['caller']['subject'], d['caller']['issuer'] == '$ISS_A')")" "('alice', True)"
gg_curl "$GG_TMP/pr2.json" -H "Authorization: Bearer $KB" "$GG_PUB/admin/tenants/acme/principals" >/dev/null
t "another tenant's key cannot list them (403)" eq "$(gg_curl "$GG_TMP/pr2.json" -H "Authorization: Bearer $KB" "$GG_PUB/admin/tenants/acme/principals")" 403
gg_stop
t "no token in the database (its history bodies read as text), its WAL or the history journal" python3 -c "
import ggdb, glob, os, sys
sigs = [t.split('.')[2].encode() for t in sys.argv[2:] if t.count('.') == 2]
files = [f for f in glob.glob(sys.argv[1] + '*') if os.path.isfile(f)] + glob.glob(os.path.dirname(sys.argv[1]) + '/**/*journal*', recursive=True)
bodies = ''.join(b for (b,) in ggdb.connect(sys.argv[1]).execute('SELECT history_text(body) FROM history_batches')).encode()
bad = [f for f in files if os.path.isfile(f) and any(s in open(f, 'rb').read() for s in sigs)]
bad += ['history bodies'] if any(s in bodies for s in sigs) else []
print(' leaked into', bad) if bad else None
sys.exit(1 if bad or not sigs or not bodies else 0)" "$GG_DB" "$CC" "$GOOD" "$BOUND" "$ED"
t "no token in the exported spans" python3 -c "
import sys; d = open(sys.argv[1], 'rb').read(); sys.exit(1 if not d or any(t.split('.')[2].encode() in d for t in sys.argv[2:]) else 0)" \
  "$GG_TMP/spans.jsonl" "$CC" "$GOOD" "$WT" "$ED"
t "no token in the server's log" python3 -c "
import sys; log = open(sys.argv[1], errors='replace').read(); sys.exit(1 if sys.argv[2] in log or sys.argv[3] in log else 0)" "$GG_TMP/serve.err" "$(echo "$CC" | cut -d. -f3)" "$(echo "$GOOD" | cut -d. -f3)"
gg_finish
