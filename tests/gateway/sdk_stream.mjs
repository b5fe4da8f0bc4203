// sdk_stream.mjs — the official TypeScript MCP SDK client and graphgate's standalone GET
// stream: the SDK opens the stream itself after initialize; an admin upload of a new
// graph version, and a rollback, each reach every connected session as exactly one
// notifications/tools/list_changed, after which tools/list shows the active version's
// tools; DELETE of a session ends its stream.
// usage: node sdk_stream.mjs MCP_URL KEY ADMIN_GRAPH_URL ADMIN_KEY V2_YAML METRICS_URL
// Prints one "ok - ..." / "not ok - ..." line per check and a final "N passed, N failed".
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [url, key, graphUrl, adminKey, v2File, metricsUrl] = process.argv.slice(2);
const sdk = path.join(process.env.GG_NPM || path.resolve(import.meta.dirname, '../npm/node_modules'),
  '@modelcontextprotocol/sdk/dist/esm');
const load = (p) => import(pathToFileURL(path.join(sdk, p)).href);
const { Client } = await load('client/index.js');
const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');
const { ToolListChangedNotificationSchema } = await load('types.js');

let passed = 0, failed = 0;
const check = (desc, cond, detail) => {
  if (cond) { passed++; console.log(`ok - ${desc}`); }
  else { failed++; console.log(`not ok - ${desc}${detail !== undefined ? ': ' + JSON.stringify(detail) : ''}`); }
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// Poll until fn() is truthy (bounded); returns its last value.
async function until(fn, ms = 5000) {
  const end = Date.now() + ms;
  let v;
  while (!(v = await fn()) && Date.now() < end) await sleep(50);
  return v;
}
async function openStreams() {
  const text = await (await fetch(metricsUrl)).text();
  const m = /^graphgate_mcp_streams (\d+)$/m.exec(text);
  return m ? Number(m[1]) : -1;
}
const headers = key ? { Authorization: `Bearer ${key}` } : {};
const admin = { Authorization: `Bearer ${adminKey}` };

async function connect(name) {
  const client = new Client({ name, version: '1.0.0' }, { capabilities: {} });
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  const changes = [];
  client.setNotificationHandler(ToolListChangedNotificationSchema, (n) => changes.push(n.method));
  await client.connect(transport);
  return { client, transport, changes };
}
const toolNames = async (c) => (await c.listTools()).tools.map((t) => t.name);

try {
  const base = await openStreams();
  check('metrics expose graphgate_mcp_streams', base >= 0, base);
  const a = await connect('stream-a');
  const b = await connect('stream-b');
  check('initialize advertises tools.listChanged', a.client.getServerCapabilities()?.tools?.listChanged === true,
    a.client.getServerCapabilities());
  const n = await until(async () => (await openStreams()) >= base + 2 && (await openStreams()));
  check('the SDK opened one GET stream per session (server count +2)', n === base + 2, { base, n });
  const before = await toolNames(a.client);
  check('v1 does not have the new tool', before.length > 0 && !before.includes('stream_added'), before);

  // an admin uploads a new version
  const put = await fetch(graphUrl, { method: 'PUT', headers: { ...admin, 'Content-Type': 'application/yaml' },
    body: fs.readFileSync(v2File) });
  const putBody = await put.json();
  check('admin PUT of version 2 → 201', put.status === 201, putBody);
  await until(() => a.changes.length >= 1 && b.changes.length >= 1);
  check('session A received notifications/tools/list_changed', a.changes.length >= 1, a.changes);
  check('session B received it too', b.changes.length >= 1, b.changes);
  await sleep(300);
  check('exactly once per session (never broadcast on several streams)', a.changes.length === 1 && b.changes.length === 1,
    [a.changes.length, b.changes.length]);
  const after = await toolNames(a.client);
  check('the next tools/list shows the new tool', after.includes('stream_added'), after);

  // rollback to version 1
  const act = await fetch(`${graphUrl}/activate`, { method: 'POST', headers: { ...admin, 'Content-Type': 'application/json' },
    body: JSON.stringify({ version: putBody.version - 1 }) });
  check('POST activate (rollback) → 200', act.status === 200, act.status);
  await until(() => a.changes.length >= 2 && b.changes.length >= 2);
  check('the rollback notifies both sessions', a.changes.length === 2 && b.changes.length === 2,
    [a.changes.length, b.changes.length]);
  const back = await toolNames(b.client);
  check('tools/list after the rollback lacks the new tool', !back.includes('stream_added') && back.length === before.length, back);

  // DELETE of one session ends its stream; the other stays open
  await a.transport.terminateSession();
  const left = await until(async () => (await openStreams()) === base + 1 && base + 1);
  check('DELETE session → its GET stream ends (server count -1)', left === base + 1, { base, now: await openStreams() });
  await a.client.close();
  const pong = await b.client.ping();
  check('the other session still works', pong && Object.keys(pong).length === 0, pong);
  await b.transport.terminateSession();
  await b.client.close();
  const none = await until(async () => (await openStreams()) === base && base + 1);
  check('both streams gone', none === base + 1, await openStreams());
} catch (e) {
  check('no exception', false, String(e && e.stack || e));
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
