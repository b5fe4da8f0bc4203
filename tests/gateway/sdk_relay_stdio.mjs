// sdk_relay_stdio.mjs — the official SDK client (v1, a 2025-11-25 session) calling a proxy
// graph in front of a stdio SDK server (relay_stdio_srv.mjs): the child's progress reaches
// onprogress (routed by the call's token), its log message reaches the client, its
// elicitation (one call in flight) is answered and completes the call; with a second call in
// flight the child's question names no call and is refused (-32601, saying why) and its log
// message is dropped; a client
// without the capability gets the refusal too.
// usage: node sdk_relay_stdio.mjs PROXY_URL KEY
import { loadSdk as load, check, until, finish } from './sdk_lib.mjs';
import { body, connect as connectAs } from './relay_lib.mjs';

const [proxyUrl, key] = process.argv.slice(2);
const { ElicitRequestSchema, LoggingMessageNotificationSchema } = await load('types.js');
const connect = async (caps) => (await connectAs(proxyUrl, key, caps, 'relay-stdio-test')).client;

try {
  const c = await connect({ elicitation: { form: {} } });
  const asked = [];
  c.setRequestHandler(ElicitRequestSchema, (req) => { asked.push(req.params.message); return { action: 'accept', content: { answer: 'yes' } }; });
  const logs = [];
  c.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push(n.params));
  await c.setLoggingLevel('info');

  // 1. progress and a log message from the child, during the call
  const prog = [];
  const w = await c.callTool({ name: 'r_work', arguments: { n: 4 } }, undefined, { onprogress: (p) => prog.push(p) });
  check('the child was asked for progress and finished', body(w)?.sent === 4 && body(w)?.token === true, w);
  const mine = prog.filter((p) => /^step /.test(p.message ?? ''));
  check(`the child's progress reached onprogress (${mine.map((p) => p.message).join(', ')})`, mine.length >= 3, prog);
  check('... increasing', prog.every((p, i) => i === 0 || p.progress > prog[i - 1].progress), prog);
  check('the child\'s log message reached the client', await until(() => logs.some((l) => l.logger === 'work' && l.data === 'worked')), logs);

  // 2. the child's elicitation, one call in flight: relayed and answered
  const a = await c.callTool({ name: 'r_ask', arguments: { who: 'ann' } });
  check('the child\'s elicitation reached the client', asked[0] === 'Hello ann?', asked);
  check('... and the answer completed the call', body(a)?.action === 'accept' && body(a)?.content?.answer === 'yes', a);

  // 3. two calls in flight (hold waits for ask): the child's question names neither → refused
  let holding = false;
  const held = c.callTool({ name: 'r_hold', arguments: {} }, undefined, { onprogress: (p) => { if (p.message === 'holding') holding = true; } });
  check('the first call is in flight at the child (its progress arrived)', await until(() => holding), holding);
  const two = await c.callTool({ name: 'r_ask', arguments: { who: 'bob' } });
  const hb = await held;
  check('two calls in flight: the child\'s question is refused (-32601, several calls)',
    body(two)?.code === -32601 && /several calls/.test(body(two)?.message), two);
  check('... the client was not asked', asked.length === 1, asked);
  check('... and the other call completes', body(hb)?.held === true, hb);
  check('the child\'s log message with one call in flight reached it', logs.some((l) => l.data === 'asking ann'), logs);
  const worked = () => logs.filter((l) => l.data === 'worked').length;
  await c.callTool({ name: 'r_work', arguments: { n: 0 } });
  check('with two in flight it was dropped (a later one came, it did not)',
    await until(() => worked() === 2) && !logs.some((l) => l.data === 'asking bob'), logs);
  await c.close();

  // 4. a client without the capability: the child gets -32601 naming the capability
  const bare = await connect({});
  const b = await bare.callTool({ name: 'r_ask', arguments: { who: 'cy' } });
  check('a client without the capability: the child got -32601',
    body(b)?.code === -32601 && /elicitation capability/.test(body(b)?.message), b);
  await bare.close();
  finish();
} catch (e) { finish(e); }
