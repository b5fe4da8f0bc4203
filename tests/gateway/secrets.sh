#!/usr/bin/env bash
# secrets.sh — tenant secrets end to end, with a real downstream: an SDK streamable-HTTP
# server that requires "Authorization: Bearer <token>" (tests/gateway/secrets_srv.mjs),
# reached by a graph whose mcpServers entry sends "Bearer ${secrets.TOKEN}".
# Checked: the admin routes (201/200, metadata only, bounds); the stored graph keeps the
# reference; a call works and the downstream's echo of the token comes back redacted; a
# rotation while a loop of calls runs fails no call and the server sees the new token;
# deleting the secret fails calls with an error naming it; an upload naming a missing
# secret is a 422 at line:col, the same message whether another tenant has such a secret
# or none has; another tenant's key can neither list, read nor delete them (same 403 for a
# name that exists and one that does not); the values appear nowhere (database, WAL,
# history journal, server log, OTLP export, console and admin answers, /metrics); a
# restart without the key, or with another key, refuses to start; `secret rekey` then a
# restart with the new key works. Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
gw_need_sdk
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }
has() { grep -q -- "$2" "$1" || { echo "   $1 lacks '$2': $(head -c 600 "$1")" >&2; return 1; }; }
hasnt() { ! grep -q -- "$2" "$1" || { echo "   $1 has '$2'" >&2; return 1; }; }

PIDS=()
cleanup_all() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; gg_cleanup; }
trap cleanup_all EXIT

V1="tok-one-$RANDOM$RANDOM-a8f3c1"
V2="tok-two-$RANDOM$RANDOM-77e0b2"
"$NODE" "$GG_SRCDIR/tests/gateway/secrets_srv.mjs" "$V1" >"$GG_TMP/srv.log" 2>&1 &
PIDS+=($!)
SPORT=$(gw_wait_port "$GG_TMP/srv.log" "${PIDS[-1]}")
[ -n "$SPORT" ] || { cat "$GG_TMP/srv.log"; echo "0 passed, 1 failed"; exit 1; }
start_py() { # NAME ARGS... → a helper writing its port to $GG_TMP/NAME.port; sets PORT
  local name=$1; shift
  python3 "$@" "$GG_TMP/$name.port" 2>"$GG_TMP/$name.err" &
  PIDS+=($!)
  for _ in $(seq 1 200); do [ -s "$GG_TMP/$name.port" ] && break; sleep 0.05; done
  PORT=$(cat "$GG_TMP/$name.port" 2>/dev/null)
  [ -n "$PORT" ]
}
start_py otlp "$GG_SRCDIR/tests/telemetry/otlp_receiver.py" "$GG_TMP/spans.jsonl" ok ||
  { echo "the OTLP receiver did not start"; echo "0 passed, 1 failed"; exit 1; }
OTLP_PORT=$PORT

python3 -c 'import os; print(os.urandom(32).hex())' >"$GG_TMP/k1"
python3 -c 'import os, base64; print(base64.b64encode(os.urandom(32)).decode())' >"$GG_TMP/k2"
config() { # KEYFILE (empty: none)
  cat >"$GG_TMP/config.yaml" <<YAML
policy:
  http_hosts: ["127.0.0.1:$SPORT"]
  stdio_commands: ["$NODE"]
telemetry:
  otlp_endpoint: "http://127.0.0.1:$OTLP_PORT/v1/traces"
  sampling_ratio: 1
  node_values: 1024
  flush_interval: 50ms
YAML
  [ -z "$1" ] || printf 'secrets:\n  key_file: "%s"\n' "$1" >>"$GG_TMP/config.yaml"
}
config "$GG_TMP/k1"
for t in acme beta gamma; do gw_cli_run tenant create $t >/dev/null; done
ADMIN=$(gw_key acme admin)
AW=$(gw_key acme graphs:write)
AX=$(gw_key acme tools:read,tools:execute)
BW=$(gw_key beta graphs:write)
CW=$(gw_key gamma graphs:write)
gg_start --config "$GG_TMP/config.yaml" || { echo "0 passed, 1 failed"; exit 1; }
A="$GG_PUB/admin/tenants"

