#!/usr/bin/env bash
# downstream_2026.sh — a graph's streamable HTTP server reached in the stateless 2026-07-28
# era (`protocol: 2026-07-28` on its mcpServers entry; src/mcp/client_http.c "the stateless
# era"). The downstream is a second graphgate serving the conformance graph (a 2026-07-28
# server: the suite's server leg passes on it), seen through a recording proxy (era_spy.py)
# so the test knows what went over the wire: no initialize and no session, every request
# with MCP-Protocol-Version and Mcp-Method, a tool's x-mcp-header argument mirrored into its
# Mcp-Param header. Through the gateway: listed and called tools, the mirrored header, an
# input_required round relayed to the official SDK client (a 2025-11-25 session) as an
# elicitation and its answer carried back; the downstream's rounds (form elicitation,
# sampling, roots, two rounds) relayed to 2026-07-28 callers (the SDK v2 client, a raw client)
# as their own rounds, and a caller without the capability refused (-32601); resources/subscribe of a proxied URI held in the
# client's subscriptions/listen stream; a bad protocol value refused at its line:col. A second
# downstream written with the SDK v2 server (createMcpHandler) shows that stream end to end:
# subscriptions, updates, other graphs and tenants unheard, a flood bounded, a drop reopened,
# list_changed, unsubscribe, a raw 2026 listen stream, the 64-URI bound.
# Prints "N passed, N failed".
. "$GG_SRCDIR/tests/gateway/lib_gw.sh"
gw_need_sdk
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }

# ---- the downstream: another graphgate with the conformance graph
D="$GG_TMP/down"; mkdir -p "$D"
"$GG_BIN" tenant create down --db "$D/gg.db" >/dev/null 2>&1
DKEY=$("$GG_BIN" key create --tenant down --scopes admin --db "$D/gg.db" 2>/dev/null | grep '^gg_' | head -1)
gw_serve "$D/serve" --db "$D/gg.db"
DPID=$GW_SRV_PID DPUB=$GW_SRV_PUB
SPY=""
trap 'kill $DPID $SPY 2>/dev/null; gg_cleanup' EXIT
[ -n "$DPUB" ] && [ -n "$DKEY" ] || { echo "the downstream graphgate did not start: $(tail -5 "$D/serve.err")"; echo "0 passed, 1 failed"; exit 1; }
st=$(gg_curl "$D/put.json" -X PUT -H "Authorization: Bearer $DKEY" -H 'Content-Type: application/yaml' \
  --data-binary @"$GG_SRCDIR/tests/fixtures/conformance/everything.yaml" "$DPUB/admin/tenants/down/graphs/every")
t "the downstream serves the conformance graph (201)" eq "$st" 201

python3 "$GG_SRCDIR/tests/gateway/era_spy.py" "$DPUB" "$GG_TMP/wire.jsonl" >"$GG_TMP/spy.out" 2>&1 &
SPY=$!
trap 'kill $DPID $SPY 2>/dev/null; gg_cleanup' EXIT
SPORT=$(gw_wait_port "$GG_TMP/spy.out" $SPY)

# ---- the gateway
gw_cli_run tenant create acme >/dev/null
KEY=$(gw_key acme admin)
gw_cli_run tenant create beta >/dev/null
BKEY=$(gw_key beta admin)
python3 -c 'import os; print(os.urandom(32).hex())' >"$GG_TMP/master"
export GRAPHGATE_SECRETS_KEY_FILE="$GG_TMP/master"
printf '%s\n' "$DKEY" | gw_cli_run secret set acme down_key >/dev/null
GRAPHGATE_POLICY_HTTP_HOSTS=127.0.0.1 GRAPHGATE_DOWNSTREAM_LIST_CHANGED_MIN_INTERVAL=1s gg_start || { echo "$GG_PASSED passed, $((GG_FAILED + 1)) failed"; exit 1; }

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

