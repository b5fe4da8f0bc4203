// relay_srv.mjs — a real streamable-HTTP MCP server (the official SDK's McpServer and
// StreamableHTTPServerTransport, stateful sessions) whose tools ask their client during the
// call, as the downstream of tests/gateway/relay.sh (what it shares with relay_stdio_srv.mjs:
// relay_lib.mjs; its sessions and routing: http_srv_lib.mjs). Prints "PORT <n>" once listening.
// Tools (each request goes out on the call's own SSE answer, extra.sendRequest):
//   ask {who}   elicitation/create (form), elicitation/create (URL mode),
//               sampling/createMessage, roots/list; the text is the four answers as JSON
//   never {}    one form elicitation the test's client never answers; its abort (the call
//               cancelled upstream) is counted in /status
//   chatty {n}  n progress notifications (if asked for) over a few 100 ms, then a debug and a
//               warning log message
//   spam {n}    n elicitations one after the other; the text is {answered, refused, codes}
//   aside {n}   n progress notifications (if asked for, 150 ms apart) and a warning log message
//               on the session's GET stream (no related request), then the result
//   slow {}     one form elicitation, then up to 20 s of work that stops (and counts in
//               aborted) when the call is cancelled upstream (relay2026.sh)
//   phases {again}  progress 1, 2 (total 4) and a warning log, then one form elicitation;
//               while it waits, after GET /poke, progress 2.5 and a warning log ("parked"),
//               then a ping (answered in order, so the gateway has read both before
//               parkedSent counts); after the answer (again: progress 1, 2 once more, a
//               count restarted) progress 3, 4, a debug and a warning log
// Control endpoints: GET /status  {aborted (tool calls whose signal fired), asked, parkedSent,
//                                  getOpen (GET streams open now)}
//                    GET /poke    lets a waiting phases call send its "parked" notes
import { loadSdk } from './sdk_lib.mjs';
import { z, relayServer, text, pause, elicit, log, steps } from './relay_lib.mjs';
import { mcpSessions, readJson, json, serve } from './http_srv_lib.mjs';

const { EmptyResultSchema, ElicitResultSchema, CreateMessageResultSchema, ListRootsResultSchema } = await loadSdk('types.js');

let aborted = 0, asked = 0, parkedSent = 0, getOpen = 0;
let poked = null; // resolves the waiting phases call's "parked" notes (GET /poke)
const pokeWait = () => new Promise((resolve) => { poked = resolve; });

function tools(server) {
  server.registerTool('ask', { description: 'asks its client four ways', inputSchema: { who: z.string() } },
    async ({ who }, extra) => {
      asked++;
      const f = await elicit(extra, `Hello ${who}?`);
      const u = await extra.sendRequest({ method: 'elicitation/create', params: { mode: 'url', message: 'Sign in',
        url: 'https://example.com/sign-in', elicitationId: `e-${who}` } }, ElicitResultSchema);
      const s = await extra.sendRequest({ method: 'sampling/createMessage', params: { maxTokens: 20,
        messages: [{ role: 'user', content: { type: 'text', text: `summarize ${who}` } }] } }, CreateMessageResultSchema);
      const r = await extra.sendRequest({ method: 'roots/list', params: {} }, ListRootsResultSchema);
      return text({ form: f, url: u, sample: s.content, roots: r.roots });
    });
  server.registerTool('never', { description: 'asks and waits', inputSchema: {} }, async (_args, extra) => {
    extra.signal.addEventListener('abort', () => aborted++);
    const f = await elicit(extra, 'never', { timeout: 60000 });
    return text(f);
  });
  server.registerTool('chatty', { description: 'reports progress and logs', inputSchema: { n: z.number() } },
    async ({ n }, extra) => {
      const token = await steps(extra, n, (i) => i % 100 === 1 && pause(20)); // spread over a few 100 ms
      await log(extra, 'debug', 'chatty', 'quiet');
      await pause(150); // past the relay's per-kind rate bound
      await log(extra, 'warning', 'chatty', 'loud');
      return text({ sent: n, token });
    });
  server.registerTool('aside', { description: 'progress and a log on the GET stream', inputSchema: { n: z.number() } },
    async ({ n }, extra) => {
      const token = extra._meta?.progressToken;
      for (let i = 1; i <= n && token !== undefined; i++) {
        await server.server.notification({ method: 'notifications/progress', params: { progressToken: token, progress: i,
          total: n, message: `aside ${i}` } });
        await pause(150);
      }
      await server.server.notification({ method: 'notifications/message', params: { level: 'warning', logger: 'aside', data: 'aside' } });
      await pause(300); /* the GET stream's events are read before the call's answer comes */
      return text({ sent: n, token: token !== undefined });
    });
  server.registerTool('slow', { description: 'asks, then works a while', inputSchema: {} }, async (_args, extra) => {
    const f = await elicit(extra, 'slow');
    const stopped = await new Promise((resolve) => {
      const t = setTimeout(() => resolve(false), 20000);
      extra.signal.addEventListener('abort', () => { aborted++; clearTimeout(t); resolve(true); });
    });
    return text({ form: f, stopped });
  });
  server.registerTool('phases', { description: 'progress, a question, more progress',
    inputSchema: { again: z.boolean().optional() } },
    async ({ again }, extra) => {
      const token = extra._meta?.progressToken;
      const note = (progress, message) => token === undefined ? null : extra.sendNotification({
        method: 'notifications/progress', params: { progressToken: token, progress, total: 4, message } });
      const say = (level, data) => log(extra, level, 'phases', data);
      await note(1, 'step 1');
      await pause(150); // past the relay's per-kind rate bound (10/s)
      await note(2, 'step 2');
      await say('warning', 'before');
      const poke = pokeWait();
      const answer = elicit(extra, 'phases', { timeout: 60000 });
      await poke;
      await note(2.5, 'parked');
      await say('warning', 'parked');
      await extra.sendRequest({ method: 'ping', params: {} }, EmptyResultSchema).catch(() => null);
      parkedSent++;
      const f = await answer;
      if (again) {
        await note(1, 'step 1');
        await pause(150);
        await note(2, 'step 2');
      }
      await pause(150);
      await note(3, 'step 3');
      await pause(150);
      await note(4, 'step 4');
      await say('debug', 'after-debug');
      await pause(150);
      await say('warning', 'after');
      return text({ form: f });
    });
  server.registerTool('spam', { description: 'asks n times', inputSchema: { n: z.number() } }, async ({ n }, extra) => {
    const out = { answered: 0, refused: 0, codes: {} };
    for (let i = 0; i < n && !extra.signal.aborted; i++) {
      try {
        await elicit(extra, `spam ${i}`, { timeout: 10000 });
        out.answered++;
      } catch (e) {
        out.refused++;
        out.codes[e.code] = (out.codes[e.code] ?? 0) + 1;
      }
    }
    return text(out);
  });
}

const mcp = mcpSessions(() => {
  const server = relayServer('relay');
  tools(server);
  return server;
});

serve({
  '/status': (req, res) => json(res, 200, { aborted, asked, parkedSent, getOpen }),
  '/poke': (req, res) => {
    const was = poked !== null;
    if (poked) poked();
    poked = null;
    json(res, 200, { poked: was });
  },
  '/mcp': async (req, res) => mcp.handle(req, res, await readJson(req), () => {
    if (req.method === 'GET') getOpen++, res.on('close', () => getOpen--);
  }),
});
