// graphcall.mjs — the official MCP SDK client calls a graph whose mcp node calls another
// graph of the same tenant in-process (which itself waits on server-everything).
// usage: node graphcall.mjs URL KEY → "ok - ..." lines and "N passed, N failed".
import { loadSdk, check, finish } from './sdk_lib.mjs';

const [url, key] = process.argv.slice(2);
const { Client } = await loadSdk('client/index.js');
const { StreamableHTTPClientTransport } = await loadSdk('client/streamableHttp.js');

try {
  const client = new Client({ name: 'graphcall-test', version: '1.0.0' }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(new URL(url),
    { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
  const { tools } = await client.listTools();
  check('tools/list of the calling graph', tools.some((t) => t.name === 'go'), tools.map((t) => t.name));
  const r = await client.callTool({ name: 'go', arguments: { x: 21 } });
  check('the callee graph computed and waited on its downstream: {y: 42, said: "Echo: 21"}',
    r.structuredContent && r.structuredContent.y === 42 && r.structuredContent.said === 'Echo: 21', r);
  // eight at once: each holds no worker while its callee waits (the server runs 1 worker)
  const many = await Promise.all([...Array(8).keys()].map((i) => client.callTool({ name: 'go', arguments: { x: i } })));
  check('8 concurrent graph-to-graph calls on one worker all answer',
    many.every((m, i) => m.structuredContent && m.structuredContent.y === 2 * i), many.map((m) => m.structuredContent));
  await client.close();
  finish();
} catch (e) {
  finish(e);
}
