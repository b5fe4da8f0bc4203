#!/usr/bin/env node
// A small streamable-HTTP MCP server (no dependencies) for the HTTP client's edge cases:
// plain application/json responses, a session that expires (404 → the client must
// initialize again), and checks that the client sends MCP-Protocol-Version, the session id
// and the configured headers. usage: PORT=n node fake_http_server.mjs
import http from 'node:http';
import process from 'node:process';

const sessions = new Set();
let next = 1;
let inits = 0;

function reply(res, status, body, headers = {}) {
  res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
  res.end(body === undefined ? '' : JSON.stringify(body));
}

const server = http.createServer((req, res) => {
  if (req.url !== '/mcp') return reply(res, 404, { error: 'not found' });
  if (req.method === 'DELETE') {
    sessions.delete(req.headers['mcp-session-id']);
    return reply(res, 200);
  }
  if (req.method !== 'POST') return reply(res, 405);
  const accept = req.headers.accept || '';
  if (!accept.includes('application/json') || !accept.includes('text/event-stream')) {
    return reply(res, 406, { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'bad Accept' } });
  }
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    const msg = JSON.parse(body);
    if (msg.method === 'initialize') {
      inits++;
      const sid = `session-${next++}`;
      sessions.add(sid);
      return reply(res, 200, {
        jsonrpc: '2.0',
        id: msg.id,
        result: { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'fakehttp', version: '1' } },
      }, { 'Mcp-Session-Id': sid });
    }
    const sid = req.headers['mcp-session-id'];
    if (!sid || !sessions.has(sid)) {
      return reply(res, 404, { jsonrpc: '2.0', id: msg.id ?? null, error: { code: -32001, message: 'Session not found' } });
    }
    if (msg.id === undefined) return reply(res, 202);
    if (msg.method !== 'tools/call') {
      return reply(res, 200, { jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'Method not found' } });
    }
    const name = msg.params?.name;
    if (name === 'forget') sessions.clear(); // the next request will get 404
    const out = {
      tool: name,
      session: sid,
      inits,
      protocol: req.headers['mcp-protocol-version'] ?? null,
      custom: req.headers['x-graphgate-test'] ?? null,
      args: msg.params?.arguments ?? {},
    };
    return reply(res, 200, {
      jsonrpc: '2.0',
      id: msg.id,
      result: { content: [{ type: 'text', text: JSON.stringify(out) }], structuredContent: out },
    });
  });
});
// PORT unset or 0: the kernel picks a free port, printed for the test to read
server.listen(Number(process.env.PORT || 0), '127.0.0.1', () => console.error(`fake http server listening on ${server.address().port}`));
