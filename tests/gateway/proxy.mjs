// proxy.mjs — the official MCP SDK client against proxy graphs (tests/gateway/proxy.sh).
// usage: node proxy.mjs MODE URL KEY [ARG]
//   hooks: renamed subset of server-everything; the pre-hook blocks one call and uppercases
//          another's argument; the post-hook rewrites a result
//   all:   `tools: all` lists the downstream catalog (ARG: its tool names, comma-separated)
//   dyn:   a downstream that adds a tool at runtime shows up here without re-upload
// prints "ok - ..." lines and "N passed, N failed".
import { loadSdk, check, finish, until } from './sdk_lib.mjs';

const [mode, url, key, arg] = process.argv.slice(2);
const { Client } = await loadSdk('client/index.js');
const { StreamableHTTPClientTransport } = await loadSdk('client/streamableHttp.js');
const { ToolListChangedNotificationSchema } = await loadSdk('types.js');
const text = (r) => (r.content || []).map((c) => c.text).join('');

async function hooks(client) {
  const { tools } = await client.listTools();
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  check('tools/list: the renamed subset only (say, sum)', tools.map((t) => t.name).sort().join() === 'say,sum',
    tools.map((t) => t.name));
  check('say: the description rewritten, the inputSchema the downstream echo\'s',
    byName.say && byName.say.description === 'says it louder' && byName.say.inputSchema.properties.message, byName.say);
  check('sum: the downstream get-sum\'s description and annotations override',
    byName.sum && /sum/i.test(byName.sum.description) && byName.sum.annotations.readOnlyHint === true, byName.sum);
  const up = await client.callTool({ name: 'say', arguments: { message: 'hello' } });
  check('pre-hook uppercases the argument before the downstream sees it', !up.isError && text(up) === 'Echo: HELLO', up);
  const no = await client.callTool({ name: 'say', arguments: { message: 'block' } });
  check('pre-hook blocks a call: isError with the exit\'s text, the downstream never called',
    no.isError === true && text(no).includes('blocked by policy'), no);
  const sum = await client.callTool({ name: 'sum', arguments: { a: 2, b: 3 } });
  check('post-hook rewrites the result', !sum.isError && text(sum) === 'sum says: The sum of 2 and 3 is 5.', sum);
  const bad = await client.callTool({ name: 'sum', arguments: { a: 'x', b: 3 } });
  check('arguments are checked against the downstream\'s inputSchema', bad.isError === true, bad);
}

async function all(client) {
  const { tools } = await client.listTools();
  const want = arg.split(',').map((n) => `ev_${n}`).sort();
  check(`tools: all lists the downstream catalog under the prefix (${want.length} tools)`,
    JSON.stringify(tools.map((t) => t.name).sort()) === JSON.stringify(want), tools.map((t) => t.name));
  const r = await client.callTool({ name: 'ev_echo', arguments: { message: 'all' } });
  check('a tool of tools: all calls the downstream', text(r) === 'Echo: all', r);
  if (want.includes('ev_get-tiny-image')) {
    // no post hook: the downstream's result passes through unchanged, every block of it
    const img = await client.callTool({ name: 'ev_get-tiny-image', arguments: {} });
    const types = (img.content || []).map((b) => b.type);
    check(`without post hooks the downstream's content passes through unchanged (${types.join(', ')})`,
      !img.isError && types.includes('image') && img.content.find((b) => b.type === 'image').data.length > 100 &&
      img.content.find((b) => b.type === 'image').mimeType === 'image/png', img);
  }
}

async function dyn(client, changes) {
  const names = async () => (await client.listTools()).tools.map((t) => t.name).sort().join();
  check('before: add_tool and alpha', (await names()) === 'dyn_add_tool,dyn_alpha', await names());
  const r = await client.callTool({ name: 'dyn_add_tool', arguments: { name: 'beta' } });
  check('the downstream added beta', text(r) === 'added beta', r);
  await until(() => changes.length > 0, 30000);
  check('notifications/tools/list_changed reached this client (no re-upload)', changes.length > 0, changes);
  check('tools/list now has dyn_beta', (await until(async () => (await names()).includes('dyn_beta'), 10000)) === true,
    await names());
  const b = await client.callTool({ name: 'dyn_beta', arguments: { when: 'now' } });
  check('dyn_beta calls through', text(b) === 'beta ran now', b);
}

try {
  const client = new Client({ name: 'proxy-test', version: '1.0.0' }, { capabilities: {} });
  const changes = [];
  client.setNotificationHandler(ToolListChangedNotificationSchema, (n) => changes.push(n.method));
  await client.connect(new StreamableHTTPClientTransport(new URL(url),
    { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
  if (mode === 'hooks') await hooks(client);
  else if (mode === 'all') await all(client);
  else await dyn(client, changes);
  await client.close();
  finish();
} catch (e) {
  finish(e);
}
