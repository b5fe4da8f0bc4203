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
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { loadSdk } from './sdk_lib.mjs';

const { McpServer } = await loadSdk('server/mcp.js');
const { StreamableHTTPServerTransport } = await loadSdk('server/streamableHttp.js');
const { isInitializeRequest } = await loadSdk('types.js');

const accepted = new Set((process.argv[2] || '').split(',').filter(Boolean));
const sessions = new Map();
const seen = {};
let calls = 0, refused = 0;

async function newSession() {
  const server = new McpServer({ name: 'secrets', version: '1.0.0' });
  const s = { server, auth: '' };
  server.registerTool('whoami', { description: 'The Authorization header of this call' },
    async (extra) => (calls++, { content: [{ type: 'text', text: `auth=${extra?.requestInfo?.headers?.authorization ?? s.auth}` }] }));
  server.registerTool('headers', { description: 'Every header of this call' },
    async (extra) => (calls++, { content: [{ type: 'text', text: JSON.stringify(extra?.requestInfo?.headers ?? {}) }] }));
  s.transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (id) => sessions.set(id, s),
  });
  s.transport.onclose = () => { if (s.transport.sessionId) sessions.delete(s.transport.sessionId); };
  await server.connect(s.transport);
  return s;
}

const readBody = (req) => new Promise((resolve, reject) => {
  const parts = [];
  req.on('data', (c) => parts.push(c));
  req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
  req.on('error', reject);
});
const json = (res, status, body) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

async function mcp(req, res) {
  const auth = req.headers.authorization || '';
  const token = auth.startsWith('Bearer ') ? auth.slice(7) : '';
  const k = new URL(req.url, 'http://localhost').searchParams.get('k'); // a token in the URL must match too
  if (!accepted.has(token) || (k !== null && k !== token)) {
    refused++;
    return res.writeHead(401, { 'www-authenticate': 'Bearer' }).end();
  }
  const body = req.method === 'POST' ? JSON.parse(await readBody(req)) : undefined;
  if (body && body.method === 'tools/call') seen[token] = (seen[token] || 0) + 1;
  const sid = req.headers['mcp-session-id'];
  let s = sid ? sessions.get(sid) : undefined;
  if (!s) {
    if (sid || !(req.method === 'POST' && isInitializeRequest(body)))
      return json(res, 404, { jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } });
    s = await newSession();
  }
  s.auth = auth;
  await s.transport.handleRequest(req, res, body);
}

const server = http.createServer(async (req, res) => {
  try {
    const url = new URL(req.url, 'http://localhost');
    if (url.pathname === '/status') return json(res, 200, { calls, refused, seen });
    if (url.pathname === '/accept' && req.method === 'POST') return accepted.add(url.searchParams.get('t')), json(res, 200, {});
    if (url.pathname === '/reject' && req.method === 'POST') return accepted.delete(url.searchParams.get('t')), json(res, 200, {});
    if (url.pathname === '/mcp') return await mcp(req, res);
    json(res, 404, { error: 'not found' });
  } catch (e) {
    if (!res.headersSent) json(res, 500, { error: String(e) });
    else res.end();
  }
});
server.listen(0, '127.0.0.1', () => console.log(`PORT ${server.address().port}`));
