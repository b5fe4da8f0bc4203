// sdk_tasks.mjs — the official TypeScript SDK v2 client (@modelcontextprotocol/client) with the
// tasks extension's requester (@modelcontextprotocol/ext-tasks, pinned through the lock file)
// driving a graph's tool as a 2026-07-28 task: created, polled with tasks/get until it
// completes, and a second one cancelled with tasks/cancel.
// The SDK's own wire codec rejects task results, so ext-tasks sends its task requests
// through a host dispatcher (rawDispatch, below): it frames them as JSON-RPC and sets the
// 2026 headers (MCP-Protocol-Version, Mcp-Method, Mcp-Name) the gateway validates.
// usage: node sdk_tasks.mjs URL KEY   (KEY may be "" for the internal listener)
// Prints one "ok - ..." / "not ok - ..." line per check and a final "N passed, N failed".
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [url, key] = process.argv.slice(2);
const root = process.env.GG_NPM || path.resolve(import.meta.dirname, '../npm/node_modules');
const load = (p) => import(pathToFileURL(path.join(root, p)).href);
const { Client, StreamableHTTPClientTransport } = await load('@modelcontextprotocol/client/dist/index.mjs');
const ext = await load('@modelcontextprotocol/ext-tasks/dist/client/index.js');

let passed = 0, failed = 0;
const check = (desc, cond, detail) => {
  if (cond) { passed++; console.log(`ok - ${desc}`); }
  else { failed++; console.log(`not ok - ${desc}${detail !== undefined ? ': ' + JSON.stringify(detail).slice(0, 600) : ''}`); }
};
const auth = key ? { Authorization: `Bearer ${key}` } : {};
const caps = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
const clientInfo = { name: 'graphgate-sdk-tasks', version: '1.0.0' };
const methods = [];

let nextId = 1;
async function rawDispatch(request) {
  methods.push(request.method);
  const headers = { ...auth, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
    'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': request.method };
  const name = request.method === 'tools/call' ? request.params?.name : request.params?.taskId;
  if (name) headers['Mcp-Name'] = name;
  const r = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, ...request }) });
  return JSON.parse(await r.text());
}

try {
  const client = new Client(clientInfo, { capabilities: caps, versionNegotiation: { mode: 'auto' } });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: auth } }));
  check('negotiated 2026-07-28', client.getNegotiatedProtocolVersion() === '2026-07-28', client.getNegotiatedProtocolVersion());
  const session = ext.createTaskSessionFromClient(client, {
    endpointId: 'graphgate-test', rawDispatch,
    v2RequestFraming: { protocolVersion: '2026-07-28', clientInfo, clientCapabilities: caps },
  });

  const done = await session.callTool('slow_compute', { seconds: 0.3, label: 'by the SDK' });
  check('the call became a task', done.kind === 'task' && /^task-/.test(done.handle?.taskId ?? ''), done.kind);
  const { outcome } = await done.settle();
  check('the task completed', outcome.status === 'completed', outcome);
  const result = ext.resultFromTaskOutcome(outcome);
  check('its result is the tool\'s', /Computed by the SDK in 0\.3 s/.test(result?.content?.[0]?.text ?? ''), result);
  check('polled with tasks/get', methods.includes('tasks/get'), methods);

  const long = await session.callTool('slow_compute', { seconds: 30 });
  await long.cancel();
  const { outcome: cancelled } = await long.settle();
  check('a task cancelled through the SDK ends cancelled', cancelled.status === 'cancelled', cancelled);
  check('with tasks/cancel', methods.includes('tasks/cancel'), methods);

  await session.close();
  await client.close();
} catch (e) {
  check('no exception', false, `${e?.name}: ${e?.message}`);
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
