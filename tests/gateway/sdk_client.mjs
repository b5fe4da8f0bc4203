// sdk_client.mjs — the official TypeScript MCP SDK client against a graphgate endpoint.
// usage: node sdk_client.mjs URL KEY   (KEY may be "" for the internal listener)
// Prints one "ok - ..." / "not ok - ..." line per check and a final "N passed, N failed".
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [url, key] = process.argv.slice(2);
const sdk = path.join(process.env.GG_NPM || path.resolve(import.meta.dirname, '../npm/node_modules'),
  '@modelcontextprotocol/sdk/dist/esm');
const load = (p) => import(pathToFileURL(path.join(sdk, p)).href);
const { Client } = await load('client/index.js');
const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');
const { CallToolResultSchema, LoggingMessageNotificationSchema, ElicitRequestSchema, CreateMessageRequestSchema } =
  await load('types.js');

let passed = 0, failed = 0;
const check = (desc, cond, detail) => {
  if (cond) { passed++; console.log(`ok - ${desc}`); }
  else { failed++; console.log(`not ok - ${desc}${detail !== undefined ? ': ' + JSON.stringify(detail) : ''}`); }
};
const headers = key ? { Authorization: `Bearer ${key}` } : {};

async function connect() {
  const client = new Client({ name: 'graphgate-sdk-test', version: '1.0.0' }, { capabilities: {} });
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  await client.connect(transport);
  return { client, transport };
}

