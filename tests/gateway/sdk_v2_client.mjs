// sdk_v2_client.mjs — the official TypeScript SDK v2 client (@modelcontextprotocol/client,
// 2025 era: the plain initialize handshake, its default) against a graphgate endpoint with
// an API key: resources, templates, prompts, a tool call, and an elicit and a sample node
// answered by the client's own handlers; then the admin executions API shows those runs.
// usage: node sdk_v2_client.mjs MCP_URL KEY EXECUTIONS_URL ADMIN_KEY
// Prints one "ok - ..." / "not ok - ..." line per check and a final "N passed, N failed".
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { check, until, finish } from './sdk_lib.mjs';

const [url, key, execUrl, adminKey] = process.argv.slice(2);
const pkg = path.join(process.env.GG_NPM || path.resolve(import.meta.dirname, '../npm/node_modules'),
  '@modelcontextprotocol/client/dist/index.mjs');
const { Client, StreamableHTTPClientTransport } = await import(pathToFileURL(pkg).href);

const runs = async (tool) => {
  const r = await fetch(`${execUrl}&tool=${tool}&limit=10`, { headers: { Authorization: `Bearer ${adminKey}` } });
  return r.ok ? (await r.json()).executions : [];
};

try {
  const client = new Client({ name: 'graphgate-sdk-v2', version: '2.0.0' },
    { capabilities: { elicitation: {}, sampling: {}, roots: {} } });
  const asked = { elicit: [], sample: [], roots: 0 };
  client.setRequestHandler('roots/list', async () => {
    asked.roots++;
    return { roots: [{ uri: 'file:///v2/root', name: 'v2 root' }] };
  });
  client.setRequestHandler('elicitation/create', async (req) => {
    asked.elicit.push(req.params);
    return req.params.message === 'What is your name?' ? { action: 'accept', content: { name: 'v2user' } }
      : { action: 'accept', content: { username: 'v2user', email: 'v2@example.com' } };
  });
  client.setRequestHandler('sampling/createMessage', async (req) => {
    asked.sample.push(req.params);
    return { role: 'assistant', content: { type: 'text', text: `v2: ${req.params.messages[0].content.text}` },
      model: 'test-model', stopReason: 'endTurn' };
  });
  const transport = new StreamableHTTPClientTransport(new URL(url),
    { requestInit: { headers: { Authorization: `Bearer ${key}` } } });
  await client.connect(transport);
  check('v2 connect: 2025 era, serverInfo from the graph', client.getServerVersion()?.name === 'graphgate-conformance',
    client.getServerVersion());
  check('v2: session id issued', typeof transport.sessionId === 'string' && transport.sessionId.length > 20);

  const { resources } = await client.listResources();
  check('v2 resources/list', resources.map((r) => r.uri).sort().join() ===
    'test://static-binary,test://static-text,test://watched-resource', resources);
  const txt = await client.readResource({ uri: 'test://static-text' });
  check('v2 resources/read text', txt.contents[0].text === 'This is the content of the static text resource.', txt);
  const bin = await client.readResource({ uri: 'test://static-binary' });
  check('v2 resources/read blob', Buffer.from(bin.contents[0].blob, 'base64').subarray(1, 4).toString() === 'PNG', bin);
  const { resourceTemplates } = await client.listResourceTemplates();
  check('v2 resources/templates/list', resourceTemplates[0]?.uriTemplate === 'test://template/{id}/data', resourceTemplates);
  const tpl = await client.readResource({ uri: 'test://template/9/data' });
  check('v2 resources/read through a template', JSON.parse(tpl.contents[0].text).data === 'Data for ID: 9', tpl);

  const { prompts } = await client.listPrompts();
  check('v2 prompts/list', prompts.some((p) => p.name === 'test_prompt_with_arguments'), prompts);
  const pr = await client.getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'x', arg2: 'y' } });
  check('v2 prompts/get with arguments', pr.messages[0].content.text === "Prompt with arguments: arg1='x', arg2='y'", pr);

  const echo = await client.callTool({ name: 'echo', arguments: { message: 'from v2' } });
  check('v2 tools/call', echo.structuredContent?.echo === 'from v2', echo);

  const el = await client.callTool({ name: 'test_elicitation', arguments: { message: 'Who are you?' } });
  check('v2 elicit node: the handler got the message and schema', asked.elicit[0]?.message === 'Who are you?' &&
    asked.elicit[0]?.requestedSchema?.required?.join() === 'username,email', asked.elicit);
  check('v2 elicit node: the answer flows into the graph',
    el.content[0].text === 'User response: action=accept, content={"username":"v2user","email":"v2@example.com"}', el);
  const sm = await client.callTool({ name: 'test_sampling', arguments: { prompt: 'ping v2' } });
  check('v2 sample node: the handler got the messages', asked.sample[0]?.messages?.[0]?.content?.text === 'ping v2', asked.sample);
  check('v2 sample node: the model\'s answer flows into the graph', sm.content[0].text === 'LLM response: v2: ping v2', sm);

  // an ask node in a session: its three requests go out one after another on the call's stream
  const mi = await client.callTool({ name: 'test_input_required_result_multiple_inputs', arguments: {} });
  check('v2 ask node: elicit, sample and roots each answered, the answers flow into the graph',
    mi.content[0].text === 'v2: Generate a greeting v2user (roots: file:///v2/root)' && asked.roots === 1, mi);

  // the graph sees what the session's client declared at initialize ($client.capabilities)
  const cc = await client.callTool({ name: 'test_input_required_result_capabilities', arguments: {} });
  check('v2 session: a switch on $client.capabilities takes the route the client can answer',
    cc.content[0].text === 'v2: Generate a greeting v2user', cc);

  // the runs are recorded (the history writer commits in batches: bounded poll)
  const el_runs = await until(async () => {
    const l = await runs('test_elicitation');
    return l.some((e) => e.status === 'succeeded') ? l : null;
  });
  check('v2 elicit run recorded (admin executions API)', !!el_runs, el_runs);
  const sm_runs = await until(async () => {
    const l = await runs('test_sampling');
    return l.some((e) => e.status === 'succeeded') ? l : null;
  });
  check('v2 sample run recorded (admin executions API)', !!sm_runs, sm_runs);

  await transport.terminateSession();
  await client.close();
} catch (e) {
  finish(e);
}
finish();
