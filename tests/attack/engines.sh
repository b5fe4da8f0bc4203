#!/usr/bin/env bash
# engines.sh — what a tenant could try against the expression engines: transforms whose
# expression is a 100,000-term operator chain (+, and, &, ~>, .) or 100,000 nested
# brackets (before: a stack overflow in the parser's AST walks killed the whole server at
# upload, and `graphgate graph validate` with it), and memory bombs at call time —
# $map([1..40], function($i){[1..1000000]}) (before: 18 MB → 3.4 GB), & doubling in $reduce
# (a 1 GiB string) and a JSON Logic reduce doubling its accumulator. Chains are refused
# with a positioned D1011, bombs fail with D1014 / memory_exceeded within the evaluation
# budget (limits.eval_memory_bytes), the server's RSS stays bounded, /health stays fast
# and another tenant's calls keep their latency. Prints "N passed, N failed".
. "$GG_SRCDIR/tests/attack/lib_attack.sh"
le() { [ "${1:-99999}" -le "$2" ] 2>/dev/null || { echo "   expected <= $2, got ${1:-none}" >&2; return 1; }; }
has() { grep -q -- "$2" "$1" || { echo "   $1 lacks '$2': $(head -c 400 "$1")" >&2; return 1; }; }

G=$GG_TMP/g
mkdir -p "$G"
# one transform tool per file: NAME EXPRESSION (the expression is written as a YAML
# single-quoted scalar)
python3 - "$G" <<'PY'
import sys
d = sys.argv[1]
def graph(name, expr):
    expr = expr.replace("'", "''")
    with open('%s/%s.yaml' % (d, name), 'w') as f:
        f.write('''version: "1.0"
server: {name: %s, version: "1.0.0"}
tools:
  - name: t
    description: d
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: x}
      - {id: x, type: transform, transform: {expr: '%s'}, next: exit}
      - {id: exit, type: exit}
''' % (name, expr))
n = 100000
graph('add', '+'.join(['1'] * n))
graph('and', ' and '.join(['true'] * n))
graph('cat', '&'.join(["'a'"] * n))
graph('pipe', '"x"' + '~>$string' * n)  # without spaces: under the 1 MiB upload limit
graph('path', '.'.join(['a'] * n))
graph('parens', '(' * n + '1' + ')' * n)
graph('arrays', '[' * n + '1' + ']' * n)
graph('calls', '$string(' * n + '1' + ')' * n)
graph('objects', '{"a":' * n + '1' + '}' * n)
graph('blocks', '(1;' * n + '1' + ')' * n)
PY
CHAINS="add and cat pipe path parens arrays calls objects blocks"

cat >"$G/bomb.yaml" <<'YAML'
version: "1.0"
server: {name: bomb, version: "1.0.0"}
tools:
  - name: map
    description: forty ranges of a million numbers
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: x}
      - {id: x, type: transform, transform: {expr: '$map([1..40], function($i){[1..1000000]})'}, next: exit}
      - {id: exit, type: exit}
  - name: double
    description: a string doubled forty times
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: x}
      - {id: x, type: transform, transform: {expr: '$reduce([1..40], function($a, $i){$a & $a}, "xxxxxxxx")'}, next: exit}
      - {id: exit, type: exit}
  - name: logic
    description: a JSON Logic reduce doubling its accumulator
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: s}
      - id: s
        type: switch
        conditions:
          - rule: {reduce: [{var: "[1..40]"}, {merge: [{var: accumulator}, {var: accumulator}]}, [1, 2, 3, 4, 5, 6, 7, 8]]}
            next: exit
        next: exit
      - {id: exit, type: exit}
YAML
cat >"$G/light.yaml" <<'YAML'
version: "1.0"
server: {name: light, version: "1.0.0"}
tools:
  - name: light
    description: a few milliseconds
    inputSchema: {type: object}
    nodes:
      - {id: entry, type: entry, next: sum}
      - {id: sum, type: transform, transform: {expr: '{"sum": $sum([1..40000])}'}, next: exit}
      - {id: exit, type: exit}
YAML

