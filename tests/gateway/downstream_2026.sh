#!/usr/bin/env bash
# downstream_2026.sh — a graph's streamable HTTP server reached in the stateless 2026-07-28
# era (`protocol: 2026-07-28` on its mcpServers entry; src/mcp/client_http.c "the stateless
# era"). The downstream is a second graphgate serving the conformance graph (a 2026-07-28
# server: the suite's server leg passes on it), seen through a recording proxy (era_spy.py)
# so the test knows what went over the wire: no initialize and no session, every request
# with MCP-Protocol-Version and Mcp-Method, a tool's x-mcp-header argument mirrored into its
# Mcp-Param header. Through the gateway: listed and called tools, the mirrored header, an
# input_required round relayed to the official SDK client (a 2025-11-25 session) as an
# elicitation and its answer carried back; resources/subscribe of a proxied URI learning what
# the downstream declared by one server/discover; a bad protocol value refused at its line:col.
# Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
gw_need_sdk
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }

# ---- the downstream: another graphgate with the conformance graph
D="$GG_TMP/down"; mkdir -p "$D"
"$GG_BIN" tenant create down --db "$D/gg.db" >/dev/null 2>&1
DKEY=$("$GG_BIN" key create --tenant down --scopes admin --db "$D/gg.db" 2>/dev/null | grep '^gg_' | head -1)
"$GG_BIN" serve --db "$D/gg.db" --listen 127.0.0.1:0 --internal-listen 127.0.0.1:0 >"$D/serve.out" 2>"$D/serve.err" &
DPID=$!
SPY=""
trap 'kill $DPID $SPY 2>/dev/null; gg_cleanup' EXIT
for _ in $(seq 1 600); do grep -q internal "$D/serve.out" 2>/dev/null && break; sleep 0.05; done
DPUB=$(sed -n 's|^ *public *\(http://[^ ]*\)/$|\1|p' "$D/serve.out")
[ -n "$DPUB" ] && [ -n "$DKEY" ] || { echo "the downstream graphgate did not start: $(tail -5 "$D/serve.err")"; echo "0 passed, 1 failed"; exit 1; }
st=$(gg_curl "$D/put.json" -X PUT -H "Authorization: Bearer $DKEY" -H 'Content-Type: application/yaml' \
  --data-binary @"$GG_SRCDIR/tests/fixtures/conformance/everything.yaml" "$DPUB/admin/tenants/down/graphs/every")
t "the downstream serves the conformance graph (201)" eq "$st" 201

python3 "$GG_SRCDIR/tests/gateway/era_spy.py" "$DPUB" "$GG_TMP/wire.jsonl" >"$GG_TMP/spy.out" 2>&1 &
SPY=$!
trap 'kill $DPID $SPY 2>/dev/null; gg_cleanup' EXIT
for _ in $(seq 1 100); do grep -q '^PORT ' "$GG_TMP/spy.out" && break; sleep 0.05; done
SPORT=$(sed -n 's/^PORT //p' "$GG_TMP/spy.out")

# ---- the gateway
gw_cli_run tenant create acme >/dev/null
KEY=$(gw_key acme admin)
python3 -c 'import os; print(os.urandom(32).hex())' >"$GG_TMP/master"
export GRAPHGATE_SECRETS_KEY_FILE="$GG_TMP/master"
printf '%s\n' "$DKEY" | gw_cli_run secret set acme down_key >/dev/null
GRAPHGATE_POLICY_HTTP_HOSTS=127.0.0.1 gg_start || { echo "$GG_PASSED passed, $((GG_FAILED + 1)) failed"; exit 1; }

px() { # px PROTOCOL → a proxy graph in front of the downstream, through the spy
  cat <<YAML
version: "1.0"
server: {name: "px", version: "1.0.0"}
mcpServers:
  down:
    type: "streamableHttp"
    url: "http://127.0.0.1:$SPORT/mcp/down/every"
    headers: {Authorization: "Bearer \${secrets.down_key}"}
    protocol: $1
proxy:
  - {server: "down", tools: "all", prefix: "r_", resources: "all", uri_prefix: "d+"}
YAML
}
px '"2024-11-05"' >"$GG_TMP/old.yaml"
t "protocol 2024-11-05 → 422" eq "$(gw_put_graph "$KEY" acme old "$GG_TMP/old.yaml")" 422
t "... naming the key at its line and column" python3 -c "
import json; d=json.load(open('$GG_TMP/put.json'))
e=[e for e in d['errors'] if 'protocol must be 2025-11-25 or 2026-07-28' in e['message']]
assert e and e[0]['line']==8 and e[0]['column']==15, d"
px '"2026-07-28"' >"$GG_TMP/px.yaml"
: >"$GG_TMP/wire.jsonl"
t "a proxy graph on the 2026-07-28 downstream → 201" eq "$(gw_put_graph "$KEY" acme px "$GG_TMP/px.yaml")" 201
t "its tools are the downstream's" python3 -c "
import json; d=json.load(open('$GG_TMP/put.json')); n=set(d['tools'])
assert {'r_test_simple_text','r_test_header_param','r_test_input_required_result_elicitation'} <= n, n"