# ---- admin routes ------------------------------------------------------------------------
put_secret() { # KEY TENANT NAME BODY → status
  gg_curl "$GG_TMP/s.json" -X PUT -H "Authorization: Bearer $1" -H 'Content-Type: application/json' \
    --data-binary "$4" "$A/$2/secrets/$3"
}
t "PUT a new secret → 201" eq "$(put_secret "$AW" acme TOKEN "{\"value\":\"$V2\"}")" 201
t "PUT it again → 200" eq "$(put_secret "$AW" acme TOKEN "{\"value\":\"$V1\"}")" 200
t "the answer is metadata: a fingerprint, never the value" \
  bash -c "grep -q '\"fingerprint\"' '$GG_TMP/s.json' && ! grep -q '$V1' '$GG_TMP/s.json'"
t "a bad name → 400 invalid_name" eq "$(put_secret "$AW" acme 9bad '{"value":"x1234"}')/$(jget "$GG_TMP/s.json" 'd["error"]["code"]')" 400/invalid_name
t "a value that is not a string → 400" eq "$(put_secret "$AW" acme OTHER '{"value":5}')" 400
t "an unknown member → 400" eq "$(put_secret "$AW" acme OTHER '{"value":"abcd","x":1}')" 400
python3 -c 'import json; print(json.dumps({"value": "x" * 16385}))' >"$GG_TMP/big.json"
t "a value over 16 KiB → 413" eq "$(put_secret "$AW" acme OTHER @"$GG_TMP/big.json")" 413
curl -sS -H "Authorization: Bearer $AW" "$A/acme/secrets" >"$GG_TMP/l.json"
t "GET the list: names and times, no value" python3 -c "import json; d=json.load(open('$GG_TMP/l.json')); s=d['secrets']; assert [x['name'] for x in s]==['TOKEN'], d; assert set(s[0])=={'name','fingerprint','created','updated','last_used'}, s"
t "GET one: 200" eq "$(gg_curl "$GG_TMP/g.json" -H "Authorization: Bearer $AW" "$A/acme/secrets/TOKEN")" 200
t "GET a missing one: 404" eq "$(gg_curl "$GG_TMP/g.json" -H "Authorization: Bearer $AW" "$A/acme/secrets/NOPE")" 404
t "the audit log has the changes, without the value" \
  bash -c "curl -sS -H 'Authorization: Bearer $ADMIN' '$GG_PUB/admin/audit' >'$GG_TMP/audit.json' && grep -q secret.update '$GG_TMP/audit.json' && ! grep -q -e '$V1' -e '$V2' '$GG_TMP/audit.json'"

# ---- another tenant's keys --------------------------------------------------------------
for m in GET DELETE; do
  for n in TOKEN NOPE; do
    st=$(gg_curl "$GG_TMP/x_$m$n.json" -X $m -H "Authorization: Bearer $BW" "$A/acme/secrets/$n")
    t "beta's key: $m acme's secret $n → 403" eq "$st" 403
  done
  t "beta's key: $m an existing and a missing name answer alike" cmp -s "$GG_TMP/x_${m}TOKEN.json" "$GG_TMP/x_${m}NOPE.json"
done
t "beta's key cannot list acme's secrets (403)" eq "$(gg_curl "$GG_TMP/x.json" -H "Authorization: Bearer $BW" "$A/acme/secrets")" 403
t "beta's key cannot set acme's secrets (403)" eq "$(put_secret "$BW" acme TOKEN '{"value":"hijack1"}')" 403
t "beta lists its own: none" eq "$(curl -sS -H "Authorization: Bearer $BW" "$A/beta/secrets" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["secrets"]))')" 0

# ---- graphs ----------------------------------------------------------------------------------
graph() { # FILE SECRETNAME [full: also a token in a URL and in a stdio server's env]
  { cat <<YAML
version: "1.0"
server: {name: "sec", version: "1.0.0"}
mcpServers:
  api:
    type: streamableHttp
    url: "http://127.0.0.1:$SPORT/mcp"
    headers: {Authorization: "Bearer \${secrets.$2}", X-Plain: "nothing secret"}
tools:
  - name: whoami
    description: "the downstream echoes the token it got"
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: call}
      - {id: call, type: mcp, server: api, tool: whoami, args: {}, next: exit}
      - {id: exit, type: exit}
YAML
  [ "${3:-}" = full ] && cat <<YAML
  - name: whoami_url
    description: "the token in the URL's query as well"
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: call}
      - {id: call, type: mcp, server: inurl, tool: whoami, args: {}, next: exit}
      - {id: exit, type: exit}
  - name: envkey
    description: "a stdio server's environment"
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: call}
      - {id: call, type: mcp, server: local, tool: env, args: {name: "API_KEY"}, next: exit}
      - {id: exit, type: exit}
YAML
  } >"$1"
  [ "${3:-}" = full ] && python3 - "$1" "$SPORT" "$NODE" "$GG_SRCDIR/tests/graph/fake_server.mjs" <<'PY'
