// listen.mjs — the SDK client side of tests/gateway/listen.sh: connected to a proxy graph
// (`tools: all` of listen_srv.mjs, prefix l_), it asks the downstream to add a tool through
// its control endpoint — no call through the gateway, no upload — and waits for our own
// notifications/tools/list_changed, the new tool in tools/list, and a call of it.
// argv: URL KEY ADD_URL NAME METRICS_URL. Prints "ok - ..." lines and "N passed, N failed".
import { loadSdk, check, finish, until } from './sdk_lib.mjs';

const [url, key, addUrl, name, metricsUrl] = process.argv.slice(2);
const { Client } = await loadSdk('client/index.js');
const { StreamableHTTPClientTransport } = await loadSdk('client/streamableHttp.js');
const { ToolListChangedNotificationSchema } = await loadSdk('types.js');
const text = (r) => (r.content || []).map((c) => c.text).join('');

try {
  const client = new Client({ name: 'listen-test', version: '1.0.0' }, { capabilities: {} });
  const changes = [];
  client.setNotificationHandler(ToolListChangedNotificationSchema, (n) => changes.push(n.method));
  await client.connect(new StreamableHTTPClientTransport(new URL(url),
    { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
  const names = async () => (await client.listTools()).tools.map((t) => t.name).sort().join();
  const before = await names();
  check(`before: no l_${name}`, before.includes('l_alpha') && !before.includes(`l_${name}`), before);
  // this client's own GET stream to the gateway must be open before the change (the SDK
  // opens it after initialize, asynchronously): the gateway's gauge says when
  const streams = async () => Number(((await (await fetch(metricsUrl)).text())
    .match(/^graphgate_mcp_streams (\d+)$/m) || [])[1] || 0);
  check('our GET stream to the gateway is open', (await until(async () => (await streams()) >= 1, 10000)) === true);
  const t0 = Date.now();
  const add = await fetch(addUrl + `?name=${name}`, { method: 'POST' });
  check('the downstream added the tool on its own (control endpoint, not through the gateway)', add.ok, add.status);
  await until(() => changes.length > 0, 30000);
  const ms = Date.now() - t0;
  check(`notifications/tools/list_changed reached this client (${ms} ms after the downstream's change)`,
    changes.length > 0, changes);
  const after = await until(async () => { const n = await names(); return n.includes(`l_${name}`) && n; }, 10000);
  check(`tools/list now has l_${name}, without re-upload`, !!after, await names());
  const r = await client.callTool({ name: `l_${name}`, arguments: { when: 'now' } });
  check(`l_${name} calls through to the downstream`, text(r) === `${name} ran now`, r);
  await client.close();
  finish();
} catch (e) {
  finish(e);
}