# ---- resources/subscribe of a proxied URI: the 2026-07-28 era has no resources/subscribe; the
# downstream declared resources.subscribe (learnt by the server/discover of the listening
# client at upload), so the URI joins the client's subscriptions/listen stream instead
# (src/mcp/client_http.c "subscriptions/listen"): answered {} by the gateway, the stream
# reopened once with the URI in resourceSubscriptions, nothing else asked
: >"$GG_TMP/wire.jsonl"
sub() { gw_rpc "$GG_TMP/s.json" "$MCP" "$KEY" "$sid" '{"jsonrpc":"2.0","id":8,"method":"resources/subscribe","params":{"uri":"d+test://watched-resource"}}' >/dev/null
  jget "$GG_TMP/s.json" 'json.dumps(d.get("result", d.get("error")))'; }
t "resources/subscribe of a proxied URI: {}" eq "$(sub)" "{}"
t "... asked again: the same" eq "$(sub)" "{}"
t "on the wire: one subscriptions/listen naming the downstream's URI, no resources/subscribe, no server/discover" wire "
import time
for _ in range(100):
    recs=[json.loads(l) for l in open('$GG_TMP/wire.jsonl')]
    if [r for r in recs if r['rpc']=='subscriptions/listen']: break
    time.sleep(0.05)
time.sleep(0.3)
recs=[json.loads(l) for l in open('$GG_TMP/wire.jsonl')]
rpcs=[r['rpc'] for r in recs]
assert rpcs==['subscriptions/listen'], rpcs
assert recs[0]['filter']['resourceSubscriptions']==['test://watched-resource'] and recs[0]['filter'].get('toolsListChanged'), recs
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

# ---- the downstream's input_required rounds relayed to a 2026-07-28 caller: the SDK v2 client
# (its multi-round driver) and a raw client doing the rounds by hand. The downstream's round
# becomes the caller's round (key relay-N, the gateway's own sealed requestState); the answer
# goes back to the downstream in its retry, and the call ends with the downstream's result that
# used it. A caller without the capability: the downstream's round is not answered, the call
# reports -32601 (exec.c relay_request: what a client without it answers).
cat >"$GG_TMP/relay26.mjs" <<'JS'
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { check, finish } from '__LIB__';
const [url, key] = process.argv.slice(2);
const { Client, StreamableHTTPClientTransport } =
  await import(pathToFileURL(path.join(process.env.GG_NPM, '@modelcontextprotocol/client/dist/index.mjs')).href);
