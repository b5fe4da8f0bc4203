// sdk_task_listen.mjs — task status notifications of the tasks extension: the official SDK v2
// client (@modelcontextprotocol/client) with the extension's requester
// (@modelcontextprotocol/ext-tasks) runs a task that waits for input, opens a
// subscriptions/listen stream naming it (notifications.taskIds) and receives its
// notifications/tasks in order while the requester answers the input through tasks/update:
// input_required (with its inputRequests), working, completed (with the result inlined). A
// cancelled task's stream hears "cancelled". Another tenant's client naming the same task id
// is acknowledged with no task and hears nothing (the attack), and a client that asks for
// taskIds without declaring the extension gets -32021.
// usage: node sdk_task_listen.mjs URL KEY URL2 KEY2   (URL2/KEY2: the same graph of another tenant)
// Prints one "ok - ..." / "not ok - ..." line per check and a final "N passed, N failed".
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { check, sleep, until as poll, finish } from './sdk_lib.mjs';

const [url, key, url2, key2] = process.argv.slice(2);
const root = process.env.GG_NPM || path.resolve(import.meta.dirname, '../npm/node_modules');
const load = (p) => import(pathToFileURL(path.join(root, p)).href);
const { Client, StreamableHTTPClientTransport } = await load('@modelcontextprotocol/client/dist/index.mjs');
const ext = await load('@modelcontextprotocol/ext-tasks/dist/client/index.js');

const auth = (k) => (k ? { Authorization: `Bearer ${k}` } : {});
const caps = { elicitation: {}, extensions: { 'io.modelcontextprotocol/tasks': {} } };
const clientInfo = { name: 'graphgate-sdk-task-listen', version: '1.0.0' };
const until = async (pred) => Boolean(await poll(pred, 20000)); /* generous: ASan on a loaded machine */

let nextId = 1;
const dispatcher = (u, k) => async (request) => {
  const headers = { ...auth(k), 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
    'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': request.method };
  const name = request.method === 'tools/call' ? request.params?.name : request.params?.taskId;
  if (name) headers['Mcp-Name'] = name;
  const r = await fetch(u, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, ...request }) });
  return JSON.parse(await r.text());
};

// The acknowledgement of a raw subscriptions/listen naming ids (the SDK's honoredFilter drops
// the extension's taskIds member): the stream's first event, then the stream is closed.
async function rawAck(u, k, ids) {
  const ac = new AbortController();
  const r = await fetch(u, { method: 'POST', signal: ac.signal, headers: { ...auth(k), 'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream', 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'subscriptions/listen' },
  body: JSON.stringify({ jsonrpc: '2.0', id: 'raw-ack', method: 'subscriptions/listen', params: { notifications: { taskIds: ids },
    _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': caps,
      'io.modelcontextprotocol/clientInfo': clientInfo } } }) });
  const reader = r.body.getReader();
  let text = '';
  while (!/\n\n/.test(text)) {
    const { value, done } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
  }
  ac.abort();
  const line = text.split('\n').find((l) => l.startsWith('data:'));
  return line ? JSON.parse(line.slice(5)) : { status: r.status, text };
}

// A connected SDK v2 client whose notifications/tasks go to got (in arrival order).
async function connect(u, k, capabilities, got) {
  const c = new Client(clientInfo, { capabilities, versionNegotiation: { mode: 'auto' } });
  c.fallbackNotificationHandler = async (n) => { if (n.method === 'notifications/tasks') got.push(n.params); };
  await c.connect(new StreamableHTTPClientTransport(new URL(u), { requestInit: { headers: auth(k) } }));
  return c;
}

// The lifecycle order of the extension's state diagram: a later notification never goes back
// to a state before the previous one, except input_required → working (the answered input).
function inOrder(statuses) {
  const terminal = new Set(['completed', 'failed', 'cancelled']);
  for (let i = 1; i < statuses.length; i++) {
    const a = statuses[i - 1], b = statuses[i];
    if (terminal.has(a)) return false;
    if (a === b) continue;
    if (!((a === 'working' && (b === 'input_required' || terminal.has(b))) ||
          (a === 'input_required' && (b === 'working' || terminal.has(b))))) return false;
  }
  return true;
}

