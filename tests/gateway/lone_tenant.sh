#!/usr/bin/env bash
# lone_tenant.sh — tenants.max_queued (64 by default) defends other tenants; it does not
# refuse a tenant that is alone (issue 31). One tenant sends 256 calls at once to a tool
# that computes for some ms; with inline_budget 0 every call waits for a worker (what
# happens under load whenever calls leave the inline path) and with 2 workers the tenant
# runs on one (tenants.max_running: half the workers), so its queue grows far past 64: no
# call gets 429 (before: every call past the 64th). A second tenant's calls meanwhile are
# all admitted and answered while the first tenant's backlog is still there.
# tenants.max_concurrent_executions (calls in flight, 64 by default) is a separate cap,
# raised here to the burst's size. Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
. "$GG_SRCDIR/tests/gateway/lib_durable.sh" # wait_for
N=${LONE_N:-256}

cat >"$GG_TMP/busy.yaml" <<'YAML'
version: "1.0"
server: {name: busy, version: "1.0.0"}
tools:
  - name: work
    description: sums a range (milliseconds of computing)
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: sum}
      - {id: sum, type: transform, transform: {expr: '{"sum": $sum([1..300000])}'}, next: exit}
      - {id: exit, type: exit}
YAML
for tn in acme other; do
  gw_cli_run tenant create $tn >/dev/null
  gw_cli_run graph put $tn busy "$GG_TMP/busy.yaml" >/dev/null
done
conf="$GG_TMP/gg.yaml"
# every connection comes from 127.0.0.1: the per-address bound (256) above the burst plus
# the test's own reads of /metrics while the burst is queued
printf 'workers: 2\ninline_budget: 0\nhttp:\n  max_connections_per_ip: %d\ntenants:\n  max_concurrent_executions: %d\n' \
  $((2 * N + 64)) $((N + 16)) >"$conf"
gg_start --config "$conf" || { echo "0 passed, 1 failed"; exit 1; }
t "setup" gw_cli_clean
metric() { curl -s "$GG_INT/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
queued_over() { [ "$(metric graphgate_queue_depth)" -gt "$1" ] 2>/dev/null; }
url() { echo "$GG_INT/internal/tenants/$1/graphs/busy/tools/work/call"; }
burst() { # TENANT N OUT: N calls at once, one status code a line in OUT
  local i
  { for i in $(seq 1 "$2"); do printf 'url = "%s"\noutput = "/dev/null"\n' "$(url "$1")"; done; } >"$GG_TMP/burst-$1.cfg"
  curl -s -Z --parallel-immediate --parallel-max "$2" --max-time 120 -X POST --data-binary '{}' \
    -w '%{http_code}\n' -K "$GG_TMP/burst-$1.cfg" >"$3" 2>/dev/null
}
codes() { sort "$1" | uniq -c | awk '{printf "%s%s×%s", (NR > 1 ? " " : ""), $2, $1}'; }

# ---- one tenant alone: its queue grows past max_queued, nothing is refused
rej0=$(metric graphgate_tool_calls_rejected_total)
burst acme $N "$GG_TMP/a1.codes" & bp=$!
t "the tenant's calls queue past max_queued (64) for a worker" wait_for 60 queued_over 64
wait "$bp"
t "all $N calls answered 200, none 429" eq "$(codes "$GG_TMP/a1.codes")" "200×$N"
t "no call counted rejected" eq "$(metric graphgate_tool_calls_rejected_total)" "$rej0"

# ---- a second tenant while the first floods: admitted and answered at once
burst acme $N "$GG_TMP/a2.codes" & bp=$!
wait_for 60 queued_over 64
burst other 8 "$GG_TMP/b.codes"
t "the other tenant's calls are all answered 200" eq "$(codes "$GG_TMP/b.codes")" "200×8"
t "... while the flooding tenant's backlog is still queued" queued_over 0
wait "$bp"
t "the flood's calls are answered (200, or 429 past max_queued once the other tenant waited)" \
  eq "$(grep -cvE '^(200|429)$' "$GG_TMP/a2.codes")" 0
gg_finish
