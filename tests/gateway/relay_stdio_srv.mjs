// relay_stdio_srv.mjs — a real MCP server over stdio (the official SDK's McpServer and
// StdioServerTransport) whose tools report progress, log and ask their client during a
// call, as the downstream of tests/gateway/relay_stdio.sh. Over a pipe no message names its
// call: the gateway routes progress by the call's progressToken and relays the rest to the
// one relaying call in flight (src/mcp/client_stdio.c). The server and its notes: relay_lib.mjs.
// Tools:
//   work {n}    n progress notifications (if asked for, 150 ms apart: past the relay's 10/s
//               bound), then an info log message; the text is {sent, token}
//   ask {who}   an info log message "asking <who>", then one form elicitation; the text is the answer, or {code, message} of its refusal;
//               then releases every waiting hold call
//   hold {}     progress "holding" (if asked for), then waits until an ask call has been answered
//               or refused (a second call in flight)
import { loadSdk } from './sdk_lib.mjs';
import { z, relayServer, text, pause, elicit, log, steps } from './relay_lib.mjs';

const { StdioServerTransport } = await loadSdk('server/stdio.js');
let holders = [];
const server = relayServer('relay-stdio');
server.registerTool('work', { description: 'reports progress and logs', inputSchema: { n: z.number() } },
  async ({ n }, extra) => {
    const token = await steps(extra, n, () => pause(150));
    await log(extra, 'info', 'work', 'worked');
    await pause(150);
    return text({ sent: n, token });
  });
server.registerTool('ask', { description: 'asks its client', inputSchema: { who: z.string() } }, async ({ who }, extra) => {
  let out;
  await log(extra, 'info', 'ask', `asking ${who}`);
  try {
    out = await elicit(extra, `Hello ${who}?`, { timeout: 20000 });
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
