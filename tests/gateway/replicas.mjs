// replicas.mjs — the official MCP SDK clients against three graphgate replicas behind HAProxy
// (tests/gateway/replicas.sh starts them). One phase per invocation:
//   node replicas.mjs propagate   graph versions uploaded through one replica, called through
//                                 the others and through HAProxy at once (PostgreSQL NOTIFY)
//   node replicas.mjs revoke      a key revoked on one replica is refused on the others
//   node replicas.mjs resume      an input-required (2026-07-28) round through HAProxy: each
//                                 retry lands on another replica and continues the run
//   node replicas.mjs load OUT    calls through HAProxy until the file STOP exists; writes the
//                                 acknowledged calls' trace ids to OUT
//   node replicas.mjs views       a view changed through replica 1: a 2025 session's GET stream
//                                 on replica 2 and a 2026 subscriptions/listen stream on
//                                 replica 3 get list_changed (and list the new selection)
//                                 within the bound; the same for /mcp/acme/_all after a graph
//                                 version uploaded through replica 1; a deleted view ends them
// Environment: LB (HAProxy base URL), REPLICAS (comma-separated replica base URLs), INTERNALS
// (their internal listeners, for /metrics), ADMIN,
// KEY (keys of tenant acme), BOUND_MS (the propagation bound checked), STOP, SLOW_N.
// Prints "ok - ..." / "not ok - ..." lines, figures as "# ...", and "N passed, N failed".
import fs from 'node:fs';
import crypto from 'node:crypto';
import { loadSdk, check, sleep, finish, until } from './sdk_lib.mjs';

const { Client } = await loadSdk('client/index.js');
const { StreamableHTTPClientTransport } = await loadSdk('client/streamableHttp.js');
const env = process.env;
const LB = env.LB, R = env.REPLICAS.split(','), BOUND = Number(env.BOUND_MS || 600);
const auth = (k) => ({ Authorization: `Bearer ${k}` });

async function connect(base, graph = 'ver') {
  const client = new Client({ name: 'graphgate-replicas', version: '1.0.0' }, { capabilities: {} });
  client.onerror = () => {}; // a GET stream cut by a killed replica is not a failed call
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp/acme/${graph}`),
    { requestInit: { headers: auth(env.KEY) } }));
  return client;
}

function graphYaml(k) {
  return `version: "1.0"
server: {name: ver, version: "1.0.${k}"}
tools:
  - {name: ver, description: the version, inputSchema: {type: object},
     nodes: [{id: entry, type: entry, next: v}, {id: v, type: transform, transform: {expr: '"v${k}"'}, next: exit}, {id: exit, type: exit}]}
  - {name: slow, description: a sum that takes a while, inputSchema: {type: object, properties: {n: {type: number}}},
     nodes: [{id: entry, type: entry, next: v}, {id: v, type: transform, transform: {expr: '$sum([1..entry.n].($ * 2))'}, next: exit}, {id: exit, type: exit}]}
`;
}

async function put(base, k) {
  const r = await fetch(`${base}/admin/tenants/acme/graphs/ver`, {
    method: 'PUT', headers: { ...auth(env.ADMIN), 'Content-Type': 'application/yaml' }, body: graphYaml(k) });
  await r.text();
  return r.status;
}

const text = (r) => r?.content?.[0]?.text;
const stats = (a) => {
  const s = [...a].sort((x, y) => x - y);
  return `min ${s[0]} median ${s[Math.floor(s.length / 2)]} max ${s[s.length - 1]} ms (n=${s.length})`;
};

// Poll fn until it is true or limit ms pass; the ms it took (or Infinity).
async function timeUntil(t0, fn, limit) {
  while (Date.now() - t0 < limit) {
    if (await fn()) return Date.now() - t0;
    await sleep(2);
  }
  return Infinity;
}

async function propagate() {
  check('version 1 uploaded through replica 1', (await put(R[0], 1)) === 201);
  const direct = await Promise.all(R.map((b) => connect(b)));
  const lb = await connect(LB);
  const seen = [];
  for (let i = 0; i < 6; i++) seen.push(text(await lb.callTool({ name: 'ver', arguments: {} })));
  check('through HAProxy: one session, six calls, version 1 on every replica', seen.every((s) => s === 'v1'), seen);
  const times = [], stale = [];
  for (let k = 2; k <= 7; k++) {
    const w = k % 3;
    const st = await put(R[w], k);
    const t0 = Date.now();
    if (st !== 201) { check(`version ${k} uploaded`, false, st); continue; }
    const want = `v${k}`;
    // the other two replicas, polled directly, and HAProxy (round robin over all three)
    const others = R.map((_, i) => i).filter((i) => i !== w);
    const polls = others.map((i) => timeUntil(t0, async () =>
      text(await direct[i].callTool({ name: 'ver', arguments: {} })) === want, 5000));
    const viaLb = (async () => {
      for (let n = 0; n < 6; n++) {
        const got = text(await lb.callTool({ name: 'ver', arguments: {} }));
        if (got !== want) stale.push(Date.now() - t0);
      }
    })();
    const ms = await Promise.all(polls);
    await viaLb;
    times.push(...ms);
    check(`version ${k} (uploaded on replica ${w + 1}) served by the others within ${BOUND} ms`,
      ms.every((m) => m <= BOUND), ms);
  }
  console.log(`# propagation (upload answered → other replica serves the new version): ${stats(times)}`);
  console.log(`# stale answers through HAProxy after an upload: ${stale.length}` +
    (stale.length ? `, the last ${Math.max(...stale)} ms after it` : ''));
  check(`no stale version through HAProxy later than ${BOUND} ms after the upload`, stale.every((m) => m <= BOUND), stale);
  for (const c of [...direct, lb]) await c.close();
}

