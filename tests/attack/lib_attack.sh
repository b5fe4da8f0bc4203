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
