// tenantwide_view.mjs — the official MCP SDK client on a view (/mcp/{tenant}/_views/{name}):
// 2 selected tools, one renamed; an admin PUT changing the selection reaches the session's
// GET stream as notifications/tools/list_changed, after which tools/list shows the new one.
// A new version of a graph the view selects from sends list_changed too.
// usage: node tenantwide_view.mjs VIEW_URL KEY ADMIN_VIEW_URL ADMIN_KEY METRICS_URL ADMIN_GRAPH_URL GRAPH_YAML
import fs from 'node:fs';
import { loadSdk, check, finish, until } from './sdk_lib.mjs';

const [url, key, viewUrl, adminKey, metricsUrl, graphUrl, graphFile] = process.argv.slice(2);
const { Client } = await loadSdk('client/index.js');
const { StreamableHTTPClientTransport } = await loadSdk('client/streamableHttp.js');
const { ToolListChangedNotificationSchema } = await loadSdk('types.js');
const streams = async () => Number((/^graphgate_mcp_streams (\d+)$/m.exec(await (await fetch(metricsUrl)).text()) || [0, -1])[1]);

try {
  const base = await streams();
  const client = new Client({ name: 'view-test', version: '1.0.0' }, { capabilities: {} });
  const changes = [];
  client.setNotificationHandler(ToolListChangedNotificationSchema, (n) => changes.push(n.method));
  await client.connect(new StreamableHTTPClientTransport(new URL(url),
    { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  check('the view lists its 2 tools, one renamed', JSON.stringify(names) === JSON.stringify(['gamma.shout', 'plus']), names);
  check('... with the overridden description', tools.find((t) => t.name === 'plus')?.description === 'adds two numbers', tools);
  const r = await client.callTool({ name: 'plus', arguments: { a: 1, b: 2 } });
  check('the renamed tool runs alpha.add: 3', r.structuredContent && r.structuredContent.sum === 3, r);
  let err = null;
  try { await client.callTool({ name: 'alpha.neg', arguments: { a: 1 } }); } catch (e) { err = e; }
  check('a tool outside the view cannot be called through it', err !== null, String(err));
  check('the SDK opened its GET stream on the view', (await until(async () => (await streams()) > base)) === true, base);

  const put = await fetch(viewUrl, { method: 'PUT', headers: { Authorization: `Bearer ${adminKey}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ tools: [{ tool: 'alpha.add', name: 'plus' }, { tool: 'alpha.neg' }] }) });
  check('admin PUT of a changed selection → 200', put.status === 200, put.status);
  await until(() => changes.length >= 1);
  check('notifications/tools/list_changed received', changes.length >= 1, changes);
  const after = (await client.listTools()).tools.map((t) => t.name).sort();
  check('tools/list shows the new selection', JSON.stringify(after) === JSON.stringify(['alpha.neg', 'plus']), after);
  const up = await fetch(graphUrl, { method: 'PUT', headers: { Authorization: `Bearer ${adminKey}`, 'Content-Type': 'application/yaml' },
    body: fs.readFileSync(graphFile) });
  check('admin PUT of a new version of graph alpha → 201', up.status === 201, up.status);
  await until(() => changes.length >= 2);
  check('list_changed again: the view selects alpha\'s tools', changes.length >= 2, changes);
  await client.close();
  finish();
} catch (e) {
  finish(e);
}