async function initStatus(base, key) {
  const r = await fetch(`${base}/mcp/acme/ver`, {
    method: 'POST', headers: { ...auth(key), 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }) });
  await r.text();
  return r.status;
}

async function revoke() {
  const times = [];
  for (let round = 0; round < 3; round++) {
    const r = await fetch(`${R[round]}/admin/tenants/acme/keys`, {
      method: 'POST', headers: { ...auth(env.ADMIN), 'Content-Type': 'application/json' },
      body: JSON.stringify({ scopes: ['tools:read', 'tools:execute'], name: `r${round}` }) });
    const k = await r.json();
    const before = await Promise.all(R.map((b) => initStatus(b, k.key)));
    check(`key ${round + 1} accepted (and cached) on all three replicas`, before.every((s) => s === 200), before);
    const d = await fetch(`${R[round]}/admin/keys/${k.id}`, { method: 'DELETE', headers: auth(env.ADMIN) });
    await d.text();
    const t0 = Date.now();
    check(`key ${round + 1} revoked on replica ${round + 1}`, d.status === 200, d.status);
    const others = R.filter((_, i) => i !== round);
    const ms = await Promise.all(others.map((b) => timeUntil(t0, async () => (await initStatus(b, k.key)) === 401, 5000)));
    times.push(...ms);
    check(`... refused by the other two within ${BOUND} ms`, ms.every((m) => m <= BOUND), ms);
    const after = [];
    for (let i = 0; i < 3; i++) after.push(await initStatus(LB, k.key));
    check('... and through HAProxy', after.every((s) => s === 401), after);
  }
  console.log(`# key revocation (revoke answered → other replica refuses): ${stats(times)}`);
}

async function resume() {
  const root = env.GG_NPM;
  const v2 = await import(`${root}/@modelcontextprotocol/client/dist/index.mjs`);
  const asker = new v2.Client({ name: 'graphgate-replicas', version: '1.0.0' },
    { capabilities: { elicitation: {} }, versionNegotiation: { mode: 'auto' } });
  let rounds = 0;
  asker.setRequestHandler('elicitation/create', async (req) => {
    rounds++;
    return { action: 'accept', content: /color/.test(req.params.message) ? { color: 'teal' } : { name: 'Ada' } };
  });
  await asker.connect(new v2.StreamableHTTPClientTransport(new URL(`${LB}/mcp/acme/everything`),
    { requestInit: { headers: auth(env.KEY) } }));
  check('SDK v2 through HAProxy: negotiated 2026-07-28', asker.getNegotiatedProtocolVersion() === '2026-07-28');
  for (let i = 0; i < 3; i++) { // round robin: each retry reaches the next replica
    const r = await asker.callTool({ name: 'test_input_required_result_multi_round', arguments: {} });
    check(`input-required rounds resumed across replicas (${i + 1})`, text(r) === 'Ada likes teal', r);
  }
  check('two rounds asked each time', rounds === 6, rounds);
  await asker.close();
}

