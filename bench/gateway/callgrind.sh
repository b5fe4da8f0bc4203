#!/usr/bin/env bash
# bench/gateway/callgrind.sh — instructions a recorded tools/call of the switch example, the
# figure of issue #31 (session 9 measured 126.8 k; goal <= 60 k). Timed runs on a shared 2-core
# virtual machine move by +-10 % between identical builds; instructions counted by callgrind
# do not, so each change to the request path is measured here.
#
# `graphgate serve` runs under `valgrind --tool=callgrind --instr-atstart=no` with run.sh's
# setup (SQLite, the switch example, an API key, an MCP session, access log off), takes
# WARMUP calls uninstrumented, then instrumentation is switched on (callgrind_control -i on)
# for exactly CALLS calls from CONNS keep-alive connections and off again. Only serve runs
# under valgrind, so the loader's instructions are not counted; every thread of serve is
# (HTTP polling threads, workers, history writer, quota keeper). Prints instructions a call
# and the top 25 functions, inclusive and self.
#
# usage: bench/gateway/callgrind.sh [BUILD_DIR (default build)] [CALLS (default 2000)]
# Environment: CONNS (default 4), WARMUP (default 200), MODE (history.durability: durable,
# the default, or async), HEADER ("Name: value", one extra request header, e.g. an X-Pad of a
# token's length), KEEP (a folder: the callgrind output is copied there), TOP (default 25),
# BODY and EXPECT (another JSON-RPC request and a text its answer must hold, e.g. an MCP ping
# and '"result":{}': what a call costs without the graph's run, floor.sh's second row).
# Threads are pinned to http.threads = workers = 4 (the defaults on 2 cores) so that the
# figure does not depend on the machine's core count. Takes about a minute for 2,000 calls.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$top/build}
calls=${2:-2000}
conns=${CONNS:-4}
warmup=${WARMUP:-200}
mode=${MODE:-durable}
ntop=${TOP:-25}
bin="$build/src/graphgate"
example="$top/tests/npm/node_modules/mcpgraph/examples/switch_example.yaml"
for need in valgrind callgrind_control callgrind_annotate python3 curl; do
  command -v "$need" >/dev/null || { echo "callgrind: $need not installed"; exit 77; }
done
[ -x "$bin" ] || { echo "callgrind: $bin not built"; exit 1; }
[ -f "$example" ] || { echo "callgrind: npm peers missing (run tests/npm-deps.sh)"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gg-callgrind.XXXXXX")
vpid=""
cleanup() {
  [ -n "$vpid" ] && kill "$vpid" 2>/dev/null && wait "$vpid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
export GG_SRCDIR="$top"
while IFS='=' read -r name _; do unset "$name"; done < <(env | grep '^GRAPHGATE_' || true)

db=(--db "$tmp/gg.db")
"$bin" migrate "${db[@]}" >/dev/null 2>&1
"$bin" tenant create bench "${db[@]}" >/dev/null 2>&1
admin=$("$bin" key create --tenant bench --scopes admin "${db[@]}" 2>/dev/null | grep '^gg_')
key=$("$bin" key create --tenant bench --scopes tools:read,tools:execute "${db[@]}" 2>/dev/null | grep '^gg_')
[ -n "$admin" ] && [ -n "$key" ] || { echo "callgrind: could not create the keys"; exit 1; }

GRAPHGATE_LOG_ACCESS=false GRAPHGATE_HISTORY_DURABILITY=$mode GRAPHGATE_HTTP_THREADS=4 GRAPHGATE_WORKERS=4 \
  valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$tmp/callgrind.out" \
  "$bin" serve "${db[@]}" --listen 127.0.0.1:0 --internal-listen 127.0.0.1:0 \
  >"$tmp/serve.out" 2>"$tmp/serve.err" &
vpid=$!
for _ in $(seq 600); do grep -q internal "$tmp/serve.out" 2>/dev/null && break; sleep 0.1; done
pub=$(sed -n 's|^ *public *\(http://[^ ]*\)/$|\1|p' "$tmp/serve.out")
[ -n "$pub" ] || { echo "callgrind: graphgate did not start"; cat "$tmp/serve.err"; exit 1; }
code=$(curl -s -o "$tmp/put.json" -w '%{http_code}' -X PUT -H "Authorization: Bearer $admin" \
  -H 'Content-Type: application/yaml' --data-binary @"$example" "$pub/admin/tenants/bench/graphs/switch")
[ "$code" = 201 ] || { echo "callgrind: graph upload failed ($code)"; cat "$tmp/put.json"; exit 1; }

# the loader: CONNS keep-alive connections, one thread each, wrk's call.lua headers; it
# switches callgrind's instrumentation on after the warm-up and off after the measured calls
# (callgrind_control waits for valgrind's answer); every answer must hold EXPECT (the switch's "high")
python3 - "$pub/mcp/bench/switch" "$key" "$conns" "$warmup" "$calls" "$vpid" "${HEADER:-}" "${BODY:-}" "${EXPECT:-}" <<'PY' || exit 1
import http.client, json, subprocess, sys, threading, urllib.parse
url, key, conns, warmup, calls, vpid, extra = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6], sys.argv[7]
body = (sys.argv[8] or '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_switch","arguments":{"value":42}}}').encode()
expect = (sys.argv[9] or '"structuredContent":{"result":"high"}').encode()
u = urllib.parse.urlsplit(url)
hdr = {"Authorization": "Bearer " + key, "Content-Type": "application/json",
       "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
if extra:
    name, _, value = extra.partition(":")
    hdr[name.strip()] = value.strip()
c = http.client.HTTPConnection(u.hostname, u.port)
c.request("POST", u.path, json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}), hdr)
r = c.getresponse(); r.read()
hdr["Mcp-Session-Id"] = r.getheader("Mcp-Session-Id")
assert hdr["Mcp-Session-Id"], "no session"
bad = []
def load(n):
    c = http.client.HTTPConnection(u.hostname, u.port)
    for _ in range(n):
        c.request("POST", u.path, body, hdr)
        r = c.getresponse(); b = r.read()
        if r.status != 200 or expect not in b:
            bad.append((r.status, b[:300]))
    c.close()
