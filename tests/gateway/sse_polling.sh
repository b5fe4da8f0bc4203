#!/usr/bin/env bash
# sse_polling.sh — resumable POST streams (spec 2025-11-25 polling, SEP-1699): a tools/call
# of a 2025-11-25 session still running after mcp.sse_close_after gets its POST stream
# ended early (priming event first, every event with an id, a retry hint); a GET with
# Last-Event-ID receives the rest, the final response included. A fast call still answers
# plain JSON. The official SDK client (v1, @modelcontextprotocol/sdk) gets its result across
# the early close (sdk_reconnect.mjs). Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
gw_conf_setup
gg_start || { echo "0 passed, 1 failed"; exit 1; }
t "fixture graph uploaded" eq "$(gw_put_graph "$ADMIN" conf everything "$FIXTURE")" 201
URL="$GG_PUB/mcp/conf/everything"
SID=$(gw_init "$URL" "$KEY")
t "session opened" test -n "$SID"
HDRS=(-H "Authorization: Bearer $KEY" -H "Mcp-Session-Id: $SID" -H 'MCP-Protocol-Version: 2025-11-25')
CALL='{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"test_reconnection","arguments":{}}}'

# ---- the POST stream of a slow call ends early: priming first, retry hint, no result
start=$(date +%s%N)
curl -sS -N --max-time 30 -D "$GG_TMP/post.h" -o "$GG_TMP/post.sse" -X POST "${HDRS[@]}" \
  -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' --data-binary "$CALL" "$URL"
ms=$(( ($(date +%s%N) - start) / 1000000 ))
t "POST answered as text/event-stream" grep -qi '^content-type: text/event-stream' "$GG_TMP/post.h"
t "the first event is the priming event (an id, empty data)" python3 - "$GG_TMP/post.sse" <<'PY'
import sys
ev = open(sys.argv[1]).read().split('\n\n')[0].splitlines()
assert ev[0].startswith('id: ') and ev[1] == 'data: ', ev
PY
t "a retry hint before the early end" grep -q '^retry: [0-9]' "$GG_TMP/post.sse"
t "the POST ended before the result (after ${ms} ms; the tool computes ~2 s)" bash -c "! grep -q '\"id\":7' '$GG_TMP/post.sse'"
LAST=$(sed -n 's/^id: //p' "$GG_TMP/post.sse" | tail -1)

# ---- a GET with an id past what the stream issued → 400
st=$(gg_curl "$GG_TMP/bad.json" "${HDRS[@]}" -H 'Accept: text/event-stream' -H "Last-Event-ID: ${LAST%-*}-999" "$URL")
t "Last-Event-ID past the stream's events → 400" eq "$st" 400

# ---- another session (same key) cannot resume it: the id is not that session's stream
SID2=$(gw_init "$URL" "$KEY")
curl -sS -N --max-time 3 -o "$GG_TMP/other.sse" -H "Authorization: Bearer $KEY" -H "Mcp-Session-Id: $SID2" \
  -H 'MCP-Protocol-Version: 2025-11-25' -H 'Accept: text/event-stream' -H "Last-Event-ID: $LAST" "$URL" 2>/dev/null
t "another session's GET with that id does not get the result" bash -c "! grep -q '\"id\":7' '$GG_TMP/other.sse'"

# ---- the GET resuming it gets the final response (every event with an id), then ends
curl -sS -N --max-time 30 -D "$GG_TMP/get.h" -o "$GG_TMP/get.sse" "${HDRS[@]}" -H 'Accept: text/event-stream' \
  -H "Last-Event-ID: $LAST" "$URL"
t "the resumed GET carries the result with an id" python3 - "$GG_TMP/get.sse" <<'PY'
import sys, json
evs = [e.splitlines() for e in open(sys.argv[1]).read().split('\n\n') if e.strip()]
res = [e for e in evs if any(l.startswith('data: {') and '"id":7' in l for l in e)]
assert len(res) == 1 and res[0][-2].startswith('id: '), evs
d = json.loads([l for l in res[0] if l.startswith('data: ')][0][6:])
assert d['result']['content'][0]['text'] == 'Reconnection test completed', d
PY
st=$(gg_curl "$GG_TMP/again.json" "${HDRS[@]}" -H 'Accept: text/event-stream' -H "Last-Event-ID: $LAST" --max-time 3 "$URL")
t "once delivered, the result is not replayed again" bash -c "! grep -q '\"id\":7' '$GG_TMP/again.json'"

# ---- a fast call still answers plain JSON at once
st=$(gw_rpc "$GG_TMP/fast.json" "$URL" "$KEY" "$SID" '{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"test_simple_text","arguments":{}}}' \
  -H 'MCP-Protocol-Version: 2025-11-25')
t "a fast call answers application/json" grep -qi '^content-type: application/json' "$GG_TMP/fast.json.h"

# ---- the official SDK client across the early close
"$NODE" "$GG_SRCDIR/tests/gateway/sdk_reconnect.mjs" "$URL" "$KEY" "$GG_INT/metrics" > "$GG_TMP/sdk.out" 2>&1
gw_fold "$GG_TMP/sdk.out" $?
t "server stops cleanly (exit 0, no sanitizer report)" gw_stop_clean
gg_finish
