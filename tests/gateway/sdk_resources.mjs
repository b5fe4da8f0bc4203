// sdk_resources.mjs — the official TypeScript SDK client subscribed to a resource of the
// conformance fixture while an admin uploads new versions: its GET stream receives
// notifications/resources/updated for the subscribed URI (only while subscribed) and
// resources/ and prompts/list_changed with every new version.
// usage: node sdk_resources.mjs MCP_URL KEY ADMIN_GRAPH_URL ADMIN_KEY GRAPH_YAML METRICS_URL
// Prints one "ok - ..." / "not ok - ..." line per check and a final "N passed, N failed".
import fs from 'node:fs';
import { loadSdk as load, check, sleep, until, finish } from './sdk_lib.mjs';

const [url, key, graphUrl, adminKey, yamlFile, metricsUrl] = process.argv.slice(2);
const { Client } = await load('client/index.js');
const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');
const { ResourceUpdatedNotificationSchema, ResourceListChangedNotificationSchema, PromptListChangedNotificationSchema } =
  await load('types.js');

async function openStreams() {
  const m = /^graphgate_mcp_streams (\d+)$/m.exec(await (await fetch(metricsUrl)).text());
  return m ? Number(m[1]) : -1;
}
const put = async () => (await fetch(graphUrl, { method: 'PUT',
  headers: { Authorization: `Bearer ${adminKey}`, 'Content-Type': 'application/yaml' }, body: fs.readFileSync(yamlFile) })).status;

try {
  const base = await openStreams();
  const client = new Client({ name: 'resources-sub', version: '1.0.0' }, { capabilities: {} });
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${key}` } } });
  const got = { updated: [], resources: 0, prompts: 0 };
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => got.updated.push(n.params.uri));
  client.setNotificationHandler(ResourceListChangedNotificationSchema, () => got.resources++);
  client.setNotificationHandler(PromptListChangedNotificationSchema, () => got.prompts++);
  await client.connect(transport);
  check('the SDK opened its GET stream', await until(async () => (await openStreams()) >= base + 1), { base });
  await client.subscribeResource({ uri: 'test://watched-resource' });
  await client.subscribeResource({ uri: 'test://template/7/data' });
  check('admin PUT of a new version → 201', (await put()) === 201);
  await until(() => got.updated.length >= 2 && got.resources >= 1 && got.prompts >= 1);
  check('resources/updated for each subscribed URI', got.updated.sort().join() === 'test://template/7/data,test://watched-resource',
    got);
  check('resources/list_changed and prompts/list_changed once each', got.resources === 1 && got.prompts === 1, got);
  await client.unsubscribeResource({ uri: 'test://watched-resource' });
  check('another version → 201', (await put()) === 201);
  await until(() => got.resources >= 2 && got.updated.length >= 3);
  await sleep(300);
  check('after unsubscribe only the remaining URI is updated', got.updated.length === 3 && got.updated[2] === 'test://template/7/data'
    && got.resources === 2, got);
  await transport.terminateSession();
  await client.close();
} catch (e) {
  finish(e);
}
finish();
