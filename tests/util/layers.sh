#!/usr/bin/env bash
# layers.sh — the layering is declared and enforced, not a convention. Each src/<folder>/Makefile.inc
# declares what its folder may use as GG_DEPS_<folder> (its library, then the GG_DEPS_ of the folders
# below it); the test link lines are built from those variables; and this test fails when:
#   - a folder under src/ declares no GG_DEPS_, or names a folder that does not exist;
#   - a declared dependency points sideways or up in the layer order of docs/internals.md
#     (cli → gateway, console, specs → graph, auth → mcp, jsonlogic, store, http → jsonata, telemetry,
#     jsonschema, policy → app → util), which also rules out cycles;
#   - a source file includes a header of a folder its own folder does not declare;
#   - a test's link line names a library by hand instead of through GG_DEPS_<folder>.
set -u
src=${GG_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
passed=0 failed=0
t() { if "${@:2}"; then passed=$((passed + 1)); echo "ok - $1"; else failed=$((failed + 1)); echo "not ok - $1"; fi; }

# The layer of each folder: a folder may use only folders of a lower number.
declare -A rank=([util]=0 [app]=1 [jsonata]=2 [telemetry]=2 [jsonschema]=2 [policy]=2 [mcp]=3 [jsonlogic]=3 [store]=3 [http]=3
                 [graph]=4 [auth]=4 [gateway]=5 [console]=5 [specs]=5 [cli]=6)
declare -A deps
for dir in "$src"/src/*/; do
  f=$(basename "$dir")
  line=$(sed -n "s/^GG_DEPS_$f = //p" "$dir/Makefile.inc" 2>/dev/null)
  t "src/$f declares GG_DEPS_$f" test -n "$line"
  t "src/$f has a layer in this test's table" test -n "${rank[$f]:-}"
  deps[$f]=$(grep -oE '\$\(GG_DEPS_[a-z]+\)' <<<"$line" | sed 's/^\$(GG_DEPS_//; s/)$//' | tr '\n' ' ')
  t "GG_DEPS_$f starts with its own library" grep -qE "^src/$f/libgg[a-z]+\.a( |$)" <<<"$line"
done

below() { [ -n "${rank[$2]:-}" ] && [ "${rank[$2]}" -lt "${rank[$1]}" ]; }
for f in "${!deps[@]}"; do
  for d in ${deps[$f]}; do
    t "src/$f → $d points down the layers" below "$f" "$d"
  done
done

# Every include of another folder's header must name a declared dependency.
declared() { [[ " ${deps[$1]} " == *" $2 "* ]]; }
for f in "${!deps[@]}"; do
  bad=""
  while IFS=: read -r file used; do
    [ "$used" = "$f" ] && continue
    declared "$f" "$used" || bad="$bad ${file#"$src"/}→$used"
  done < <(grep -rHoE '#include "[a-z]+/' "$src/src/$f" --include=*.c --include=*.h | sed -E 's/:#include "([a-z]+)\//:\1/')
  t "src/$f includes only what GG_DEPS_$f declares${bad:+ (not:$bad)}" test -z "$bad"
done

# Test link lines take libraries through the declared variables only.
hand=$(grep -nE '^[A-Za-z_]+(_LDADD|_LIBS) = .*src/[a-z]+/libgg' "$src"/tests/*/Makefile.inc || true)
t "no test link line lists a src/ library by hand${hand:+ ($hand)}" test -z "$hand"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