import sys
f, port, node, script = sys.argv[1:]
t = open(f).read().replace('tools:\n', f'''  inurl:
    type: streamableHttp
    url: "http://127.0.0.1:{port}/mcp?k=${{secrets.TOKEN}}"
    headers: {{Authorization: "Bearer ${{secrets.TOKEN}}"}}
  local:
    command: "{node}"
    args: ["{script}"]
    env: {{API_KEY: "pre-${{secrets.TOKEN}}-post"}}
tools:\n''', 1)
open(f, 'w').write(t)
PY
  return 0
}
graph "$GG_TMP/g.yaml" TOKEN full
st=$(gw_put_graph "$AW" acme sec "$GG_TMP/g.yaml")
t "a graph using \${secrets.TOKEN} uploads (the downstream listed with the secret)" eq "${st:0:1}" 2
curl -sS -H "Authorization: Bearer $AW" "$A/acme/graphs/sec" >"$GG_TMP/graph.json"
t "the stored graph keeps the reference" has "$GG_TMP/graph.json" 'secrets.TOKEN'
t "the stored graph holds no value" bash -c "! grep -q -e '$V1' -e '$V2' '$GG_TMP/graph.json'"
graph "$GG_TMP/missing.yaml" GHOST
t "a missing secret → 422" eq "$(gw_put_graph "$AW" acme miss "$GG_TMP/missing.yaml")" 422
t "… at the header's line:col, naming it" \
  bash -c "python3 -c \"import json; d=json.load(open('$GG_TMP/put.json')); e=[x for x in d['errors'] if x['code']=='unknown_secret'][0]; assert (e['line'], e['column'])==(7, 30), e; assert 'GHOST' in e['message'], e\""
graph "$GG_TMP/b.yaml" TOKEN
gw_put_graph "$BW" beta steal "$GG_TMP/b.yaml" >"$GG_TMP/b.st"; cp "$GG_TMP/put.json" "$GG_TMP/b_put.json"
gw_put_graph "$CW" gamma steal "$GG_TMP/b.yaml" >"$GG_TMP/c.st"; cp "$GG_TMP/put.json" "$GG_TMP/c_put.json"
t "beta naming acme's TOKEN → 422" eq "$(cat "$GG_TMP/b.st")" 422
same_422() { # the diagnostics but for the file name (tenant/graph) are the same
  python3 -c "import json,sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
for d in (a, b):
    for e in d['errors'] + d['warnings']: e.pop('file', None)
assert a == b, (a, b)" "$1" "$2"
}
t "… the same answer as gamma's, where TOKEN exists nowhere" same_422 "$GG_TMP/b_put.json" "$GG_TMP/c_put.json"

# ---- calls ----------------------------------------------------------------------------------
EP="$GG_PUB/mcp/acme/sec"
SID=$(gw_init "$EP" "$AX")
call() { # OUT → status
  gw_rpc "$1" "$EP" "$AX" "$SID" '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":{}}}'
}
call "$GG_TMP/c1.json" >/dev/null
t "a call works (the downstream accepted the bearer token)" eq "$(jget "$GG_TMP/c1.json" 'd["result"].get("isError", False)')" False
t "the downstream's echo of the token comes back redacted" has "$GG_TMP/c1.json" 'auth=Bearer \[secret:TOKEN\]'
t "… and never as the value" hasnt "$GG_TMP/c1.json" "$V1"
callt() { # TOOL OUT
  gw_rpc "$2" "$EP" "$AX" "$SID" "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"$1\",\"arguments\":{}}}" >/dev/null
}
used() { curl -sS -H "Authorization: Bearer $AW" "$A/acme/secrets/TOKEN" | python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["last_used"] else 1)'; }
for _ in $(seq 1 100); do used && break; sleep 0.05; done
t "last_used is recorded (batched by the watcher)" used
callt whoami_url "$GG_TMP/c1u.json"
t "a token in the url's query reaches the server (it checks it), redacted in the echo" has "$GG_TMP/c1u.json" 'auth=Bearer \[secret:TOKEN\]'
callt envkey "$GG_TMP/c1e.json"
t "a stdio server gets it in its env; what it answers is redacted" has "$GG_TMP/c1e.json" 'pre-\[secret:TOKEN\]-post'

