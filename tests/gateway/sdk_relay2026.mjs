// sdk_relay2026.mjs — a downstream's requests to its client (relay_srv.mjs: elicitation form
// and URL mode, sampling, roots) relayed to a 2026-07-28 caller as input-required rounds: the
// official SDK v2 client (@modelcontextprotocol/client, whose multi-round driver answers each
// round and repeats the call with inputResponses and the requestState), and a raw JSON-RPC
// client doing the rounds by hand to look at them: unique request keys, a reused or altered
// requestState refused, a round nobody answers ending with the downstream's call (within its
// limit, the downstream's work cancelled, another tenant unaffected, a late retry told to call
// again), and a cancelled retry cancelling the downstream's work.
// usage: node sdk_relay2026.mjs PROXY_URL SHORT_URL KEY OTHER_URL OTHER_KEY STATUS_URL SHORT_TIMEOUT_MS
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { check, until, finish, sleep } from './sdk_lib.mjs';

const [proxyUrl, shortUrl, key, otherUrl, otherKey, statusUrl, shortMs] = process.argv.slice(2);
const root = process.env.GG_NPM || path.resolve(import.meta.dirname, '../npm/node_modules');
const { Client, StreamableHTTPClientTransport } =
  await import(pathToFileURL(path.join(root, '@modelcontextprotocol/client/dist/index.mjs')).href);
const status = async () => (await fetch(statusUrl)).json();
const body = (r) => { try { return JSON.parse(r.content[0].text); } catch { return r.content?.[0]?.text; } };

