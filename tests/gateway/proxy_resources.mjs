// proxy_resources.mjs — the official MCP SDK client against proxy graphs that re-export a
// downstream's resources, templates, prompts and completions (tests/gateway/proxy_resources.sh).
// usage: node proxy_resources.mjs MODE URL KEY
//   ev:      server-everything (stdio) with `resources: all, uri_prefix: "ev+", prompts: all,
//            prefix: "ev_"`: lists (every page), reads, a prompt with arguments, completions
//   sel:     a chosen and renamed subset, URIs unchanged: only it is listed and reachable, after
//            the graph's own resources and prompts (an own prompt shadows a proxied one)
//   none:    a proxy entry with tools only: no resources, prompts or completions at all
//   hostile: a downstream answering malformed and oversized results: clear errors, no crash;
//            its well-formed prompt pages pass through with their cursor
// prints "ok - ..." lines and "N passed, N failed".
import { loadSdk, check, finish } from './sdk_lib.mjs';

const [mode, url, key] = process.argv.slice(2);
const { Client } = await loadSdk('client/index.js');
const { StreamableHTTPClientTransport } = await loadSdk('client/streamableHttp.js');
const { ResultSchema } = await loadSdk('types.js');

// Every page of a list method: [items, pages].
async function all(fn, field) {
  let cursor, pages = 0;
  const items = [];
  do {
    const r = await fn(cursor ? { cursor } : {});
    items.push(...r[field]);
    cursor = r.nextCursor;
    pages++;
  } while (cursor && pages < 50);
  return [items, pages];
}
// The JSON-RPC error a request ends with (or null).
async function failure(p) {
  try { await p; return null; } catch (e) { return e; }
}

async function ev(client) {
  const caps = client.getServerCapabilities();
  check('initialize advertises resources, prompts and completions', !!(caps.resources && caps.prompts && caps.completions), caps);
  check('... and no subscriptions (not relayed)', caps.resources && !caps.resources.subscribe, caps.resources);
  const [res, pages] = await all((p) => client.listResources(p), 'resources');
  check(`resources/list: the downstream's resources, every one under ev+ (${res.length} over ${pages} page(s))`,
    res.length >= 5 && res.every((r) => r.uri.startsWith('ev+demo://')), res.map((r) => r.uri));
  const doc = res.find((r) => r.uri === 'ev+demo://resource/static/document/architecture.md');
  check('... architecture.md among them, its name and mimeType as the downstream lists them',
    doc && doc.name && doc.mimeType, doc);
  const { resourceTemplates: tpl } = await client.listResourceTemplates();
  check('resources/templates/list: the templates under ev+',
    tpl.map((t) => t.uriTemplate).includes('ev+demo://resource/dynamic/text/{resourceId}'), tpl);
  const rd = await client.readResource({ uri: 'ev+demo://resource/static/document/architecture.md' });
  check('resources/read of a static resource: its text, its uri under ev+',
    rd.contents.length === 1 && rd.contents[0].uri === 'ev+demo://resource/static/document/architecture.md' &&
    rd.contents[0].text.length > 100, rd.contents.map((c) => c.uri));
  const t = await client.readResource({ uri: 'ev+demo://resource/dynamic/text/7' });
  check('resources/read through a template', t.contents[0].uri === 'ev+demo://resource/dynamic/text/7' &&
    /7/.test(t.contents[0].text), t);
  const b = await client.readResource({ uri: 'ev+demo://resource/dynamic/blob/3' });
  check('resources/read of a blob', typeof b.contents[0].blob === 'string' && b.contents[0].blob.length > 0, b);
  let e = await failure(client.readResource({ uri: 'demo://resource/static/document/architecture.md' }));
  check('a URI without the prefix is not served (-32002)', e && e.code === -32002, String(e));
  e = await failure(client.readResource({ uri: 'ev+demo://resource/static/document/nope.md' }));
  check('a URI the downstream does not have: resource not found (-32002)', e && e.code === -32002, String(e));
  const [pr] = await all((p) => client.listPrompts(p), 'prompts');
  const names = pr.map((p) => p.name).sort();
  check('prompts/list: the downstream\'s prompts under ev_', names.includes('ev_args-prompt') &&
    names.includes('ev_simple-prompt') && names.every((n) => n.startsWith('ev_')), names);
  const g = await client.getPrompt({ name: 'ev_args-prompt', arguments: { city: 'Paris', state: 'Texas' } });
  check('prompts/get with arguments reaches the downstream',
    g.messages[0].role === 'user' && g.messages[0].content.text.includes('Paris, Texas'), g);
  e = await failure(client.getPrompt({ name: 'args-prompt', arguments: { city: 'x' } }));
  check('the downstream\'s own name (no prefix) is unknown here (-32602)', e && e.code === -32602, String(e));
  const c = await client.complete({ ref: { type: 'ref/prompt', name: 'ev_completable-prompt' },
    argument: { name: 'department', value: 'Eng' } });
  check('completion/complete of a proxied prompt argument', JSON.stringify(c.completion.values) === '["Engineering"]', c);
  const c2 = await client.complete({ ref: { type: 'ref/prompt', name: 'ev_completable-prompt' },
    argument: { name: 'name', value: '' }, context: { arguments: { department: 'Sales' } } });
  check('... with context (the downstream narrows by the other argument)',
    JSON.stringify(c2.completion.values) === '["David","Eve","Frank"]', c2);
  const c3 = await client.complete({ ref: { type: 'ref/resource', uri: 'ev+demo://resource/dynamic/text/{resourceId}' },
    argument: { name: 'resourceId', value: '4' } });
  check('completion/complete of a proxied template variable', JSON.stringify(c3.completion.values) === '["4"]', c3);
}

