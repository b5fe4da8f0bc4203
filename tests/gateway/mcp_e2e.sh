#!/usr/bin/env bash
# mcp_e2e.sh — standard MCP clients against the real gateway serving the conformance
# fixture graph: the official TypeScript SDK client over the public listener with a key,
# the MCP Inspector CLI, and the official conformance suite (@modelcontextprotocol/
# conformance) on the internal listener. Needs the pinned npm peers (tests/npm).
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
gw_conf_setup
gg_start || { echo "0 passed, 1 failed"; exit 1; }
eq201() { [ "$1" = 201 ] || { cat "$GG_TMP/put.json" >&2; return 1; }; }
eq400() { [ "$1" = 400 ] && grep -q unknown_response "$GG_TMP/resp.json" || { echo "   got $1: $(cat "$GG_TMP/resp.json")" >&2; return 1; }; }
t "fixture graph uploaded" eq201 "$(gw_put_graph "$ADMIN" conf everything "$FIXTURE")"

# ---- the SDK client (its own ok/not ok lines and counts are folded into ours)
"$NODE" "$GG_SRCDIR/tests/gateway/sdk_client.mjs" "$GG_PUB/mcp/conf/everything" "$KEY" > "$GG_TMP/sdk.out" 2>&1
gw_fold "$GG_TMP/sdk.out" $?

# ---- subscriptions and list_changed across new versions (the SDK's own GET stream)
KEYR=$(gw_key conf tools:read)
"$NODE" "$GG_SRCDIR/tests/gateway/sdk_resources.mjs" "$GG_PUB/mcp/conf/everything" "$KEYR" \
  "$GG_PUB/admin/tenants/conf/graphs/everything" "$ADMIN" "$FIXTURE" "$GG_INT/metrics" > "$GG_TMP/sdkr.out" 2>&1
sed 's/^/  sdk: /' "$GG_TMP/sdkr.out" | grep -v ' passed, '
sp=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p' "$GG_TMP/sdkr.out"); sf=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p' "$GG_TMP/sdkr.out")
GG_PASSED=$((GG_PASSED + ${sp:-0})); GG_FAILED=$((GG_FAILED + ${sf:-1}))

# ---- the SDK v2 client (2025 era) with client-side elicitation and sampling handlers
KEYX=$(gw_key conf tools:read,tools:execute)
"$NODE" "$GG_SRCDIR/tests/gateway/sdk_v2_client.mjs" "$GG_PUB/mcp/conf/everything" "$KEYX" \
  "$GG_PUB/admin/tenants/conf/executions?graph=everything" "$ADMIN" > "$GG_TMP/sdkv2.out" 2>&1
gw_fold "$GG_TMP/sdkv2.out" $?

# ---- a response to a request nobody sent → 400
SID=$(gw_init "$GG_PUB/mcp/conf/everything" "$KEY")
st=$(gw_rpc "$GG_TMP/resp.json" "$GG_PUB/mcp/conf/everything" "$KEY" "$SID" '{"jsonrpc":"2.0","id":"gg-nobody","result":{"action":"accept"}}' \
  -H 'MCP-Protocol-Version: 2025-11-25')
t "a response nobody waits for → 400 unknown_response" eq400 "$st"

# ---- the MCP Inspector CLI lists the tools
INSPECTOR="$NPM/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
HOME="$GG_TMP" timeout 60 "$NODE" "$INSPECTOR" --cli "$GG_PUB/mcp/conf/everything" --transport http \
  --method tools/list --header "Authorization: Bearer $KEY" > "$GG_TMP/inspector.json" 2>"$GG_TMP/inspector.err"
t "Inspector CLI lists the tools" python3 -c "import json; d=json.load(open('$GG_TMP/inspector.json')); n={t['name'] for t in d['tools']}; assert {'echo','test_simple_text','test_tool_with_progress'} <= n, n"