def phase(total):
    ts = [threading.Thread(target=load, args=(total // conns + (i < total % conns),)) for i in range(conns)]
    for t in ts: t.start()
    for t in ts: t.join()
def instr(state):
    subprocess.run(["callgrind_control", "-i", state, vpid], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
phase(warmup)
instr("on")
phase(calls)
instr("off")
if bad:
    print("callgrind: %d bad answers, first: %r" % (len(bad), bad[0]), file=sys.stderr)
    sys.exit(1)
PY
# a graceful stop writes the output (instrumentation is off: the drain is not counted)
kill -TERM "$vpid"; wait "$vpid"; vpid=""
out="$tmp/callgrind.out"
[ -s "$out" ] || { echo "callgrind: no output"; cat "$tmp/serve.err"; exit 1; }
[ -n "${KEEP:-}" ] && mkdir -p "$KEEP" && cp "$out" "$KEEP/"
total=$(sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$out" | head -1)
# the history writer's and the quota keeper's threads, by their thread functions' inclusive
# cost; the writer's share moves by a few hundred instructions a call between runs with how
# many rows each commit takes; the rest (HTTP threads, workers) moves by less than 0.2 %
# (names as GCC may suffix them: writer_main.lto_priv.0 in an LTO build, .part.0, .isra.0)
incl() {
  callgrind_annotate --inclusive=yes --threshold=100 --auto=no "$out" 2>/dev/null |
    awk -v f="$1" '$0 ~ ":"f"(\\.[a-z_]+\\.[0-9]+)* \\[" {gsub(",", "", $1); print $1; exit}'
}
writer=$(incl writer_main) keeper=$(incl keeper_main)
# the writer's transactions: how often writer_main called write_batch
commits=$(callgrind_annotate --tree=calling --threshold=100 --auto=no "$out" 2>/dev/null |
  awk '/\*  .*:writer_main(\.[a-z_]+\.[0-9]+)* \[/ {w=1; next} w && /^ *$/ {exit} w && /:write_batch(\.[a-z_]+\.[0-9]+)* \(/ {gsub(/[(),x]/, "", $(NF-1)); print $(NF-1); exit}')
# libmicrohttpd zeroes each connection's memory pool between requests (MHD_pool_reset, and
# MHD_pool_reallocate when it shrinks the read buffer), ~1.5x http.header_memory bytes a
# request, with no option to skip it. glibc zeroes with `rep stosb`, which callgrind counts
# as one instruction per byte while the CPU stores 32 or more bytes a cycle: this figure is
# printed apart so that the rest can be compared with what the code does.
zeroing=$(callgrind_annotate --tree=caller --threshold=100 --auto=no "$out" 2>/dev/null |
  awk '/^ *$/ {z=0; delete blk; n=0; next}
       /\*  .*__memset/ {for (i = 1; i <= n; i++) if (blk[i] ~ /libmicrohttpd/) {v = blk[i]; sub(/^ */, "", v); sub(/ .*/, "", v); gsub(",", "", v); z += v}; print z; exit}
       {blk[++n] = $0}')
python3 - "$build" "$mode" "$calls" "$conns" "$total" "${writer:-0}" "${keeper:-0}" "${commits:-0}" "${zeroing:-0}" <<'PY'
import sys
build, mode, calls, conns, total, writer, keeper, commits, zeroing = sys.argv[1:3] + [int(x) for x in sys.argv[3:]]
k = lambda v: "%.1f k" % (v / calls / 1000)
print("graphgate %s, %s history, %d calls over %d connections: %d instructions, %s a call"
      % (build, mode, calls, conns, total, k(total)))
print("  history writer %s (%d commits), quota keeper %s, HTTP threads and the rest %s"
      % (k(writer), commits, k(keeper), k(total - writer - keeper)))
print("  libmicrohttpd's pool zeroing on the HTTP threads %s (one instruction a byte); without it the call"
      " costs %s, the HTTP threads %s" % (k(zeroing), k(total - zeroing), k(total - writer - keeper - zeroing)))
PY
# the function table of callgrind_annotate (after its "file:function" heading), TOP rows
functions() {
  callgrind_annotate "$1" --threshold=100 --auto=no "$out" 2>/dev/null |
    awk -v n="$ntop" 'f && /^-+$/ {next} f && NF && n-- > 0 {print} /file:function/ {f=1}'
}
echo
echo "== top $ntop, inclusive"
functions --inclusive=yes
echo
echo "== top $ntop, self"
functions --inclusive=no
