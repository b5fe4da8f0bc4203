#!/usr/bin/env bash
# bench/gateway/keepalive_stall.sh — looks for the keep-alive stall seen in session 23 (see
# README.md, "A stall of keep-alive connections", and src/cli/mhd_epoll.c, its fix; before
# the fix about 1 round in 30 stalled here): ROUNDS times (default 40) a fresh
# `graphgate serve` pinned to core 0 (run.sh's setup: SQLite, durable history, the switch
# example, an API key and a session), wrk with 256 connections for 2 s, then again for 4 s
# watched from outside. When the server's CPU stays flat for half a second while wrk runs, it
# prints the evidence — each side's socket queues (a stalled connection has the request
# unread on the server side), which epoll set holds the connections and with what events, and
# every thread's wait channel — and exits 1. Prints the calls of every round otherwise.
# Needs wrk, taskset, ss (iproute2) and 2 CPUs. Not part of the test suite: it is a search
# that can only fail by chance (the fix's own test is test_server's
# epoll_round_after_full_does_not_wait).
#
# usage: bench/gateway/keepalive_stall.sh [BUILD_DIR (default build)] [ROUNDS]
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$top/build}
rounds=${2:-40}
bin="$build/src/graphgate"
example="$top/tests/npm/node_modules/mcpgraph/examples/switch_example.yaml"
. "$top/bench/gateway/lib.sh"
bench_start gg-stall wrk taskset ss
[ "$(nproc --all)" -ge 2 ] || { echo "bench: needs 2 CPUs"; exit 77; }
bench_sqlite_keys
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# evidence PID PORT → what each side holds and where the server waits
evidence() {
  local pid=$1 port=$2 f fd
  echo "server-side sockets of :$port (count, state, unread bytes, unsent bytes):"
  ss -tnH "( sport = :$port )" | awk '{print $1, $2, $3}' | sort | uniq -c | sort -rn | head -5
  echo "client-side sockets to :$port:"
  ss -tnH "( dport = :$port )" | awk '{print $1, $2, $3}' | sort | uniq -c | sort -rn | head -5
  ss -tnpH "( sport = :$port )" | grep -o 'fd=[0-9]*' | cut -d= -f2 | sort >"$tmp/conns"
  for f in /proc/"$pid"/fdinfo/*; do
    grep -q '^tfd:' "$f" 2>/dev/null || continue
    fd=${f##*/}
    grep '^tfd:' "$f" | awk '{print $2}' | sort >"$tmp/ep"
    echo "epoll fd $fd watches $(wc -l <"$tmp/ep") fds, $(comm -12 "$tmp/conns" "$tmp/ep" | wc -l) of them the connections;" \
      "first: $(grep '^tfd:' "$f" | awk -v c="$(head -1 "$tmp/conns")" '$2 == c' | head -1)"
  done
  for f in /proc/"$pid"/task/*; do echo "thread $(cat "$f/comm"): $(cat "$f/wchan")"; done | sort | uniq -c
}

for r in $(seq "$rounds"); do
  db="$tmp/gg-$r.db"; cp "$tmp/gg.db" "$db"
  bench_serve durable 1 0 "$tmp/serve.err" --db "$db"
  bench_listening 200 "$tmp/serve.err"
  rm -f "$tmp/put.json"
  bench_graph "$pub" "$admin" "$tmp/put.json"
  bench_session "$pub" "$key"
  port=${url#http://127.0.0.1:}; port=${port%%/*}
  env KEY="$key" SID="$sid" taskset -c 1 wrk -t1 -c256 -d2s -s "$top/bench/gateway/call.lua" "$url" >/dev/null 2>&1
  env KEY="$key" SID="$sid" taskset -c 1 wrk -t1 -c256 -d4s -s "$top/bench/gateway/call.lua" "$url" >"$tmp/wrk.txt" 2>&1 &
  wpid=$!
  sleep 1.2
  c0=$(ticks "$pid"); sleep 0.5; c1=$(ticks "$pid")
  stalled=""
  if [ "$c0" = "$c1" ]; then stalled=1; echo "round $r: STALL (the server's CPU flat while wrk runs)"; evidence "$pid" "$port"; fi
  wait "$wpid"
  echo "round $r: $(awk '/ requests in / {print $1}' "$tmp/wrk.txt") calls"
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  [ -n "$stalled" ] && exit 1
done
echo "no stall in $rounds rounds"