# rotation while calls run: the server accepts both tokens meanwhile, the gateway switches
curl -sS -X POST "http://127.0.0.1:$SPORT/accept?t=$V2" >/dev/null
: >"$GG_TMP/loop.fail"
( i=0; while [ ! -f "$GG_TMP/loop.stop" ]; do
    i=$((i + 1))
    st=$(call "$GG_TMP/loop.json")
    if [ "$st" != 200 ] || ! grep -q 'auth=Bearer \[secret:TOKEN\]' "$GG_TMP/loop.json"; then
      echo "call $i: $st $(head -c 300 "$GG_TMP/loop.json")" >>"$GG_TMP/loop.fail"; fi
    echo $i >"$GG_TMP/loop.n.tmp" && mv "$GG_TMP/loop.n.tmp" "$GG_TMP/loop.n"
  done ) &
LOOP=$!
calls_done() { local n; n=$(cat "$GG_TMP/loop.n" 2>/dev/null); echo "${n:-0}"; } # (read while rewritten: 0)
for _ in $(seq 1 200); do [ "$(calls_done)" -ge 5 ] && break; sleep 0.05; done
t "rotate: PUT the new value while calls run → 200" eq "$(put_secret "$AW" acme TOKEN "{\"value\":\"$V2\"}")" 200
seen_new() { curl -sS "http://127.0.0.1:$SPORT/status" | python3 -c "import json,sys; d=json.load(sys.stdin); sys.exit(0 if d['seen'].get('$V2', 0) >= 5 else 1)"; }
for _ in $(seq 1 200); do seen_new && break; sleep 0.05; done
t "the downstream receives the new token (no upload)" seen_new
curl -sS -X POST "http://127.0.0.1:$SPORT/reject?t=$V1" >/dev/null # the old one revoked upstream
n0=$(calls_done); for _ in $(seq 1 200); do [ "$(calls_done)" -ge $((n0 + 5)) ] && break; sleep 0.05; done
touch "$GG_TMP/loop.stop"; wait $LOOP
echo "   $(cat "$GG_TMP/loop.n") calls in the loop"
t "no call failed during the rotation" bash -c "[ ! -s '$GG_TMP/loop.fail' ] || { cat '$GG_TMP/loop.fail' >&2; false; }"

# deleting the secret: calls fail naming it
t "DELETE the secret → 200" eq "$(gg_curl "$GG_TMP/d.json" -X DELETE -H "Authorization: Bearer $AW" "$A/acme/secrets/TOKEN")" 200
call "$GG_TMP/c2.json" >/dev/null
t "a call after the delete fails naming the secret" has "$GG_TMP/c2.json" "secret 'TOKEN' is not set"
t "the stored graph still loads (GET → 200)" eq "$(gg_curl "$GG_TMP/g2.json" -H "Authorization: Bearer $AW" "$A/acme/graphs/sec")" 200
put_secret "$AW" acme TOKEN "{\"value\":\"$V2\"}" >/dev/null
call "$GG_TMP/c3.json" >/dev/null
t "set again: calls work again" has "$GG_TMP/c3.json" 'auth=Bearer \[secret:TOKEN\]'

# ---- nowhere --------------------------------------------------------------------------------
curl -sS "$GG_INT/metrics" >"$GG_TMP/metrics.txt"
curl -sS -H "Authorization: Bearer $AW" "$A/acme/executions?limit=100" >"$GG_TMP/execs.json"
for id in $(python3 -c "import json; [print(e['id']) for e in json.load(open('$GG_TMP/execs.json'))['executions'][:20]]" 2>/dev/null); do
  curl -sS -H "Authorization: Bearer $AW" "$GG_PUB/admin/executions/$id" >>"$GG_TMP/execs.json"
done
curl -sS -H "Authorization: Bearer $AW" "$GG_PUB/console/api/tenants/acme/graphs/sec/versions/1/document" >"$GG_TMP/console.json"
curl -sS -X POST -H "Authorization: Bearer $AW" -H 'Content-Type: application/yaml' --data-binary @"$GG_TMP/g.yaml" \
  "$GG_PUB/console/api/tenants/acme/check" >>"$GG_TMP/console.json"
