// secrets_srv.mjs — a real streamable-HTTP MCP server (the official SDK's McpServer and
// StreamableHTTPServerTransport, stateful sessions) behind bearer-token middleware, as the
// downstream of tests/gateway/secrets.sh. Every /mcp request must carry
// "Authorization: Bearer <token>" with a token of the accepted set (argv[2], comma-separated),
// else 401; a query parameter k, when present, must be that same token. Prints "PORT <n>" once listening.
// Tools: whoami → the Authorization header it was called with (an echo: the gateway must
// redact it); headers → every request header, as JSON.
// Control endpoints (plain HTTP, not MCP):
//   POST /accept?t=TOKEN   TOKEN is accepted from now on
//   POST /reject?t=TOKEN   TOKEN is refused from now on
//   GET  /status           {calls, refused, seen: {token: calls with it}}
import { loadSdk } from './sdk_lib.mjs';
import { mcpSessions, readJson, json, serve } from './http_srv_lib.mjs';

const { McpServer } = await loadSdk('server/mcp.js');

const accepted = new Set((process.argv[2] || '').split(',').filter(Boolean));
const seen = {};
let calls = 0, refused = 0;

// a session: {server, transport, auth (the Authorization header of its latest request)}
const { handle } = mcpSessions((s) => {
  const server = new McpServer({ name: 'secrets', version: '1.0.0' });
  s.auth = '';
  server.registerTool('whoami', { description: 'The Authorization header of this call' },
    async (extra) => (calls++, { content: [{ type: 'text', text: `auth=${extra?.requestInfo?.headers?.authorization ?? s.auth}` }] }));
  server.registerTool('headers', { description: 'Every header of this call' },
    async (extra) => (calls++, { content: [{ type: 'text', text: JSON.stringify(extra?.requestInfo?.headers ?? {}) }] }));
  return server;
});

async function mcp(req, res, url) {
  const auth = req.headers.authorization || '';
  const token = auth.startsWith('Bearer ') ? auth.slice(7) : '';
  const k = url.searchParams.get('k'); // a token in the URL must match too
  if (!accepted.has(token) || (k !== null && k !== token)) {
    refused++;
    return res.writeHead(401, { 'www-authenticate': 'Bearer' }).end();
  }
  const body = await readJson(req);
  if (body && body.method === 'tools/call') seen[token] = (seen[token] || 0) + 1;
  await handle(req, res, body, (s) => { s.auth = auth; });
}

serve({
  '/status': (req, res) => json(res, 200, { calls, refused, seen }),
  'POST /accept': (req, res, url) => (accepted.add(url.searchParams.get('t')), json(res, 200, {})),
  'POST /reject': (req, res, url) => (accepted.delete(url.searchParams.get('t')), json(res, 200, {})),
  '/mcp': mcp,
});
