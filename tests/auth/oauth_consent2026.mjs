// oauth_consent2026.mjs — per-user consent asked of a 2026-07-28 (stateless) caller: an
// input-required round carrying one URL-mode elicitation instead of -32042. A raw JSON-RPC
// client looks at the rounds (no URL capability: -32021; the round's shape; decline; accept
// without consenting: another round, three at most, then a tool error; a reused state), then
// the official SDK v2 client (@modelcontextprotocol/client) whose elicitation handler opens the
// URL in a user agent (curl following redirects with cookies, signed in as USER) and answers
// accept: its call completes with the downstream reached under USER's own grant.
// usage: node oauth_consent2026.mjs URL TOKEN USER CONNECT_URL_PREFIX WORKDIR
import path from 'node:path';
import { execFile } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { check, finish } from '../gateway/sdk_lib.mjs';

const [url, token, user, connectPrefix, workdir] = process.argv.slice(2);
const root = process.env.GG_NPM || path.resolve(import.meta.dirname, '../npm/node_modules');
const { Client, StreamableHTTPClientTransport } =
  await import(pathToFileURL(path.join(root, '@modelcontextprotocol/client/dist/index.mjs')).href);

let nextId = 0;
async function call(caps, extra = {}) { // one stateless tools/call of whoami → {status, body}
  const params = { name: 'whoami', arguments: {}, ...extra, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': caps } };
  const res = await fetch(url, { method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', id: ++nextId, method: 'tools/call', params }),
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}`,
      'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'whoami' } });
  const text = await res.text();
  if (!(res.headers.get('content-type') || '').includes('text/event-stream')) return { status: res.status, body: JSON.parse(text) };
  const msgs = text.split('\n').filter((l) => l.startsWith('data:')).map((l) => JSON.parse(l.slice(5)));
  return { status: res.status, body: msgs.filter((m) => m.id !== undefined).pop() };
}
const URLCAPS = { elicitation: { form: {}, url: {} } };
const round = (b) => b?.result?.resultType === 'input_required' ? b.result : null;
const only = (r) => { const ks = Object.keys(r?.inputRequests ?? {}); return ks.length === 1 ? [ks[0], r.inputRequests[ks[0]]] : [null, null]; };
const answer = (r, action) => { const [k] = only(r); return { inputResponses: { [k]: { action } }, requestState: r.requestState }; };
const text = (b) => b?.result?.content?.[0]?.text ?? '';
// a user agent opening the URL: redirects followed, cookies kept, signed in as USER → final status
const browse = (u) => new Promise((resolve) => execFile('curl', ['-sS', '-L', '--max-redirs', '20', '--max-time', '60',
  '-c', `${workdir}/jar.2026`, '-b', `${workdir}/jar.2026`, '-H', `X-Test-Account: ${user}`, '-o', `${workdir}/page2026.html`,
  '-w', '%{http_code}', u], (err, out) => resolve(err ? `curl: ${err.message}` : out)));

try {
  // 1. no URL-mode elicitation declared (form only, or none): the spec's -32021, HTTP 400
  const nc = await call({ elicitation: {} });
  check('2026 without URL-mode elicitation: -32021 (HTTP 400) naming elicitation.url',
    nc.status === 400 && nc.body?.error?.code === -32021 && nc.body.error.data?.requiredCapabilities?.elicitation?.url !== undefined, nc);

  // 2. with it: an input-required round, one URL-mode elicitation naming the connect page
  const r1 = round((await call(URLCAPS)).body);
  const [k1, q1] = only(r1);
  check('2026 without a grant: an input-required round with one request', !!r1 && !!k1 && typeof r1.requestState === 'string', r1);
  check('  keyed consent-<elicitation id>, a URL-mode elicitation/create', /^consent-[0-9a-f]{32}$/.test(k1) &&
    q1?.method === 'elicitation/create' && q1.params?.mode === 'url' && /'api'/.test(q1.params?.message), q1);
  check('  naming graphgate\'s connect page', typeof q1?.params?.url === 'string' && q1.params.url.startsWith(`${connectPrefix}?state=`), q1);

  // 3. declined: a tool error, nothing run
  const d = (await call(URLCAPS, answer(r1, 'decline'))).body;
  check('declined: a tool error saying the user did not consent', d?.result?.isError === true && /did not consent/.test(text(d)), d);

  // 4. accepted without consenting: another round (a new elicitation), at most three, then a tool error
  let r = round((await call(URLCAPS)).body);
  const rA = r;
  const keys = [];
  let last = null;
  for (let i = 0; i < 4 && r; i++) {
    keys.push(only(r)[0]);
    last = r;
    const b = (await call(URLCAPS, answer(r, 'accept'))).body;
    if (!round(b)) { last = b; break; }
    r = round(b);
  }
  check('accepted without consent: asked again, three rounds in all, each a new elicitation',
    keys.length === 3 && new Set(keys).size === 3, keys);
  check('  then a tool error saying the consent did not arrive', last?.result?.isError === true && /did not arrive/.test(text(last)), last);
  const again = (await call(URLCAPS, answer(rA, 'accept'))).body;
  check('a round accepted before is refused (-32602)', again?.error?.code === -32602, again);
  const missing = (await call(URLCAPS, { inputResponses: {}, requestState: round((await call(URLCAPS)).body)?.requestState })).body;
  check('a retry without the answer is refused (-32602, naming the key)', missing?.error?.code === -32602 &&
    /consent-/.test(missing.error.message), missing);

  // 5. the SDK v2 client: its handler opens the URL (the user consents) and accepts; the retry goes through
  const seen = [];
  const client = new Client({ name: 'consent2026-test', version: '1.0.0' }, { capabilities: URLCAPS, versionNegotiation: { mode: 'auto' } });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  check('the SDK v2 client negotiated 2026-07-28', client.getNegotiatedProtocolVersion() === '2026-07-28', client.getNegotiatedProtocolVersion());
  client.setRequestHandler('elicitation/create', async (req) => {
    seen.push(`${req.params.mode} ${await browse(req.params.url)}`);
    return { action: 'accept' };
  });
  const res = await client.callTool({ name: 'whoami', arguments: {} });
  check('SDK v2: one URL-mode elicitation, the user connected in the browser (200)', seen.join() === 'url 200', seen);
  check(`SDK v2: the call then reaches the downstream with ${user}'s own token`,
    !res.isError && new RegExp(`"sub":"${user}"`).test(res.content?.[0]?.text), res);
  const res2 = await client.callTool({ name: 'whoami', arguments: {} });
  check('  and the next call needs no round', !res2.isError && seen.length === 1, { res2, seen });
  await client.close();
} catch (e) {
  check('no exception', false, e.stack || String(e));
}
finish();
