#!/usr/bin/env bash
# history.sh — one tenant floods the execution history and holds streams and sessions, against
# the real `graphgate serve` with small quotas:
# - a loop graph whose every node outputs 60 KB (the attack grew the database by ~125 MB/s and
#   its run's node history was silently lost at 20k iterations): each run keeps at most
#   history.max_run_bytes of node records and is recorded as truncated with the number left
#   out; the tenant's history is pruned (oldest first, counted) back under
#   history.tenant_max_bytes; the database file stays bounded; another tenant's runs are kept;
# - one tenant opening sessions past tenants.max_sessions evicts its own least recently
#   used idle one, and GET streams past tenants.max_streams get 429 JSON-RPC errors, while
#   another tenant still opens both;
# - GET /admin/tenants/{t}/usage matches what was done; /health stays fast throughout.
. "$GG_SRCDIR/tests/attack/lib_attack.sh"
le() { [ "$1" -le "$2" ] 2>/dev/null || { echo "   expected <= $2, got $1" >&2; return 1; }; }
gt() { [ "$1" -gt "$2" ] 2>/dev/null || { echo "   expected > $2, got $1" >&2; return 1; }; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 not installed"; exit 77; }
T0=$(date +%s)

QUOTA=$((6 * 1024 * 1024))      # history bytes per tenant
RUN_BYTES=$((1024 * 1024))      # node records a run
export GRAPHGATE_HISTORY_TENANT_MAX_BYTES=$QUOTA GRAPHGATE_HISTORY_MAX_RUN_BYTES=$RUN_BYTES
export GRAPHGATE_TENANTS_MAX_STREAMS=3 GRAPHGATE_TENANTS_MAX_SESSIONS=5 GRAPHGATE_LOG_LEVEL=warn

FLOOD="$GG_TMP/flood.yaml"
cat > "$FLOOD" <<'EOF'
version: "1.0"
server: {name: "flood", version: "1.0.0"}
executionLimits:
  maxNodeExecutions: 100000
  maxExecutionTimeMs: 60000
tools:
  - name: "flood"
    description: "Loops n times, each pass outputs 60 KB"
    inputSchema: {type: "object", properties: {n: {type: "number"}}}
    nodes:
      - {id: "entry", type: "entry", next: "spin"}
      - {id: "spin", type: "transform", transform: {expr: '{"i": $executionCount("spin") + 1, "blob": $pad("", 60000, "x")}'}, next: "again"}
      - id: "again"
        type: "switch"
        conditions:
          - {rule: {"<": [{var: "spin.i"}, {var: "entry.n"}]}, next: "spin"}
        next: "exit"
      - {id: "exit", type: "exit"}
EOF

gw_cli tenant create mallory >/dev/null 2>&1
gw_cli tenant create alice >/dev/null 2>&1
MK=$(gw_key mallory tools:read,tools:execute,graphs:write)
AK=$(gw_key alice tools:read,tools:execute,graphs:write)
gg_start || { echo "0 passed, 1 failed"; exit 1; }
t "mallory's flood graph uploaded" eq "$(gw_put_graph "$MK" mallory flood "$FLOOD")" 201
t "alice's graph uploaded" eq "$(gw_put_graph "$AK" alice flood "$FLOOD")" 201
MU="$GG_PUB/mcp/mallory/flood"
AU="$GG_PUB/mcp/alice/flood"
HMAX=0
# hcheck: /health within 100 ms; a slow answer is probed again at once and only counts when
# that one is slow too (a server that stalls stays slow; a probe whose own curl lost the CPU
# on a loaded 2-core machine — seen once in 80 at load 14 — does not)
hcheck() {
  local ms; ms=$(health_ms)
  [ "$ms" -le 100 ] || ms=$(health_ms)
  [ "$ms" -gt "$HMAX" ] && HMAX=$ms
  [ "$ms" -le 100 ]
}
HSLOW=0
# call URL KEY SID N → status of a tools/call of flood with n=N (body in $GG_TMP/call.json)
call() {
  gw_rpc "$GG_TMP/call.json" "$1" "$2" "$3" \
    "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"flood\",\"arguments\":{\"n\":$4}}}" --max-time 60
}
usage() { gg_curl "$GG_TMP/usage.json" -H "Authorization: Bearer $1" "$GG_PUB/admin/tenants/$2/usage" >/dev/null; }
dbsize() { du -b "$GG_DB" "$GG_DB-wal" 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'; }

# ---- the flood: 12 runs of 400 iterations (802 node records, 24 MB of node outputs each)
MS=$(gw_init "$MU" "$MK")
t "mallory has a session" test -n "$MS"
AS=$(gw_init "$AU" "$AK")
t "alice run (n=3) before the flood → 200" eq "$(call "$AU" "$AK" "$AS" 3)" 200
ok=0
NH=0
for i in $(seq 1 12); do
  call "$MU" "$MK" "$MS" 400 > "$GG_TMP/call.code" &
  cpid=$!
  while kill -0 "$cpid" 2>/dev/null; do # /health while the run writes its records (bounded by the call's own timeout)
    hcheck || HSLOW=$((HSLOW + 1))
    NH=$((NH + 1))
    sleep 0.1
  done
  wait "$cpid"
  [ "$(cat "$GG_TMP/call.code")" = 200 ] && grep -q '"result"' "$GG_TMP/call.json" && ok=$((ok + 1))
done
t "12 flood runs answered with their result" eq "$ok" 12
t "/health within 100 ms throughout the flood ($NH probes, $HSLOW slower, max ${HMAX} ms)" eq "$HSLOW" 0

# the newest run: recorded, truncated, with the count of records left out
newest_id() {
  gg_curl "$GG_TMP/list.json" -H "Authorization: Bearer $1" "$GG_PUB/admin/tenants/$2/executions?limit=1" >/dev/null
  jget "$GG_TMP/list.json" 'd["executions"][0]["id"] if d["executions"] and d["executions"][0]["status"] != "running" else ""'
}
ID=""
for i in $(seq 1 100); do ID=$(newest_id "$MK" mallory); [ -n "$ID" ] && break; sleep 0.1; done
gg_curl "$GG_TMP/exec.json" -H "Authorization: Bearer $MK" "$GG_PUB/admin/executions/$ID" >/dev/null
t "the newest flood run is recorded as succeeded" eq "$(jget "$GG_TMP/exec.json" 'd["status"]')" succeeded
t "... marked nodes_truncated" eq "$(jget "$GG_TMP/exec.json" 'd["nodes_truncated"]')" True
KEPT=$(jget "$GG_TMP/exec.json" 'len(d["nodes"])')
DROPPED=$(jget "$GG_TMP/exec.json" 'd["nodes_dropped"]')
t "... with records kept (not silently empty: $KEPT)" gt "$KEPT" 0
t "... and kept + dropped = every node executed (802)" eq "$((KEPT + DROPPED))" 802
t "... kept records are the first ones, in order" eq "$(jget "$GG_TMP/exec.json" '[n["index"] for n in d["nodes"]] == list(range(len(d["nodes"])))')" True

# the quota pass (every second) brings mallory back under the quota, oldest first
under() {
  local i b
  for i in $(seq 1 100); do
    usage "$MK" mallory
    b=$(jget "$GG_TMP/usage.json" 'd["history"]["bytes"]')
    [ -n "$b" ] && [ "$b" -le "$QUOTA" ] && return 0
    sleep 0.1
  done
  echo "   history bytes $b > $QUOTA" >&2; return 1
}
t "mallory's history is back under history.tenant_max_bytes" under
t "... runs were dropped and counted" gt "$(jget "$GG_TMP/usage.json" 'd["history"]["dropped"]')" 0
t "... dropped bytes counted" gt "$(jget "$GG_TMP/usage.json" 'd["history"]["dropped_bytes"]')" 0
t "... the newest run is still there" eq "$(gg_curl "$GG_TMP/r" -H "Authorization: Bearer $MK" "$GG_PUB/admin/executions/$ID")" 200
ROWS=$(jget "$GG_TMP/usage.json" 'd["history"]["rows"]')
gg_curl "$GG_TMP/all.json" -H "Authorization: Bearer $MK" "$GG_PUB/admin/tenants/mallory/executions?limit=1000" >/dev/null
# usage rows count stored records (migration 0019): a run announced while running and then
# finished is two, so the listed runs are between half of them and all of them
LISTED=$(jget "$GG_TMP/all.json" 'len(d["executions"])')
t "usage rows ($ROWS) >= the executions listed ($LISTED)" le "$LISTED" "$ROWS"
t "... and <= twice them (running + final versions)" le "$ROWS" "$((2 * LISTED))"
t "/metrics counts the drops" gt "$(curl -s --max-time 5 "$GG_INT/metrics" | sed -n 's/^graphgate_history_quota_dropped_total \([0-9]*\)$/\1/p')" 0
SIZE=$(dbsize)
echo "# database + WAL after 12 runs x 24 MB of node outputs: $SIZE bytes"
t "the database file stays bounded (< 48 MB)" le "$SIZE" $((48 * 1024 * 1024))
usage "$AK" alice
t "alice's run is untouched (1 row, nothing dropped)" eq "$(jget "$GG_TMP/usage.json" '(d["history"]["rows"], d["history"]["dropped"])')" "(1, 0)"
t "mallory cannot read alice's usage (403)" eq "$(gg_curl "$GG_TMP/r" -H "Authorization: Bearer $MK" "$GG_PUB/admin/tenants/alice/usage")" 403

# ---- sessions and streams: mallory fills its bounds, alice still gets both
SIDS=("$MS")
for i in 2 3 4 5; do SIDS+=("$(gw_init "$MU" "$MK")"); done
t "mallory holds 5 sessions" eq "$(printf '%s\n' "${SIDS[@]}" | grep -c .)" 5
code=$(gw_rpc "$GG_TMP/sess.json" "$MU" "$MK" "" \
  '{"jsonrpc":"2.0","id":9,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}')
# (none of them holds a stream or a call: the least recently used, the first, gives way;
# every one held → 429 is tests/attack/sessions.sh)
t "the 6th session → 200, evicting mallory's least recently used one" eq "$code" 200
t "... which then answers 404" eq "$(gw_rpc "$GG_TMP/r" "$MU" "$MK" "$MS" '{"jsonrpc":"2.0","id":2,"method":"tools/list"}')" 404
SIDS[0]=$(sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: *\([^[:space:]]*\).*/\1/p' "$GG_TMP/sess.json.h" | tr -d '\r')
t "... counted in /metrics" eq "$(curl -s --max-time 5 "$GG_INT/metrics" | sed -n 's/^graphgate_mcp_sessions_forgotten_total{reason="evicted"} \([0-9]*\)$/\1/p')" 1
t "alice still opens a session" test -n "$(gw_init "$AU" "$AK")"
# streams: held by background curls (killed by pid at the end)
PIDS=()
sopen() { # NAME URL KEY SID → waits (bounded) for the response head; prints the status
  : > "$GG_TMP/$1.h"
  curl -sS -N -D "$GG_TMP/$1.h" -H 'Accept: text/event-stream' -H "Authorization: Bearer $3" -H "Mcp-Session-Id: $4" \
    "$2" > "$GG_TMP/$1.out" 2>/dev/null &
  PIDS+=($!)
  local i
  for i in $(seq 1 100); do grep -q $'^\r$' "$GG_TMP/$1.h" 2>/dev/null && break; sleep 0.05; done
  sed -n '1s/^HTTP[^ ]* \([0-9]*\).*/\1/p' "$GG_TMP/$1.h"
}
c=""
for i in 1 2 3; do c="$c$(sopen "m$i" "$MU" "$MK" "${SIDS[$i]}")"; done
t "mallory opens 3 GET streams" eq "$c" 200200200
t "the 4th (another session) → 429" eq "$(sopen m4 "$MU" "$MK" "${SIDS[4]}")" 429
t "... a JSON-RPC error naming tenants.max_streams" grep -q 'tenants.max_streams' "$GG_TMP/m4.out"
t "... with Retry-After" grep -qi '^retry-after' "$GG_TMP/m4.h"
t "... counted in /metrics" eq "$(curl -s --max-time 5 "$GG_INT/metrics" | sed -n 's/^graphgate_mcp_streams_refused_tenant_total \([0-9]*\)$/\1/p')" 1
t "alice still opens a stream" eq "$(sopen a1 "$AU" "$AK" "$AS")" 200
t "/health fast with the streams open" hcheck
usage "$MK" mallory
t "usage: 5 live sessions, 3 streams, 1 graph" \
  eq "$(jget "$GG_TMP/usage.json" '(d["sessions"]["live"], d["streams"]["open"], d["graphs"]["count"])')" "(5, 3, 1)"
t "usage: graph bytes = the uploaded source" eq "$(jget "$GG_TMP/usage.json" 'd["graphs"]["active_bytes"]')" "$(stat -c %s "$FLOOD")"
t "usage: no call in progress" eq "$(jget "$GG_TMP/usage.json" 'd["calls"]["in_progress"]')" 0
# DELETE of a session frees a live slot
t "DELETE one of mallory's sessions → 200" \
  eq "$(gg_curl "$GG_TMP/r" -X DELETE -H "Authorization: Bearer $MK" -H "Mcp-Session-Id: ${SIDS[4]}" "$MU")" 200
t "... then a new session is issued" test -n "$(gw_init "$MU" "$MK")"
for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
t "server alive" alive
t "server stopped cleanly" gw_stop_clean
echo "# $(( $(date +%s) - T0 )) s"
gg_finish