try {
  const got = [], gotOther = [];
  const client = await connect(url, key, caps, got);
  check('negotiated 2026-07-28', client.getNegotiatedProtocolVersion() === '2026-07-28', client.getNegotiatedProtocolVersion());
  let answer;
  const answered = new Promise((r) => { answer = r; });
  const session = ext.createTaskSessionFromClient(client, {
    endpointId: 'graphgate-task-listen', rawDispatch: dispatcher(url, key),
    v2RequestFraming: { protocolVersion: '2026-07-28', clientInfo, clientCapabilities: caps },
    // the input is answered once the test has seen input_required on the stream
    onInputRequest: async () => { await answered; return { action: 'accept', content: { confirm: true } }; },
  });

  const exec = await session.callTool('confirm_delete', { filename: 'listen.txt' });
  const id = exec.handle?.taskId;
  check('the call became a task', exec.kind === 'task' && /^task-/.test(id ?? ''), exec.kind);

  // the attack first: another tenant names this task id before anything else happens
  const other = await connect(url2, key2, caps, gotOther);
  const otherSub = await other.listen({ toolsListChanged: true, taskIds: [id] });
  const otherAck = await rawAck(url2, key2, [id, 'task-0123456789abcdef0123456789abcdef']);
  check('another tenant naming the task id: acknowledged with no task (taskIds: [])',
    otherAck.method === 'notifications/subscriptions/acknowledged' && Array.isArray(otherAck.params?.notifications?.taskIds) &&
    otherAck.params.notifications.taskIds.length === 0, otherAck);

  const ack = await rawAck(url, key, [id, 'task-unknown', 'x'.repeat(3000)]);
  check('its own tenant naming it (and two unknown ids): acknowledged with the task id alone',
    JSON.stringify(ack.params?.notifications?.taskIds) === JSON.stringify([id]), ack);
  const sub = await client.listen({ taskIds: [id] });
  check('input_required arrives on the stream with its inputRequests',
    await until(() => got.some((n) => n.taskId === id && n.status === 'input_required' && n.inputRequests?.confirm)), got);
  answer();
  check('completed arrives on the stream', await until(() => got.some((n) => n.taskId === id && n.status === 'completed')), got);
  const { outcome } = await exec.settle();
  check('the requester\'s task completed', outcome.status === 'completed', outcome);
  const mine = got.filter((n) => n.taskId === id);
  const statuses = mine.map((n) => n.status);
  check(`its notifications came in lifecycle order (${statuses.join(' → ')})`, inOrder(statuses), statuses);
  check('… working again after the input was answered, before completed',
    statuses.lastIndexOf('working') > statuses.indexOf('input_required'), statuses);
  const done = mine.find((n) => n.status === 'completed');
  check('the completed notification inlines the result (a DetailedTask, as tasks/get)',
    done?.result?.content?.[0]?.text === 'Deleted listen.txt' && done.createdAt && done.lastUpdatedAt && !('resultType' in done), done);
  check('each notification carries the subscription id',
    mine.every((n) => n._meta?.['io.modelcontextprotocol/subscriptionId'] !== undefined), mine.map((n) => n._meta));

  // cancellation: the stream hears "cancelled"
  const long = await session.callTool('slow_compute', { seconds: 30, label: 'listen' });
  const lid = long.handle?.taskId;
  const sub2 = await client.listen({ taskIds: [lid] });
  check('working arrives for a new task on a second stream', await until(() => got.some((n) => n.taskId === lid && n.status === 'working')), got);
  await long.cancel();
  check('cancelled arrives on the stream', await until(() => got.some((n) => n.taskId === lid && n.status === 'cancelled')), got);
  await long.settle().catch(() => {});

  // the other tenant heard nothing, not even after a watcher pass
  await sleep(1500);
  check('the other tenant\'s stream heard no notifications/tasks', gotOther.length === 0, gotOther);

  // taskIds without the extension declared: -32021
  const plain = await connect(url, key, {}, []);
  let code;
  try { await plain.listen({ taskIds: [id] }); } catch (e) { code = e?.code; }
  check('taskIds without the tasks extension declared → -32021', code === -32021, code);

  await sub.close(); await sub2.close(); await otherSub.close();
  await session.close();
  await client.close(); await other.close(); await plain.close();
  finish();
} catch (e) {
  finish(e);
}