const text = (r) => r?.content?.[0]?.text;
const sdkClient = async (caps) => {
  const c = new Client({ name: 'era26', version: '1' }, { capabilities: caps, versionNegotiation: { mode: 'auto' } });
  await c.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
  return c;
};
let id = 0;
const call = async (name, extra = {}, caps = { elicitation: { form: {} } }) => {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream',
    authorization: `Bearer ${key}`, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': name },
    body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method: 'tools/call', params: { name, arguments: {}, ...extra,
      _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': caps } } }) });
  const t = await res.text();
  if (!(res.headers.get('content-type') || '').includes('text/event-stream')) return JSON.parse(t);
  return t.split('\n').filter((l) => l.startsWith('data:')).map((l) => JSON.parse(l.slice(5))).filter((m) => m.id !== undefined).pop();
};
try {
  const asked = [];
  const c = await sdkClient({ elicitation: { form: {} }, sampling: {}, roots: {} });
  check('the SDK v2 client negotiated 2026-07-28 with the gateway', c.getNegotiatedProtocolVersion() === '2026-07-28', c.getNegotiatedProtocolVersion());
  c.setRequestHandler('elicitation/create', async (req) => {
    asked.push(req.params.message);
    return { action: 'accept', content: /color/.test(req.params.message) ? { color: 'green' } : { name: 'Ada' } };
  });
  c.setRequestHandler('sampling/createMessage', async (req) => ({ role: 'assistant', model: 'm',
    content: { type: 'text', text: `Paris (asked: ${req.params.messages[0].content.text})` } }));
  c.setRequestHandler('roots/list', async () => ({ roots: [{ uri: 'file:///ada', name: 'ada' }] }));
  const e = await c.callTool({ name: 'r_test_input_required_result_elicitation', arguments: {} });
  check('SDK v2: the downstream\'s form elicitation round reached the client', asked[0] === 'What is your name?', asked);
  check('SDK v2: ... and the downstream greets the answer', text(e) === 'Hello, Ada!', e);
  const s = await c.callTool({ name: 'r_test_input_required_result_sampling', arguments: {} });
  check('SDK v2: the downstream\'s sampling round answered', text(s) === 'The model says: Paris (asked: What is the capital of France?)', s);
  const r = await c.callTool({ name: 'r_test_input_required_result_list_roots', arguments: {} });
  check('SDK v2: the downstream\'s roots round answered', text(r) === 'Roots: file:///ada', r);
  const m = await c.callTool({ name: 'r_test_input_required_result_multi_round', arguments: {} });
  check('SDK v2: two downstream rounds, two client rounds', text(m) === 'Ada likes green' && asked.length === 3, [m, asked]);
  await c.close();
  const bare = await sdkClient({});
  const n = await bare.callTool({ name: 'r_test_input_required_result_elicitation', arguments: {} });
  check('SDK v2 without the capability: the call fails with the refusal (-32601)',
    n.isError === true && /MCP error -32601/.test(text(n)) && /elicitation capability/.test(text(n)), n);
  await bare.close();
  // by hand: the round the caller sees, then the retry with the answer
  const r1 = (await call('r_test_input_required_result_elicitation'))?.result;
  const keys = Object.keys(r1?.inputRequests ?? {});
  const ir = r1?.inputRequests?.[keys[0]];
  check('by hand: one input request under the gateway\'s key, the downstream\'s elicitation, a requestState',
    r1?.resultType === 'input_required' && keys.length === 1 && /^relay-\d+$/.test(keys[0]) && ir?.method === 'elicitation/create' &&
    ir.params?.message === 'What is your name?' && typeof r1.requestState === 'string', r1);
  const r2 = (await call('r_test_input_required_result_elicitation', { inputResponses: { [keys[0]]: { action: 'accept', content: { name: 'Bob' } } },
    requestState: r1?.requestState }))?.result;
  check('by hand: the retry ends with the downstream\'s result using the answer', r2 && !r2.isError && text(r2) === 'Hello, Bob!', r2);
  finish();
} catch (e) { finish(e); }
JS
sed -i "s#__LIB__#$GG_SRCDIR/tests/gateway/sdk_lib.mjs#" "$GG_TMP/relay26.mjs"
: >"$GG_TMP/wire.jsonl"
GG_NPM="$NM" "$NODE" "$GG_TMP/relay26.mjs" "$MCP" "$KEY" >"$GG_TMP/relay26.out" 2>&1
grep -E '^(ok|not ok|#) ' "$GG_TMP/relay26.out" | sed 's/^/  /'
t "the 2026-07-28 clients' checks on the 2026-07-28 downstream's rounds" grep -qE '^[0-9]+ passed, 0 failed' "$GG_TMP/relay26.out"
t "on the wire: each answered round was the downstream's call again, with the answer under its own key" wire "
calls=[r for r in recs if r['rpc']=='tools/call']
ans=[a for r in calls for a in r['answers']]
assert {'user_name','capital_question','client_roots','step1','step2'} <= set(ans), calls"

# ---- subscriptions of a 2026-07-28 downstream written with the SDK v2 server (createMcpHandler:
# its listen router honours resourceSubscriptions, declaring resources.subscribe). The gateway
# holds one subscriptions/listen stream at it (src/mcp/client_http.c "subscriptions/listen"):
# a session's resources/subscribe through the proxy graph puts the URI in that stream's
# resourceSubscriptions (counted at the downstream), the tool's update reaches the session
# with the prefixed URI (another graph's and another tenant's sessions hear nothing), a flood
# of 300 is rate-bounded, a dropped stream is reopened and updates flow again, the
# downstream's tools/list_changed re-lists its catalog, unsubscribing (then an update nobody
# hears) shrinks the stream, a raw 2026 listen stream through the gateway is served the same
# way, and the 65th URI subscribed through one downstream fails clearly.
cat >"$GG_TMP/srv26.mjs" <<'JS'
import http from 'node:http';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
const { McpServer, ResourceTemplate, createMcpHandler } =
  await import(pathToFileURL(path.join(process.env.GG_NPM, '@modelcontextprotocol/server/dist/index.mjs')).href);
// tools touch (one notifications/resources/updated of x://a) and flood (300); resources x://a
// and x://n/{i}. Control: GET /status {listens: subscriptions/listen POSTs received, open: the
// filters of the streams open now}; POST /drop cuts every open stream; POST /grow adds the tool
// "extra" and announces tools/list_changed.
const tools = ['touch', 'flood'];
let listens = 0;
const open = new Map();
const factory = () => {
  const s = new McpServer({ name: 'sub26', version: '1.0.0' },
    { capabilities: { resources: { subscribe: true, listChanged: true }, tools: { listChanged: true } } });
  s.registerResource('a', 'x://a', { mimeType: 'text/plain' }, async () => ({ contents: [{ uri: 'x://a', text: 'a' }] }));
  s.registerResource('n', new ResourceTemplate('x://n/{i}', { list: undefined }), { mimeType: 'text/plain' },
    async (uri) => ({ contents: [{ uri: uri.href, text: 'n' }] }));
  for (const t of tools) s.registerTool(t, { description: `${t} x://a` }, async () => {
    for (let i = 0; i < (t === 'flood' ? 300 : 1); i++) handler.notify.resourceUpdated('x://a');
    return { content: [{ type: 'text', text: `${t}ed` }] };
  });
  return s;
};
const handler = createMcpHandler(factory, { legacy: 'reject' });
const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'host']);
const readBody = (req) => new Promise((ok, ko) => {
  const parts = [];
  req.on('data', (c) => parts.push(c)).on('end', () => ok(Buffer.concat(parts).toString('utf8'))).on('error', ko);
});
const json = (res, body) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
http.createServer(async (req, res) => {
  res.on('error', () => {});
  if (req.url === '/status') return json(res, { listens, open: [...open.values()] });
  if (req.url === '/drop') {
    for (const r of open.keys()) r.destroy();
    return json(res, {});
  }
  if (req.url === '/grow') {
    if (!tools.includes('extra')) tools.push('extra');
    handler.notify.toolsChanged();
    return json(res, { tools });
  }
  const body = req.method === 'POST' ? await readBody(req) : undefined;
  let msg = null;
  try { msg = JSON.parse(body); } catch { /* the handler answers it */ }
  const ac = new AbortController();
  res.on('close', () => { ac.abort(); open.delete(res); });
  const headers = {};
  for (const [k, v] of Object.entries(req.headers)) if (!HOP.has(k)) headers[k] = v;
  if (msg?.method === 'subscriptions/listen') listens++, open.set(res, msg.params?.notifications ?? null);
  const response = await handler.fetch(new Request(`http://127.0.0.1${req.url}`, { method: req.method, headers, body, signal: ac.signal }));
  res.writeHead(response.status, Object.fromEntries(response.headers));
  if (response.body) for await (const chunk of response.body) res.write(chunk);
  res.end();
}).listen(0, '127.0.0.1', function () { console.log(`PORT ${this.address().port}`); });
JS
GG_NPM="$NM" "$NODE" "$GG_TMP/srv26.mjs" >"$GG_TMP/srv26.out" 2>"$GG_TMP/srv26.err" &
S26=$!
trap 'kill $DPID $SPY $S26 2>/dev/null; gg_cleanup' EXIT
FX="http://127.0.0.1:$(gw_wait_port "$GG_TMP/srv26.out" $S26)"
s26() { cat <<YAML
version: "1.0"
server: {name: "s26", version: "1.0.0"}
mcpServers:
  sub26: {type: "streamableHttp", url: "$FX/mcp", protocol: "2026-07-28"}
proxy:
  - {server: "sub26", tools: "all", prefix: "r_", resources: "all", uri_prefix: "d+"}
YAML
}
s26 >"$GG_TMP/s26.yaml"
t "proxy graphs on the SDK v2 downstream: acme's s26 and s26b, beta's s26 → 201" eq \
  "$(gw_put_graph "$KEY" acme s26 "$GG_TMP/s26.yaml") $(gw_put_graph "$KEY" acme s26b "$GG_TMP/s26.yaml") $(gw_put_graph "$BKEY" beta s26 "$GG_TMP/s26.yaml")" "201 201 201"