MCP="$GG_PUB/mcp/acme/px"
sid=$(gw_init "$MCP" "$KEY")
call() { gw_rpc "$GG_TMP/c.json" "$MCP" "$KEY" "$sid" "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"$1\",\"arguments\":$2}}" >/dev/null; jget "$GG_TMP/c.json" 'd["result"]["content"][0]["text"]'; }
t "a call through the gateway" eq "$(call r_test_simple_text '{}')" "This is a simple text response for testing."
t "an x-mcp-header argument" eq "$(call r_test_header_param '{"region":"eu-west"}')" "region eu-west"

wire() { python3 -c "
import json, sys
recs=[json.loads(l) for l in open('$GG_TMP/wire.jsonl')]
$1" 2>&1; }
t "on the wire: no initialize, no session" wire "
assert recs and not [r for r in recs if r['rpc']=='initialize' or r['mcp-session-id']], recs"
t "on the wire: every request says 2026-07-28 and its method in Mcp-Method" wire "
bad=[r for r in recs if r['mcp-protocol-version']!='2026-07-28' or r['mcp-method']!=r['rpc']]
assert not bad, bad"
t "on the wire: tools/call names its tool in Mcp-Name" wire "
assert any(r['rpc']=='tools/call' and r['mcp-name']=='test_header_param' for r in recs), recs"
t "on the wire: the mirrored header reached the downstream (its call succeeded there)" wire "
assert sum(r['rpc']=='tools/call' for r in recs)==2, recs"

# ---- resources/subscribe of a proxied URI: the stateless downstream's capabilities are learnt
# by one server/discover first (mcp_client_server_declares), then kept; this downstream (the
# 2026-07-28 era has no resources/subscribe) answers -32601, which reads as no support
: >"$GG_TMP/wire.jsonl"
sub() { gw_rpc "$GG_TMP/s.json" "$MCP" "$KEY" "$sid" '{"jsonrpc":"2.0","id":8,"method":"resources/subscribe","params":{"uri":"d+test://watched-resource"}}' >/dev/null
  jget "$GG_TMP/s.json" 'str(d["error"]["code"]) + " " + d["error"]["message"]'; }
t "resources/subscribe of a proxied URI: the downstream's clear error" eq "$(sub)" "-32602 server 'down' does not support resource subscriptions"
t "... asked again: the same" eq "$(sub)" "-32602 server 'down' does not support resource subscriptions"
t "on the wire: one server/discover, before anything else, then what it declared was kept" wire "
rpcs=[r['rpc'] for r in recs]
assert rpcs.count('server/discover')==1 and rpcs[0]=='server/discover', rpcs
assert all(r['mcp-method']==r['rpc'] for r in recs), recs"

# ---- an input_required round relayed to a 2025-11-25 SDK client as an elicitation
cat >"$GG_TMP/relay.mjs" <<'JS'
import { loadSdk as load, check, finish } from '__LIB__';
const [url, key] = process.argv.slice(2);
const { Client } = await load('client/index.js');
const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');
const { ElicitRequestSchema } = await load('types.js');
try {
  const client = new Client({ name: 'era-test', version: '1' }, { capabilities: { elicitation: { form: {} } } });
  let asked = null;
  client.setRequestHandler(ElicitRequestSchema, (req) => { asked = req.params.message; return { action: 'accept', content: { name: 'Ada' } }; });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
  const r = await client.callTool({ name: 'r_test_input_required_result_elicitation', arguments: {} });
  check('the downstream\'s question reached the client as an elicitation', asked === 'What is your name?', asked);
  check('the answer went back in the retried request: the downstream greets Ada', r.content?.[0]?.text === 'Hello, Ada!', r);
  await client.close();
  finish();
} catch (e) { finish(e); }
JS
sed -i "s#__LIB__#$GG_SRCDIR/tests/gateway/sdk_lib.mjs#" "$GG_TMP/relay.mjs"
: >"$GG_TMP/wire.jsonl"
GG_NPM="$NM" "$NODE" "$GG_TMP/relay.mjs" "$MCP" "$KEY" >"$GG_TMP/relay.out" 2>&1
cat "$GG_TMP/relay.out" | grep -E '^(ok|not ok) ' | sed 's/^/  /'
t "the SDK client's checks" grep -q '^2 passed, 0 failed' "$GG_TMP/relay.out"
t "on the wire: the call, then its retry carrying the answer" wire "
calls=[r for r in recs if r['rpc']=='tools/call']
assert len(calls)==2 and calls[0]['answers']==[] and calls[1]['answers']==['user_name'], recs"
t "on the wire: each request declares what the gateway relays (elicitation, sampling, roots)" wire "
assert all({'elicitation','sampling','roots'} <= set(r['caps'] or {}) for r in recs), recs"

t "the downstream graphgate never saw the key in a log" bash -c "! grep -qF '$DKEY' '$GG_TMP/serve.err' '$GG_TMP/serve.out'"
t "server stops cleanly (exit 0, no sanitizer report)" gw_stop_clean
gg_finish
