// relay_lib.mjs — what the relay tests' scripts share. Their downstream SDK servers
// (relay_srv.mjs over streamable HTTP, relay_stdio_srv.mjs over stdio): the official SDK's
// McpServer with the tools and logging capabilities, zod for their input schemas, a tool's
// result as JSON text, and what their tools send their client during a call (a form
// elicitation, log messages, "step N" progress). Their clients (sdk_relay*.mjs,
// relay_forward.mjs): the SDK v1 client connected with a key, a tool result's JSON, and
// 2026-07-28 requests made by hand (the rounds seen as they are).
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadSdk } from './sdk_lib.mjs';

const { McpServer } = await loadSdk('server/mcp.js');
const { ElicitResultSchema } = await loadSdk('types.js');
const nm = process.env.GG_NPM || path.resolve(import.meta.dirname, '../npm/node_modules');
export const { z } = await import(pathToFileURL(path.join(nm, 'zod/index.js')).href);

// A server that registers tools and sends log messages (its client sets their level).
export const relayServer = (name) => new McpServer({ name, version: '1.0.0' }, { capabilities: { tools: {}, logging: {} } });
export const text = (v) => ({ content: [{ type: 'text', text: JSON.stringify(v) }] });
export const pause = (ms) => new Promise((r) => setTimeout(r, ms));

// elicit(extra, message, options): a form elicitation (one string, answer) sent to the call's
// client; its result, or the error it was refused with.
export const elicit = (extra, message, options) => extra.sendRequest({ method: 'elicitation/create', params: { mode: 'form',
  message, requestedSchema: { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] } } },
ElicitResultSchema, options);
// log(extra, level, logger, data): a log message on the call's own stream.
export const log = (extra, level, logger, data) => extra.sendNotification({ method: 'notifications/message',
  params: { level, logger, data } });
// steps(extra, n, wait): progress "step i" of n, i = 1..n, when the call asked for progress,
// each followed by await wait(i) (the pacing the test needs); true when it asked.
export async function steps(extra, n, wait) {
  const token = extra._meta?.progressToken;
  for (let i = 1; i <= n; i++) {
    if (token !== undefined)
      await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: i,
        total: n, message: `step ${i}` } });
    await wait(i);
  }
  return token !== undefined;
}

// ---- the clients

// A tool result's text as JSON (the text itself when it is not JSON).
export const body = (r) => { try { return JSON.parse(r.content[0].text); } catch { return r.content?.[0]?.text; } };

// connect(url, key, caps, name): the official SDK client (v1: a 2025-11-25 session) named
// name, declaring caps, its requests carrying key → {client, transport, close (the session
// ended, then the client closed)}.
export async function connect(url, key, caps, name) {
  const { Client } = await loadSdk('client/index.js');
  const { StreamableHTTPClientTransport } = await loadSdk('client/streamableHttp.js');
  const client = new Client({ name, version: '1.0.0' }, { capabilities: caps });
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${key}` } } });
  await client.connect(transport);
  return { client, transport, close: async () => { await transport.terminateSession(); await client.close(); } };
}

// What a 2026-07-28 caller declares it can answer: every kind of question relay_srv asks.
export const CAPS = { elicitation: { form: {}, url: {} }, sampling: {}, roots: {} };
let nextId = 0;
// post2026(url, key, method, name, params, {caps, meta, headers, signal}): one stateless
// 2026-07-28 request by hand (Mcp-Name: name; caps: the client's capabilities, CAPS unless
// given; meta: more _meta, e.g. a progressToken; headers: more headers; no key: none sent) →
// {status, msg (the JSON-RPC response: the JSON answer, or an event stream's last message
// with an id; {unparsed} when it is not JSON), msgs (every message), text, ms, type}.
export async function post2026(url, key, method, name, params, { caps = CAPS, meta = {}, headers = {}, signal } = {}) {
  const p = { ...params, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': caps, ...meta } };
  const t0 = Date.now();
  const res = await fetch(url, { method: 'POST', signal, body: JSON.stringify({ jsonrpc: '2.0', id: ++nextId, method, params: p }),
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream',
      ...(key ? { authorization: `Bearer ${key}` } : {}), 'mcp-protocol-version': '2026-07-28', 'mcp-method': method,
      'mcp-name': name, ...headers } });
  const text = await res.text();
  const type = res.headers.get('content-type');
  let msg, msgs = [];
  try {
    msgs = !(type || '').includes('text/event-stream') ? [JSON.parse(text)]
      : text.split('\n').filter((l) => l.startsWith('data:')).map((l) => JSON.parse(l.slice(5)));
    msg = msgs.filter((m) => m.id !== undefined).pop();
  } catch { msg = { unparsed: text }; }
  return { status: res.status, msg, msgs, text, ms: Date.now() - t0, type };
}
// only(result): [key, request] of an input-required result's one question ([null, null]
// unless it asks exactly one).
export const only = (r) => { const ks = Object.keys(r?.inputRequests ?? {}); return ks.length === 1 ? [ks[0], r.inputRequests[ks[0]]] : [null, null]; };