cat >"$GG_TMP/sub26.mjs" <<'JS'
import { loadSdk as load, check, finish, until, sleep } from '__LIB__';
const [base, key, bkey, fx, metricsUrl, pub] = process.argv.slice(2);
const heardLc = async () => Number(((await (await fetch(metricsUrl)).text())
  .match(/^graphgate_downstream_listen_total\{event="list_changed"\} (\d+)$/m) || [])[1] || 0);
const { Client } = await load('client/index.js');
const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');
const { ResourceUpdatedNotificationSchema } = await load('types.js');
const status = async () => (await fetch(`${fx}/status`)).json();
const holding = async (u) => (await status()).open.filter((f) => (f?.resourceSubscriptions || []).includes(u)).length;
const failure = async (p) => { try { await p; return null; } catch (e) { return e; } };
const open = async (ep, k) => {
  const c = new Client({ name: 'sub26', version: '1' }, { capabilities: {} });
  const got = [];
  c.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => got.push(n.params.uri));
  await c.connect(new StreamableHTTPClientTransport(new URL(`${base}/${ep}`), { requestInit: { headers: { Authorization: `Bearer ${k}` } } }));
  return [c, got];
};
const touch = (c, t = 'r_touch') => c.callTool({ name: t, arguments: {} });
// touch until heard() (the downstream's stream may still be connecting)
const touching = (c, heard, ms = 10000) => until(async () => { await touch(c); await sleep(100); return heard(); }, ms);
// a raw 2026-07-28 listen stream through the gateway: what it carried so far
function listen26(ep, k, id, notifications) {
  const ac = new AbortController();
  let text = '';
  fetch(`${base}/${ep}`, { method: 'POST', signal: ac.signal, headers: { 'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream', 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'subscriptions/listen',
    Authorization: `Bearer ${k}` }, body: JSON.stringify({ jsonrpc: '2.0', id, method: 'subscriptions/listen', params: { notifications,
    _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } } }) })
    .then(async (r) => { for await (const c of r.body) text += Buffer.from(c).toString(); }).catch(() => {});
  return { text: () => text, end: () => ac.abort() };
}
try {
  const [a, got] = await open('acme/s26', key);
  const [b, bgot] = await open('acme/s26b', key);
  const [c, cgot] = await open('beta/s26', bkey);
  await a.subscribeResource({ uri: 'd+x://a' });
  check('subscribe through the proxy graph: one listen stream at the downstream names x://a',
    await until(async () => (await holding('x://a')) === 1), await status());
  check('the tool\'s update reaches the subscribed session with the prefixed URI', await touching(a, () => got.includes('d+x://a')), got);
  let n = got.length;
  await touch(b);
  await touch(c);
  check('... again, through another graph\'s tool', await until(() => got.length > n), got);
  await b.ping();
  await c.ping();
  check('another graph\'s session and another tenant\'s heard nothing', bgot.length === 0 && cgot.length === 0, [bgot, cgot]);
  await sleep(300); /* out of the last update's 250 ms window */
  n = got.length;
  const t0 = Date.now();
  await touch(a, 'r_flood');
  console.log(`# 300 updates of x://a from the 2026-07-28 downstream: the call took ${Date.now() - t0} ms`);
  check('a flood of 300 updates: one arrives at once', await until(() => got.length > n), got.length - n);
  await until(() => got.length > n + 1, 1500); /* the trailing one, if the flood outlived the window */
  check('... 300 relayed as at most 2 (the 250 ms bound per session and URI)', got.length - n <= 2, got.length - n);
  const l1 = (await status()).listens;
  await fetch(`${fx}/drop`, { method: 'POST' });
  check('a stream the downstream drops is reopened, still naming x://a',
    await until(async () => (await status()).listens > l1 && (await holding('x://a')) === 1, 10000), await status());
  n = got.length;
  check('... and updates flow again', await touching(a, () => got.length > n), got.length - n);
  const lc0 = await heardLc();
  await fetch(`${fx}/grow`, { method: 'POST' });
  check('the downstream\'s tools/list_changed reached the gateway on the stream', await until(async () => (await heardLc()) > lc0), lc0);
  /* the new tool is then held for review (tool pinning), not yet proxied: the catalog says it was heard */
  const catalog = async () => (await (await fetch(`${pub}/admin/tenants/acme/downstream`, { headers: { Authorization: `Bearer ${key}` } })).json())
    .catalogs.find((c) => c.server === 'sub26')?.tools.map((t) => t.name) || [];
  check('... and re-lists the downstream: the tenant\'s catalog has the new tool',
    await until(async () => (await catalog()).includes('extra'), 15000), await catalog());
  await a.unsubscribeResource({ uri: 'd+x://a' });
  check('unsubscribed, an update nobody hears shrinks the downstream stream (x://a no longer asked, list_changed still)',
    await touching(a, async () => (await holding('x://a')) === 0 && (await status()).open.some((f) => f?.toolsListChanged)), await status());
  const ls = listen26('acme/s26', key, 'l26', { resourceSubscriptions: ['d+x://a'] });
  check('a raw 2026 listen stream through the gateway naming d+x://a: the downstream stream names x://a again',
    await until(async () => (await holding('x://a')) === 1), await status());
  check('... and the update reaches it with the prefixed URI and its subscription id',
    await touching(a, () => /"uri":"d\+x:\/\/a".*"l26"|"l26".*"uri":"d\+x:\/\/a"/.test(ls.text())), ls.text());
  ls.end();
  check('that stream gone, an update nobody hears lets the downstream stream drop x://a',
    await touching(a, async () => (await holding('x://a')) === 0), await status());
  const [a2] = await open('acme/s26', key);
  const l2 = (await status()).listens;
  for (let i = 1; i <= 60; i++) await a.subscribeResource({ uri: `d+x://n/${i}` });
  for (let i = 61; i <= 64; i++) await a2.subscribeResource({ uri: `d+x://n/${i}` });
  const e = await failure(a2.subscribeResource({ uri: 'd+x://n/65' }));
  check('the 65th URI subscribed through one downstream fails clearly', e && /at most 64 resources/.test(e.message), String(e));
  check('... the 64 held in one stream, reopened far fewer times than the subscriptions',
    await until(async () => (await holding('x://n/64')) === 1 && (await status()).open.find((f) => f?.resourceSubscriptions)?.resourceSubscriptions.length === 64) &&
    (await status()).listens - l2 < 20, [(await status()).listens - l2]);
  console.log(`# 64 subscriptions in a row opened ${(await status()).listens - l2} listen streams at the downstream`);
  for (const cl of [a, a2, b, c]) await cl.close();
  finish();
} catch (e) { finish(e); }
JS
sed -i "s#__LIB__#$GG_SRCDIR/tests/gateway/sdk_lib.mjs#" "$GG_TMP/sub26.mjs"
GG_NPM="$NM" "$NODE" "$GG_TMP/sub26.mjs" "$GG_PUB/mcp" "$KEY" "$BKEY" "$FX" "$GG_INT/metrics" "$GG_PUB" >"$GG_TMP/sub26.out" 2>&1
grep -E '^(ok|not ok|#) ' "$GG_TMP/sub26.out" | sed 's/^/  /'
t "the SDK clients' checks on the SDK v2 downstream's subscriptions" grep -qE '^[0-9]+ passed, 0 failed' "$GG_TMP/sub26.out"

t "the downstream graphgate never saw the key in a log" bash -c "! grep -qF '$DKEY' '$GG_TMP/serve.err' '$GG_TMP/serve.out'"
t "server stops cleanly (exit 0, no sanitizer report)" gw_stop_clean
gg_finish
