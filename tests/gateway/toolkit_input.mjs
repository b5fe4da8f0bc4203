// toolkit_input.mjs — the toolkit's run_graph on a graph whose tool asks its client (an elicit
// node, then a sample node), through the front door in both eras:
//  - 2026-07-28, the official SDK v2 client (@modelcontextprotocol/client) with elicitation
//    and sampling handlers: run_graph answers input_required rounds, the SDK repeats the call
//    with inputResponses and requestState, the run resumes at the waiting node; final result
//    and the trace of all rounds (earlier nodes once). Raw rounds: the inputRequests, a
//    missing answer asks again, a tampered state, a state for another source, tool or
//    arguments, a state used with another tenant's key, an oversize state are refused, a run
//    whose state would be oversize ends with an error; a
//    client that declared neither capability gets -32021 naming both.
//  - 2025-11-25 session, the SDK v1 client (@modelcontextprotocol/sdk 1.32.2): the requests go
//    out on the call's SSE stream and the answers come back; a client without the
//    capabilities gets the run's clear error.
// usage: node toolkit_input.mjs URL KEY OTHER_TENANT_KEY
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadSdk, check, finish } from './sdk_lib.mjs';

const [url, key, otherKey] = process.argv.slice(2);
const root = process.env.GG_NPM || path.resolve(import.meta.dirname, '../npm/node_modules');
const v2 = await import(pathToFileURL(path.join(root, '@modelcontextprotocol/client/dist/index.mjs')).href);
const { Client: Client1 } = await loadSdk('client/index.js');
const { StreamableHTTPClientTransport: Transport1 } = await loadSdk('client/streamableHttp.js');
const { ElicitRequestSchema, CreateMessageRequestSchema } = await loadSdk('types.js');

const yaml = `version: "1.0"
server: {name: "asker", version: "1.0.0"}
tools:
  - name: "greet"
    description: "asks the user's name, then the client's model for a greeting"
    inputSchema: {type: object, properties: {lang: {type: string}}}
    nodes:
      - {id: "entry", type: "entry", next: "prep"}
      - id: "prep"
        type: "transform"
        transform: {expr: '{"lang": $exists($.entry.lang) ? $.entry.lang : "en"}'}
        next: "ask_name"
      - id: "ask_name"
        type: "elicit"
        message: "What is your name?"
        requestedSchema: {type: object, properties: {name: {type: string}}, required: [name]}
        next: "model"
      - id: "model"
        type: "sample"
        messages: [{role: "user", content: {type: "text", text: "Say a greeting"}}]
        maxTokens: 20
        next: "reply"
      - id: "reply"
        type: "transform"
        transform: {expr: '$.model.content.text & ", " & $.ask_name.content.name & " (" & $.prep.lang & ")"'}
        next: "exit"
      - {id: "exit", type: "exit"}
`;
const args = { yaml, tool: 'greet', arguments: { lang: 'fr' } };
const auth = (k) => ({ Authorization: `Bearer ${k}` });
const nodesOf = (sc) => (sc?.trace || []).map((n) => n.node);
const once = (list) => ['entry', 'prep', 'ask_name', 'model', 'reply', 'exit'].every((id) => list.filter((n) => n === id).length === 1);
const elicitAnswer = { action: 'accept', content: { name: 'Ada' } };
const sampleAnswer = { role: 'assistant', model: 'test-model', content: { type: 'text', text: 'Bonjour' } };