# ---- graph validate on each chain: an error exit, not a crash
for c in $CHAINS; do
  "$GG_BIN" graph validate "$G/$c.yaml" >"$GG_TMP/v.$c.out" 2>&1
  rc=$?
  t "graph validate, 100k $c: exit 2 = invalid (got $rc), D1011 with its position" \
    eval "[ $rc = 2 ] && grep -q 'D1011.*position [0-9]' '$GG_TMP/v.$c.out'"
done

gw_cli tenant create evil >/dev/null 2>&1
gw_cli tenant create b >/dev/null 2>&1
EVIL=$(gw_key evil admin)
gw_cli graph put b light "$G/light.yaml" >/dev/null 2>"$GG_TMP/put.err" || cat "$GG_TMP/put.err"
gg_start || { echo "0 passed, 1 failed"; exit 1; }
BASE_KB=$(rss_kb)
# watch: RSS peak, the slowest /health, samples and samples over 100 ms, until $GG_TMP/stop
watch() {
  local peak=0 slow=0 n=0 over=0 r h
  while [ ! -e "$GG_TMP/stop" ]; do
    r=$(rss_kb); [ "$r" -gt "$peak" ] && peak=$r
    h=$(health_ms); [ "$h" -gt "$slow" ] && slow=$h
    n=$((n + 1)); [ "$h" -gt 100 ] && over=$((over + 1))
    sleep 0.05
  done
  echo "$peak $slow $n $over" >"$GG_TMP/watch"
}
watch &
W=$!

# ---- uploads of the chains: 422 with the positioned error, the server stays up
for c in $CHAINS; do
  code=$(gw_put_graph "$EVIL" evil "$c" "$G/$c.yaml")
  cp "$GG_TMP/put.json" "$GG_TMP/put.$c.json"
  t "upload 100k $c → 422 naming D1011 and a position" \
    eval "[ '$code' = 422 ] && grep -q 'D1011.*position [0-9]' '$GG_TMP/put.$c.json' || { echo \"   $code: \$(head -c 300 '$GG_TMP/put.$c.json')\" >&2; false; }"
done
t "the server is alive after the chain uploads" alive

# ---- memory bombs: each call fails with the budget's error, b's calls stay fast
t "bomb graph uploads" eq "$(gw_put_graph "$EVIL" evil bomb "$G/bomb.yaml")" 201
BOMBS=()
for tool in map double logic; do
  curl -sS -o "$GG_TMP/bomb.$tool.json" --max-time 120 -X POST -H 'Content-Type: application/json' \
    --data '{}' "$(plain evil bomb $tool)" >/dev/null 2>&1 &
  BOMBS+=($!)
done
for _ in $(seq 1 10); do lat; done >"$GG_TMP/b.ms"
wait "${BOMBS[@]}"
t "\$map of forty million-number ranges → D1014 memory budget" has "$GG_TMP/bomb.map.json" 'memory budget'
t "& doubling in \$reduce → D1014 memory budget" has "$GG_TMP/bomb.double.json" 'memory budget'
t "JSON Logic accumulator doubling → memory_exceeded" has "$GG_TMP/bomb.logic.json" 'memory budget'
for _ in $(seq 1 5); do lat; done >>"$GG_TMP/b.ms"
touch "$GG_TMP/stop"
wait "$W"
read -r PEAK SLOW NH OVER <"$GG_TMP/watch"
worst=$(sort -n "$GG_TMP/b.ms" | tail -1)
t "b's calls during the bombs: worst $worst ms (bound 3000)" le "$worst" 3000
t "b's answer is right" grep -q '"sum":800020000' "$GG_TMP/b.json"
# three bombs at once, each within a 128 MiB evaluation budget (sanitizer builds hold
# freed memory in quarantine: a generous bound, far below the 3.4 GB of one call before)
t "server RSS peak $((PEAK / 1024)) MB (started at $((BASE_KB / 1024)) MB; bound 1200 MB)" le "$PEAK" $((1200 * 1024))
# within 100 ms (1 ms when idle); a loaded 2-core CI machine may delay a rare sample a little
t "/health within 100 ms throughout: $OVER of $NH samples over (at most 5 %)" le $((OVER * 20)) "$NH"
t "... and never over 250 ms (slowest $SLOW ms)" le "$SLOW" 250
t "server stops cleanly" gw_stop_clean
gg_finish
