// sdk_relay.mjs — the official SDK client (v1, a 2025-11-25 session) calling graphs whose
// downstream (relay_srv.mjs) asks its client during the call: relayed to this client when
// it declared the capability, refused (-32601) when it did not; an mcp node of an ordinary
// graph relays only with `relay: true`; a downstream asking without end is bounded and does
// not slow another tenant's calls; the downstream's progress (increasing, at most 10/s) and
// log messages (at the client's level) reach the client; cancelling the call cancels the
// downstream's work.
// usage: node sdk_relay.mjs PROXY_URL PLAIN_URL KEY OTHER_URL OTHER_KEY STATUS_URL
import { loadSdk as load, check, until, finish } from './sdk_lib.mjs';
import { body, connect as connectAs } from './relay_lib.mjs';

const [proxyUrl, plainUrl, key, otherUrl, otherKey, statusUrl] = process.argv.slice(2);
const { ElicitRequestSchema, CreateMessageRequestSchema, ListRootsRequestSchema } = await load('types.js');
const status = async () => (await fetch(statusUrl)).json();
const connect = (url, k, caps) => connectAs(url, k, caps, 'relay-test');

try {
  const seen = [];
  let onNever = null;
  const full = await connect(proxyUrl, key, { elicitation: { form: {}, url: {} }, sampling: {}, roots: {} });
  full.client.setRequestHandler(ElicitRequestSchema, (req) => {
    seen.push(req.params.mode ?? 'form');
    if (req.params.message === 'never') return new Promise(() => onNever && onNever());
    if (req.params.mode === 'url') return { action: 'accept' };
    return { action: 'accept', content: { answer: `hi from ${req.params.message}` } };
  });
  full.client.setRequestHandler(CreateMessageRequestSchema, (req) => ({ role: 'assistant', model: 'test-model',
    content: { type: 'text', text: `sampled: ${req.params.messages[0].content.text}` } }));
  full.client.setRequestHandler(ListRootsRequestSchema, () => ({ roots: [{ uri: 'file:///work', name: 'work' }] }));

  // 1. the proxied tool completes with this client's answers
  const r = await full.client.callTool({ name: 'r_ask', arguments: { who: 'ann' } });
  const b = body(r);
  check('a proxied tool that elicits (form, URL), samples and lists roots completes with the client\'s answers',
    !r.isError && b.form?.action === 'accept' && b.form?.content?.answer === 'hi from Hello ann?' &&
    b.url?.action === 'accept' && b.sample?.text === 'sampled: summarize ann' && b.roots?.[0]?.uri === 'file:///work', r);
  check('the client saw the form and the URL-mode elicitation', seen.join() === 'form,url', seen);

  // 2. an ordinary graph: relay: true relays, the default refuses (the node fails)
  const plain = await connect(plainUrl, key, { elicitation: { form: {}, url: {} }, sampling: {}, roots: {} });
  plain.client.setRequestHandler(ElicitRequestSchema, (req) => req.params.mode === 'url' ? { action: 'accept' }
    : { action: 'accept', content: { answer: 'plain' } });
  plain.client.setRequestHandler(CreateMessageRequestSchema, () => ({ role: 'assistant', model: 'm', content: { type: 'text', text: 's' } }));
  plain.client.setRequestHandler(ListRootsRequestSchema, () => ({ roots: [] }));
  const rel = await plain.client.callTool({ name: 'relayed', arguments: { who: 'bob' } });
  check('an mcp node with relay: true relays to its caller', !rel.isError && body(rel)?.form?.content?.answer === 'plain', rel);
  const def = await plain.client.callTool({ name: 'plain', arguments: { who: 'bob' } });
  check('an mcp node without relay fails: the downstream was not let ask', def.isError === true &&
    /relay: false/.test(def.content[0].text), def);
  await plain.close();

  // 3. a client without the capabilities: the downstream gets -32601, the call says so
  const bare = await connect(proxyUrl, key, {});
  const nr = await bare.client.callTool({ name: 'r_ask', arguments: { who: 'cy' } });
  check('a client without the capability: the downstream got -32601 naming it, the call reports it',
    nr.isError === true && /-32601/.test(nr.content[0].text) && /elicitation capability/.test(nr.content[0].text), nr);
  await bare.close();

  // 4. endless asking is bounded; another tenant's calls keep their latency
  const other = await connect(otherUrl, otherKey, {});
  const lat = async () => { const t = Date.now(); await other.client.callTool({ name: 'quick', arguments: {} }); return Date.now() - t; };
  const base = Math.max(await lat(), await lat());
  let spamming = true;
  const spam = full.client.callTool({ name: 'r_spam', arguments: { n: 400 } }).finally(() => { spamming = false; });
  const during = [];
  while (spamming && during.length < 50) during.push(await lat());
  const sp = body(await spam);
  check(`a downstream asking 400 times: 32 relayed, the rest refused at once (${JSON.stringify(sp)})`,
    sp.answered === 32 && sp.refused === 368 && sp.codes?.['-32603'] === 368, sp);
  const worst = Math.max(...during, 0);
  check(`another tenant's calls meanwhile: worst ${worst} ms over ${during.length} (alone ${base} ms)`, worst < 1000, during);
  await other.close();

  // 5. the downstream's progress and log messages reach the client: progress increasing and
  // rate-bounded, log messages at the client's level or above only
  const logs = [];
  const { LoggingMessageNotificationSchema } = await load('types.js');
  full.client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push(n.params));
  await full.client.setLoggingLevel('info');
  const prog = [];
  const t1 = Date.now();
  const ch = await full.client.callTool({ name: 'r_chatty', arguments: { n: 2000 } }, undefined,
    { onprogress: (p) => prog.push(p.progress) });
  const took = Date.now() - t1;
  const increasing = prog.every((v, i) => i === 0 || v > prog[i - 1]);
  const relayed = prog.filter((v, i) => i > 0 && prog[i - 1] >= 1 && v % 1 !== 0); // the downstream's, after the entry node
  check(`2000 downstream progress notifications: ${prog.length} reach the client, increasing, at most 10/s (${took} ms)`,
    !ch.isError && body(ch).token === true && increasing && relayed.length >= 1 && prog.length <= 3 + took / 100, { prog, ch });
  const ds = logs.filter((l) => l.logger === 'chatty');
  check('the downstream\'s log messages honour the client\'s level (warning relayed, debug not)',
    ds.length === 1 && ds[0].level === 'warning' && ds[0].data === 'loud', logs);

  // 5b. progress and a log message the downstream sends on its GET stream, not the call's:
  // the progress finds its call by its token, the log message goes to the one relaying call
  // in flight (client_http.c "progress outside the call's stream")
  check('the gateway holds the downstream\'s GET stream open', await until(async () => (await status()).getOpen >= 1), await status());
  const aside = [];
  const as = await full.client.callTool({ name: 'r_aside', arguments: { n: 3 } }, undefined, { onprogress: (p) => aside.push(p) });
  const am = aside.filter((p) => /^aside /.test(p.message ?? '')).map((p) => p.message);
  check(`progress sent on the GET stream reaches onprogress (${am.join(', ')})`, !as.isError && body(as)?.token === true &&
    am.join() === 'aside 1,aside 2,aside 3' && aside.every((p, i) => i === 0 || p.progress > aside[i - 1].progress), { aside, as });
  check('a log message sent on the GET stream reaches the one call in flight', logs.some((l) => l.logger === 'aside' && l.data === 'aside'), logs);

  // 6. a cancelled call cancels the downstream's work; the relayed question is abandoned
  const ac = new AbortController();
  onNever = () => ac.abort('test');
  const t0 = Date.now();
  const how = await full.client.callTool({ name: 'r_never', arguments: {} }, undefined, { signal: ac.signal })
    .then(() => 'answered', (e) => `rejected: ${e.message}`);
  const st = await until(async () => { const s = await status(); return s.aborted >= 1 && s; }, 5000);
  check(`cancelling the call while its relayed question waits cancels the downstream's work (${Date.now() - t0} ms)`,
    how.startsWith('rejected') && st && st.aborted === 1, { how, st });
  await full.close();
} catch (e) {
  finish(e);
}
finish();