async function load(out) {
  const lb = await connect(LB);
  const acked = [];
  let failed = 0, okAfterStop = 0;
  const t0 = Date.now();
  const worker = async () => {
    while ((!fs.existsSync(env.STOP) || okAfterStop < 30) && Date.now() - t0 < 60000) {
      const trace = crypto.randomBytes(16).toString('hex');
      const stopped = fs.existsSync(env.STOP);
      try {
        const r = await lb.callTool({ name: 'slow', arguments: { n: Number(env.SLOW_N) },
          _meta: { traceparent: `00-${trace}-${crypto.randomBytes(8).toString('hex')}-01` } });
        if (r.isError) failed++;
        else { acked.push(trace); if (stopped) okAfterStop++; }
      } catch { failed++; }
      if (acked.length === 12) console.log('# LOAD_RUNNING');
    }
  };
  await Promise.all(Array.from({ length: 6 }, worker));
  const s = (Date.now() - t0) / 1000;
  fs.writeFileSync(out, acked.join('\n') + '\n');
  console.log(`# load through HAProxy: ${acked.length} acknowledged, ${failed} failed in ${s.toFixed(1)} s (${(acked.length / s).toFixed(1)} calls/s, 6 at a time)`);
  check('calls acknowledged after the kill (HAProxy routes around the dead replica)', okAfterStop >= 30, okAfterStop);
  check('few calls failed (only those in flight on the killed replica)', failed <= 12, failed);
  await lb.close();
}

const { ToolListChangedNotificationSchema } = await loadSdk('types.js');
const v2 = await import(new URL(`file://${env.GG_NPM}/@modelcontextprotocol/client/dist/index.mjs`).href);
const INTS = (env.INTERNALS || '').split(',');
const openStreams = async (i) =>
  Number((/^graphgate_mcp_streams (\d+)$/m.exec(await (await fetch(`${INTS[i]}/metrics`)).text()) || [0, -1])[1]);

// A 2025-11-25 session (SDK v1) on replica i's endpoint ep, its GET stream open; the times
// its list_changed notifications arrived go to got.
async function session2025(i, ep, got) {
  const base = await openStreams(i);
  const c = new Client({ name: 'replicas-views-2025', version: '1.0.0' }, { capabilities: {} });
  c.onerror = () => {};
  c.setNotificationHandler(ToolListChangedNotificationSchema, () => got.push(Date.now()));
  await c.connect(new StreamableHTTPClientTransport(new URL(`${R[i]}/mcp/acme/${ep}`), { requestInit: { headers: auth(env.KEY) } }));
  check(`2025 session on replica ${i + 1}'s ${ep}: GET stream open`, await until(async () => (await openStreams(i)) > base), base);
  return c;
}

// A 2026-07-28 client (SDK v2) on replica i's endpoint ep with a subscriptions/listen stream
// for tools; the times its list_changed notifications arrived go to got.
async function listen2026(i, ep, got) {
  const c = new v2.Client({ name: 'replicas-views-2026', version: '1.0.0' }, { capabilities: {}, versionNegotiation: { mode: 'auto' } });
  c.setNotificationHandler('notifications/tools/list_changed', () => got.push(Date.now()));
  await c.connect(new v2.StreamableHTTPClientTransport(new URL(`${R[i]}/mcp/acme/${ep}`), { requestInit: { headers: auth(env.KEY) } }));
  const sub = await c.listen({ toolsListChanged: true });
  check(`2026 client on replica ${i + 1}'s ${ep}: negotiated 2026-07-28, listen acknowledged with tools`,
    c.getNegotiatedProtocolVersion() === '2026-07-28' && sub.honoredFilter?.toolsListChanged === true, sub.honoredFilter);
  return { c, sub };
}

async function putView(base, def) {
  const r = await fetch(`${base}/admin/tenants/acme/views/pick`, {
    method: 'PUT', headers: { ...auth(env.ADMIN), 'Content-Type': 'application/json' }, body: JSON.stringify(def) });
  await r.text();
  return r.status;
}

const names = async (c) => (await c.listTools()).tools.map((t) => t.name).sort().join();

