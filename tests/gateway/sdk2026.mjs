// sdk2026.mjs — the official TypeScript SDK v2 client (@modelcontextprotocol/client) driving a
// graphgate endpoint in the stateless 2026-07-28 era: version negotiation through
// server/discover, lists, calls, a resource read and a prompt, all with per-request _meta.
// usage: node sdk2026.mjs URL KEY   (KEY may be "" for the internal listener)
// Prints one "ok - ..." / "not ok - ..." line per check and a final "N passed, N failed".
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [url, key] = process.argv.slice(2);
const root = process.env.GG_NPM || path.resolve(import.meta.dirname, '../npm/node_modules');
const { Client, StreamableHTTPClientTransport } =
  await import(pathToFileURL(path.join(root, '@modelcontextprotocol/client/dist/index.mjs')).href);

let passed = 0, failed = 0;
const check = (desc, cond, detail) => {
  if (cond) { passed++; console.log(`ok - ${desc}`); }
  else { failed++; console.log(`not ok - ${desc}${detail !== undefined ? ': ' + JSON.stringify(detail) : ''}`); }
};
const headers = key ? { Authorization: `Bearer ${key}` } : {};

try {
  const client = new Client({ name: 'graphgate-sdk2026', version: '1.0.0' },
    { capabilities: {}, versionNegotiation: { mode: 'auto' } });
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  await client.connect(transport);
  check('discover: negotiated 2026-07-28', client.getNegotiatedProtocolVersion() === '2026-07-28',
    client.getNegotiatedProtocolVersion());
  const info = client.getServerVersion();
  check('discover: serverInfo from the graph', info && info.name === 'graphgate-conformance', info);
  const caps = client.getServerCapabilities();
  check('discover: tools, resources and prompts capabilities', caps && caps.tools && caps.resources && caps.prompts, caps);
  check('no session id', !transport.sessionId, transport.sessionId);

  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  check('tools/list', names.includes('echo') && names.includes('test_header_param'), names);

  const r1 = await client.callTool({ name: 'echo', arguments: { message: 'hi 2026' } });
  check('tools/call structuredContent', r1.structuredContent && r1.structuredContent.echo === 'hi 2026', r1);

  // x-mcp-header: the SDK mirrors region into Mcp-Param-Region, the gateway checks it
  const r2 = await client.callTool({ name: 'test_header_param', arguments: { region: 'Zürich west' } });
  check('tools/call with an x-mcp-header argument (base64 header)', r2.content?.[0]?.text === 'region Zürich west', r2);

  const { resources } = await client.listResources();
  check('resources/list', resources.some((r) => r.uri === 'test://static-text'), resources);
  const rr = await client.readResource({ uri: 'test://static-text' });
  check('resources/read', typeof rr.contents?.[0]?.text === 'string', rr);

  await client.close();

  // an elicit node answered through an input-required round: the SDK's handler answers,
  // the SDK repeats the call with inputResponses and the sealed requestState
  const asker = new Client({ name: 'graphgate-sdk2026', version: '1.0.0' },
    { capabilities: { elicitation: {} }, versionNegotiation: { mode: 'auto' } });
  let asked = null;
  asker.setRequestHandler('elicitation/create', async (req) => {
    asked = req.params;
    return { action: 'accept', content: /color/.test(req.params.message) ? { color: 'teal' } : { name: 'Ada' } };
  });
  await asker.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  const r3 = await asker.callTool({ name: 'test_input_required_result_elicitation', arguments: {} });
  check('elicit node: the handler was asked the node\'s message', asked && asked.message === 'What is your name?', asked);
  check('elicit node: the run went on with the answer', r3.content?.[0]?.text === 'Hello, Ada!', r3);
  const r4 = await asker.callTool({ name: 'test_input_required_result_multi_round', arguments: {} });
  check('two elicit nodes: two rounds, one result', r4.content?.[0]?.text === 'Ada likes teal', r4);
  await asker.close();

  // the same roots node in both eras: as an input-required round here, as a roots/list
  // request on the call's stream in a 2025-11-25 session (the SDK v2 client without version
  // negotiation initializes)
  for (const modern of [true, false]) {
    const rooted = new Client({ name: 'graphgate-sdk2026', version: '1.0.0' },
      { capabilities: { roots: {} }, ...(modern ? { versionNegotiation: { mode: 'auto' } } : {}) });
    rooted.setRequestHandler('roots/list', async () => ({ roots: [{ uri: 'file:///srv/app', name: 'app' }] }));
    const tr = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
    await rooted.connect(tr);
    const era = modern ? '2026-07-28' : `session ${rooted.getNegotiatedProtocolVersion?.() ?? ''}`;
    const r5 = await rooted.callTool({ name: 'test_input_required_result_list_roots', arguments: {} });
    check(`roots node (${era}): the run got the client's roots`, r5.content?.[0]?.text === 'Roots: file:///srv/app', r5);
    if (!modern) check('roots node: the 2025 client has a session', typeof tr.sessionId === 'string', tr.sessionId);
    await rooted.close();
  }

  const again = new Client({ name: 'graphgate-sdk2026', version: '1.0.0' },
    { capabilities: {}, versionNegotiation: { mode: 'auto' } });
  await again.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  const client2 = again;
  const { prompts } = await client2.listPrompts();
  check('prompts/list', prompts.some((p) => p.name === 'test_simple_prompt'), prompts);
  const gp = await client2.getPrompt({ name: 'test_simple_prompt' });
  check('prompts/get', Array.isArray(gp.messages) && gp.messages.length > 0, gp);
  await client2.close();
} catch (e) {
  check('no exception', false, String(e && e.stack || e));
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
