#!/usr/bin/env bash
# relay.sh — a downstream's requests to its client relayed to the client whose call caused
# them (exec.c relay_request): a real SDK server (relay_srv.mjs, streamable HTTP) whose tool
# elicits (form and URL mode), samples and lists roots, behind a proxy graph and behind an
# ordinary graph's mcp node (`relay: true`, and the default that refuses), called by the
# official SDK client (sdk_relay.mjs, a 2025-11-25 session): answers reach the downstream; a
# client without the capability → the downstream gets -32601 and the call says so; 400
# questions in one call → 32 relayed, the rest refused at once, another tenant's calls not
# slowed, the gateway's memory not grown; 2000 downstream progress notifications → a few,
# increasing, at most 10/s; log messages at the client's level only; a cancelled call
# cancels the downstream's work.
# Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_relay.sh"
relay_srv_start

relay_graph px "$(relay_http 30000)" "$(relay_proxy_section relay)"
relay_graph plain "$(relay_http)" "tools:
$(relay_tool relayed "calls ask, relaying its questions" "{type: object, properties: {who: {type: string}}}" \
    "$(relay_mcp_node ask '{who: {expr: "$.entry.who"}}' 'relay: true')")
$(relay_tool plain "calls ask without relaying" "{type: object, properties: {who: {type: string}}}" \
    "$(relay_mcp_node ask '{who: {expr: "$.entry.who"}}')")"
relay_graph bad "" "tools:
$(relay_tool t "misplaced relay" "{type: object}" 'id: x, type: transform, transform: {expr: "1"}, relay: true')"
relay_quick_graph

relay_tenants other
export GRAPHGATE_SESSION_SECRET=relay-test-secret-0123456789-0123456789-0123456789
GRAPHGATE_POLICY_HTTP_HOSTS=127.0.0.1 relay_start
t "setup: tenants and keys" gw_cli_clean
t "the proxy graph is accepted" eq "$(gw_put_graph "$ADMIN" acme px "$GG_TMP/px.yaml")" 201
t "a graph with relay on its mcp node is accepted" eq "$(gw_put_graph "$ADMIN" acme plain "$GG_TMP/plain.yaml")" 201
t "relay on a transform node is refused" eq "$(gw_put_graph "$ADMIN" acme bad "$GG_TMP/bad.yaml")" 422
t "the other tenant's graph is accepted" eq "$(gw_put_graph "$OADMIN" other quick "$GG_TMP/quick.yaml")" 201

rss0=$(awk '/^VmRSS:/ { print $2 }' "/proc/$GG_PID/status")
"$NODE" "$GG_SRCDIR/tests/gateway/sdk_relay.mjs" "$GG_PUB/mcp/acme/px" "$GG_PUB/mcp/acme/plain" "$KEY" \
  "$GG_PUB/mcp/other/quick" "$OKEY" "http://127.0.0.1:$PORT/status" >"$GG_TMP/sdk.out" 2>&1
gw_fold "$GG_TMP/sdk.out" $?
# a 2026-07-28 client (stateless): the downstream's question becomes an input-required round
# (relay2026.sh follows such rounds to the end)
st=$(relay_call26 "$GG_TMP/m26.json" "$GG_PUB/mcp/acme/px" r_ask '{"who":"dee"}' \
  '{"elicitation":{"form":{}},"sampling":{},"roots":{}}' 7)
m26_round() {
  [ "$st" = 200 ] && python3 -c "
import json,sys
d=json.load(open(sys.argv[1])); r=d['result']; q=r['inputRequests']
assert r['resultType'] == 'input_required' and isinstance(r['requestState'], str), d
assert list(q) == ['relay-1'] and q['relay-1']['method'] == 'elicitation/create', d
assert q['relay-1']['params']['message'] == 'Hello dee?', d" "$GG_TMP/m26.json" ||
    { echo "   got HTTP $st: $(head -c 400 "$GG_TMP/m26.json")" >&2; return 1; }
}
t "a 2026-07-28 client: the downstream's question is its call's input-required round" m26_round
rss1=$(awk '/^VmRSS:/ { print $2 }' "/proc/$GG_PID/status")
echo "  gateway RSS ${rss0} kB before the SDK calls, ${rss1} kB after"
grow() { [ $((rss1 - rss0)) -lt 32768 ] || { echo "   grew by $((rss1 - rss0)) kB" >&2; return 1; }; }
t "the gateway's memory did not grow by 32 MiB over the relayed calls" grow
t "server stops cleanly (exit 0, no sanitizer report)" gw_stop_clean
gg_finish