async function views() {
  check('view created through replica 1', (await putView(R[0], { tools: [{ tool: 'ver.ver', name: 'version0' }] })) === 201);
  const g25 = [], g26 = [];
  const old = await session2025(1, '_views/pick', g25);
  const { c: neu, sub } = await listen2026(2, '_views/pick', g26);
  const times = [];
  for (let k = 1; k <= 4; k++) {
    const n25 = g25.length, n26 = g26.length;
    const st = await putView(R[0], { tools: [{ tool: 'ver.ver', name: `version${k}` }, { tool: 'ver.slow' }] });
    const t0 = Date.now();
    const ms = [await timeUntil(t0, () => g25.length > n25, 3000), await timeUntil(t0, () => g26.length > n26, 3000)];
    times.push(...ms);
    check(`view change ${k} (replica 1, ${st}): list_changed on replica 2 (2025 GET stream) and 3 (2026 listen) within ${BOUND} ms`,
      st === 200 && ms.every((m) => m <= BOUND), ms);
    const want = `ver.slow,version${k}`, got = [await names(old), await names(neu)];
    check(`... both list the new selection (${want})`, got.every((g) => g === want), got);
  }
  console.log(`# view change (PUT answered on replica 1 → list_changed on replicas 2 and 3): ${stats(times)}`);
  // the same definition again changes nothing: no list_changed for it. The change after it
  // is the barrier: its notification comes after any the first one would have caused.
  const n25 = g25.length, n26 = g26.length;
  await putView(R[0], { tools: [{ tool: 'ver.ver', name: 'version4' }, { tool: 'ver.slow' }] });
  await putView(R[0], { tools: [{ tool: 'ver.ver', name: 'version5' }] });
  await until(() => g25.length > n25 && g26.length > n26, 3000);
  await sleep(300); // a second notification, if one was sent, arrives right behind the first
  check('an unchanged definition PUT again sends no list_changed (one per client for the two PUTs)',
    g25.length === n25 + 1 && g26.length === n26 + 1, [g25.length - n25, g26.length - n26]);

  // the tenant-wide endpoint and the view after a graph version uploaded through replica 1
  const a25 = [], a26 = [];
  const all25 = await session2025(1, '_all', a25);
  const { c: all26, sub: allSub } = await listen2026(2, '_all', a26);
  const m = [g25.length, g26.length];
  check('a new version of graph ver uploaded through replica 1', (await put(R[0], 20)) === 201);
  const t0 = Date.now();
  const ms = await Promise.all([() => a25.length > 0, () => a26.length > 0, () => g25.length > m[0], () => g26.length > m[1]]
    .map((f) => timeUntil(t0, f, 3000)));
  check(`... list_changed within ${BOUND} ms on _all (2025 on replica 2, 2026 on 3) and on the view selecting from it`,
    ms.every((x) => x <= BOUND), ms);
  console.log(`# graph version (replica 1) → list_changed on _all and the view (replicas 2, 3): ${ms.join(' ')} ms`);

  // deleting the view ends its streams on the other replicas
  const base = await openStreams(1);
  const d = await fetch(`${R[0]}/admin/tenants/acme/views/pick`, { method: 'DELETE', headers: auth(env.ADMIN) });
  await d.text();
  const td = Date.now();
  const how = await Promise.race([sub.closed, sleep(3000).then(() => 'still open')]);
  const gone = await until(async () => (await openStreams(1)) < base, 3000);
  check(`view deleted through replica 1: the 2026 listen stream on replica 3 closed gracefully (${Date.now() - td} ms), ` +
    'the 2025 GET stream on replica 2 ended', d.status === 200 && how === 'graceful' && gone, [d.status, how, gone]);
  for (const c of [old, neu, all25, all26]) await c.close().catch(() => {});
  await allSub.close().catch(() => {});
}

// A 2026-07-28 request of the tasks extension to replica i (raw: the SDK has no task API).
const CAPS = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': CAPS };
function post2026(i, method, name, params, signal) {
  return fetch(`${R[i]}/mcp/acme/everything`, { method: 'POST', signal, headers: { ...auth(env.KEY),
    'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'MCP-Protocol-Version': '2026-07-28',
    'Mcp-Method': method, 'Mcp-Name': name }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: meta } }) });
}