async function sel(client) {
  const { resources } = await client.listResources();
  check('resources/list: the graph\'s own resource first, then only the one selected, URI unchanged',
    JSON.stringify(resources.map((r) => r.uri)) === '["docs://mine","demo://resource/static/document/architecture.md"]',
    resources);
  const mine = await client.readResource({ uri: 'docs://mine' });
  check('the graph\'s own resource is read beside the proxied ones', mine.contents[0].text === 'my own', mine);
  const { resourceTemplates: tpl } = await client.listResourceTemplates();
  check('templates: only the selected one, with the description override',
    tpl.length === 1 && tpl[0].uriTemplate === 'demo://resource/dynamic/text/{resourceId}' && tpl[0].description === 'text by id', tpl);
  const r = await client.readResource({ uri: 'demo://resource/dynamic/text/2' });
  check('a URI of the selected template is read', /2/.test(r.contents[0].text), r);
  let e = await failure(client.readResource({ uri: 'demo://resource/dynamic/blob/2' }));
  check('a URI of a template not selected is not served (-32002)', e && e.code === -32002, String(e));
  e = await failure(client.readResource({ uri: 'demo://resource/static/document/features.md' }));
  check('a resource not selected is not served (-32002)', e && e.code === -32002, String(e));
  const { prompts } = await client.listPrompts();
  const byName = Object.fromEntries(prompts.map((p) => [p.name, p]));
  check('prompts/list: the own hello and completable-prompt (once: the own one shadows the proxied one) and weather ' +
    '(args-prompt renamed, description replaced)',
    prompts.map((p) => p.name).sort().join() === 'completable-prompt,hello,weather' &&
    byName['completable-prompt'].description === 'mine' && byName.weather.description === 'asks the weather' &&
    byName.weather.arguments.some((a) => a.name === 'city'), prompts);
  const own = await client.getPrompt({ name: 'completable-prompt' });
  check('prompts/get of a name the graph has itself: its own', own.messages[0].content.text === 'my own wins', own);
  const g = await client.getPrompt({ name: 'weather', arguments: { city: 'Oslo' } });
  check('prompts/get of the renamed prompt', g.messages[0].content.text.includes('Oslo') && g.description === 'asks the weather', g);
  e = await failure(client.getPrompt({ name: 'simple-prompt' }));
  check('a prompt not selected is unknown (-32602)', e && e.code === -32602, String(e));
  e = await failure(client.getPrompt({ name: 'args-prompt', arguments: { city: 'x' } }));
  check('the renamed prompt\'s downstream name is unknown (-32602)', e && e.code === -32602, String(e));
  const c = await client.complete({ ref: { type: 'ref/prompt', name: 'simple-prompt' }, argument: { name: 'x', value: '' } });
  check('completion of a prompt not selected: nothing', c.completion.values.length === 0, c);
  const { tools } = await client.listTools();
  check('the entry\'s tools beside them (echo)', tools.map((t) => t.name).join() === 'echo', tools);
}

