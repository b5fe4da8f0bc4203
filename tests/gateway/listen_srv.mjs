// listen_srv.mjs — a real streamable-HTTP MCP server (the official SDK's McpServer and
// StreamableHTTPServerTransport, stateful sessions) whose tool list grows at runtime, as the
// downstream of tests/gateway/listen.sh. Prints "PORT <n>" once listening (port 0: the
// kernel's pick). Modes (argv[2]):
//   sdk      the SDK answers everything; GET opens the session's listen stream
//   405      as sdk, but GET is answered 405 (a server that offers no stream)
//   garbage  as sdk, but GET streams junk: odd GETs a 2 MiB line with no end, even ones an
//            event whose data is not JSON
//   nolist   a hand-written server (not the SDK, which always declares it) whose initialize
//            declares tools without listChanged: a client has no reason to open a GET
// Control endpoints (plain HTTP, not MCP):
//   POST /add?name=N  registers tool N on every live session (the SDK then sends
//                     notifications/tools/list_changed on each session's GET stream) and for
//                     sessions to come
//   POST /forget      closes every session, as a restart would (their ids become unknown: 404)
//   GET  /status      {sessions, streams (GET streams open now), gets (GETs received)}
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadSdk } from './sdk_lib.mjs';
import { mcpSessions, readBody, readJson, json, serve } from './http_srv_lib.mjs';

const { McpServer } = await loadSdk('server/mcp.js');
const nm = process.env.GG_NPM || path.resolve(import.meta.dirname, '../npm/node_modules');
const { z } = await import(pathToFileURL(path.join(nm, 'zod/index.js')).href);

const mode = process.argv[2] || 'sdk';
const names = ['alpha'];
let streams = 0, gets = 0;

function addTool(server, name) {
  server.registerTool(name, { description: `dynamic ${name} tool`, inputSchema: { when: z.string() } },
    async ({ when }) => ({ content: [{ type: 'text', text: `${name} ran ${when}` }] }));
}

// a session: {server, transport}
const { sessions, handle } = mcpSessions(() => {
  const server = new McpServer({ name: 'listen', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
  for (const n of names) addTool(server, n);
  return server;
});

function garbage(res) {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  if (gets % 2 === 1) res.write('data: ' + 'x'.repeat(2 << 20)); // a line that never ends
  else res.write('data: this is not json\n\n');
}

// nolist: initialize, tools/list and tools/call by hand, as plain JSON responses
async function nolist(req, res) {
  if (req.method === 'GET') return void (gets++, res.writeHead(405).end());
  if (req.method !== 'POST') return void res.writeHead(200).end();
  const m = JSON.parse(await readBody(req));
  const tool = { name: 'alpha', description: 'dynamic alpha tool', inputSchema: { type: 'object', properties: { when: { type: 'string' } } } };
  const result = m.method === 'initialize'
    ? { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'nolist', version: '1' } }
    : m.method === 'tools/list' ? { tools: [tool] }
    : m.method === 'tools/call' ? { content: [{ type: 'text', text: `alpha ran ${m.params.arguments.when}` }] } : undefined;
  if (m.id === undefined) return void res.writeHead(202).end();
  if (m.method === 'initialize') res.setHeader('mcp-session-id', 'nolist-session');
  json(res, 200, result ? { jsonrpc: '2.0', id: m.id, result } : { jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'no' } });
}

async function mcp(req, res) {
  if (mode === 'nolist') return nolist(req, res);
  if (req.method === 'GET') {
    gets++;
    if (mode === '405') return void res.writeHead(405, { allow: 'POST, DELETE' }).end();
    if (mode === 'garbage') return garbage(res);
  }
  await handle(req, res, await readJson(req), () => {
    if (req.method === 'GET') {
      streams++;
      res.on('close', () => streams--);
    }
  });
}

serve({
  '/status': (req, res) => json(res, 200, { sessions: sessions.size, streams, gets }),
  'POST /add': (req, res, url) => {
    const name = url.searchParams.get('name');
    if (!names.includes(name)) {
      names.push(name);
      for (const s of sessions.values()) addTool(s.server, name); // the SDK sends list_changed
    }
    json(res, 200, { sessions: sessions.size, streams });
  },
  'POST /forget': async (req, res) => {
    const all = [...sessions.values()];
    sessions.clear();
    for (const s of all) await s.transport.close();
    json(res, 200, { closed: all.length });
  },
  '/mcp': mcp,
});