# ---- the conformance suite on the internal listener
CONF="$NPM/@modelcontextprotocol/conformance/dist/index.js"
# conf_ok OUT RC: the scenario exited 0 and ran at least one check, all passed, no warning
conf_ok() {
  [ "$2" = 0 ] || { echo "   exit status $2" >&2; return 1; }
  local line; line=$(grep -E '^Passed: [0-9]+/[0-9]+, [0-9]+ failed, [0-9]+ warnings$' "$1" | tail -1)
  [[ $line =~ ^Passed:\ ([0-9]+)/([0-9]+),\ ([0-9]+)\ failed,\ ([0-9]+)\ warnings$ ]] \
    || { echo "   no result line" >&2; return 1; }
  [ "${BASH_REMATCH[2]}" -gt 0 ] && [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] \
    && [ "${BASH_REMATCH[3]}" = 0 ] && [ "${BASH_REMATCH[4]}" = 0 ] || { echo "   $line" >&2; return 1; }
}
for s in server-initialize ping tools-list tools-call-simple-text tools-call-error tools-call-with-progress \
         tools-call-with-logging logging-set-level completion-complete dns-rebinding-protection \
         server-sse-multiple-streams tools-call-image tools-call-audio tools-call-embedded-resource \
         tools-call-mixed-content resources-list resources-read-text resources-read-binary resources-templates-read \
         resources-subscribe resources-unsubscribe prompts-list prompts-get-simple prompts-get-with-args \
         prompts-get-embedded-resource prompts-get-with-image json-schema-2020-12 tools-call-sampling \
         tools-call-elicitation elicitation-sep1034-defaults elicitation-sep1330-enums \
         server-session-lifecycle server-sse-polling; do
  timeout 120 "$NODE" "$CONF" server --url "$GG_INT/internal/mcp/conf/everything" --scenario "$s" > "$GG_TMP/conf-$s.out" 2>&1
  t "conformance $s" conf_ok "$GG_TMP/conf-$s.out" $? || tail -20 "$GG_TMP/conf-$s.out" | sed 's/^/    /'
done
# exactly what the 2025-11-25 revision requires, once, for the score (its summary stays in
# the log): every scored scenario passes and none of the unscored ones (server-sse-polling,
# json-schema-2020-12, server-session-lifecycle) fails. server-sse-polling is "pending" there,
# so only its run in the list above (3 checks, no warning) catches a regression.
timeout 600 "$NODE" "$CONF" server --url "$GG_INT/internal/mcp/conf/everything" --requirements 2025-11-25 \
  > "$GG_TMP/conf-all.out" 2>&1
echo "  conformance --requirements 2025-11-25:"
sed -n '/=== SUMMARY ===/,$p' "$GG_TMP/conf-all.out" | grep -v '^$' | sed 's/^/    /'
req_ok() {
  grep -qE '^Total: [1-9][0-9]* passed, 0 failed$' "$GG_TMP/conf-all.out" &&
    ! grep -q '✗' "$GG_TMP/conf-all.out" && grep -qE 'Not scored for 2025-11-25: [0-9]+ scenario\(s\) run, 0 failing' "$GG_TMP/conf-all.out"
}
t "conformance --requirements 2025-11-25: every scenario passes" req_ok
timeout 600 "$NODE" "$CONF" server --url "$GG_INT/internal/mcp/conf/everything" --spec-version 2025-06-18 \
  > "$GG_TMP/conf-0618.out" 2>&1
echo "  conformance --spec-version 2025-06-18: $(grep -c '✓' "$GG_TMP/conf-0618.out") passed, $(grep -c '✗' "$GG_TMP/conf-0618.out") failed"
grep '✗' "$GG_TMP/conf-0618.out" | sed 's/^/    /'
# the issue asks for 27/27 scenarios of the 2025-06-18 revision on the same endpoint
s0618_ok() { [ "$(grep -c '✓' "$GG_TMP/conf-0618.out")" -ge 27 ] && ! grep -q '✗' "$GG_TMP/conf-0618.out"; }
t "conformance --spec-version 2025-06-18: 27 of 27 scenarios pass" s0618_ok
t "server stops cleanly (exit 0, no sanitizer report)" gw_stop_clean
gg_finish