// A listen stream on replica i naming task id: its notifications/tasks go to got with their arrival time.
async function listenTask(i, id, got) {
  const ac = new AbortController();
  const r = await fetch(`${R[i]}/mcp/acme/everything`, { method: 'POST', signal: ac.signal, headers: { ...auth(env.KEY),
    'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'MCP-Protocol-Version': '2026-07-28',
    'Mcp-Method': 'subscriptions/listen' }, body: JSON.stringify({ jsonrpc: '2.0', id: 'sub', method: 'subscriptions/listen',
    params: { notifications: { taskIds: [id] }, _meta: meta } }) });
  (async () => {
    let buf = '';
    for await (const chunk of r.body) {
      buf += Buffer.from(chunk).toString();
      let at;
      while ((at = buf.indexOf('\n\n')) >= 0) {
        const ev = buf.slice(0, at); buf = buf.slice(at + 2);
        const data = ev.split('\n').find((l) => l.startsWith('data:'));
        const m = data && JSON.parse(data.slice(5));
        if (m?.method === 'notifications/tasks') got.push({ at: Date.now(), status: m.params.status, error: m.params.error });
      }
    }
  })().catch(() => {});
  return () => ac.abort();
}

async function tasks() {
  const ms = [];
  for (let k = 0; k < 3; k++) {
    const created = await (await post2026(0, 'tools/call', 'slow_compute', { name: 'slow_compute', arguments: { seconds: 30, label: `r${k}` } })).json();
    const id = created.result?.taskId;
    const got = [];
    const stop = await listenTask(1, id, got);
    check(`task ${k} created on replica 1: replica 2's listen stream hears it working`,
      await until(() => got.some((n) => n.status === 'working'), 5000), got);
    const t0 = Date.now();
    const c = await (await post2026(2, 'tasks/cancel', id, { taskId: id })).json();
    check(`task ${k} cancelled through replica 3`, c.result?.resultType === 'complete', c);
    const t = await timeUntil(t0, () => got.some((n) => n.status === 'cancelled'), 5000);
    ms.push(t);
    stop();
  }
  console.log(`# cancel on replica 3 → notifications/tasks on replica 2: ${stats(ms)}`);
  check(`each cancel heard on replica 2's stream within ${BOUND} ms`, ms.every((m) => m <= BOUND), ms);
}

// A task working on replica 3 when the shell kills it under load: a run certainly in flight
// there (the load's own runs on replica 3 may all be between two calls at the kill).
async function hold() {
  const created = await (await post2026(2, 'tools/call', 'slow_compute', { name: 'slow_compute', arguments: { seconds: 60, label: 'held' } })).json();
  const id = created.result?.taskId;
  const working = await until(async () => {
    const g = await (await post2026(2, 'tasks/get', id, { taskId: id })).json();
    return g.result?.status === 'working';
  }, 5000);
  check('a task working on replica 3 before it is killed', id && working, created);
  console.log('# HOLD_READY');
}

// A task working on replica 3, named by a listen stream on replica 1; the shell kills replica 3
// (kill -9) once TASK_READY is printed and restarts it: the restart marks the task failed
// ("interrupted") and replica 1's stream hears it.
async function interrupted() {
  const created = await (await post2026(2, 'tools/call', 'slow_compute', { name: 'slow_compute', arguments: { seconds: 60, label: 'killed' } })).json();
  const id = created.result?.taskId;
  const got = [];
  const stop = await listenTask(0, id, got);
  check('a task working on replica 3, named by a listen stream on replica 1',
    await until(() => got.some((n) => n.status === 'working'), 5000), got);
  console.log('# TASK_READY');
  const failed = await until(() => got.find((n) => n.status === 'failed'), 60000);
  check('replica 3 killed and restarted: replica 1\'s stream hears the task failed as interrupted',
    /interrupted/.test(failed?.error?.message ?? ''), got);
  stop();
}

try {
  const phase = process.argv[2];
  if (phase === 'propagate') await propagate();
  else if (phase === 'revoke') await revoke();
  else if (phase === 'resume') await resume();
  else if (phase === 'load') await load(process.argv[3]);
  else if (phase === 'views') await views();
  else if (phase === 'tasks') await tasks();
  else if (phase === 'interrupted') await interrupted();
  else if (phase === 'hold') await hold();
  else throw new Error(`unknown phase ${phase}`);
  finish();
} catch (e) { finish(e); }
