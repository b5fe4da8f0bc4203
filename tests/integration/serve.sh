#!/usr/bin/env bash
# Foundation integration test: the real `graphgate serve` on free loopback ports with a
# temporary database, driven by curl — health/ready/metrics, JSON 404/405, 413, internal-only
# routes, X-Request-Id, access log, CLI errors, graceful shutdown with a request in flight.
. "${GG_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/integration/lib.sh"
T=$GG_TMP

gg_start || { echo "0 passed, 1 failed"; exit 1; }

status_is() { [ "$1" = "$2" ] || { echo "  expected $2, got $1"; return 1; }; }
body_has() { grep -q -- "$2" "$1" || { echo "  body lacks $2:"; head -c 400 "$1"; echo; return 1; }; }
hdr_has() { grep -qi -- "$2" "$1.h" || { echo "  headers lack $2:"; cat "$1.h"; return 1; }; }

c_health() {
  local s; s=$(gg_curl "$T/h" "$GG_PUB/health")
  status_is "$s" 200 && body_has "$T/h" '"status":"ok"' && body_has "$T/h" '"version":' \
    && body_has "$T/h" '"uptime_seconds":' && hdr_has "$T/h" '^Content-Type: application/json'
}
c_health_internal() { status_is "$(gg_curl "$T/hi" "$GG_INT/health")" 200; }
c_ready() { local s; s=$(gg_curl "$T/r" "$GG_PUB/ready"); status_is "$s" 200 && body_has "$T/r" '"status":"ready"'; }
c_metrics() {
  local s; s=$(gg_curl "$T/m" "$GG_INT/metrics")
  status_is "$s" 200 && hdr_has "$T/m" '^Content-Type: text/plain' \
    && body_has "$T/m" '^graphgate_http_requests_total{route="/health",method="GET",status="200"} [1-9]' \
    && body_has "$T/m" '^graphgate_http_request_duration_seconds_bucket{route="/health",method="GET",le="+Inf"}' \
    && body_has "$T/m" '^graphgate_http_requests_in_flight ' \
    && body_has "$T/m" '^process_resident_memory_bytes [1-9]'
}
c_metrics_internal_only() {
  local s; s=$(gg_curl "$T/mp" "$GG_PUB/metrics")
  status_is "$s" 404 && body_has "$T/mp" '"code":"not_found"'
}
# Routes the gateway registers only on the internal listener do not exist on the public one
# (the router's own 404, not a handler's).
c_internal_routes_invisible() {
  local s1 s2
  s1=$(gg_curl "$T/ip" -X POST -H 'Content-Type: application/json' -d '{}' "$GG_PUB/internal/mcp/demo/example")
  s2=$(gg_curl "$T/ii" -X POST -H 'Content-Type: application/json' -d '{}' "$GG_INT/internal/mcp/demo/example")
  status_is "$s1" 404 && body_has "$T/ip" '"message":"no route for this path"' \
    && ! grep -q 'no route for this path' "$T/ii"
}
c_404() {
  local s; s=$(gg_curl "$T/n" "$GG_PUB/no/such/route")
  status_is "$s" 404 && body_has "$T/n" '^{"error":{"code":"not_found","message":"[^"]*"}}$' \
    && hdr_has "$T/n" '^Content-Type: application/json'
}
c_405() {
  local s; s=$(gg_curl "$T/x" -X DELETE "$GG_PUB/health")
  status_is "$s" 405 && body_has "$T/x" '"code":"method_not_allowed"' && hdr_has "$T/x" '^Allow: GET'
}
c_413_length() {
  head -c $((2 * 1024 * 1024)) /dev/zero | tr '\0' 'a' >"$T/big"
  local s; s=$(gg_curl "$T/b" -H 'Expect:' -H 'Content-Type: application/json' --data-binary @"$T/big" "$GG_PUB/health")
  status_is "$s" 413 && body_has "$T/b" '"code":"too_large"'
}
c_413_chunked() {
  local s; s=$(gg_curl "$T/bc" -H 'Expect:' -H 'Transfer-Encoding: chunked' --data-binary @"$T/big" "$GG_PUB/health")
  status_is "$s" 413 && body_has "$T/bc" '"code":"too_large"'
}
c_still_serving() { status_is "$(gg_curl "$T/h2" "$GG_PUB/health")" 200; }
c_request_id_echo() {
  gg_curl "$T/id" -H 'X-Request-Id: it-req-42' "$GG_PUB/health" >/dev/null
  hdr_has "$T/id" '^X-Request-Id: it-req-42' 
}
c_request_id_generated() {
  gg_curl "$T/id2" -H 'X-Request-Id: has spaces and <angle>' "$GG_PUB/health" >/dev/null
  hdr_has "$T/id2" '^X-Request-Id: [0-9a-f]\{32\}'
}
c_access_log() {
  local i
  for i in $(seq 1 20); do grep -q '"request_id":"it-req-42"' "$T/serve.err" && break; sleep 0.05; done
  grep '"request_id":"it-req-42"' "$T/serve.err" | head -1 >"$T/line"
  body_has "$T/line" '"msg":"access"' && body_has "$T/line" '"method":"GET"' \
    && body_has "$T/line" '"route":"/health"' && body_has "$T/line" '"status":200' \
    && body_has "$T/line" '"bytes":[0-9]' && body_has "$T/line" '"duration_ms":[0-9]'
}
c_port_in_use() {
  local port=${GG_PUB##*:}
  "$GG_BIN" serve --db "$T/other.db" --listen "127.0.0.1:$port" --internal-listen 127.0.0.1:0 \
    >"$T/dup.out" 2>"$T/dup.err" &
  local p=$! i
  for i in $(seq 1 100); do kill -0 $p 2>/dev/null || break; sleep 0.05; done
  if kill -0 $p 2>/dev/null; then kill -KILL $p; wait $p 2>/dev/null; echo "  second serve kept running"; return 1; fi
  wait $p; local rc=$?
  status_is "$rc" 1 && grep -q 'listen' "$T/dup.err"
}
c_bad_flag() { "$GG_BIN" serve --no-such-flag >/dev/null 2>"$T/bf.err"; status_is "$?" 2; }
c_help() { "$GG_BIN" serve --help >"$T/help" 2>&1 && grep -q -- '--internal-listen' "$T/help"; }

# A newer migration applied by another process (a newer graphgate, say) makes the running
# server not ready: /ready answers 503 while /health stays 200.
c_ready_503_after_foreign_migration() {
  mkdir -p "$T/mig"
  cp "$GG_SRCDIR"/migrations/*.sql "$T/mig/"
  local last next
  last=$(ls "$T/mig" | sed -n 's/^\([0-9]\{4\}\)_.*\.sql$/\1/p' | sort | tail -1)
  next=$(printf '%04d' $((10#$last + 1)))
  echo 'CREATE TABLE it_extra (x INTEGER);' >"$T/mig/${next}_it_extra.sql"
  "$GG_BIN" migrate --db "$T/gg.db" --migrations "$T/mig" >"$T/mig.out" 2>&1 || { cat "$T/mig.out"; return 1; }
  local s h
  s=$(gg_curl "$T/r503" "$GG_PUB/ready")
  h=$(gg_curl "$T/h503" "$GG_PUB/health")
  status_is "$s" 503 && body_has "$T/r503" '"status":"not_ready"' && body_has "$T/r503" '"code":"migration"' \
    && status_is "$h" 200
}

# Graceful stop: a slow upload is in flight when SIGTERM arrives; it still gets its answer,
# new connections are refused, and serve exits 0.
c_graceful() {
  head -c 60000 /dev/zero | tr '\0' 'b' >"$T/slow"
  curl -sS --max-time 30 -o "$T/slow.out" -w '%{http_code}' -H 'Expect:' --limit-rate 30K \
    --data-binary @"$T/slow" "$GG_PUB/health" >"$T/slow.code" 2>/dev/null &
  local cpid=$! i
  for i in $(seq 1 200); do  # wait (up to ~10 s on a loaded machine) until the request is in flight
    curl -s --max-time 2 "$GG_INT/metrics" | grep -q '^graphgate_http_requests_in_flight [2-9]' && break
    sleep 0.05
  done
  local t0; t0=$(date +%s%N)
  kill -TERM "$GG_PID"
  # new connections are refused while the upload is still in flight (polled, bounded)
  local refused=0
  for i in $(seq 1 100); do
    kill -0 $cpid 2>/dev/null || break
    curl -s --max-time 2 -o /dev/null "$GG_PUB/health" || { kill -0 $cpid 2>/dev/null && refused=1; break; }
    sleep 0.05
  done
  wait $cpid
  gg_stop
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  status_is "$(cat "$T/slow.code")" 405 && body_has "$T/slow.out" '"code":"method_not_allowed"' \
    && status_is "$refused" 1 && status_is "$GG_EXIT" 0 \
    && { [ "$ms" -ge 500 ] || { echo "  stopped after ${ms}ms, before the upload finished"; return 1; }; } \
    && grep -q '"msg":"stopped"' "$T/serve.err"
}

# A second SIGTERM while draining stops at once (still exit 0) instead of waiting for a
# slow request.
c_second_signal() {
  GG_DB="$T/second.db" gg_start || return 1
  head -c 600000 /dev/zero | tr '\0' 'c' >"$T/slower"
  curl -sS --max-time 60 -o /dev/null -H 'Expect:' --limit-rate 30K \
    --data-binary @"$T/slower" "$GG_PUB/health" >/dev/null 2>&1 &
  local cpid=$! i
  for i in $(seq 1 200); do
    curl -s --max-time 2 "$GG_INT/metrics" | grep -q '^graphgate_http_requests_in_flight [2-9]' && break
    sleep 0.05
  done
  local t0; t0=$(date +%s%N)
  kill -TERM "$GG_PID"
  # the second signal once the first has been taken (it logs "shutting down"), bounded
  for i in $(seq 1 200); do grep -q '"shutting down"' "$GG_TMP/serve.err" && break; sleep 0.05; done
  kill -TERM "$GG_PID"
  gg_stop
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  kill "$cpid" 2>/dev/null; wait "$cpid" 2>/dev/null
  status_is "$GG_EXIT" 0 && { [ "$ms" -lt 5000 ] || { echo "  took ${ms}ms"; return 1; }; } \
    && grep -q 'second signal' "$T/serve.err"
}

t "GET /health answers 200 JSON with status, version, uptime" c_health
t "GET /health on the internal listener" c_health_internal
t "GET /ready answers 200 with a migrated database" c_ready
t "GET /metrics (internal) has requests, latency histogram, in-flight, RSS" c_metrics
t "/metrics is not on the public listener (404 JSON)" c_metrics_internal_only
t "unknown route answers 404 with the JSON error model" c_404
t "internal-only gateway routes are absent from the public listener" c_internal_routes_invisible
t "wrong method answers 405 JSON with Allow" c_405
t "oversized body (Content-Length) answers 413 JSON" c_413_length
t "oversized chunked body answers 413 JSON" c_413_chunked
t "server keeps serving after the 413s" c_still_serving
t "X-Request-Id is echoed" c_request_id_echo
t "an invalid X-Request-Id is replaced by a generated one" c_request_id_generated
t "access log line has method, route, status, bytes, duration, request id" c_access_log
t "a second serve on a busy port fails with exit 1" c_port_in_use
t "serve rejects an unknown flag with exit 2" c_bad_flag
t "serve --help documents the flags" c_help
t "/ready answers 503 once the schema moved on under the server" c_ready_503_after_foreign_migration
t "SIGTERM with a request in flight: answered, new connections refused, exit 0" c_graceful
t "a second SIGTERM ends the drain at once, exit 0" c_second_signal
gg_finish
