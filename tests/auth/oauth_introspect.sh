#!/usr/bin/env bash
# oauth_introspect.sh — opaque access tokens checked by token introspection at a real
# authorization server, end to end (RFC 7662, with oidc-provider from tests/fixtures/oauth/as.mjs,
# which issues an opaque token when no resource is asked for):
#   - the issuer's introspection settings (client secret only as a ${secrets.NAME} reference,
#     never answered back); an opaque token lists and calls tools (2026-07-28 and a 2025-11-25
#     session bound to its principal), $caller filled from the introspection answer;
#     client_secret_post as well as client_secret_basic;
#   - revoked at the authorization server: refused (401 invalid_token) once its remembered
#     answer ends (cache_s), waited for by polling; a random opaque token refused;
#   - 200 random opaque tokens at once: at most concurrency + rate_per_s introspection
#     requests reach the authorization server (counted there and in the metrics), the rest
#     503; another tenant's JWT calls go on meanwhile;
#   - an introspection endpoint that never answers: the call fails (503, a clear error)
#     within timeout_s, and another tenant's calls are not held meanwhile;
#   - the client secret in no log and no admin answer.
# Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
has() { grep -q -- "$2" "$1" || { echo "   '$2' not in $1: $(head -c 400 "$1")" >&2; return 1; }; }
gw_need_sdk
. "$GG_SRCDIR/tests/fixtures/oauth/lib.sh"
trap 'kill ${PID_A:-} ${PID_B:-} ${HANGPID:-} 2>/dev/null; gg_cleanup' EXIT
RS_SECRET=rs-secret-0123456789

JWT keys "$GG_TMP/a.json" ES256 RS256 >/dev/null
JWT keys "$GG_TMP/b.json" RS256 >/dev/null
oauth_start_as A 0 "$GG_TMP/a.json" ES256
oauth_start_as B 0 "$GG_TMP/b.json" RS256
oauth_start_hang # an "introspection endpoint" that accepts connections and never answers
oauth_need_as A B

python3 -c 'import os; print(os.urandom(32).hex())' >"$GG_TMP/sk"
printf 'secrets:\n  key_file: "%s"\n' "$GG_TMP/sk" >"$GG_TMP/gg.yaml"
for t in acme post beta slow; do gw_cli_run tenant create $t >/dev/null; done
ADMIN=$(gw_key acme admin)
gg_start --config "$GG_TMP/gg.yaml" || { echo "0 passed, 1 failed"; exit 1; }
for t in acme post beta slow; do gw_put_graph "$ADMIN" $t g "$GG_SRCDIR/examples/collatz.yaml" >/dev/null; done
cat >"$GG_TMP/who.yaml" <<'YAML'
version: "1.0"
server: {name: who, version: "1.0.0"}
tools:
  - name: who
    description: "Says who called"
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: done}
      - {id: done, type: transform, transform: {expr: '$caller'}, next: exit}
      - {id: exit, type: exit}