try {
  const { client, transport } = await connect();
  const info = client.getServerVersion();
  check('initialize: serverInfo from the graph', info && info.name === 'graphgate-conformance', info);
  check('initialize: instructions', typeof client.getInstructions() === 'string');
  const caps = client.getServerCapabilities();
  check('initialize: tools/logging/completions capabilities', caps && caps.tools && caps.logging && caps.completions, caps);
  check('session id issued', typeof transport.sessionId === 'string' && transport.sessionId.length > 20);

  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  check('tools/list', names.includes('echo') && names.includes('test_simple_text'), names);

  const r1 = await client.callTool({ name: 'echo', arguments: { message: 'hi there' } });
  check('tools/call structuredContent', r1.structuredContent && r1.structuredContent.echo === 'hi there', r1);
  check('tools/call text block mirrors the JSON', r1.content[0].type === 'text' && JSON.parse(r1.content[0].text).echo === 'hi there', r1);

  const bad = await client.callTool({ name: 'echo', arguments: { message: 42 } });
  check('schema-violating arguments → isError naming the path', bad.isError === true && /\/message/.test(bad.content[0].text), bad);

  const err = await client.callTool({ name: 'test_error_handling', arguments: {} });
  check('execution error → isError with the message', err.isError === true && /intentionally/.test(err.content[0].text), err);

  let unknown;
  try { await client.callTool({ name: 'no_such_tool', arguments: {} }); } catch (e) { unknown = e; }
  check('unknown tool → JSON-RPC error -32602', unknown && unknown.code === -32602, unknown && unknown.message);

  const progress = [];
  const rp = await client.request(
    { method: 'tools/call', params: { name: 'test_tool_with_progress', arguments: {}, _meta: { progressToken: 'tok-1' } } },
    CallToolResultSchema, { onprogress: (p) => progress.push(p.progress) });
  check('tools/call with progress: notifications', progress.length >= 3, progress);
  check('progress increases', progress.every((v, i) => i === 0 || v > progress[i - 1]), progress);
  check('tools/call with progress: result', rp.structuredContent && rp.structuredContent.progress === 100, rp);

  const logs = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push(n.params));
  await client.setLoggingLevel('debug');
  await client.callTool({ name: 'test_tool_with_logging', arguments: {} });
  check('logging/setLevel debug → a message per node', logs.length >= 4 && logs.every((l) => l.level === 'debug' && l.data.node), logs);
  logs.length = 0;
  await client.setLoggingLevel('error');
  await client.callTool({ name: 'test_tool_with_logging', arguments: {} });
  check('logging/setLevel error → no debug messages', logs.length === 0, logs);

  const pong = await client.ping();
  check('ping', pong && Object.keys(pong).length === 0, pong);

  const comp = await client.complete({ ref: { type: 'ref/prompt', name: 'x' }, argument: { name: 'a', value: 'b' } });
  check('completion/complete', Array.isArray(comp.completion.values), comp);

  // resources, templates and prompts declared by the graph
  check('initialize: resources (subscribe) and prompts capabilities', caps.resources && caps.resources.subscribe && caps.prompts, caps);
  const { resources } = await client.listResources();
  check('resources/list', resources.map((r) => r.uri).sort().join() ===
    'test://static-binary,test://static-text,test://watched-resource', resources);
  const { resourceTemplates } = await client.listResourceTemplates();
  check('resources/templates/list', resourceTemplates.length === 1 && resourceTemplates[0].uriTemplate === 'test://template/{id}/data',
    resourceTemplates);
  const txt = await client.readResource({ uri: 'test://static-text' });
  check('resources/read text', txt.contents[0].text === 'This is the content of the static text resource.' &&
    txt.contents[0].mimeType === 'text/plain', txt);
  const bin = await client.readResource({ uri: 'test://static-binary' });
  check('resources/read blob', Buffer.from(bin.contents[0].blob, 'base64').subarray(1, 4).toString() === 'PNG', bin);
  const tpl = await client.readResource({ uri: 'test://template/42/data' });
  check('resources/read through a template (nodes)', JSON.parse(tpl.contents[0].text).data === 'Data for ID: 42', tpl);
  let nf;
  try { await client.readResource({ uri: 'test://nope' }); } catch (e) { nf = e; }
  check('resources/read unknown → -32002', nf && nf.code === -32002, String(nf));
  await client.subscribeResource({ uri: 'test://watched-resource' });
  await client.unsubscribeResource({ uri: 'test://watched-resource' });
  check('resources/subscribe + unsubscribe', true);
  const { prompts } = await client.listPrompts();
  check('prompts/list', prompts.length === 5 && prompts.find((p) => p.name === 'test_prompt_with_arguments').arguments.length === 2,
    prompts);
  const pr = await client.getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'A', arg2: 'B' } });
  check('prompts/get with arguments (nodes)', pr.messages[0].content.text === "Prompt with arguments: arg1='A', arg2='B'", pr);
  let miss;
  try { await client.getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'A' } }); } catch (e) { miss = e; }
  check('prompts/get missing required argument → -32602', miss && miss.code === -32602, String(miss));
  const pc = await client.complete({ ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' },
    argument: { name: 'arg1', value: 'te' } });
  check('completion/complete of a prompt argument', pc.completion.values.join() === 'test,testValue1', pc);
  const mixed = await client.callTool({ name: 'test_multiple_content_types', arguments: {} });
  check('tools/call rich content (text, image, resource)', mixed.content.map((c) => c.type).join() === 'text,image,resource', mixed);

  // elicit and sample nodes: this client declares neither capability nor handler → a clear error
  const noCap = await client.callTool({ name: 'test_elicitation', arguments: { message: 'Name?' } });
  check('elicit node, client without elicitation → isError: it did not declare the capability',
    noCap.isError === true && /did not declare the elicitation capability/.test(noCap.content[0].text), noCap);
  const asker = new Client({ name: 'graphgate-sdk-asker', version: '1.0.0' }, { capabilities: { elicitation: {}, sampling: {} } });
  const asked = [];
  asker.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push(req.params);
    return req.params.message === 'decline me' ? { action: 'decline' }
      : { action: 'accept', content: { username: 'octocat', email: 'o@example.com' } };
  });
  asker.setRequestHandler(CreateMessageRequestSchema, async (req) => {
    asked.push(req.params);
    return { role: 'assistant', content: { type: 'text', text: `echo: ${req.params.messages[0].content.text}` }, model: 'm', stopReason: 'endTurn' };
  });
  const t2 = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  await asker.connect(t2);
  const el = await asker.callTool({ name: 'test_elicitation', arguments: { message: 'Name?' } });
  check('elicit node: the client\'s handler got message and requestedSchema',
    asked[0] && asked[0].message === 'Name?' && asked[0].requestedSchema.required.join() === 'username,email', asked[0]);
  check('elicit node: the answer flows into the graph',
    el.content[0].text === 'User response: action=accept, content={"username":"octocat","email":"o@example.com"}', el);
  const dec = await asker.callTool({ name: 'test_elicitation', arguments: { message: 'decline me' } });
  check('elicit node: decline is an answer too', /action=decline/.test(dec.content[0].text), dec);
  const sm = await asker.callTool({ name: 'test_sampling', arguments: { prompt: 'hello' } });
  check('sample node: the model\'s answer flows into the graph', sm.content[0].text === 'LLM response: echo: hello', sm);
  await t2.terminateSession();
  await asker.close();

  const sid = transport.sessionId;
  await transport.terminateSession();
  check('DELETE ends the session', transport.sessionId === undefined);
  const reuse = await fetch(url, {
    method: 'POST',
    headers: { ...headers, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
      'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-11-25' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
  });
  check('reusing a deleted session → 404', reuse.status === 404, reuse.status);
  await client.close();
} catch (e) {
  check('no exception', false, String(e && e.stack || e));
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