t "the executions were recorded (the leak check reads them)" has "$GG_TMP/execs.json" 'secret:TOKEN'
t "the console answered" has "$GG_TMP/console.json" 'secrets.TOKEN'
for _ in $(seq 1 100); do [ -s "$GG_TMP/spans.jsonl" ] && grep -q 'secret:TOKEN' "$GG_TMP/spans.jsonl" && break; sleep 0.05; done
t "spans were exported (with node values)" has "$GG_TMP/spans.jsonl" 'secret:TOKEN'
leaks() {
  local f found=0
  for f in "$GG_DB" "$GG_DB-wal" "$GG_DB"-history/* "$GG_TMP/serve.err" "$GG_TMP/serve.out" "$GG_TMP/spans.jsonl" \
           "$GG_TMP/metrics.txt" "$GG_TMP/execs.json" "$GG_TMP/console.json" "$GG_TMP/graph.json" "$GG_TMP/l.json"; do
    [ -f "$f" ] || continue
    if gg_searchable "$f" | grep -aq -e "$V1" -e "$V2"; then echo "   a value in $f" >&2; found=1; fi
  done
  [ $found = 0 ]
}
t "the values are nowhere while serving: database, WAL, history journal, log, OTLP, API answers, /metrics" leaks
gg_stop
t "… nor after the stop (checkpointed database, emptied journal)" leaks

# ---- the key ---------------------------------------------------------------------------------
# refuses CONFIG → true when serve exits nonzero without serving
refuses() {
  if gg_start --config "$1" >/dev/null 2>&1; then gg_stop; return 1; fi
  wait "$GG_PID" 2>/dev/null; local rc=$?; GG_PID=""
  [ $rc -ne 0 ] || { echo "   serve exited $rc" >&2; return 1; }
}
config ""
t "no key while secrets are stored: serve refuses to start" refuses "$GG_TMP/config.yaml"
t "… saying why" has "$GG_TMP/serve.err" 'no secrets key is configured'
config "$GG_TMP/k2"
t "another key: serve refuses to start" refuses "$GG_TMP/config.yaml"
t "… saying why" has "$GG_TMP/serve.err" 'sealed under another key'
GRAPHGATE_SECRETS_KEY_FILE="$GG_TMP/k1" gw_cli secret rekey --new-key-file "$GG_TMP/k2" >"$GG_TMP/rekey.out" 2>&1
t "secret rekey re-encrypts under the new key" has "$GG_TMP/rekey.out" '1 secret(s) and 0 per-user grant(s) re-encrypted'
gg_restart "serve starts with the new key" --config "$GG_TMP/config.yaml"
EP="$GG_PUB/mcp/acme/sec"
SID=$(gw_init "$EP" "$AX")
call "$GG_TMP/c4.json" >/dev/null
t "after the rekey, calls work with the same value" has "$GG_TMP/c4.json" 'auth=Bearer \[secret:TOKEN\]'
# a change made by another process (the CLI here, another replica alike) reaches the
# server's clients through the store's secrets generation (the watcher reads it every second)
V3="tok-three-$RANDOM$RANDOM-5d1e09"
curl -sS -X POST "http://127.0.0.1:$SPORT/accept?t=$V3" >/dev/null
printf '%s\n' "$V3" | GRAPHGATE_SECRETS_KEY_FILE="$GG_TMP/k2" gw_cli secret set acme TOKEN >"$GG_TMP/cli3.out" 2>&1
t "the CLI updates a secret (value from stdin)" has "$GG_TMP/cli3.out" 'updated'
seen3() { curl -sS "http://127.0.0.1:$SPORT/status" | python3 -c "import json,sys; sys.exit(0 if json.load(sys.stdin)['seen'].get('$V3') else 1)"; }
for _ in $(seq 1 100); do call "$GG_TMP/c5.json" >/dev/null; seen3 && break; sleep 0.05; done
t "… and the server's next calls use it, without a restart" seen3
t "… its answers redacted as well" has "$GG_TMP/c5.json" 'auth=Bearer \[secret:TOKEN\]'
printf '%s\n' "$V1" | GRAPHGATE_SECRETS_KEY="$(cat "$GG_TMP/k2")" gw_cli secret set acme CLI_ONE >"$GG_TMP/cli.out" 2>&1
t "the CLI sets a value from stdin" has "$GG_TMP/cli.out" 'created'
GRAPHGATE_SECRETS_KEY="$(cat "$GG_TMP/k2")" gw_cli secret list acme >"$GG_TMP/cli.list" 2>&1
t "the CLI lists names, not values" bash -c "grep -q CLI_ONE '$GG_TMP/cli.list' && ! grep -q '$V1' '$GG_TMP/cli.list'"
t "the CLI without a key refuses to set" bash -c "! printf x1234 | '$GG_BIN' secret set acme X --db '$GG_DB' 2>/dev/null"
t "the server log holds no value" bash -c "! grep -aq -e '$V1' -e '$V2' -e '$V3' '$GG_TMP/serve.err' '$GG_TMP/serve.out'"
gg_finish
