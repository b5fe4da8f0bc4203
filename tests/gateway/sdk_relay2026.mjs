// sdk_relay2026.mjs — a downstream's requests to its client (relay_srv.mjs: elicitation form
// and URL mode, sampling, roots) relayed to a 2026-07-28 caller as input-required rounds: the
// official SDK v2 client (@modelcontextprotocol/client, whose multi-round driver answers each
// round and repeats the call with inputResponses and the requestState), and a raw JSON-RPC
// client doing the rounds by hand to look at them: unique request keys, a reused or altered
// requestState refused, a round nobody answers ending with the downstream's call (within its
// limit, the downstream's work cancelled, another tenant unaffected, a late retry told to call
// again), a cancelled retry cancelling the downstream's work, and the downstream's progress
// and log messages across a round (relay_srv.mjs phases), and a downstream's question during a
// task call (tasks/get, tasks/update, tasks/cancel; parked here, answered on replica B: forwarded here).
// usage: node sdk_relay2026.mjs PROXY_URL SHORT_URL KEY OTHER_URL OTHER_KEY STATUS_URL SHORT_TIMEOUT_MS TASK_URL TASK_SHORT_URL TASK_URL_B
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { check, until, finish, sleep } from './sdk_lib.mjs';
import { body, CAPS, post2026, only } from './relay_lib.mjs';

const [proxyUrl, shortUrl, key, otherUrl, otherKey, statusUrl, shortMs, taskUrl, taskShortUrl, taskUrlB] = process.argv.slice(2);
const root = process.env.GG_NPM || path.resolve(import.meta.dirname, '../npm/node_modules');
const { Client, StreamableHTTPClientTransport } =
  await import(pathToFileURL(path.join(root, '@modelcontextprotocol/client/dist/index.mjs')).href);
const status = async () => (await fetch(statusUrl)).json();

