// relay_forward.mjs — a relay round's retry reaching a replica that does not hold the run
// (relay2026.sh: replicas A and B on one store, each with cluster.internal_url): B forwards
// it to A's internal listener, A's answer comes back unchanged.
//   node relay_forward.mjs main APUB BPUB BINT KEY KEY2 OKEY   → checks, "N passed, N failed"
//   node relay_forward.mjs round URL KEY [GRAPH]               → {"state", "key"} of r_ask's first round
//   node relay_forward.mjs retry URL KEY STATE REQKEY [GRAPH]  → {"ms", "status", "answer"} of the retry
import { check, finish } from './sdk_lib.mjs';
import { post2026, only } from './relay_lib.mjs';

const [mode, ...args] = process.argv.slice(2);

// one 2026-07-28 tools/call (r_ask unless tool says) on /mcp/acme/px; extra: inputResponses/requestState,
// headers: more, meta: more _meta → post2026's {status, msg, msgs (every message), text, ms, type}
const call = (base, key, extra = {}, headers = {}, tool = ['r_ask', { who: 'fwd' }], meta = {}, graph = 'px') =>
  post2026(`${base}/mcp/acme/${graph}`, key, 'tools/call', tool[0], { name: tool[0], arguments: tool[1], ...extra },
    { meta, headers, signal: AbortSignal.timeout(20000) });
const answers = {
  'elicitation/create': (p) => p.mode === 'url' ? { action: 'accept' } : { action: 'accept', content: { answer: 'from-b' } },
  'sampling/createMessage': () => ({ role: 'assistant', content: { type: 'text', text: 'sampled-on-a' }, model: 'm' }),
  'roots/list': () => ({ roots: [{ uri: 'file:///fwd', name: 'fwd' }] }),
};
const answer = (r) => { const [k, q] = only(r); return k ? { inputResponses: { [k]: answers[q.method](q.params) }, requestState: r.requestState } : {}; };
const kid = (k) => k.slice(3, 19);

if (mode === 'round') {
  const [url, key, graph = 'px'] = args;
  const r = await call(url, key, {}, {}, undefined, {}, graph);
  console.log(JSON.stringify({ state: r.msg?.result?.requestState, key: only(r.msg?.result)[0] }));
  process.exit(0);
}
if (mode === 'retry') {
  const [url, key, state, rk, graph = 'px'] = args;
  const r = await call(url, key, { inputResponses: { [rk]: { action: 'accept', content: { answer: 'x' } } }, requestState: state },
    {}, undefined, {}, graph);
  console.log(JSON.stringify({ ms: r.ms, status: r.status, answer: r.text }));
  process.exit(0);
}

