#!/usr/bin/env bash
# uploads.sh — hostile graph uploads against the real `graphgate serve`: YAML alias bombs
# (the 981-byte "billion laughs" inside an inputSchema and a depth-6 variant), 40k anchors
# and aliases, a huge schema, a $ref schema that applies a subschema 10^8 times, executionLimits
# above the operator's caps, the per-tenant graph count, bytes and version quotas, and four
# bad uploads at once. Throughout, /health answers quickly, every attack gets a clear error
# and another tenant's calls keep working.
. "$GG_SRCDIR/tests/attack/lib_attack.sh"
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 not installed"; exit 77; }
has() { grep -q -- "$2" "$1" || { echo "   $1 lacks '$2': $(head -c 300 "$1")" >&2; return 1; }; }
code() { jget "$1" 'd["error"]["code"]'; }
# faster_than MS CMD... — CMD succeeds within MS milliseconds (generous bounds: loaded CI)
faster_than() {
  local bound=$1 t0 t1; shift
  t0=$(date +%s%N); "$@" || return 1; t1=$(date +%s%N)
  [ $(((t1 - t0) / 1000000)) -le "$bound" ] || { echo "   took $(((t1 - t0) / 1000000)) ms (bound $bound)" >&2; return 1; }
}
G="$GG_TMP/g"; mkdir -p "$G"
# gen KIND ARG → a graph file in $G (python: exact sizes, no shell quoting games)
gen() {
  python3 - "$@" <<'EOF'
import sys
kind, arg, out = sys.argv[1], sys.argv[2], sys.argv[3]
head = "version: '1'\nserver: {name: s, version: '1'}\n%s\ntools:\n- name: t\n  description: d\n  inputSchema:\n"
tail = "  nodes:\n  - {id: entry, type: entry, next: echo}\n  - {id: echo, type: transform, transform: {expr: '$'}, next: exit}\n  - {id: exit, type: exit}\n"
limits, schema = "", "    type: object\n"
if kind == "laughs":  # each level allOf ten aliases of the previous
    d = int(arg)
    schema += "    $defs:\n      l0: &l0 {type: string}\n"
    for i in range(1, d + 1):
        schema += "      l%d: &l%d {allOf: [%s]}\n" % (i, i, ", ".join(["*l%d" % (i - 1)] * 10))
    schema += "    properties: {x: *l%d}\n" % d
elif kind == "anchors":  # short names (3 letters), flow style: 40k + 40k in ~480 KB
    n, abc = int(arg), "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    names = [abc[i // 3844] + abc[i // 62 % 62] + abc[i % 62] for i in range(n)]
    schema += "    x-anchors: [" + ",".join("&%s v" % a for a in names) + "]\n"
    schema += "    x-aliases: [" + ",".join("*" + a for a in names) + "]\n"
elif kind == "bigschema":  # a description of arg bytes, aliased 3 times: small file, big schema
    schema += "    description: &d '%s'\n    properties: {a: {description: *d}, b: {description: *d}, c: {description: *d}}\n" % ("d" * int(arg))
elif kind == "refs":  # no aliases: $ref/allOf, 10^8 applications per check
    schema += "    $defs:\n      l0: {type: string}\n"
    for i in range(1, 9):
        schema += "      l%d: {allOf: [%s]}\n" % (i, ", ".join(["{$ref: '#/$defs/l%d'}" % (i - 1)] * 10))
    schema += "    properties: {x: {$ref: '#/$defs/l8'}}\n"
elif kind == "fan":  # allowed: 999 subschemas per item, so a check's work grows with the array
    schema += "    properties:\n      x: {type: array, items: {allOf: [%s]}}\n" % ", ".join(["{type: integer}"] * 999)
elif kind == "limits":
    limits = "executionLimits: {maxNodeExecutions: %s}" % arg
elif kind == "plain":  # padded to about arg bytes with a comment
    limits = "# " + "p" * max(0, int(arg) - 400)
open(out, "w").write(head % limits + schema + tail)
EOF
}
gen laughs 9 "$G/laughs9.yaml"; gen laughs 6 "$G/laughs6.yaml"; gen anchors 40000 "$G/anchors.yaml"
gen bigschema 100000 "$G/bigschema.yaml"; gen refs 0 "$G/refs.yaml"; gen fan 0 "$G/fan.yaml"; gen limits 100000000 "$G/limits.yaml"
gen plain 1000 "$G/small.yaml"; gen plain 700000 "$G/big.yaml"; gen plain 150000 "$G/mid.yaml"

