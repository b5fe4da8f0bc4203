// sdk_live.mjs — the official TypeScript MCP SDK client against a graph served by graphgate:
// progress and log notifications arrive live (as each node ends, before the result, in
// order) and a string result is one text block holding the string itself.
// usage: node sdk_live.mjs URL KEY     Prints "ok - ..." / "not ok - ..." and "N passed, N failed".
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';

const [url, key] = process.argv.slice(2);
const sdk = path.join(process.env.GG_NPM || path.resolve(import.meta.dirname, '../npm/node_modules'),
  '@modelcontextprotocol/sdk/dist/esm');
const load = (p) => import(pathToFileURL(path.join(sdk, p)).href);
const { Client } = await load('client/index.js');
const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');
const { CallToolResultSchema, LoggingMessageNotificationSchema } = await load('types.js');

let passed = 0, failed = 0;
const check = (desc, cond, detail) => {
  if (cond) { passed++; console.log(`ok - ${desc}`); }
  else { failed++; console.log(`not ok - ${desc}${detail !== undefined ? ': ' + JSON.stringify(detail) : ''}`); }
};

try {
  const client = new Client({ name: 'graphgate-live-test', version: '1.0.0' }, { capabilities: {} });
  const transport = new StreamableHTTPClientTransport(new URL(url),
    { requestInit: { headers: key ? { Authorization: `Bearer ${key}` } : {} } });
  await client.connect(transport);
  const events = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema,
    (n) => events.push({ kind: 'log', t: performance.now(), level: n.params.level, data: n.params.data }));
  await client.setLoggingLevel('debug');

  const res = await client.request(
    { method: 'tools/call', params: { name: 'steps', arguments: {}, _meta: { progressToken: 'live-1' } } },
    CallToolResultSchema,
    { onprogress: (p) => events.push({ kind: 'progress', t: performance.now(), progress: p.progress }) });
  const tResult = performance.now();

  const nodes = ['entry', 'a', 'b', 'c', 'exit'];
  const types = ['entry', 'transform', 'transform', 'transform', 'exit'];
  const progress = events.filter((e) => e.kind === 'progress').map((e) => e.progress);
  const logs = events.filter((e) => e.kind === 'log');
  check('progress after each node: 1..5', JSON.stringify(progress) === '[1,2,3,4,5]', progress);
  check('one debug log per node, in execution order, with type and duration',
    logs.length === 5 && logs.every((l, i) => l.level === 'debug' && l.data.node === nodes[i] &&
      l.data.type === types[i] && typeof l.data.duration_ms === 'number'), logs.map((l) => l.data));
  check('each node: its progress, then its log',
    events.map((e) => e.kind).join(',') === 'progress,log,'.repeat(5).slice(0, -1), events.map((e) => e.kind));
  // Live, not replayed with the result: node a's log reached the client at least half of
  // node b's own (reported) run time before the result did.
  const logA = logs.find((l) => l.data.node === 'a'), logB = logs.find((l) => l.data.node === 'b');
  const durB = logB ? logB.data.duration_ms : 0;
  const lead = logA ? tResult - logA.t : 0;
  check('node b takes long enough to tell (>= 40 ms)', durB >= 40, durB);
  check('notifications arrive while the run goes on, before the result',
    logA && durB >= 40 && lead >= durB / 2, { lead_ms: Math.round(lead), node_b_ms: durB });
  check('a string result is one text block holding the string itself',
    res.content.length === 1 && res.content[0].type === 'text' && res.content[0].text === 'done: 3000000 "items"' &&
      res.structuredContent === undefined && !res.isError, res);

  events.length = 0;
  const bad = await client.request(
    { method: 'tools/call', params: { name: 'fails', arguments: {}, _meta: { progressToken: 'live-2' } } },
    CallToolResultSchema, { onprogress: (p) => events.push({ kind: 'progress', progress: p.progress }) });
  const errLog = events.find((e) => e.kind === 'log' && e.level === 'error');
  check('a failed node: error-level log naming the node and the error, before the isError result',
    bad.isError === true && errLog && errLog.data.node === 'bad' && /boom/.test(errLog.data.error), { bad, events });
  check('the failed node reports no progress (only entry completed)',
    JSON.stringify(events.filter((e) => e.kind === 'progress').map((e) => e.progress)) === '[1]', events);

  events.length = 0;
  await client.setLoggingLevel('error');
  await client.callTool({ name: 'steps', arguments: {} });
  check('logging level error, no progressToken: no notifications', events.length === 0, events);
  await client.close();
} catch (e) {
  check('no exception', false, String(e && e.stack || e));
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