async function none(client) {
  const caps = client.getServerCapabilities();
  check('a proxy entry without resources/prompts: none advertised', !caps.resources && !caps.prompts && !caps.completions, caps);
  const raw = (method, params) => client.request({ method, params }, ResultSchema);
  for (const [m, p] of [['resources/list', {}], ['resources/read', { uri: 'demo://resource/static/document/architecture.md' }],
    ['prompts/list', {}], ['prompts/get', { name: 'simple-prompt' }]]) {
    const e = await failure(raw(m, p));
    check(`${m} → method not found (-32601)`, e && e.code === -32601, String(e));
  }
}

async function hostile(client) {
  let e = await failure(client.listResources());
  check('resources/list with an item without a uri → -32603 naming the server and the item',
    e && e.code === -32603 && /hostile/.test(e.message) && /resources\[1\] has no uri/.test(e.message), String(e));
  e = await failure(client.listResourceTemplates());
  check('5000 templates in one page → -32603 (at most 1000)', e && e.code === -32603 && /5000 items/.test(e.message), String(e));
  e = await failure(client.readResource({ uri: 'bad://both' }));
  check('a content with neither text nor blob → -32603', e && e.code === -32603 && /contents\[0\]/.test(e.message), String(e));
  e = await failure(client.readResource({ uri: 'bad://big' }));
  check('6 MiB of text → -32603 (downstream.max_message_bytes)', e && e.code === -32603 && /max_message_bytes/.test(e.message),
    String(e));
  const r = await client.readResource({ uri: 'ok://fine' });
  check('... and the next read still works', r.contents[0].text === 'read ok://fine', r);
  const [pr, pages] = await all((p) => client.listPrompts(p), 'prompts');
  check('prompts/list: the downstream\'s two pages passed through with its cursor',
    pages === 2 && pr.map((p) => p.name).join() === 'p1,p2', [pages, pr]);
  e = await failure(client.listPrompts({ cursor: 'bm90LW91cnM' }));
  check('a cursor the gateway did not hand out → -32602', e && e.code === -32602, String(e));
  e = await failure(client.listPrompts({ cursor: Buffer.from('1\nlong').toString('base64url') }));
  check('a downstream nextCursor of 4 KiB → -32603', e && e.code === -32603 && /nextCursor/.test(e.message), String(e));
  e = await failure(client.getPrompt({ name: 'p1' }));
  check('a message with role "system" → -32603', e && e.code === -32603 && /messages\[0\]/.test(e.message), String(e));
  const g = await client.getPrompt({ name: 'p2' });
  check('a well-formed prompt passes', g.messages[0].content.text === 'fine', g);
  e = await failure(client.complete({ ref: { type: 'ref/prompt', name: 'p2' }, argument: { name: 'a', value: '' } }));
  check('completion values that are not strings → -32603', e && e.code === -32603, String(e));
}

try {
  const client = new Client({ name: 'proxy-resources-test', version: '1.0.0' }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(new URL(url),
    { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
  await ({ ev, sel, none, hostile })[mode](client);
  await client.close();
  finish();
} catch (e) {
  finish(e);
}
