// sdk_reconnect.mjs — the official TypeScript SDK client (v1) calls a tool whose POST stream
// the gateway ends early (mcp.sse_close_after): the client follows the retry hint, resumes
// with GET + Last-Event-ID and must still get the result; /metrics shows the early close
// and the resume. usage: node sdk_reconnect.mjs URL KEY METRICS_URL
import { loadSdk, check, finish } from './sdk_lib.mjs';

const [url, key, metricsUrl] = process.argv.slice(2);
const { Client } = await loadSdk('client/index.js');
const { StreamableHTTPClientTransport } = await loadSdk('client/streamableHttp.js');
const metric = async (name) => {
  const text = await (await fetch(metricsUrl)).text();
  const m = text.match(new RegExp(`^${name} (\\d+)$`, 'm'));
  return m ? Number(m[1]) : -1;
};

try {
  const closed0 = await metric('graphgate_mcp_post_streams_closed_total');
  const resumed0 = await metric('graphgate_mcp_post_streams_resumed_total');
  const client = new Client({ name: 'graphgate-sdk-reconnect', version: '1.0.0' }, { capabilities: {} });
  const transport = new StreamableHTTPClientTransport(new URL(url),
    { requestInit: { headers: { Authorization: `Bearer ${key}` } } });
  await client.connect(transport);
  check('negotiated 2025-11-25', transport.protocolVersion === '2025-11-25', transport.protocolVersion);
  const t0 = Date.now();
  const r = await client.callTool({ name: 'test_reconnection', arguments: {} }, undefined, { timeout: 30000 });
  const ms = Date.now() - t0;
  check('the result arrives across the early close', r.content?.[0]?.text === 'Reconnection test completed', r);
  check(`in reasonable time (${ms} ms for a ~2 s tool)`, ms < 15000, ms);
  check('the POST stream was ended early', (await metric('graphgate_mcp_post_streams_closed_total')) > closed0);
  check('the client resumed it with Last-Event-ID', (await metric('graphgate_mcp_post_streams_resumed_total')) > resumed0);
  // the session still works for a fast call afterwards
  const q = await client.callTool({ name: 'test_simple_text', arguments: {} });
  check('a fast call after it', q.content?.[0]?.text === 'This is a simple text response for testing.', q);
  await client.close();
  finish();
} catch (e) {
  finish(e);
}