const [aPub, bPub, bInt, key, key2, okey, statusUrl] = args;
const status = async () => (await fetch(statusUrl)).json();
try {
  // round 1 on A; every retry of the run on B (forwarded to A), one on A itself
  let r = await call(aPub, key);
  const first = r.msg?.result;
  check('forward: the first round on replica A asks the form question', first?.resultType === 'input_required' &&
    only(first)[1]?.method === 'elicitation/create' && only(first)[1]?.params?.mode === 'form', r.msg);
  // the public listener ignores the forwarding header: another key naming KEY's id opens nothing
  for (const [name, base] of [['A', aPub], ['B', bPub]]) {
    const imp = await call(base, key2, answer(first), { 'graphgate-forwarded-key': kid(key) });
    check(`forward: another key of the tenant naming KEY's id in the forwarding header on ${name}'s public listener is refused (-32602)`,
      imp.msg?.error?.code === -32602 && /integrity/.test(imp.msg?.error?.message ?? ''), imp.msg);
  }
  // another tenant's key on B cannot reach A's run (its key is not for this tenant)
  const other = await call(bPub, okey, answer(first));
  check('forward: another tenant\'s key on B cannot resume A\'s run', other.status >= 400 && !other.msg?.result, [other.status, other.msg]);
  r = await call(bPub, key, answer(first));
  const second = r.msg?.result;
  check('forward: the retry on replica B goes on with the run held by A (the next round: URL elicitation)',
    second?.resultType === 'input_required' && only(second)[1]?.params?.mode === 'url' && second.requestState !== first.requestState, r.msg);
  const again = await call(bPub, key, answer(first));
  check('forward: the same answer again through B is refused: the round was answered once (-32602)',
    again.msg?.error?.code === -32602 && /answered/.test(again.msg?.error?.message ?? ''), again.msg);
  // one hop: a forwarded request (the header, on B's internal listener) naming A is not sent on
  const hop = await call(bInt, null, answer(second), { 'graphgate-forwarded-key': kid(key) });
  check('forward: a request already forwarded is not forwarded again (B\'s internal listener: -32602, held by another replica)',
    hop.msg?.error?.code === -32602 && /held by another replica/.test(hop.msg?.error?.message ?? ''), hop.msg);
  r = await call(bPub, key, answer(second));
  const third = r.msg?.result;
  check('forward: a second round across replicas (B again) goes on (sampling)',
    third?.resultType === 'input_required' && only(third)[1]?.method === 'sampling/createMessage', r.msg);
  r = await call(aPub, key, answer(third));
  const fourth = r.msg?.result;
  check('forward: the holder A itself takes a round whose state B handed out (roots)',
    fourth?.resultType === 'input_required' && only(fourth)[1]?.method === 'roots/list', r.msg);
  r = await call(bPub, key, answer(fourth));
  const out = JSON.parse(r.msg?.result?.content?.[0]?.text ?? 'null');
  check('forward: the last retry on B completes with the downstream\'s result that used every answer',
    out?.form?.content?.answer === 'from-b' && out?.url?.action === 'accept' && out?.sample?.text === 'sampled-on-a' &&
    out?.roots?.[0]?.uri === 'file:///fwd', r.msg);
  // a tool with an x-mcp-header argument (hdr's regional): the Mcp-Param-Region header goes
  // with the forward, so the holder's own header check passes
  const rh = { 'mcp-param-region': 'eu' }, rt = ['regional', { region: 'eu' }];
  const h1 = await call(aPub, key, {}, rh, rt, {}, 'hdr');
  const [hk] = only(h1.msg?.result);
  const h2 = await call(bPub, key, { inputResponses: { [hk]: { action: 'accept', content: { answer: 'regional' } } },
    requestState: h1.msg?.result?.requestState }, rh, rt, {}, 'hdr');
  check('forward: a tool whose argument is mirrored in an Mcp-Param header completes through B (the header forwarded)',
    hk && JSON.stringify(h2.msg?.result ?? null).includes('regional') && !h2.msg?.result?.isError, { h1: h1.msg, h2: h2.msg });
  // the holder's progress and log messages reach the client through the forwarding replica
  // (relay_srv's phases: progress before the question to the first call on A; after the
  // answer, sent through B, to the retry's own token at its log level)
  const p1 = await call(aPub, key, {}, {}, ['r_phases', {}], { progressToken: 'fa', 'io.modelcontextprotocol/logLevel': 'debug' });
  const r1 = p1.msg?.result;
  const ps0 = (await status()).parkedSent;
  await fetch(statusUrl.replace(/status$/, 'poke'));
  for (let i = 0; i < 100 && (await status()).parkedSent <= ps0; i++) await new Promise((res) => setTimeout(res, 50));
  const [pk] = only(r1);
  const p2 = await call(bPub, key, { inputResponses: { [pk]: { action: 'accept', content: { answer: 'streamed' } } },
    requestState: r1?.requestState }, {}, ['r_phases', {}], { progressToken: 'fb', 'io.modelcontextprotocol/logLevel': 'warning' });
  const steps = p2.msgs.filter((m) => m.method === 'notifications/progress' && /^step/.test(m.params?.message ?? '')).map((m) => m.params);
  const logs = p2.msgs.filter((m) => m.method === 'notifications/message' && m.params?.logger === 'phases').map((m) => m.params.data);
  check('forward: the retry through B streams the holder\'s progress after the answer on its own token (step 3, step 4)',
    /event-stream/.test(p2.type ?? '') && steps.map((p) => p.message).join() === 'step 3,step 4' && steps.every((p) => p.progressToken === 'fb'),
    { type: p2.type, msgs: p2.msgs });
  check('forward: ... and its log messages at the retry\'s level (warning: "after" only)', logs.join() === 'after', logs);
  check('forward: ... and the result that used the answer', JSON.parse(p2.msg?.result?.content?.[0]?.text ?? 'null')?.form?.content?.answer === 'streamed', p2.msg);
} catch (e) {
  finish(e);
}
finish();
