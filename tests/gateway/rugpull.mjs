// rugpull.mjs — the SDK client side of tests/gateway/rugpull.sh, on a proxy graph
// (`tools: all` of rugpull_srv.mjs) whose server changed `add` under on_change: review or
// quarantine: the client sees the pinned (or no) definition, an admin decides the pending
// change through the REST API, and the client waits for our notifications/tools/list_changed
// before it lists again — no sleeps.
// argv: URL KEY DECIDE_URL ADMIN_KEY EXPECT_BEFORE EXPECT_AFTER METRICS_URL
//   EXPECT_*: "absent" (add not listed) or a substring of add's description
import { loadSdk, check, finish, until } from './sdk_lib.mjs';

const [url, key, decideUrl, admin, before, after, metricsUrl] = process.argv.slice(2);
const { Client } = await loadSdk('client/index.js');
const { StreamableHTTPClientTransport } = await loadSdk('client/streamableHttp.js');
const { ToolListChangedNotificationSchema } = await loadSdk('types.js');

const matches = (tool, want) => (want === 'absent' ? !tool : !!tool && tool.description.includes(want));

try {
  const client = new Client({ name: 'rugpull-test', version: '1.0.0' }, { capabilities: {} });
  const changes = [];
  client.setNotificationHandler(ToolListChangedNotificationSchema, (n) => changes.push(n.method));
  await client.connect(new StreamableHTTPClientTransport(new URL(url),
    { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
  const add = async () => (await client.listTools()).tools.find((t) => t.name === 'add');
  const t0 = await add();
  check(`before the decision: add is ${before === 'absent' ? 'withheld' : `"${before}"`}`, matches(t0, before), t0);
  const streams = async () => Number(((await (await fetch(metricsUrl)).text())
    .match(/^graphgate_mcp_streams (\d+)$/m) || [])[1] || 0);
  check('our GET stream to the gateway is open', (await until(async () => (await streams()) >= 1, 10000)) === true);
  const started = Date.now();
  const r = await fetch(decideUrl, { method: 'POST', headers: { Authorization: `Bearer ${admin}` } });
  const body = await r.json();
  check(`the admin's decision is answered 200 (${body.status})`, r.status === 200, body);
  await until(() => changes.length > 0, 10000);
  const ms = Date.now() - started;
  check(`notifications/tools/list_changed reached this client (${ms} ms after the decision)`, changes.length > 0, changes);
  check('... within a second', ms < 1000, ms);
  const t1 = await add();
  check(`after: add is "${after}"`, matches(t1, after), t1);
  await client.close();
  finish();
} catch (e) {
  finish(e);
}
