# lib_attack.sh — helpers for the attack suite (sourced, not run), on top of the gateway
# helpers (tests/gateway/lib_gw.sh: gg_start, gw_key, gw_put_graph, gw_rpc, jget, t, gg_finish).
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"

# health_ms → prints how long GET /health took, in whole milliseconds (99999 on failure).
health_ms() {
  local s
  s=$(curl -sS -o /dev/null --max-time 5 -w '%{http_code} %{time_total}' "$GG_PUB/health" 2>/dev/null) || { echo 99999; return; }
  [ "${s%% *}" = 200 ] || { echo 99999; return; }
  awk -v t="${s#* }" 'BEGIN { printf "%d\n", t * 1000 }'
}
# health_fast [BOUND_MS] — true when /health answers 200 within BOUND_MS (default 100; the
# bound is generous against a healthy ~1 ms answer, for loaded CI machines).
health_fast() { [ "$(health_ms)" -le "${1:-100}" ]; }
# rss_kb → resident set size of the running server, in KiB.
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$GG_PID/status" 2>/dev/null || echo 0; }
# alive — the server process is still running.
alive() { [ -n "$GG_PID" ] && kill -0 "$GG_PID" 2>/dev/null; }
# plain TENANT GRAPH TOOL → the internal plain tool-call URL of that tool.
plain() { echo "$GG_INT/internal/tenants/$1/graphs/$2/tools/$3/call"; }
# lat → ms of one call of tenant b's graph light, tool light (99999 unless 200); the answer
# is left in $GG_TMP/b.json for the caller to check.
lat() {
  curl -sS -o "$GG_TMP/b.json" --max-time 30 -w '%{http_code} %{time_total}\n' -X POST \
    -H 'Content-Type: application/json' --data '{}' "$(plain b light light)" 2>/dev/null |
    awk '{ if ($1 == 200) printf "%d\n", $2 * 1000; else print 99999 }'
}
# hwm_mb → the running server's peak resident set (VmHWM), in whole MiB.
hwm_mb() { awk '/^VmHWM:/ { printf "%d\n", $2 / 1024 }' "/proc/$GG_PID/status"; }
# cpu_ms → CPU time (user + system) the running server has used so far, in milliseconds.
cpu_ms() { awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%d\n", ($12 + $13) * 1000 / hz }' "/proc/$GG_PID/stat"; }
# pct P → the P-quantile (0..1, nearest rank) of the numbers on stdin.
pct() { sort -n | awk -v p="$1" '{ v[NR] = $1 } END { i = int(NR * p + 0.999); if (i < 1) i = 1; print v[i] }'; }
# metric NAME → the value of one unlabelled metric of the running server.
metric() { curl -s "$GG_INT/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
# acall TOOL OUT → HTTP status of one plain call of tenant a's graph hostile (body in OUT).
acall() {
  curl -sS -o "$2" --max-time 60 -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
    --data '{}' "$(plain a hostile "$1")" 2>/dev/null
}
# put_graphs_and_start "TENANT GRAPH"... — create each tenant, store $GG_TMP/GRAPH.yaml as its
# graph (with $GG_TMP/config.yaml, whose policy may be needed to accept it) and start the
# server with that config; exits the test (one failure) when any step fails.
put_graphs_and_start() {
  local g
  for g in "$@"; do
    set -- $g
    gw_cli tenant create "$1" >/dev/null 2>&1
    gw_cli graph put "$1" "$2" "$GG_TMP/$2.yaml" --config "$GG_TMP/config.yaml" >/dev/null 2>"$GG_TMP/put.err" ||
      gw_cli graph put "$1" "$2" "$GG_TMP/$2.yaml" >/dev/null 2>"$GG_TMP/put.err" ||
      { cat "$GG_TMP/put.err"; echo "0 passed, 1 failed"; exit 1; }
  done
  gg_start --config "$GG_TMP/config.yaml" || { echo "0 passed, 1 failed"; exit 1; }
}
