# lib.sh — shared helpers for the integration tests (sourced, not run). They start the real
# `src/graphgate serve` on free loopback ports (port 0, read back from its output) with a
# temporary database, and always kill it on exit.
#
#   . "$GG_SRCDIR/tests/integration/lib.sh"
#   gg_start [extra serve flags...]   # sets GG_PID, GG_PUB, GG_INT (base URLs, no trailing /);
#                                     # database $GG_DB (default $GG_TMP/gg.db)
#   gg_restart "description" [flags]  # a later start the rest needs: a failure is counted, ends
#   t "description" command...        # one case: passes when the command succeeds
#   gg_skip "description" "reason" [N] # N (1) cases that cannot run here, reported, never passes
#   gg_finish                         # prints "N passed, N failed[, N skipped]" and exits
set -u
GG_BUILDDIR=${GG_BUILDDIR:-$(pwd)}
GG_SRCDIR=${GG_SRCDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
GG_BIN=${GG_BIN:-$GG_BUILDDIR/src/graphgate}
# ggdb.py: the database opened as graphgate opens it for SQL (history_text for the
# executions view over compressed history bodies)
export PYTHONPATH="$GG_SRCDIR/tests/integration${PYTHONPATH:+:$PYTHONPATH}"
GG_TMP=$(mktemp -d "${TMPDIR:-/tmp}/gg-it.XXXXXX")
GG_PID=""
GG_PUB=""
GG_INT=""
GG_PASSED=0
GG_FAILED=0
GG_SKIPPED=0
# Keep the environment from leaking configuration into the tests.
while IFS='=' read -r name _; do unset "$name"; done < <(env | grep '^GRAPHGATE_' || true)

gg_cleanup() {
  if [ -n "$GG_PID" ] && kill -0 "$GG_PID" 2>/dev/null; then
    kill -TERM "$GG_PID" 2>/dev/null
    for _ in $(seq 1 50); do kill -0 "$GG_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$GG_PID" 2>/dev/null
  fi
  [ -n "${GG_KEEP_TMP:-}" ] || rm -rf "$GG_TMP"
}
trap gg_cleanup EXIT
trap 'exit 1' INT TERM

command -v curl >/dev/null 2>&1 || { echo "SKIP: curl not installed"; exit 77; }
[ -x "$GG_BIN" ] || { echo "graphgate binary not found at $GG_BIN"; echo "0 passed, 1 failed"; exit 1; }

# Start serve in the background and wait (bounded) until both URLs are printed and
# /health answers. Output goes to $GG_TMP/serve.out and serve.err.
gg_start() {
  # a restart truncates serve.err: keep what the last server printed for gg_sanitizer_check
  [ -s "$GG_TMP/serve.err" ] && cat "$GG_TMP/serve.err" >>"$GG_TMP/serve.err.earlier"
  "$GG_BIN" serve --db "${GG_DB:-$GG_TMP/gg.db}" --listen 127.0.0.1:0 --internal-listen 127.0.0.1:0 "$@" \
    >"$GG_TMP/serve.out" 2>"$GG_TMP/serve.err" &
  GG_PID=$!
  local i t0; t0=$(date +%s.%N)
  # 30 s: on a loaded 2-core machine (both CI builds testing at once) a start has been
  # seen to take over 10 s; a healthy one takes ~40 ms, so the bound costs nothing
  for i in $(seq 1 600); do
    if grep -q 'internal' "$GG_TMP/serve.out" 2>/dev/null; then break; fi
    kill -0 "$GG_PID" 2>/dev/null || break
    sleep 0.05
  done
  GG_PUB=$(sed -n 's|^ *public *\(http://[^ ]*\)/$|\1|p' "$GG_TMP/serve.out")
  GG_INT=$(sed -n 's|^ *internal *\(http://[^ ]*\)/$|\1|p' "$GG_TMP/serve.out")
  if [ -z "$GG_PUB" ] || [ -z "$GG_INT" ]; then
    echo "serve did not start (started at $(date -u -d @"${t0%.*}" +%H:%M:%S), now $(date -u +%H:%M:%S)); stdout:"
    cat "$GG_TMP/serve.out"; echo "stderr:"; tail -20 "$GG_TMP/serve.err"
    return 1
  fi
  for i in $(seq 1 100); do
    curl -fsS --max-time 2 "$GG_PUB/health" >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  echo "serve does not answer /health"; return 1
}

# Stop serve with SIGTERM and wait (bounded); sets GG_EXIT to its exit status.
gg_stop() {
  GG_EXIT=""
  [ -n "$GG_PID" ] || return 1
  kill -TERM "$GG_PID" 2>/dev/null
  local i
  for i in $(seq 1 300); do kill -0 "$GG_PID" 2>/dev/null || break; sleep 0.05; done
  if kill -0 "$GG_PID" 2>/dev/null; then kill -KILL "$GG_PID"; fi
  wait "$GG_PID" 2>/dev/null
  GG_EXIT=$?
  GG_PID=""
}

t() {
  local desc=$1; shift
  if "$@"; then GG_PASSED=$((GG_PASSED + 1)); echo "ok - $desc"
  else GG_FAILED=$((GG_FAILED + 1)); echo "not ok - $desc"; fi
}

# eq GOT WANT — a case's comparison (t "…" eq "$got" want): when they differ it says what it
# expected and what it got, so a failure reads without rerunning.
eq() { [ "$1" = "$2" ] || { echo "   expected '$2', got '$1'" >&2; return 1; }; }

# The summary (tests/summary.sh) lists "# SKIP" lines with their reasons.
gg_skip() {
  GG_SKIPPED=$((GG_SKIPPED + ${3:-1})); echo "skip - $1 # SKIP $2"
}

# A restart the remaining checks depend on: when it fails, that is a counted failure and
# the script ends (every later check would fail for the same reason).
gg_restart() {
  local desc=$1; shift
  rm -f "$GG_TMP/serve.out"
  gg_start "$@" && return 0
  t "$desc" false
  gg_finish
}

# A sanitizer report from a server this script started (a data race under TSan, a leak or
# bad access under ASan/UBSan) fails the script: the server's exit status is not what
# every test checks, and a report in its stderr would otherwise go unseen.
gg_sanitizer_check() {
  local f found=""
  for f in "$GG_TMP/serve.err.earlier" "$GG_TMP/serve.err"; do
    [ -f "$f" ] || continue
    if grep -qE 'WARNING: ThreadSanitizer|ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$f"; then
      found=1; grep -E -A20 'WARNING: ThreadSanitizer|ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$f" | head -60
    fi
  done
  [ -z "$found" ]
}

gg_finish() {
  [ -n "$GG_PID" ] && gg_stop
  t "no sanitizer report from the server" gg_sanitizer_check
  if [ "$GG_SKIPPED" -gt 0 ]; then echo "$GG_PASSED passed, $GG_FAILED failed, $GG_SKIPPED skipped"
  else echo "$GG_PASSED passed, $GG_FAILED failed"; fi
  [ "$GG_FAILED" -eq 0 ]
  exit $?
}

# gg_searchable FILE → FILE's bytes, and for a SQLite database (its WAL read with it) the text
# of its history bodies, which are zstd frames on disk (migrations/0020): what a search for a
# value that must never be stored (a token, a secret) has to read.
gg_searchable() {
  cat "$1"
  [ "$(head -c 15 "$1" 2>/dev/null)" = "SQLite format 3" ] && python3 "$GG_SRCDIR/tests/integration/ggdb.py" bodies "$1"
  return 0
}

# curl wrapper: gg_curl OUTFILE [curl args...] → prints the status code. GG_CURL_MAX_TIME
# (default 10 s) for requests that start a downstream child (npx under a parallel CI's load).
gg_curl() {
  local out=$1; shift
  curl -sS --max-time "${GG_CURL_MAX_TIME:-10}" -o "$out" -D "$out.h" -w '%{http_code}' "$@" 2>/dev/null
}