YAML
gw_put_graph "$ADMIN" acme who "$GG_TMP/who.yaml" >/dev/null
EP=$GG_PUB/mcp/acme/g
put_secret() { gg_curl "$GG_TMP/sec.json" -X PUT -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' \
  --data-binary "{\"value\":\"$3\"}" "$GG_PUB/admin/tenants/$1/secrets/$2"; }
put_oauth() { gg_curl "$GG_TMP/oauth.json" -X PUT -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' \
  --data-binary "$2" "$GG_PUB/admin/tenants/$1/oauth"; }
for t in acme post slow; do put_secret $t RS_SECRET "$RS_SECRET" >/dev/null; done

# ---- settings --------------------------------------------------------------------------------
t "a plain client secret is refused (400: only a \${secrets.NAME} reference)" eq \
  "$(put_oauth acme "{\"issuers\":[{\"issuer\":\"$ISS_A\",\"introspection\":{\"client_id\":\"rs-basic\",\"client_secret\":\"$RS_SECRET\"}}]}")" 400
t "  and the answer does not repeat it" python3 -c "import sys; sys.exit(sys.argv[2] in open(sys.argv[1]).read())" "$GG_TMP/oauth.json" "$RS_SECRET"
t "an unknown auth_method is refused (400)" eq \
  "$(put_oauth acme "{\"issuers\":[{\"issuer\":\"$ISS_A\",\"introspection\":{\"client_id\":\"rs-basic\",\"client_secret\":\"\${secrets.RS_SECRET}\",\"auth_method\":\"none\"}}]}")" 400
INTRO='"client_id":"rs-basic","client_secret":"${secrets.RS_SECRET}","cache_s":8,"negative_cache_s":2,"concurrency":4,"rate_per_s":10,"timeout_s":2'
t "acme introspects at its issuer (200)" eq "$(put_oauth acme "{\"issuers\":[{\"issuer\":\"$ISS_A\",\"introspection\":{$INTRO}}]}")" 200
t "  the definition keeps the reference, normalized" eq \
  "$(jget "$GG_TMP/oauth.json" "(d['definition']['issuers'][0]['introspection']['client_secret'], d['definition']['issuers'][0]['introspection']['auth_method'])")" \
  "('\${secrets.RS_SECRET}', 'client_secret_basic')"
t "post introspects with client_secret_post (200)" eq "$(put_oauth post "{\"issuers\":[{\"issuer\":\"$ISS_A\",\"introspection\":{\"client_id\":\"rs-post\",\"client_secret\":\"\${secrets.RS_SECRET}\",\"auth_method\":\"client_secret_post\"}}]}")" 200
t "beta takes JWTs of its issuer (200)" eq "$(put_oauth beta "{\"issuers\":[{\"issuer\":\"$ISS_B\"}]}")" 200
t "slow's introspection endpoint never answers (200)" eq "$(put_oauth slow "{\"issuers\":[{\"issuer\":\"$ISS_A\",\"introspection\":{\"client_id\":\"rs-basic\",\"client_secret\":\"\${secrets.RS_SECRET}\",\"endpoint\":\"http://127.0.0.1:$HANG/introspect\",\"timeout_s\":1}}]}")" 200
loaded() { # TENANT: its issuer's metadata (and so its introspection endpoint) fetched
  for _ in $(seq 1 100); do
    gg_curl "$GG_TMP/get.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/$1/oauth" >/dev/null
    [ "$(jget "$GG_TMP/get.json" "d['definition']['issuers'][0]['status']['keys']")" -gt 0 ] 2>/dev/null && return 0
    sleep 0.1
  done; return 1; }
t "acme's and beta's authorization servers known" loaded acme
loaded post; loaded beta
t "  GET answers the reference, never the secret" python3 -c "import sys; sys.exit(sys.argv[2] in open(sys.argv[1]).read())" "$GG_TMP/get.json" "$RS_SECRET"

# ---- an opaque token at work -----------------------------------------------------------------
call() { # TOKEN [URL] [TOOL] → status of a 2026-era tools/call (body in $CALLOUT, else $GG_TMP/call.json)
  gg_curl "${CALLOUT:-$GG_TMP/call.json}" -X POST -H "Authorization: Bearer $1" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H "Mcp-Name: ${3:-collatz}" \
    --data-binary "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"${3:-collatz}\",\"arguments\":{\"n\":3},\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientInfo\":{\"name\":\"t\",\"version\":\"1\"},\"io.modelcontextprotocol/clientCapabilities\":{}}}}" \
    "${2:-$EP}"; }
metric() { curl -sS "$GG_INT/metrics" | sed -n "s/^$1 //p"; }
count() { curl -sS "$ISS_A/_count/introspection"; }
OP=$(JWT cc "$ISS_A" "" "tools:read tools:execute")
t "the authorization server issued an opaque token (no resource asked for)" python3 -c "import sys; t=sys.argv[1]; sys.exit(not t or '.' in t)" "$OP"
c0=$(count)
t "an opaque token calls a tool (200)" eq "$(call "$OP")" 200
t "  and the run is done" eq "$(jget "$GG_TMP/call.json" "d['result']['structuredContent']['steps']")" 7
t "  one introspection request reached the authorization server" eq "$(( $(count) - c0 ))" 1
t "  the metrics count it" eq "$(metric graphgate_oauth_introspections_total)" 1
st=$(gw_rpc "$GG_TMP/list.json" "$EP" "$OP" "" '{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}' -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/list')
t "tools/list with it (200), answered from the remembered introspection" eq "$st $(jget "$GG_TMP/list.json" "d['result']['tools'][0]['name']") $(( $(count) - c0 ))" "200 collatz 1"
t "\$caller from the introspection answer (client_id, issuer, scopes)" eq \
  "$(call "$OP" "$GG_PUB/mcp/acme/who" who) $(jget "$GG_TMP/call.json" "(d['result']['structuredContent']['client_id'], d['result']['structuredContent']['issuer'] == '$ISS_A', d['result']['structuredContent']['scopes'])")" \
  "200 ('machine', True, ['tools:read', 'tools:execute'])"
SID=$(gw_init "$EP" "$OP")
t "a 2025-era session opened with an opaque token" test -n "$SID"
st=$(gw_rpc "$GG_TMP/s2.json" "$EP" "$OP" "$SID" '{"jsonrpc":"2.0","id":2,"method":"tools/list"}')
t "  goes on with it (200)" eq "$st" 200
OTHER=$(JWT cc "$ISS_A" "$GG_PUB/mcp/acme/g")
st=$(gw_rpc "$GG_TMP/s3.json" "$EP" "$(JWT cc "$ISS_A" "" "tools:read")" "$SID" '{"jsonrpc":"2.0","id":3,"method":"tools/list"}')
t "  a token of the same client (the same principal) goes on too (200)" eq "$st" 200
OP_POST=$(JWT cc "$ISS_A" "" "tools:read tools:execute")
t "client_secret_post: an opaque token calls a tool on post (200)" eq "$(call "$OP_POST" "$GG_PUB/mcp/post/g")" 200

# ---- refused -----------------------------------------------------------------------------------
RANDOM_TOK=$(python3 -c "import secrets; print(secrets.token_urlsafe(32))")
t "a random opaque token: 401 invalid_token" eq "$(call "$RANDOM_TOK") $(jget "$GG_TMP/call.json" "d['error']['code']")" "401 invalid_token"
t "  with the challenge (error=\"invalid_token\")" has "$GG_TMP/call.json.h" 'error="invalid_token"'
t "  saying why" has "$GG_TMP/call.json" "not active"
c0=$(count)
t "a JWT is still verified by signature (200, no introspection)" eq "$(call "$OTHER") $(( $(count) - c0 ))" "200 0"
REV=$(JWT cc "$ISS_A" "" "tools:read tools:execute")
t "a token to revoke works first (200)" eq "$(call "$REV")" 200
t "it is revoked at the authorization server (200)" eq "$(curl -sS -o /dev/null -w '%{http_code}' -u machine:machine-secret-0123456789 -d "token=$REV" "$ISS_A/token/revocation")" 200
refused_after_cache() { for _ in $(seq 1 150); do [ "$(call "$REV")" = 401 ] && return 0; sleep 0.1; done; return 1; }
t "  and refused once its remembered answer ends (cache_s 8)" refused_after_cache
t "  401 invalid_token" eq "$(jget "$GG_TMP/call.json" "d['error']['code']")" invalid_token

# ---- a flood of invented opaque tokens ------------------------------------------------------------
KBJ=$(JWT cc "$ISS_B" "$GG_PUB/mcp/beta/g")
t "beta's JWT calls (200)" eq "$(call "$KBJ" "$GG_PUB/mcp/beta/g")" 200
c1=$(count); r1=$(metric graphgate_oauth_introspections_refused_total)
python3 -c "import secrets; print(' '.join(secrets.token_urlsafe(32) for _ in range(200)))" >"$GG_TMP/opaque.txt"
python3 "$FX/flood.py" "$EP" "$GG_TMP/opaque.txt" 20 "$GG_PUB/mcp/beta/g" "$KBJ" >"$GG_TMP/flood.out"
sed 's/^/   /' "$GG_TMP/flood.out"
c2=$(count); r2=$(metric graphgate_oauth_introspections_refused_total)
echo "   introspection requests at the AS for the flood: $((c2 - c1)); refused by graphgate: $((r2 - r1))"
t "200 random opaque tokens: none accepted (401 or 503)" python3 -c "
import re,sys; m=re.search(r'r401 (\d+) r503 (\d+) other (\d+)', open(sys.argv[1]).read()); sys.exit(0 if m and int(m.group(1)) + int(m.group(2)) == 200 and m.group(3) == '0' else 1)" "$GG_TMP/flood.out"
flood_s=$(sed -n 's/^flood_s \([0-9]*\).*/\1/p' "$GG_TMP/flood.out")
t "  introspection requests bounded by rate_per_s (10 + 10 per second of flood)" test $((c2 - c1)) -le $((10 + 10 * (flood_s + 1)))
t "  the rest refused by the limits, counted in the metrics" test $((r2 - r1)) -gt 0
t "  beta's JWT calls meanwhile: all 200, p90 under 300 ms" python3 -c "
import re,sys; t=open(sys.argv[1]).read(); m=re.search(r'beta_calls (\d+) beta_p90_ms (\d+)', t)
sys.exit(0 if m and int(m.group(1)) > 0 and int(m.group(2)) < 300 and 'beta status' not in t else 1)" "$GG_TMP/flood.out"
ok_again() { for _ in $(seq 1 30); do [ "$(call "$(JWT cc "$ISS_A" "" "tools:read tools:execute")")" = 200 ] && return 0; sleep 0.2; done; return 1; }
t "  afterwards a new opaque token works again" ok_again

# ---- an introspection endpoint that never answers ---------------------------------------------
SLOWTOK=$(JWT cc "$ISS_A" "" "tools:read tools:execute")
f0=$(metric graphgate_oauth_introspection_failures_total); i0=$(metric graphgate_oauth_introspections_total)
CALLOUT=$GG_TMP/slow.json call "$SLOWTOK" "$GG_PUB/mcp/slow/g" >"$GG_TMP/slow.st" &
SLOWPID=$!
started() { for _ in $(seq 1 100); do [ "$(metric graphgate_oauth_introspections_total)" -gt "$i0" ] && return 0; sleep 0.02; done; return 1; }
t "slow's introspection request is under way" started
a=$(date +%s%N); st=$(call "$KBJ" "$GG_PUB/mcp/beta/g"); b=$(date +%s%N)
echo "   beta's call while slow's introspection hangs: $st in $(( (b - a) / 1000000 )) ms"
t "while slow's introspection hangs, beta's call is answered (200), well within slow's 1 s timeout" test "$st" = 200 -a $(( (b - a) / 1000000 )) -lt 600
a=$(date +%s%N); st=$(call "$OP"); b=$(date +%s%N)
t "  and acme's opaque token too (200)" eq "$st" 200
wait $SLOWPID
t "slow's call fails with 503 after its timeout_s (1 s)" eq "$(cat "$GG_TMP/slow.st")" 503
t "  with a clear error" has "$GG_TMP/slow.json" "introspection failed"
t "  counted as an introspection failure" test "$(metric graphgate_oauth_introspection_failures_total)" -gt "$f0"

gg_stop
t "the client secret in no log" python3 -c "
import sys; log = open(sys.argv[1], errors='replace').read(); sys.exit(1 if sys.argv[2] in log else 0)" "$GG_TMP/serve.err" "$RS_SECRET"
t "no opaque token in the server's log" python3 -c "
import sys; log = open(sys.argv[1], errors='replace').read(); sys.exit(1 if any(t in log for t in sys.argv[2:]) else 0)" "$GG_TMP/serve.err" "$OP" "$REV" "$SLOWTOK"
gg_finish
