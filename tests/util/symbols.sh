#!/usr/bin/env bash
# symbols.sh — every external symbol of a library starts with a prefix its folder owns, and no
# prefix is owned by two folders, so a name says where it lives (docs/internals.md "Symbol names"). Runs
# nm over the built src/*/libgg*.a; a symbol outside its folder's prefixes fails the test.
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
mcp: mcp
specs: specs
store: gg_store gg_db gg_exec gg_history gg_task
telemetry: gg_tel gg_span gg_trace
util: gg_error gg_errcode gg_strbuf gg_log gg_yaml gg_ecma gg_js gg_hex4 gg_now gg_wall gg_tally gg_closest gg_suggest gg_suspicious gg_time gg_regex gg_utf16'

prefixes_of() { sed -n "s/^$1: //p" <<<"$owners"; }

# owns FOLDER SYMBOL: the symbol carries one of the folder's prefixes
owns() {
  local p up
  for p in $(prefixes_of "$1"); do
    up=${p^^}
    case $2 in "$p" | "$p"_* | "$up"_*) return 0 ;; esac
  done
  return 1
}

# strays FOLDER: the folder's symbols it does not own, read from nm on stdin. Names starting
# with "_" are the toolchain's (sanitizer globals, ODR indicators); C reserves them anyway.
strays() { awk 'NF == 3 && $3 !~ /^[_.]/ { print $3 }' | sort -u | while read -r s; do owns "$1" "$s" || echo "$s"; done; }

# the check itself can fail: a foreign name is caught, the folder's own names pass
t "the check rejects a symbol without its folder's prefix" test "$(printf '0 T yaml_get\n0 T gg_yaml_get\n' | strays util)" = yaml_get
t "the check rejects another folder's prefix" test "$(printf '0 T gg_graph_load\n0 T jn_fn_abs\n' | strays jsonata)" = gg_graph_load

# no prefix belongs to two folders (p_ starting q_ would let a symbol match both)
disjoint() {
  local a b p q bad=0
  for a in $(cut -d: -f1 <<<"$owners"); do for b in $(cut -d: -f1 <<<"$owners"); do
    [ "$a" = "$b" ] && continue
    for p in $(prefixes_of "$a"); do for q in $(prefixes_of "$b"); do
      case ${q}_ in "${p}"_*) echo "  $a's $p covers $b's $q"; bad=1 ;; esac
    done; done
  done; done
  return $bad
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