async function sdkClient(caps) {
  const client = new Client({ name: 'relay2026-test', version: '1.0.0' }, { capabilities: caps, versionNegotiation: { mode: 'auto' } });
  await client.connect(new StreamableHTTPClientTransport(new URL(proxyUrl), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
  return client;
}

// one stateless 2026-07-28 tools/call; the JSON-RPC response (JSON or the last SSE message)
// (meta: more _meta, e.g. a progressToken and a logLevel; all: every message of the answer)
async function call(url, k, name, args, extra = {}, signal, meta = {}, all = false) {
  const r = await post2026(url, k, 'tools/call', name, { name, arguments: args, ...extra }, { meta, signal });
  return all ? r.msgs : r.msg;
}
// one 2026-07-28 request of any method (the tasks extension's): the JSON-RPC response
const TASK_CAPS = { ...CAPS, extensions: { 'io.modelcontextprotocol/tasks': {} } };
const rpc = async (url, method, name, params, caps = TASK_CAPS) => (await post2026(url, key, method, name, params, { caps })).msg;
const taskGet = async (url, id) => (await rpc(url, 'tasks/get', id, { taskId: id }))?.result;
const taskUntil = (url, id, want, ms = 15000) => until(async () => { const r = await taskGet(url, id); return want.includes(r?.status) && r; }, ms);
const round = (resp) => resp?.result?.resultType === 'input_required' ? resp.result : null;

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

  // 6. progress and log messages across a round (relay_srv.mjs phases): before the question
  // they reach the first call (its progressToken, its logLevel: debug); what the downstream sends
  // while the round is parked reaches nobody (exec.c relay_notify: dropped); after the retry
  // they reach the retry's own progressToken, increasing, at its logLevel (warning: the
  // downstream's debug message after the answer is not sent). The downstream's
  // notes carry "step N" / "parked" as their message; the run's own per-node progress
  // ("node ... completed") comes between them.
  const notes = (msgs, m) => msgs.filter((x) => x.method === m).map((x) => x.params)
    .filter((p) => m !== 'notifications/message' || p.logger === 'phases'); // the downstream's, not the run's own
  const steps = (ps) => ps.filter((p) => /^(step|parked)/.test(p.message ?? ''));
  const rising = (ps) => ps.every((p, i) => i === 0 || p.progress > ps[i - 1].progress);
  const across = async (args, tok1, tok2) => {
    const m1 = await call(proxyUrl, key, 'r_phases', args, {}, undefined,
      { progressToken: tok1, 'io.modelcontextprotocol/logLevel': 'debug' }, true);
    const r1 = round(m1.filter((x) => x.id !== undefined).pop());
    const [pk] = only(r1);
    const ps0 = (await status()).parkedSent;
    const poked = (await (await fetch(statusUrl.replace(/status$/, 'poke'))).json()).poked;
    const ps = await until(async () => { const s = await status(); return s.parkedSent > ps0 && s; }, 5000);
    const m2 = await call(proxyUrl, key, 'r_phases', args, { inputResponses: { [pk]: { action: 'accept', content: { answer: 'on' } } },
      requestState: r1?.requestState }, undefined, { progressToken: tok2, 'io.modelcontextprotocol/logLevel': 'warning' }, true);
    return { r1, poked: poked && !!ps, p1: notes(m1, 'notifications/progress'), l1: notes(m1, 'notifications/message'),
      fin: m2.filter((x) => x.id !== undefined).pop()?.result, p2: notes(m2, 'notifications/progress'),
      l2: notes(m2, 'notifications/message') };
  };
  const a6 = await across({}, 'first', 7);
  const s1 = steps(a6.p1), s2 = steps(a6.p2);
  check('across a round: the first call gets the progress before the question (its token, increasing)',
    a6.r1 && s1.map((p) => p.message).join() === 'step 1,step 2' && a6.p1.every((p) => p.progressToken === 'first') && rising(a6.p1), a6.p1);
  check('across a round: the first call gets the log message before the question', a6.l1.map((l) => l.data).join() === 'before', a6.l1);
  check('across a round: the retry completes with the downstream\'s result that used the answer',
    a6.poked && a6.fin && !a6.fin.isError && body(a6.fin)?.form?.content?.answer === 'on', a6);
  check('across a round: the retry gets the progress after the answer on its own token, increasing (nothing from while parked)',
    s2.map((p) => p.message).join() === 'step 3,step 4' && a6.p2.every((p) => p.progressToken === 7) && rising(a6.p2) &&
    s2[0].progress > s1[1].progress, { p1: a6.p1, p2: a6.p2 });
  check('across a round: the retry gets the log messages after the answer at its logLevel (no debug, nothing from while parked)',
    a6.l2.map((l) => l.data).join() === 'after', a6.l2);
  // the same progressToken on both requests, and a downstream that restarts its count after
  // the answer: the token's values never go back (the restarted 1, 2 are dropped)
  const b6 = await across({ again: true }, 'same', 'same');
  const b1 = steps(b6.p1), b2 = steps(b6.p2);
  check('across a round, one token: its values only increase (a restarted count after the answer is dropped)',
    b6.poked && b6.fin && !b6.fin.isError && b1.map((p) => p.message).join() === 'step 1,step 2' &&
    b2.map((p) => p.message).join() === 'step 3,step 4' && rising([...b6.p1, ...b6.p2]), { p1: b6.p1, p2: b6.p2, fin: b6.fin });

  // 7. a downstream's request during a task's run (tk: an mcp node with relay: true calling
  // never, taskSupport optional): the task turns input_required with it as an inputRequest,
  // tasks/update's answer reaches the downstream and the task completes with its result
  const asked = (url, caps) => rpc(url, 'tools/call', 'asked', { name: 'asked', arguments: {} }, caps);
  const tc = await asked(taskUrl);
  const tid = tc?.result?.taskId;
  check('a task call of a tool whose downstream asks: answered with a task', tc?.result?.resultType === 'task' && !!tid, tc);
  const ir = await taskUntil(taskUrl, tid, ['input_required', 'completed', 'failed']);
  const [tk, treq] = only(ir);
  check('task: tasks/get shows input_required with the downstream\'s elicitation as its inputRequest',
    ir?.status === 'input_required' && /^relay-\d+$/.test(tk) && treq?.method === 'elicitation/create' && treq.params?.message === 'never', ir);
  const up = await rpc(taskUrl, 'tasks/update', tid, { taskId: tid, inputResponses: { [tk]: { action: 'accept', content: { answer: 'by task' } } } });
  const tdone = await taskUntil(taskUrl, tid, ['completed', 'failed', 'cancelled']);
  check('task: tasks/update answers, the task completes with the downstream\'s result that used the answer',
    up?.result && tdone?.status === 'completed' && !tdone.result?.isError && JSON.stringify(tdone.result).includes('by task'), { up, tdone });
  // ... cancelled while input_required: the downstream's call is cancelled (its work aborted)
  const b7 = (await status()).aborted;
  const t2 = (await asked(taskUrl))?.result?.taskId;
  const ir2 = await taskUntil(taskUrl, t2, ['input_required', 'completed', 'failed']);
  const cr = await rpc(taskUrl, 'tasks/cancel', t2, { taskId: t2 });
  const st7 = await until(async () => { const s = await status(); return s.aborted > b7 && s; }, 10000);
  const g2 = await taskGet(taskUrl, t2);
  check('task: tasks/cancel while input_required cancels the downstream\'s call; the task is cancelled',
    ir2?.status === 'input_required' && cr?.result && st7?.aborted === b7 + 1 && g2?.status === 'cancelled', { ir2, cr, st7, g2 });
  // ... a client without the elicitation capability: the downstream gets the relay's refusal
  const t3 = (await asked(taskUrl, { extensions: { 'io.modelcontextprotocol/tasks': {} } }))?.result?.taskId;
  const d3 = await taskUntil(taskUrl, t3, ['completed', 'failed', 'input_required']);
  check('task without the elicitation capability: the downstream got -32601 and the task reports it',
    d3 && d3.status !== 'input_required' && /-32601/.test(JSON.stringify(d3)), d3);
  // ... its parked run gone (the downstream's call ended at the run's time limit — what a
  // replica that does not hold the run sees too): tasks/update fails the task, saying so
  const b8 = (await status()).aborted;
  const t4 = (await asked(taskShortUrl))?.result?.taskId;
  const ir4 = await taskUntil(taskShortUrl, t4, ['input_required', 'completed', 'failed']);
  const [k4] = only(ir4);
  const st8 = await until(async () => { const s = await status(); return s.aborted > b8 && s; }, Number(shortMs) + 12000);
  const up4 = await rpc(taskShortUrl, 'tasks/update', t4, { taskId: t4, inputResponses: { [k4]: { action: 'accept', content: { answer: 'late' } } } });
  const d4 = await taskUntil(taskShortUrl, t4, ['completed', 'failed', 'cancelled']);
  check('task: tasks/update after its parked run ended fails the task clearly (call the tool again), no hang',
    ir4?.status === 'input_required' && st8 && up4?.result && d4?.status === 'failed' && /call the tool again/.test(d4.error?.message), { ir4, st8, up4, d4 });
  // ... parked on this replica, answered or cancelled on replica B (same store): B holds no
  // run, but the task's state names this replica (cluster.internal_url), so B forwards the
  // update here and the task completes with the answer; a cancel on B is seen by this
  // replica's watcher, which cancels the downstream's call
  for (const how of ['update', 'cancel']) {
    const b9 = (await status()).aborted;
    const t5 = (await asked(taskUrl))?.result?.taskId;
    const ir5 = await taskUntil(taskUrl, t5, ['input_required', 'completed', 'failed']);
    const [k5] = only(ir5);
    const r5 = how === 'update'
      ? await rpc(taskUrlB, 'tasks/update', t5, { taskId: t5, inputResponses: { [k5]: { action: 'accept', content: { answer: 'on B' } } } })
      : await rpc(taskUrlB, 'tasks/cancel', t5, { taskId: t5 });
    const d5 = await taskUntil(taskUrlB, t5, ['completed', 'failed', 'cancelled']);
    const st9 = how === 'update' ? await status()
      : await until(async () => { const s = await status(); return s.aborted > b9 && s; }, 10000);
    check(how === 'update'
      ? 'task parked on A, tasks/update on B: forwarded to A, the task completes with the downstream\'s result that used the answer'
      : 'task parked on A, tasks/cancel on B: the task is cancelled; A cancels the downstream\'s call',
    ir5?.status === 'input_required' && r5?.result && (how === 'update'
      ? d5?.status === 'completed' && JSON.stringify(d5.result).includes('on B') && st9?.aborted === b9
      : d5?.status === 'cancelled' && st9?.aborted === b9 + 1), { ir5, r5, d5, st9 });
  }
} catch (e) {
  finish(e);
}
finish();