// one raw 2026-07-28 tools/call of run_graph: {status, body}
let nextId = 1;
async function raw(k, a, extra = {}, caps = { elicitation: {}, sampling: {} }) {
  const body = { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name: 'run_graph', arguments: a, ...extra,
    _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': caps } } };
  const r = await fetch(url, { method: 'POST', body: JSON.stringify(body), headers: { ...auth(k), 'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream', 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call', 'Mcp-Name': 'run_graph' } });
  const text = await r.text();
  const data = text.trimStart().startsWith('{') ? text : text.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5)).pop();
  return { status: r.status, body: JSON.parse(data) };
}

try {
  // ---- 2026-07-28 through the SDK v2 client ----
  const asked = [];
  const c2 = new v2.Client({ name: 'toolkit-input-2026', version: '1.0.0' },
    { capabilities: { elicitation: {}, sampling: {} }, versionNegotiation: { mode: 'auto' } });
  c2.setRequestHandler('elicitation/create', async (req) => { asked.push(['elicit', req.params.message]); return elicitAnswer; });
  c2.setRequestHandler('sampling/createMessage', async (req) => { asked.push(['sample', req.params.messages?.[0]?.content?.text]); return sampleAnswer; });
  await c2.connect(new v2.StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: auth(key) } }));
  check('2026: negotiated 2026-07-28', c2.getNegotiatedProtocolVersion() === '2026-07-28', c2.getNegotiatedProtocolVersion());
  const r1 = await c2.callTool({ name: 'run_graph', arguments: args });
  const sc1 = r1.structuredContent;
  check('2026: the elicit then the sample handler were asked, once each',
    JSON.stringify(asked) === JSON.stringify([['elicit', 'What is your name?'], ['sample', 'Say a greeting']]), asked);
  check('2026: run_graph ends with the graph\'s output', sc1?.ok === true && sc1.output === 'Bonjour, Ada (fr)', sc1 ?? r1);
  check('2026: the trace spans the three rounds, every node once (none ran again)', once(nodesOf(sc1)), nodesOf(sc1));
  const tAsk = sc1?.trace?.find((n) => n.node === 'ask_name');
  check('2026: the elicit node\'s record holds the client\'s answer', tAsk?.output?.content?.name === 'Ada', tAsk);
  check('2026: nothing stored', sc1?.stored === false, sc1);
  await c2.close();

  // a client that declared neither capability: -32021 naming both
  const c0 = new v2.Client({ name: 'toolkit-input-none', version: '1.0.0' }, { capabilities: {}, versionNegotiation: { mode: 'auto' } });
  await c0.connect(new v2.StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: auth(key) } }));
  const e0 = await c0.callTool({ name: 'run_graph', arguments: args }).then((r) => ({ result: r }), (e) => e);
  check('2026: no capabilities declared → -32021 with requiredCapabilities elicitation and sampling',
    e0.code === -32021 && e0.data?.requiredCapabilities?.elicitation && e0.data?.requiredCapabilities?.sampling, { code: e0.code, message: e0.message, data: e0.data });
  await c0.close();
  const e1 = await raw(key, args, {}, { elicitation: {} });
  check('2026: elicitation only → -32021 naming sampling (HTTP 400)', e1.status === 400 && e1.body.error?.code === -32021 &&
    e1.body.error.data?.requiredCapabilities?.sampling && !e1.body.error.data.requiredCapabilities.elicitation, e1);

  // ---- raw rounds ----
  const a1 = await raw(key, args);
  const res1 = a1.body.result;
  check('round 1: input_required asking elicitation/create under the node id', res1?.resultType === 'input_required' &&
    res1.inputRequests?.ask_name?.method === 'elicitation/create' && typeof res1.requestState === 'string', a1.body);
  const st1 = res1?.requestState || '';
  const again = await raw(key, args, { inputResponses: {}, requestState: st1 });
  check('round 1 repeated without the answer: asked again', again.body.result?.resultType === 'input_required' &&
    again.body.result.inputRequests?.ask_name, again.body);
  const flip = st1.slice(0, 40) + (st1[40] === 'A' ? 'B' : 'A') + st1.slice(41);
  const bad = [
    ['a tampered state', await raw(key, args, { inputResponses: { ask_name: elicitAnswer }, requestState: flip }), /integrity/],
    ['a state for another source', await raw(key, { ...args, yaml: yaml.replace('Say a greeting', 'Say hello') },
      { inputResponses: { ask_name: elicitAnswer }, requestState: st1 }), /another graph source/],
    ['a state for other arguments', await raw(key, { ...args, arguments: { lang: 'de' } },
      { inputResponses: { ask_name: elicitAnswer }, requestState: st1 }), /another graph source, tool or arguments/],
    ['a state used with another tenant\'s key', await raw(otherKey, args, { inputResponses: { ask_name: elicitAnswer }, requestState: st1 }), /integrity/],
    ['an oversize state', await raw(key, args, { inputResponses: { ask_name: elicitAnswer }, requestState: 'A'.repeat(300000) }), /too large/],
  ];
  for (const [what, r, re] of bad)
    check(`${what} → -32602 naming why (HTTP 400)`, r.status === 400 && r.body.error?.code === -32602 && re.test(r.body.error.message), r.body);
  const a2 = await raw(key, args, { inputResponses: { ask_name: elicitAnswer }, requestState: st1 });
  const res2 = a2.body.result;
  check('round 2: input_required asking sampling/createMessage with a new state', res2?.resultType === 'input_required' &&
    res2.inputRequests?.model?.method === 'sampling/createMessage' && res2.requestState && res2.requestState !== st1, a2.body);
  const t3 = Date.now();
  const a3 = await raw(key, args, { inputResponses: { model: sampleAnswer }, requestState: res2?.requestState });
  console.log(`# requestState ${st1.length} chars after round 1, ${res2?.requestState?.length} after round 2; round 3 took ${Date.now() - t3} ms`);
  const sc3 = a3.body.result?.structuredContent;
  check('round 3: the result, with the trace of all rounds', a3.body.result?.resultType === 'complete' &&
    sc3?.output === 'Bonjour, Ada (fr)' && once(nodesOf(sc3)), a3.body);

  // an ask node: its requests in one round (roots too), then the result
  const askYaml = `version: "1.0"
server: {name: "asker", version: "1.0.0"}
tools:
  - name: "all"
    description: "asks for everything at once"
    inputSchema: {type: object}
    nodes:
      - {id: "entry", type: "entry", next: "inputs"}
      - id: "inputs"
        type: "ask"
        requests:
          who: {type: "elicit", message: "Who?", requestedSchema: {type: object, properties: {name: {type: string}}}}
          roots: {type: "roots"}
        next: "exit"
      - {id: "exit", type: "exit"}
`;
  const askArgs = { yaml: askYaml, tool: 'all' };
  const q1 = await raw(key, askArgs, {}, { elicitation: {}, roots: {} });
  const ir = q1.body.result?.inputRequests;
  check('ask node: one round carries its elicitation/create and roots/list requests',
    ir?.who?.method === 'elicitation/create' && ir?.roots?.method === 'roots/list', q1.body);
  const q2 = await raw(key, askArgs, { inputResponses: { who: elicitAnswer, roots: { roots: [{ uri: 'file:///w' }] } },
    requestState: q1.body.result?.requestState }, { elicitation: {}, roots: {} });
  const qo = q2.body.result?.structuredContent?.output;
  check('ask node: the answers are its output', qo?.who?.content?.name === 'Ada' && qo?.roots?.roots?.[0]?.uri === 'file:///w', q2.body);

  // a run whose state would not fit in a requestState (a 320 KB value before the elicit node)
  const bigYaml = yaml.replace(`transform: {expr: '{"lang": $exists($.entry.lang) ? $.entry.lang : "en"}'}`,
    `transform: {expr: '{"lang": "en", "pad": $join([1..40000].("abcdefgh"))}'}`);
  const big = await raw(key, { ...args, yaml: bigYaml });
  check('a round whose state is over 256 KiB → an error naming it, no requestState',
    bigYaml !== yaml && big.body.error?.code === -32603 && /too large/.test(big.body.error.message), big.body);

  // ---- 2025-11-25 session through the SDK v1 client ----
  const c1 = new Client1({ name: 'toolkit-input-2025', version: '1.0.0' }, { capabilities: { elicitation: {}, sampling: {} } });
  const asked1 = [];
  c1.setRequestHandler(ElicitRequestSchema, async (req) => { asked1.push(req.params.message); return { action: 'accept', content: { name: 'Grace' } }; });
  c1.setRequestHandler(CreateMessageRequestSchema, async (req) => { asked1.push(req.params.messages[0].content.text); return { ...sampleAnswer, content: { type: 'text', text: 'Salut' } }; });
  const tr1 = new Transport1(new URL(url), { requestInit: { headers: auth(key) } });
  await c1.connect(tr1);
  check('2025: a session', typeof tr1.sessionId === 'string', tr1.sessionId);
  const s1 = await c1.callTool({ name: 'run_graph', arguments: args });
  check('2025: the requests reached the client on the call\'s stream',
    JSON.stringify(asked1) === JSON.stringify(['What is your name?', 'Say a greeting']), asked1);
  check('2025: the answers came back into the run', s1.structuredContent?.output === 'Salut, Grace (fr)' && once(nodesOf(s1.structuredContent)), s1);
  await c1.close();
  const c1n = new Client1({ name: 'toolkit-input-2025-none', version: '1.0.0' }, { capabilities: {} });
  await c1n.connect(new Transport1(new URL(url), { requestInit: { headers: auth(key) } }));
  const s0 = await c1n.callTool({ name: 'run_graph', arguments: args });
  const err0 = s0.structuredContent?.error;
  check('2025: a client without elicitation: the elicit node fails with a clear error',
    s0.isError === true && err0?.node === 'ask_name' && /elicitation/.test(err0.message), s0);
  await c1n.close();
  finish();
} catch (e) {
  finish(e);
}
