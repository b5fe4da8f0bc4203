#!/usr/bin/env bash
# symbols.sh — every external symbol of a library starts with a prefix its folder owns, and no
# prefix is owned by two folders, so a name says where it lives (docs/internals.md "Symbol names").
# A folder may own a longer prefix inside another's (policy's mcp_policy inside mcp's mcp): the
# longest prefix a symbol carries names its folder. Runs nm over the built src/*/libgg*.a; a
# symbol outside its folder's prefixes fails the test.
set -u
build=${GG_BUILDDIR:-$(pwd)}
passed=0 failed=0
t() { if "${@:2}"; then passed=$((passed + 1)); echo "ok - $1"; else failed=$((failed + 1)); echo "not ok - $1"; fi; }

# folder: prefixes it owns (a symbol matches p when it is p, starts with p_, or with P_ upper-cased)
owners='app: gg_app gg_config
auth: gg_auth gg_ratelimit gg_scope gg_scopes gg_tenant gg_jwt gg_oauth
cli: gg_cli gg_cmd
console: gg_console
gateway: gg_gateway gw
graph: gg_graph
http: gg_http gg_conn gg_router
jsonata: jsonata jn
jsonlogic: jsonlogic jl
jsonschema: mcp_schema
mcp: mcp
policy: mcp_policy
specs: specs
store: gg_store gg_db gg_exec gg_history gg_task
telemetry: gg_tel gg_span gg_trace
util: gg_error gg_errcode gg_strbuf gg_log gg_yaml gg_ecma gg_js gg_hex4 gg_now gg_wall gg_tally gg_closest gg_suggest gg_suspicious gg_time gg_regex gg_utf16 gg_json'

prefixes_of() { sed -n "s/^$1: //p" <<<"$owners"; }

# matches PREFIX SYMBOL: the symbol is p, starts with p_, or with P_ upper-cased
matches() { case $2 in "$1" | "$1"_* | "${1^^}"_*) return 0 ;; esac; return 1; }

# owns FOLDER SYMBOL: the longest prefix the symbol carries is one of the folder's
all_prefixes=$(cut -d: -f2 <<<"$owners" | tr ' ' '\n' | grep . | awk '{ print length, $0 }' | sort -rn | cut -d' ' -f2)
owns() {
  local p
  for p in $all_prefixes; do
    matches "$p" "$2" || continue
    [[ " $(prefixes_of "$1") " == *" $p "* ]]
    return
  done
  return 1
}

# strays FOLDER: the folder's symbols it does not own, read from nm on stdin. Names starting
# with "_" are the toolchain's (sanitizer globals, ODR indicators); C reserves them anyway.
strays() { awk 'NF == 3 && $3 !~ /^[_.]/ { print $3 }' | sort -u | while read -r s; do owns "$1" "$s" || echo "$s"; done; }

# the check itself can fail: a foreign name is caught, the folder's own names pass
t "the check rejects a symbol without its folder's prefix" test "$(printf '0 T yaml_get\n0 T gg_yaml_get\n' | strays util)" = yaml_get
t "the check rejects another folder's prefix" test "$(printf '0 T gg_graph_load\n0 T jn_fn_abs\n' | strays jsonata)" = gg_graph_load
t "the longer prefix wins: mcp_policy_ names belong to policy, not mcp" \
  test "$(printf '0 T mcp_policy_check_url\n0 T mcp_client_new\n' | strays mcp)" = mcp_policy_check_url
t "a folder owning a longer prefix takes those names only" \
  test "$(printf '0 T mcp_policy_check_url\n0 T mcp_client_new\n' | strays policy)" = mcp_client_new

# no prefix belongs to two folders (a longer one inside another's is the longer one's)
disjoint() {
  local dup
  dup=$(cut -d: -f2 <<<"$owners" | tr ' ' '\n' | grep . | sort | uniq -d)
  [ -n "$dup" ] && echo "$dup" | sed 's/^/  owned twice: /'
  [ -z "$dup" ]
}
t "no prefix is owned by two folders" disjoint

libs=$(ls "$build"/src/*/libgg*.a 2>/dev/null)
t "the libraries are built under $build" test -n "$libs"
for lib in $libs; do
  folder=$(basename "$(dirname "$lib")")
  t "$folder has a row in the prefix table" test -n "$(prefixes_of "$folder")"
  bad=$(nm -g --defined-only "$lib" 2>/dev/null | strays "$folder")
  [ -n "$bad" ] && echo "$bad" | sed "s/^/  $folder: /" | head -20
  t "every external symbol of $(basename "$lib") starts with $(prefixes_of "$folder" | sed 's/ /_, /g')_" test -z "$bad"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