async function sdkClient(caps) {
  const client = new Client({ name: 'relay2026-test', version: '1.0.0' }, { capabilities: caps, versionNegotiation: { mode: 'auto' } });
  await client.connect(new StreamableHTTPClientTransport(new URL(proxyUrl), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
  return client;
}

// one stateless 2026-07-28 tools/call; the JSON-RPC response (JSON or the last SSE message)
const CAPS = { elicitation: { form: {}, url: {} }, sampling: {}, roots: {} };
let nextId = 0;
async function call(url, k, name, args, extra = {}, signal) {
  const params = { name, arguments: args, ...extra, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': CAPS } };
  const res = await fetch(url, { method: 'POST', signal, body: JSON.stringify({ jsonrpc: '2.0', id: ++nextId, method: 'tools/call', params }),
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${k}`,
      'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': name } });
  const text = await res.text();
  if (!(res.headers.get('content-type') || '').includes('text/event-stream')) return JSON.parse(text);
  const msgs = text.split('\n').filter((l) => l.startsWith('data:')).map((l) => JSON.parse(l.slice(5)));
  return msgs.filter((m) => m.id !== undefined).pop();
}
const round = (resp) => resp?.result?.resultType === 'input_required' ? resp.result : null;
const only = (r) => { const ks = Object.keys(r?.inputRequests ?? {}); return ks.length === 1 ? [ks[0], r.inputRequests[ks[0]]] : [null, null]; };

try {
  // 1. the SDK v2 client: each of the downstream's four questions is a round it answers
  const seen = [];
  const full = await sdkClient(CAPS);
  check('the SDK v2 client negotiated 2026-07-28', full.getNegotiatedProtocolVersion() === '2026-07-28', full.getNegotiatedProtocolVersion());
  full.setRequestHandler('elicitation/create', async (req) => {
    seen.push(req.params.mode ?? 'form');
    return req.params.mode === 'url' ? { action: 'accept' } : { action: 'accept', content: { answer: `hi from ${req.params.message}` } };
  });
  full.setRequestHandler('sampling/createMessage', async (req) => ({ role: 'assistant', model: 'test-model',
    content: { type: 'text', text: `sampled: ${req.params.messages[0].content.text}` } }));
  full.setRequestHandler('roots/list', async () => ({ roots: [{ uri: 'file:///work', name: 'work' }] }));
  const r = await full.callTool({ name: 'r_ask', arguments: { who: 'ann' } });
  const b = body(r);
  check('SDK v2: a proxied tool that elicits (form, URL), samples and lists roots completes through rounds',
    !r.isError && b?.form?.action === 'accept' && b.form.content?.answer === 'hi from Hello ann?' && b.url?.action === 'accept' &&
    b.sample?.text === 'sampled: summarize ann' && b.roots?.[0]?.uri === 'file:///work', r);
  check('SDK v2: the client was asked the form, then the URL-mode elicitation', seen.join() === 'form,url', seen);
  await full.close();

  // 2. a client without the capabilities: the downstream gets -32601, the call says so
  const bare = await sdkClient({});
  const nr = await bare.callTool({ name: 'r_ask', arguments: { who: 'cy' } });
  check('SDK v2 without the capability: the downstream got -32601 and the call reports it',
    nr.isError === true && /-32601/.test(nr.content?.[0]?.text) && /elicitation capability/.test(nr.content?.[0]?.text), nr);
  await bare.close();

  // 3. the rounds by hand: one request each, unique keys, the answers reach the downstream
  const keys = [], states = [];
  let resp = await call(proxyUrl, key, 'r_ask', { who: 'raw' });
  const answers = {
    'elicitation/create': (p) => p.mode === 'url' ? { action: 'accept' } : { action: 'accept', content: { answer: 'by hand' } },
    'sampling/createMessage': () => ({ role: 'assistant', model: 'm', content: { type: 'text', text: 'by hand' } }),
    'roots/list': () => ({ roots: [{ uri: 'file:///raw' }] }),
  };
  const methods = [];
  let forgedErr = null, reusedErr = null;
  for (let i = 0; i < 6 && round(resp); i++) {
    const rd = round(resp);
    const [k, req] = only(rd);
    keys.push(k);
    methods.push(req?.method);
    states.push(rd.requestState);
    if (i === 1) { // an altered state, then the first round's state again: both refused
      const s = rd.requestState;
      const c = s[s.length - 8] === 'A' ? 'B' : 'A';
      forgedErr = await call(proxyUrl, key, 'r_ask', { who: 'raw' }, { inputResponses: { [k]: answers[req.method](req.params) },
        requestState: s.slice(0, -8) + c + s.slice(-7) });
      reusedErr = await call(proxyUrl, key, 'r_ask', { who: 'raw' }, { inputResponses: { [keys[0]]: { action: 'accept', content: { answer: 'again' } } },
        requestState: states[0] });
    }
    resp = await call(proxyUrl, key, 'r_ask', { who: 'raw' }, { inputResponses: { [k]: answers[req.method](req.params) }, requestState: rd.requestState });
  }
  const fin = resp?.result;
  check(`by hand: four rounds (${methods.join(', ')}), one request each`, methods.join() ===
    'elicitation/create,elicitation/create,sampling/createMessage,roots/list', { methods, resp });
  check(`by hand: the request keys are unique (${keys.join(', ')})`, new Set(keys).size === 4 && keys.every((k) => /^relay-\d+$/.test(k)), keys);
  check('by hand: the final result carries the answers given', fin && !fin.isError && body(fin)?.form?.content?.answer === 'by hand' &&
    body(fin)?.roots?.[0]?.uri === 'file:///raw', resp);
  check('an altered requestState is refused (-32602, integrity)', forgedErr?.error?.code === -32602 &&
    /integrity|malformed/.test(forgedErr.error.message), forgedErr);
  check('a requestState answered before is refused (-32602)', reusedErr?.error?.code === -32602 &&
    /answered/.test(reusedErr.error.message), reusedErr);

  // 4. a round nobody answers: it ends with the downstream's call (the server's timeout), the
  // downstream's work is cancelled, another tenant's calls meanwhile keep their latency, and a
  // late retry is told to call again
  const before = (await status()).aborted;
  const t0 = Date.now();
  const nv = round(await call(shortUrl, key, 'r_never', {}));
  const [nk] = only(nv);
  const lat = [];
  let st = null;
  while (Date.now() - t0 < Number(shortMs) + 14000) {
    const t = Date.now();
    const q = await call(otherUrl, otherKey, 'quick', {});
    lat.push(Date.now() - t);
    if (q?.result?.isError !== false && q?.result?.structuredContent === undefined && !q?.result?.content) lat.push(99999);
    st = await status();
    if (st.aborted > before) break;
    await sleep(100);
  }
  const took = Date.now() - t0;
  check(`a round nobody answers: the downstream's call ends within its ${shortMs} ms limit, its work cancelled (${took} ms)`,
    nv && st?.aborted === before + 1 && took < Number(shortMs) + 12000, { nv, st, took }); // unbounded: the 30 s timeout
  const worst = Math.max(...lat);
  check(`another tenant's calls meanwhile: worst ${worst} ms over ${lat.length}`, lat.length >= 3 && worst < 2500, lat); // alone ~10 ms; a held thread: seconds
  const late = await call(shortUrl, key, 'r_never', {}, { inputResponses: { [nk]: { action: 'accept', content: { answer: 'late' } } },
    requestState: nv?.requestState });
  check('a retry after the round ended: -32602, call again', late?.error?.code === -32602 && /call the tool again/.test(late.error.message), late);

  // 5. cancelling the retry while the downstream works cancels the downstream's work
  const b5 = (await status()).aborted;
  const sl = round(await call(proxyUrl, key, 'r_slow', {}));
  const [sk] = only(sl);
  const ac = new AbortController();
  const pending = call(proxyUrl, key, 'r_slow', {}, { inputResponses: { [sk]: { action: 'accept', content: { answer: 'go' } } },
    requestState: sl?.requestState }, ac.signal).then(() => 'answered', (e) => `aborted: ${e.name}`);
  await sleep(500);
  ac.abort();
  const how = await pending;
  const st5 = await until(async () => { const s = await status(); return s.aborted > b5 && s; }, 5000);
  check('a cancelled retry (the client went away) cancels the downstream\'s work', sl && how.startsWith('aborted') && st5?.aborted === b5 + 1,
    { sl, how, st5 });
} catch (e) {
  finish(e);
}
finish();
