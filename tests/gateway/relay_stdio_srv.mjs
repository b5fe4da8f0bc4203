// relay_stdio_srv.mjs — a real MCP server over stdio (the official SDK's McpServer and
// StdioServerTransport) whose tools report progress, log and ask their client during a
// call, as the downstream of tests/gateway/relay_stdio.sh. Over a pipe no message names its
// call: the gateway routes progress by the call's progressToken and relays the rest to the
// one relaying call in flight (src/mcp/client_stdio.c).
// Tools:
//   work {n}    n progress notifications (if asked for, 150 ms apart: past the relay's 10/s
//               bound), then an info log message; the text is {sent, token}
//   ask {who}   an info log message "asking <who>", then one form elicitation; the text is the answer, or {code, message} of its refusal;
//               then releases every waiting hold call
//   hold {}     progress "holding" (if asked for), then waits until an ask call has been answered
//               or refused (a second call in flight)
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadSdk } from './sdk_lib.mjs';

const { McpServer } = await loadSdk('server/mcp.js');
const { StdioServerTransport } = await loadSdk('server/stdio.js');
const { ElicitResultSchema } = await loadSdk('types.js');
const nm = process.env.GG_NPM || path.resolve(import.meta.dirname, '../npm/node_modules');
const { z } = await import(pathToFileURL(path.join(nm, 'zod/index.js')).href);

const text = (v) => ({ content: [{ type: 'text', text: JSON.stringify(v) }] });
const pause = (ms) => new Promise((r) => setTimeout(r, ms));
let holders = [];
const server = new McpServer({ name: 'relay-stdio', version: '1.0.0' }, { capabilities: { tools: {}, logging: {} } });
server.registerTool('work', { description: 'reports progress and logs', inputSchema: { n: z.number() } },
  async ({ n }, extra) => {
    const token = extra._meta?.progressToken;
    for (let i = 1; i <= n; i++) {
      if (token !== undefined)
        await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: i,
          total: n, message: `step ${i}` } });
      await pause(150);
    }
    await extra.sendNotification({ method: 'notifications/message', params: { level: 'info', logger: 'work', data: 'worked' } });
    await pause(150);
    return text({ sent: n, token: token !== undefined });
  });
server.registerTool('ask', { description: 'asks its client', inputSchema: { who: z.string() } }, async ({ who }, extra) => {
  let out;
  await extra.sendNotification({ method: 'notifications/message', params: { level: 'info', logger: 'ask', data: `asking ${who}` } });
  try {
    out = await extra.sendRequest({ method: 'elicitation/create', params: { mode: 'form', message: `Hello ${who}?`,
      requestedSchema: { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] } } },
    ElicitResultSchema, { timeout: 20000 });
  } catch (e) {
    out = { code: e.code, message: e.message };
  }
  for (const h of holders) h();
  holders = [];
  return text(out);
});
server.registerTool('hold', { description: 'waits for an ask call to end', inputSchema: {} },
  async (_args, extra) => {
    const wait = new Promise((r) => holders.push(r));
    const token = extra._meta?.progressToken;
    if (token !== undefined)
      await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: 1, message: 'holding' } });
    await wait;
    return text({ held: true });
  });
await server.connect(new StdioServerTransport());