gw_cli tenant create evil >/dev/null 2>&1; gw_cli tenant create good >/dev/null 2>&1
EVIL=$(gw_key evil tools:read,tools:execute,graphs:write)
GOOD=$(gw_key good tools:read,tools:execute,graphs:write)
export GRAPHGATE_GRAPHS_MAX_PER_TENANT=3 GRAPHGATE_GRAPHS_MAX_BYTES=600KiB GRAPHGATE_GRAPHS_MAX_TENANT_BYTES=400KiB \
  GRAPHGATE_GRAPHS_MAX_VERSIONS=2 GRAPHGATE_GRAPHS_MAX_NODE_EXECUTIONS=10000
gg_start --config /dev/null || { echo "0 passed, 1 failed"; exit 1; }
O="$GG_TMP/o.json"
put() { gw_put_graph "$1" "$2" "$3" "$4"; cp "$GG_TMP/put.json" "$O"; }

t "the other tenant's graph uploads" eq "$(put "$GOOD" good echo "$G/small.yaml")" 201
U="$GG_PUB/mcp/good/echo"
SID=$(gw_init "$U" "$GOOD")
CALL='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"x":"hi"}}}'
good_call() { [ "$(gw_rpc "$GG_TMP/call.json" "$U" "$GOOD" "$SID" "$CALL")" = 200 ] && has "$GG_TMP/call.json" '"hi"'; }
t "the other tenant's call works" good_call

# /health sampled every 50 ms for the whole attack; a sample slower than 100 ms is probed
# up to twice more at once and the fastest probe counts: scheduling hiccups of a loaded CI
# machine (the whole suite runs in parallel) pass, a listener whose threads are busy does not
: >"$GG_TMP/health.log"
touch "$GG_TMP/watch"
( while [ -e "$GG_TMP/watch" ]; do
    h=$(health_ms); [ "$h" -gt 100 ] && h=$(health_ms); [ "$h" -gt 100 ] && h=$(health_ms)
    echo "$h" >>"$GG_TMP/health.log"; sleep 0.05
  done ) &
WATCH=$!

t "$(wc -c <"$G/laughs9.yaml")-byte billion laughs → 422 within 2 s" faster_than 2000 eq "$(put "$EVIL" evil laughs "$G/laughs9.yaml")" 422
t "… naming the alias budget and its line" eq "$(jget "$O" 'd["errors"][0]["code"], "alias expansion exceeds 20000 nodes" in d["errors"][0]["message"], d["errors"][0]["line"] > 0')" "yaml_alias True True"
t "depth-6 variant (a million nodes expanded) → 422" faster_than 2000 eq "$(put "$EVIL" evil laughs6 "$G/laughs6.yaml")" 422
t "40k anchors + 40k aliases → 422 within 5 s" faster_than 5000 eq "$(put "$EVIL" evil anchors "$G/anchors.yaml")" 422
t "… on the alias budget" has "$O" 'alias expansion exceeds'
t "huge inputSchema → 422 too_large" eq "$(put "$EVIL" evil big "$G/bigschema.yaml"; jget "$O" 'd["errors"][0]["code"]')" 422too_large
t "graph above graphs.max_bytes → 413" eq "$(put "$EVIL" evil big "$G/big.yaml"; code "$O")" 413too_large
t "executionLimits above the operator's cap → 422 limit_exceeds_cap" eq "$(put "$EVIL" evil lim "$G/limits.yaml"; jget "$O" 'd["errors"][0]["code"]')" 422limit_exceeds_cap
t "a \$ref/allOf schema applying a subschema 10^8 times to one value → 422" faster_than 2000 eq "$(put "$EVIL" evil refs "$G/refs.yaml"; jget "$O" 'd["errors"][0]["code"], "more than 1000 subschemas" in d["errors"][0]["message"]')" "422invalid_schema True"
t "a schema whose checks grow with the value uploads" eq "$(put "$EVIL" evil fan "$G/fan.yaml")" 201
RS=$(gw_init "$GG_PUB/mcp/evil/fan" "$EVIL")
FANCALL="{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"t\",\"arguments\":{\"x\":[$(seq -s, 1 2000)]}}}"
t "… and a 2000-item call fails on the check's step budget within 2 s" faster_than 2000 eq "$(gw_rpc "$O" "$GG_PUB/mcp/evil/fan" "$EVIL" "$RS" "$FANCALL"; jget "$O" '"exceeded its budget" in d["result"]["content"][0]["text"]')" 200True

