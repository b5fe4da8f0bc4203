// mcpgraph_bench.mjs — tools/call throughput of mcpgraph@0.1.23 (stdio MCP server) on its
// packaged switch example, driven by the official SDK client: one call at a time, then
// `concurrency` calls in flight. Prints one JSON line. With MODE "sequential" only the
// first (run.sh runs that once a round, between its other targets), "parallel" only the
// second.
// usage: node mcpgraph_bench.mjs NPM_DIR SECONDS CONCURRENCY [MODE]
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [npm, secondsArg, concArg, mode] = process.argv.slice(2);
const seconds = Number(secondsArg || 5), concurrency = Number(concArg || 64);
const sdk = path.join(npm, '@modelcontextprotocol/sdk/dist/esm');
const load = (p) => import(pathToFileURL(path.join(sdk, p)).href);
const { Client } = await load('client/index.js');
const { StdioClientTransport } = await load('client/stdio.js');

const transport = new StdioClientTransport({
  command: process.execPath,
  args: [path.join(npm, 'mcpgraph/dist/main.js'), '-g', path.join(npm, 'mcpgraph/examples/switch_example.yaml')],
  stderr: 'ignore',
});
const client = new Client({ name: 'graphgate-bench', version: '1.0.0' });
await client.connect(transport);

const pct = (a, p) => (a.length ? a[Math.min(a.length - 1, Math.floor((a.length * p) / 100))] : null);
async function one(lat) {
  const t0 = performance.now();
  try {
    const r = await client.callTool({ name: 'test_switch', arguments: { value: 42 } }, undefined, { timeout: 10000 });
    lat.push(performance.now() - t0);
    return r.structuredContent && r.structuredContent.result === 'high' && !r.isError;
  } catch {
    return false;
  }
}
async function run(inflight) {
  const lat = [];
  let ok = 0, fail = 0;
  const end = performance.now() + seconds * 1000;
  const loop = async () => { while (performance.now() < end) (await one(lat)) ? ok++ : fail++; };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: inflight }, loop));
  const elapsed = (performance.now() - t0) / 1000;
  lat.sort((a, b) => a - b);
  return { inflight, ok, fail, seconds: elapsed, rps: ok / elapsed, p50_ms: pct(lat, 50), p99_ms: pct(lat, 99) };
}
for (let i = 0; i < 200; i++) await one([]); // warm up
const sequential = mode === 'parallel' ? null : await run(1);
const parallel = mode === 'sequential' ? null : await run(concurrency);
console.log(JSON.stringify({ sequential, parallel }));
await client.close();
process.exit(0);
