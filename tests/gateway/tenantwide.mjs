// tenantwide.mjs — the official MCP SDK client on /mcp/{tenant}/_all: lists the tools of
// two graphs under <graph>.<tool> and calls one of each (2025-11-25, session).
// usage: node tenantwide.mjs URL KEY → "ok - ..." lines and "N passed, N failed".
import { loadSdk, check, finish } from './sdk_lib.mjs';

const [url, key] = process.argv.slice(2);
const { Client } = await loadSdk('client/index.js');
const { StreamableHTTPClientTransport } = await loadSdk('client/streamableHttp.js');

try {
  const client = new Client({ name: 'tenantwide-test', version: '1.0.0' }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(new URL(url),
    { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  check('tools/list: both graphs\' tools as <graph>.<tool>',
    JSON.stringify(names) === JSON.stringify(['alpha.add', 'alpha.neg', 'gamma.shout']), names);
  check('... each keeps its inputSchema', tools.every((t) => t.inputSchema && t.inputSchema.type === 'object'), tools);
  const a = await client.callTool({ name: 'alpha.add', arguments: { a: 2, b: 40 } });
  check('alpha.add routes to graph alpha, tool add: 42', a.structuredContent && a.structuredContent.sum === 42, a);
  const g = await client.callTool({ name: 'gamma.shout', arguments: { s: 'hi' } });
  check('gamma.shout routes to graph gamma', g.structuredContent && g.structuredContent.out === 'HI', g);
  let err = null;
  try { await client.callTool({ name: 'alpha.nope', arguments: {} }); } catch (e) { err = e; }
  check('an unknown dotted name is a JSON-RPC error', err !== null && /nope/.test(String(err.message)), String(err));
  await client.close();
  finish();
} catch (e) {
  finish(e);
}