# four bad uploads at once, from one tenant: they queue for the upload threads (one at a
# time for the tenant; 429 past graphs.uploads_per_tenant), none holds a polling thread; the
# other tenant's calls and uploads keep their latency meanwhile
for i in 1 2 3 4; do
  ( gg_curl "$GG_TMP/par$i.json" -X PUT -H "Authorization: Bearer $EVIL" -H 'Content-Type: application/yaml' \
      --data-binary @"$G/laughs9.yaml" "$GG_PUB/admin/tenants/evil/graphs/par$i" >"$GG_TMP/par$i.code" ) &
done
t "the other tenant's call during parallel uploads (< 2 s)" faster_than 2000 good_call
t "the other tenant's upload during parallel uploads (< 5 s)" faster_than 5000 eq "$(put "$GOOD" good echo2 "$G/small.yaml")" 201
wait_codes() { local i; for i in $(seq 1 100); do [ "$(cat "$GG_TMP"/par?.code 2>/dev/null | wc -c)" -ge 12 ] && return 0; sleep 0.1; done; return 1; }
t "four parallel bad uploads all answered" wait_codes
par_codes() { local f; for f in "$GG_TMP"/par?.code; do case $(cat "$f") in 422|429) ;; *) echo "   $f: $(cat "$f")" >&2; return 1;; esac; done; }
t "… each with 422 or 429" par_codes

# quotas: 3 graphs (fan is one), 400 KiB of stored versions, 2 versions kept per graph
t "graph 2 of 3" eq "$(put "$EVIL" evil g2 "$G/small.yaml")" 201
t "graph 3 of 3" eq "$(put "$EVIL" evil g3 "$G/small.yaml")" 201
t "graph 4 → 409 quota_exceeded" eq "$(put "$EVIL" evil g4 "$G/small.yaml"; code "$O")" 409quota_exceeded
t "a new version of an existing graph is not a new graph" eq "$(put "$EVIL" evil g3 "$G/small.yaml")" 201
t "third version of g3: the oldest is dropped (2 kept)" eq "$(put "$EVIL" evil g3 "$G/small.yaml" >/dev/null; gg_curl "$O" -H "Authorization: Bearer $EVIL" "$GG_PUB/admin/tenants/evil/graphs/g3/versions"; jget "$O" '[v["version"] for v in d["versions"]]')" "200[3, 2]"
t "150 KiB version of g2 fits" eq "$(put "$EVIL" evil g2 "$G/mid.yaml")" 201
t "two more 150 KiB versions pass 400 KiB → 409" eq "$(put "$EVIL" evil g3 "$G/mid.yaml" >/dev/null; put "$EVIL" evil g2 "$G/mid.yaml"; code "$O")" 409quota_exceeded
t "the tenant holds 3 graphs" eq "$(gg_curl "$O" -H "Authorization: Bearer $EVIL" "$GG_PUB/admin/tenants/evil/graphs"; jget "$O" 'len(d["graphs"])')" 2003

rm -f "$GG_TMP/watch"; wait "$WATCH" 2>/dev/null
t "server alive" alive
t "health sampled throughout ($(wc -l <"$GG_TMP/health.log") samples)" test "$(wc -l <"$GG_TMP/health.log")" -ge 5
t "/health within 100 ms throughout (slowest $(sort -n "$GG_TMP/health.log" | tail -1) ms)" \
  test "$(sort -n "$GG_TMP/health.log" | tail -1)" -le 100
t "the other tenant's call still works" good_call
t "health fast at the end" health_fast
t "clean shutdown" gw_stop_clean
gg_finish
