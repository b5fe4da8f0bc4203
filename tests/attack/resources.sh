#!/usr/bin/env bash
# resources.sh — what a client or tenant could try against resources and prompts: 200
# subscriptions on one session (only 64 are remembered: a new version sends at most 64
# resources/updated), a 500 KB URI matched against templates, a prompts/get with 10,000
# arguments, a graph declaring 3,000 resources (listed 100 per page). Each is answered
# quickly with a result or a clear error and /health stays fast. Prints "N passed, N failed".
. "$GG_SRCDIR/tests/attack/lib_attack.sh"
le() { [ "${1:-99999}" -le "$2" ] 2>/dev/null || { echo "   expected <= $2, got ${1:-none}" >&2; return 1; }; }
FX="$GG_SRCDIR/tests/fixtures/conformance/everything.yaml"

gw_cli tenant create a >/dev/null 2>&1
ADMIN=$(gw_key a admin)
KEY=$(gw_key a tools:read,tools:execute)
gg_start || { echo "0 passed, 1 failed"; exit 1; }
t "fixture uploaded" eq "$(gw_put_graph "$ADMIN" a g "$FX")" 201
U="$GG_PUB/mcp/a/g"
SID=$(gw_init "$U" "$KEY")
t "session" test -n "$SID"

# ---- 200 subscriptions: all accepted, 64 remembered
for i in $(seq 1 200); do
  printf '{"jsonrpc":"2.0","id":%d,"method":"resources/subscribe","params":{"uri":"test://template/%d/data"}}\n' "$i" "$i"
done > "$GG_TMP/subs.jsonl"
ok=0
while read -r line; do
  gw_rpc "$GG_TMP/sub.json" "$U" "$KEY" "$SID" "$line" >/dev/null
  grep -q '"result":{}' "$GG_TMP/sub.json" && ok=$((ok + 1))
done < "$GG_TMP/subs.jsonl"
t "200 subscribe requests answered {}" eq "$ok" 200
curl -sS -N --max-time 8 -H "Authorization: Bearer $KEY" -H "Mcp-Session-Id: $SID" -H 'Accept: text/event-stream' \
  -H 'MCP-Protocol-Version: 2025-11-25' "$U" > "$GG_TMP/stream.txt" 2>/dev/null &
CURL=$!
for _ in $(seq 1 100); do [ "$(curl -s "$GG_INT/metrics" | sed -n 's/^graphgate_mcp_streams //p')" = 1 ] && break; sleep 0.05; done
t "new version" eq "$(gw_put_graph "$ADMIN" a g "$FX")" 201
for _ in $(seq 1 100); do grep -q 'prompts/list_changed' "$GG_TMP/stream.txt" && break; sleep 0.05; done
kill "$CURL" 2>/dev/null; wait "$CURL" 2>/dev/null
t "at most 64 resources/updated for the session (got $(grep -c 'resources/updated' "$GG_TMP/stream.txt"))" \
  eq "$(grep -c 'resources/updated' "$GG_TMP/stream.txt")" 64

# ---- a 500 KB URI against the template
python3 -c "
import json; print(json.dumps({'jsonrpc':'2.0','id':1,'method':'resources/read','params':{'uri':'test://template/' + 'a'*500000 + '/data'}}))" > "$GG_TMP/big.json"
t0=$(date +%s%N)
gw_rpc "$GG_TMP/bigr.json" "$U" "$KEY" "$SID" "@$GG_TMP/big.json" >/dev/null
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
t "500 KB URI answered (a result or a clear error) in ${ms} ms" \
  python3 -c "import json; d=json.load(open('$GG_TMP/bigr.json')); assert 'result' in d or d['error']['message'], d"
t "... within 5 s" le "$ms" 5000
python3 -c "
import json; print(json.dumps({'jsonrpc':'2.0','id':1,'method':'resources/read','params':{'uri':'test://template/' + 'a/'*100000 + '/data'}}))" > "$GG_TMP/slash.json"
gw_rpc "$GG_TMP/slashr.json" "$U" "$KEY" "$SID" "@$GG_TMP/slash.json" >/dev/null
t "a URI of 100,000 segments does not match {id} → -32002" eq "$(jget "$GG_TMP/slashr.json" "d['error']['code']")" -32002

# ---- prompts/get with 10,000 arguments
python3 -c "
import json; a={'arg%d'%i: 'v' for i in range(10000)}; a['arg1']='x'; a['arg2']='y'
print(json.dumps({'jsonrpc':'2.0','id':1,'method':'prompts/get','params':{'name':'test_prompt_with_arguments','arguments':a}}))" > "$GG_TMP/args.json"
gw_rpc "$GG_TMP/argsr.json" "$U" "$KEY" "$SID" "@$GG_TMP/args.json" >/dev/null
t "prompts/get with 10,000 arguments answered" \
  python3 -c "import json; d=json.load(open('$GG_TMP/argsr.json')); assert 'result' in d or 'error' in d, d"

# ---- a graph with 3,000 resources: listed 100 per page
python3 - "$GG_TMP/many.yaml" <<'PY'
import sys
with open(sys.argv[1], 'w') as f:
    f.write('server: {name: many, version: "1"}\ntools:\n  - {name: t, description: d, inputSchema: {type: object}, nodes: [{id: entry, type: entry, next: exit}, {id: exit, type: exit}]}\nresources:\n')
    for i in range(3000):
        f.write('  - {uri: "m://%d", name: "r%d", text: "%d"}\n' % (i, i, i))
PY
t "3,000 resources upload" eq "$(gw_put_graph "$ADMIN" a many "$GG_TMP/many.yaml")" 201
SID2=$(gw_init "$GG_PUB/mcp/a/many" "$KEY")
gw_rpc "$GG_TMP/p1.json" "$GG_PUB/mcp/a/many" "$KEY" "$SID2" '{"jsonrpc":"2.0","id":1,"method":"resources/list"}' >/dev/null
t "resources/list: 100 per page with nextCursor" \
  python3 -c "import json; r=json.load(open('$GG_TMP/p1.json'))['result']; assert len(r['resources'])==100 and r['nextCursor'], r.keys()"
gw_rpc "$GG_TMP/r.json" "$GG_PUB/mcp/a/many" "$KEY" "$SID2" '{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"m://2999"}}' >/dev/null
t "the last resource reads" eq "$(jget "$GG_TMP/r.json" "d['result']['contents'][0]['text']")" 2999
t "/health stays fast" health_fast 250
t "server stops cleanly" gw_stop_clean
gg_finish
