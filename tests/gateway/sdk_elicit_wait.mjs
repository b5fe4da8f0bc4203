// sdk_elicit_wait.mjs — elicit nodes waiting on a client that takes its time, against a
// gateway with ONE worker: while three calls wait for the client's user, a fourth tool call
// (pure computation) still gets the worker; a client that never answers fails the node at
// its timeout; notifications/cancelled ends a waiting run at once.
// usage: node sdk_elicit_wait.mjs MCP_URL KEY METRICS_URL
import { loadSdk as load, check, sleep, until, finish } from './sdk_lib.mjs';

const [url, key, metricsUrl] = process.argv.slice(2);
const inFlight = async () => Number(/^graphgate_tool_calls_waiting_capable (\d+)$/m.exec(await (await fetch(metricsUrl)).text())?.[1] ?? -1);
const { Client } = await load('client/index.js');
const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');
const { ElicitRequestSchema } = await load('types.js');

try {
  const client = new Client({ name: 'waiter', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  const pending = [];
  client.setRequestHandler(ElicitRequestSchema, (req) => new Promise((resolve) => {
    if (req.params.message !== 'never') pending.push(resolve); // "never" is left unanswered
  }));
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${key}` } } });
  await client.connect(transport);
  const waiting = [1, 2, 3].map((i) => client.callTool({ name: 'ask', arguments: { message: `q${i}` } }));
  const end = Date.now() + 10000;
  while (pending.length < 3 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  check('three elicit nodes wait on the client', pending.length === 3, pending.length);
  const t0 = Date.now();
  const quick = await client.callTool({ name: 'quick', arguments: {} });
  check(`a fourth call gets the only worker meanwhile (${Date.now() - t0} ms)`, quick.content[0].text === 'done', quick);
  pending.forEach((resolve, i) => resolve({ action: 'accept', content: { answer: `a${i}` } }));
  const answers = (await Promise.all(waiting)).map((r) => r.content[0].text).sort();
  check('each waiting run resumed with its own answer', answers.join() === 'accept:a0,accept:a1,accept:a2', answers);
  const t1 = Date.now();
  const late = await client.callTool({ name: 'ask', arguments: { message: 'never' } });
  check(`an unanswered elicit fails at its timeout (${Date.now() - t1} ms)`,
    late.isError === true && /did not answer in time/.test(late.content[0].text) && Date.now() - t1 < 5000, late);
  const ac = new AbortController();
  const t2 = Date.now();
  const cancelled = client.callTool({ name: 'ask', arguments: { message: 'never' } }, undefined, { signal: ac.signal })
    .then(() => 'answered', (e) => `rejected: ${e.message}`);
  setTimeout(() => ac.abort('test'), 300);
  const how = await cancelled;
  let n = await inFlight();
  while (n !== 0 && Date.now() - t2 < 5000) { await new Promise((r) => setTimeout(r, 20)); n = await inFlight(); }
  check(`notifications/cancelled ends the waiting run on the server (${Date.now() - t2} ms; node timeout 1500 ms)`,
    how.startsWith('rejected') && n === 0 && Date.now() - t2 < 1200, { how, n });
  await transport.terminateSession();
  await client.close();
} catch (e) {
  finish(e);
}
finish();
