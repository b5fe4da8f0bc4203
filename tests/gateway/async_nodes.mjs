// async_nodes.mjs — the official MCP SDK client calls a graph tool with and without a
// fire-and-forget audit node (async: true) whose downstream fails or hangs, and checks the
// results are identical and the audited calls do not wait for their branch.
// usage: node async_nodes.mjs URL KEY → "ok - ..." lines and "N passed, N failed".
import { loadSdk, check, finish } from './sdk_lib.mjs';

const [url, key] = process.argv.slice(2);
const { Client } = await loadSdk('client/index.js');
const { StreamableHTTPClientTransport } = await loadSdk('client/streamableHttp.js');

async function timed(client, name, x) {
  const t0 = performance.now();
  const r = await client.callTool({ name, arguments: { x } });
  return { r, ms: performance.now() - t0 };
}

try {
  const client = new Client({ name: 'async-nodes-test', version: '1.0.0' }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(new URL(url),
    { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
  await timed(client, 'plain', 'warm'); // the downstream session is set up once
  const runs = { plain: [], fail: [], hang: [] };
  for (let i = 0; i < 3; i++)
    for (const tool of Object.keys(runs)) runs[tool].push(await timed(client, tool, `m${i}`));
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  for (const tool of ['fail', 'hang'])
    check(`${tool}: each result identical to the call without the audit node`,
      runs[tool].every((o, i) => same(o.r, runs.plain[i].r) && !o.r.isError), runs[tool].map((o) => o.r));
  const plainMax = Math.max(...runs.plain.map((o) => o.ms));
  // the hanging branch's downstream times out after 2000 ms (and would run 30 s): a call
  // that waited for it would take that long
  for (const tool of ['fail', 'hang'])
    check(`${tool}: each call within 1000 ms of the slowest plain call (${plainMax.toFixed(0)} ms)`,
      runs[tool].every((o) => o.ms < plainMax + 1000), runs[tool].map((o) => o.ms.toFixed(1)));
  console.log(`# latency ms: plain ${runs.plain.map((o) => o.ms.toFixed(1))}, failing audit ${runs.fail.map((o) => o.ms.toFixed(1))}, hanging audit ${runs.hang.map((o) => o.ms.toFixed(1))}`);
  await client.close();
  finish();
} catch (e) {
  finish(e);
}
