// http_srv_lib.mjs — what the SDK-based downstream MCP servers over streamable HTTP share
// (relay_srv.mjs, rugpull_srv.mjs, listen_srv.mjs, secrets_srv.mjs): per-session transports
// of the official SDK keyed by mcp-session-id, and the plain node:http routing their control
// endpoints sit beside /mcp on, listening on a port the kernel picks and printing the
// "PORT <n>" line the shell tests wait for (gw_wait_port in lib_gw.sh).
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { loadSdk } from './sdk_lib.mjs';

const { StreamableHTTPServerTransport } = await loadSdk('server/streamableHttp.js');
const { isInitializeRequest } = await loadSdk('types.js');

// readBody(req) → the request's body as text.
export const readBody = (req) => new Promise((resolve, reject) => {
  const parts = [];
  req.on('data', (c) => parts.push(c));
  req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
  req.on('error', reject);
});
// readJson(req) → a POST's body parsed (it throws on one that is not JSON), undefined for
// any other method.
export const readJson = async (req) => (req.method === 'POST' ? JSON.parse(await readBody(req)) : undefined);
export const json = (res, status, body) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

// mcpSessions(create) → {sessions, handle}: stateful sessions of the SDK's streamable HTTP
// transport. create(s) returns a new session's McpServer with its tools; s is the session's
// own object ({server, transport} once made), where create may keep more (a tool's handle).
// sessions maps a live session's id to its s (an id is forgotten when its transport closes).
// handle(req, res, body, known) answers one /mcp request whose body (readJson) is read: an
// unknown session id, or no id on anything but an initialize, → 404 "Session not found" (as
// the SDK's own examples, so a client starts over); an initialize with no id → a new
// session. known(s), when given, runs once the session is found, before its transport
// answers (the servers' counters).
export function mcpSessions(create) {
  const sessions = new Map();
  async function open() {
    const s = {};
    s.server = create(s);
    s.transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => sessions.set(id, s),
    });
    s.transport.onclose = () => { if (s.transport.sessionId) sessions.delete(s.transport.sessionId); };
    await s.server.connect(s.transport);
    return s;
  }
  async function handle(req, res, body, known) {
    const sid = req.headers['mcp-session-id'];
    let s = sid ? sessions.get(sid) : undefined;
    if (!s) {
      if (sid || !(req.method === 'POST' && isInitializeRequest(body)))
        return json(res, 404, { jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } });
      s = await open();
    }
    known?.(s);
    await s.transport.handleRequest(req, res, body);
  }
  return { sessions, handle };
}

// serve(routes): an HTTP server on 127.0.0.1, on a port the kernel picks, that prints
// "PORT <n>" once it listens. routes maps "/path" (any method) or "METHOD /path" to
// async (req, res, url) answering it; any other request → 404 {error: "not found"}, and a
// handler that throws → 500 {error} (or its answer ended, when it had begun).
export function serve(routes) {
  const server = http.createServer(async (req, res) => {
    try {
      const url = new URL(req.url, 'http://localhost');
      const route = routes[`${req.method} ${url.pathname}`] ?? routes[url.pathname];
      if (route) return await route(req, res, url);
      json(res, 404, { error: 'not found' });
    } catch (e) {
      if (!res.headersSent) json(res, 500, { error: String(e) });
      else res.end();
    }
  });
  server.listen(0, '127.0.0.1', () => console.log(`PORT ${server.address().port}`));
  return server;
}
