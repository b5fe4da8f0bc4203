#!/usr/bin/env bash
# cache.sh — graphs on demand through the real gateway, with graphs.cache_size 2 and five
# stored graphs: nothing is compiled at start; every graph answers with its own active
# version however often the cache evicts and recompiles; a graph with an open GET stream
# stays compiled while others come and go; an upload while cached is served at once and
# announced on the stream; a rollback by another process (the CLI) is picked up by the sync;
# deletion answers 404; the server stops clean (ASan builds: no leak, no error).
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
# graph_src NAME VERSION: a graph whose one tool is named NAME_vVERSION and answers "NAME vVERSION"
graph_src() {
  cat <<EOF
version: "1.0"
server: {name: "$1", version: "$2.0.0"}
tools:
  - {name: "$1_v$2", description: "$1 version $2", inputSchema: {type: object},
     nodes: [{id: entry, type: entry, next: v}, {id: v, type: transform, transform: {expr: '"$1 v$2"'}, next: exit}, {id: exit, type: exit}]}
EOF
}
gw_cli tenant create acme >/dev/null 2>&1
for i in 0 1 2 3 4; do
  graph_src "g$i" 1 > "$GG_TMP/g$i.yaml"
  gw_cli_run graph put acme "g$i" "$GG_TMP/g$i.yaml" >/dev/null
done
ADMIN=$(gw_key acme admin)
KEY=$(gw_key acme tools:read,tools:execute)
t "setup through the CLI" gw_cli_clean
export GRAPHGATE_GRAPHS_CACHE_SIZE=2
gg_start || { echo "0 passed, 1 failed"; exit 1; }

metric() { curl -s --max-time 5 "$GG_INT/metrics" | sed -n "s/^$1 \\([0-9]*\\)\$/\\1/p"; }
# call GRAPH TOOL → "status body" of the internal plain call
call() {
  local st
  st=$(gg_curl "$GG_TMP/r.json" -X POST --data-binary '{}' "$GG_INT/internal/tenants/acme/graphs/$1/tools/$2/call")
  echo "$st $(cat "$GG_TMP/r.json")"
}
compiles() { metric 'graphgate_graph_cache_total{event="compile"}'; }

t "five graphs known, none compiled at start" eq "$(metric graphgate_graphs_loaded) $(metric graphgate_graphs_compiled)" "5 0"
all_right() {
  local round i r
  for round in 1 2 3; do
    for i in 0 1 2 3 4; do
      r=$(call "g$i" "g${i}_v1")
      [ "$r" = "200 \"g$i v1\"" ] || { echo "   g$i: $r" >&2; return 1; }
      [ "$(metric graphgate_graphs_compiled)" -le 2 ] || { echo "   over the cache size" >&2; return 1; }
    done
  done
}
t "3 rounds over 5 graphs with a cache of 2: each answers its own version" all_right
t "evicted graphs were compiled again (15 compiles)" eq "$(compiles)" 15

# a session with a GET stream on g0 holds its version
SID=$(gw_init "$GG_PUB/mcp/acme/g0" "$KEY")
curl -sS -N -H 'Accept: text/event-stream' -H "Authorization: Bearer $KEY" -H "Mcp-Session-Id: $SID" \
  "$GG_PUB/mcp/acme/g0" > "$GG_TMP/stream.out" 2>/dev/null &
SPID=$!
streams_open() {
  local i
  for i in $(seq 1 100); do [ "$(metric graphgate_mcp_streams)" = 1 ] && return 0; sleep 0.05; done
  return 1
}
t "a GET stream is open on g0" streams_open
others() {
  local round i
  for round in 1 2; do for i in 1 2 3 4; do [ "$(call "g$i" "g${i}_v1")" = "200 \"g$i v1\"" ] || return 1; done; done
}
t "other graphs come and go" others
before=$(compiles)
t "g0 (open stream) was never dropped: a call is a cache hit" eq "$(call g0 g0_v1)" '200 "g0 v1"'
t "... no compile for it" eq "$(compiles)" "$before"
t "idle compiled graphs are trimmed back to the cache size" \
  bash -c 'for i in $(seq 1 60); do [ "$(curl -s "$0/metrics" | sed -n "s/^graphgate_graphs_compiled //p")" -le 2 ] && exit 0; sleep 0.1; done; exit 1' "$GG_INT"

# activation while cached: the upload's compiled version is served and announced
graph_src g0 2 > "$GG_TMP/g0v2.yaml"
t "upload of g0 version 2" eq "$(gw_put_graph "$ADMIN" acme g0 "$GG_TMP/g0v2.yaml")" 201
t "g0 answers version 2 at once" eq "$(call g0 g0_v2)" '200 "g0 v2"'
t "version 1's tool is gone" bash -c '[ "$(echo "$1" | cut -c1-3)" != 200 ]' _ "$(call g0 g0_v1)"
got_changed() {
  local i
  for i in $(seq 1 100); do grep -q 'notifications/tools/list_changed' "$GG_TMP/stream.out" && return 0; sleep 0.05; done
  return 1
}
t "the stream got tools/list_changed" got_changed

# another process rolls g3 back... to a version 2 first, then activates 1 again: the sync
graph_src g3 2 > "$GG_TMP/g3v2.yaml"
gw_cli_run graph put acme g3 "$GG_TMP/g3v2.yaml" >/dev/null
synced() {
  local i
  for i in $(seq 1 100); do [ "$(call g3 "g3_v$1")" = "200 \"g3 v$1\"" ] && return 0; sleep 0.05; done
  return 1
}
t "a version stored by the CLI is served within the sync bound" synced 2
gw_cli_run graph activate acme g3 1 >/dev/null
t "a rollback by the CLI is served within the sync bound" synced 1

# deletion
code=$(gg_curl "$GG_TMP/del.json" -X DELETE -H "Authorization: Bearer $ADMIN" "$GG_PUB/admin/tenants/acme/graphs/g1")
t "g1 deleted" eq "$code" 200
t "g1 answers 404" eq "$(call g1 g1_v1 | cut -c1-3)" 404
t "the others still answer" eq "$(call g2 g2_v1)" '200 "g2 v1"'
t "CLI steps clean" gw_cli_clean

kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null
t "stops clean" gw_stop_clean
gg_finish
