#!/usr/bin/env bash
# http.sh — the HTTP layer under a hostile client: slowloris (1,100 half-sent requests from
# one address, then spread over 20 addresses) while /health stays fast, the receive deadline
# cutting every half-sent request, ambiguous body framing (conflicting Content-Length,
# Content-Length + Transfer-Encoding → 400 and close; unknown transfer coding → 501),
# foreign Host/Origin on internal routes → 403, a non-loopback internal_listen refused.
# Loopback only, bounded in sockets and time. Prints "N passed, N failed".
. "$GG_SRCDIR/tests/attack/lib_attack.sh"
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 not installed"; exit 77; }
python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.2", 0))' 2>/dev/null ||
  { echo "SKIP: cannot bind 127.0.0.2 (loopback aliases needed for the per-address cap)"; exit 77; }
[ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -ge 2400 ] || ulimit -n 4096 2>/dev/null ||
  { echo "SKIP: open-file limit $(ulimit -n) is below 2,400"; exit 77; }

RECEIVE_S=3
export GRAPHGATE_HTTP_RECEIVE_TIMEOUT=${RECEIVE_S}s # default 15s; short to keep the test short
gg_start || { echo "0 passed, 1 failed"; exit 1; }
pub_port=${GG_PUB##*:}

# slowloris COUNT HOLD_S SOURCES → JSON report in $GG_TMP/sl.json; meanwhile /health is
# timed every 0.3 s into $GG_TMP/health.txt (milliseconds, 99999 = failed)
slowloris() {
  : >"$GG_TMP/health.txt"
  python3 "$GG_SRCDIR/tests/attack/slowloris.py" 127.0.0.1 "$pub_port" "$1" "$2" "$3" >"$GG_TMP/sl.json" &
  local pid=$! i
  for i in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.3
    health_ms >>"$GG_TMP/health.txt"
  done
  wait "$pid"
}
sl() { jget "$GG_TMP/sl.json" "d['$1']"; }
health_max() { sort -n "$GG_TMP/health.txt" | tail -1; }
le() { [ "$1" -le "$2" ] || { echo "   $3: $1 > $2" >&2; return 1; }; }
ge() { [ "$1" -ge "$2" ] || { echo "   $3: $1 < $2" >&2; return 1; }; }

# -- slowloris from one address: the per-address cap (256) refuses the rest at once --------------
slowloris 1100 $((RECEIVE_S + 3)) 1
cat "$GG_TMP/sl.json"
echo "   /health during the attack (ms): $(tr '\n' ' ' <"$GG_TMP/health.txt")"
t "one address keeps at most 256 connections" le "$(sl kept)" 256 "kept"
t "the other ~844 are refused at once" ge "$(sl refused_at_once)" 800 "refused at once"
t "every half-sent request is cut by the receive deadline" le "$(sl open_at_end)" 0 "still open"
t "cut within receive_timeout + 2 s" python3 -c "import sys; sys.exit(not $(sl last_cut_s) <= $RECEIVE_S + 2)"
t "/health answered within 250 ms throughout ($(wc -l <"$GG_TMP/health.txt") probes)" le "$(health_max)" 250 "slowest /health"

# -- spread over 20 addresses (55 each, under the cap): they fill the listener; while it is
# nearly full the deadline is one second, so /health waits at most about that long
slowloris 1100 $((RECEIVE_S + 3)) 20
cat "$GG_TMP/sl.json"
echo "   /health during the attack (ms): $(tr '\n' ' ' <"$GG_TMP/health.txt")"
t "spread: the listener accepted up to its 1,024 connections" ge "$(sl kept)" 900 "kept"
t "spread: every one of them is cut by the deadline" le "$(sl open_at_end)" 0 "still open"
t "spread: /health never failed (within 2.5 s) during the attack" le "$(health_max)" 2500 "slowest /health"
t "spread: /health is fast again right after" health_fast 250
cuts=$(curl -s "$GG_INT/metrics" | sed -n 's/^graphgate_http_receive_timeouts_total \([0-9]*\)/\1/p')
t "metrics count the cut connections ($cuts)" ge "${cuts:-0}" 900 "graphgate_http_receive_timeouts_total"
t "libmicrohttpd's per-connection messages are rate limited in the log" \
  le "$(grep -c '"msg":"libmicrohttpd"' "$GG_TMP/serve.err")" 300 "log lines"

# -- body framing --------------------------------------------------------------------------------
# raw REQUEST (python bytes literal) → "<status lines> closed|open": every status line the
# server sent within 3 s, and whether it closed the connection
raw() {
  python3 - "$pub_port" "$1" <<'PY'
import re, socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.settimeout(3)
s.sendall(eval(sys.argv[2]))
data, closed, end = b"", False, time.monotonic() + 3
try:
    while time.monotonic() < end:
        d = s.recv(65536)
        if not d:
            closed = True
            break
        data += d
except socket.timeout:
    pass
codes = re.findall(rb"HTTP/1\.1 (\d{3})", data)
print(" ".join(c.decode() for c in codes) or "none", "closed" if closed else "open")
PY
}
smuggled='GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'
t "conflicting Content-Length → 400 and close (the rest is never a second request)" eq \
  "$(raw "b'POST /health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\nContent-Length: 45\r\n\r\nhello$smuggled'")" "400 closed"
t "Content-Length + Transfer-Encoding → 400 and close" eq \
  "$(raw "b'POST /health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n$smuggled'")" "400 closed"
t "Transfer-Encoding: xchunked → 501 and close" eq \
  "$(raw "b'POST /health HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: xchunked\r\n\r\nhello'")" "501 closed"
t "Transfer-Encoding: gzip, chunked → 501 and close" eq \
  "$(raw "b'POST /health HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n'")" "501 closed"
first_close() { set -- $1; [ "$1" = 400 ] && [ "${!#}" = closed ] || { echo "   got $*" >&2; return 1; }; }
t "Content-Length: +5 → 400 and close (libmicrohttpd's own answer)" first_close \
  "$(raw "b'POST /health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: +5\r\n\r\nhello'")"
t "identical duplicate Content-Length and plain chunked still work (405: /health is GET only)" eq \
  "$(raw "b'POST /health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}POST /health HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n2\r\n{}\r\n0\r\n\r\n'")" "405 405 closed"
t "the error body is the JSON error model" eval \
  "curl -s -X POST -H 'Transfer-Encoding: xchunked' --data-binary x '$GG_PUB/health' | grep -q '\"code\":\"not_implemented\"'"

# -- Host / Origin on internal routes ----------------------------------------------------------
code() { curl -s -o "$GG_TMP/c.json" -w '%{http_code}' --max-time 5 "$@"; }
for route in "GET /metrics" "POST /internal/specs/reload" "POST /internal/invoke" "GET /internal/tools" \
             "POST /internal/mcp/t/g" "POST /internal/tenants/t/graphs/g/tools/x/call"; do
  m=${route%% *} p=${route#* }
  t "foreign Host refused: $route" eq "$(code -X "$m" -H 'Host: attacker.example' --data-binary '{}' "$GG_INT$p")" 403
  t "foreign Origin refused: $route" eq "$(code -X "$m" -H 'Origin: http://attacker.example' --data-binary '{}' "$GG_INT$p")" 403
done
t "the refusal says why" grep -q 'Origin not allowed on the internal listener' "$GG_TMP/c.json"
t "a loopback Host still reaches /metrics" eq "$(code "$GG_INT/metrics")" 200
t "localhost:port Host still reaches /metrics" eq "$(code -H "Host: localhost:${GG_INT##*:}" "$GG_INT/metrics")" 200
t "/health answers probes whatever the Host" eq "$(code -H 'Host: 10.1.2.3:8081' "$GG_INT/health")" 200

# -- internal_listen on a non-loopback address ---------------------------------------------------
timeout 20 "$GG_BIN" serve --db "$GG_TMP/other.db" --listen 127.0.0.1:0 --internal-listen 0.0.0.0:0 >"$GG_TMP/pub.out" 2>"$GG_TMP/pub.err"
rc=$?
t "internal_listen 0.0.0.0 refused without internal_listen_public (exit $rc)" eval \
  "[ $rc -ne 0 ] && grep -q 'not a loopback address' '$GG_TMP/pub.err'"

t "server still healthy" health_fast 250
t "server stops cleanly" gw_stop_clean
gg_finish
