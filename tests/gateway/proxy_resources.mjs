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
//   tenantwide: /mcp/{t}/_all over those graphs: "<graph>." names and URIs, every page, a
//            failing graph skipped, another tenant's graph unreachable
//   view:    a view naming graphs in "resources" and "prompts": only theirs
//   notify:  (URL = the tenant's /mcp/acme, then METRICS_URL) list_changed relayed, rate-bounded
//   subscribe: (URL = /mcp, then METRICS_URL, beta's KEY) proxied subscriptions and updates,
//            on the graph's endpoint, then on _all and the view subv (URIs under "sub.")
// prints "ok - ..." lines and "N passed, N failed".
import { loadSdk, check, finish, until } from './sdk_lib.mjs';

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
  check('... and subscriptions (proxied URIs relayed to the downstream)', caps.resources && caps.resources.subscribe === true, caps.resources);
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

// /mcp/acme/_all: graphs ev, hostile, none and sel; beta's graph vault proxies the same server.
async function tenantwide(client) {
  const caps = client.getServerCapabilities();
  check('_all advertises resources, prompts and completions (some graph proxies them)',
    !!(caps.resources && caps.prompts && caps.completions), caps);
  const skipped = [];
  const pages = async (fn, field) => {
    let cursor, n = 0;
    const items = [];
    do {
      const r = await fn(cursor ? { cursor } : {});
      items.push(...r[field]);
      for (const s of r._meta?.['io.graphgate/skipped'] ?? []) skipped.push(s.graph);
      cursor = r.nextCursor;
      n++;
    } while (cursor && n < 50);
    return [items, n];
  };
  const [res] = await pages((p) => client.listResources(p), 'resources');
  const uris = res.map((r) => r.uri);
  check(`resources/list walks the graphs: ev's under "ev.", sel's selection under "sel." (${res.length} items)`,
    uris.includes('ev.ev+demo://resource/static/document/architecture.md') &&
    uris.includes('sel.demo://resource/static/document/architecture.md') &&
    uris.every((u) => u.startsWith('ev.ev+demo://') || u.startsWith('sel.demo://')), uris);
  check('... a graph\'s own declared resource stays on its endpoint (no sel.docs://mine)', !uris.includes('sel.docs://mine'), uris);
  check('... hostile\'s failing list is skipped on its page and named in _meta', skipped.includes('hostile'), skipped);
  const [tpl] = await pages((p) => client.listResourceTemplates(p), 'resourceTemplates');
  const tn = tpl.map((x) => x.uriTemplate);
  check('resources/templates/list: ev\'s and sel\'s templates under their graphs',
    tn.includes('ev.ev+demo://resource/dynamic/text/{resourceId}') && tn.includes('sel.demo://resource/dynamic/text/{resourceId}') &&
    tpl.find((x) => x.uriTemplate === 'sel.demo://resource/dynamic/text/{resourceId}').description === 'text by id', tn);
  const rd = await client.readResource({ uri: 'ev.ev+demo://resource/static/document/architecture.md' });
  check('resources/read through _all: the text, its uri under "ev."',
    rd.contents[0].uri === 'ev.ev+demo://resource/static/document/architecture.md' && rd.contents[0].text.length > 100,
    rd.contents.map((c) => c.uri));
  const t = await client.readResource({ uri: 'sel.demo://resource/dynamic/text/2' });
  check('resources/read through a selected template of sel', t.contents[0].uri === 'sel.demo://resource/dynamic/text/2' &&
    /2/.test(t.contents[0].text), t);
  for (const [uri, why] of [['sel.docs://mine', 'a graph\'s own resource'],
    ['sel.demo://resource/dynamic/blob/2', 'a URI its graph did not select'],
    ['ev+demo://resource/static/document/architecture.md', 'a URI without a graph'],
    ['nope.demo://resource/static/document/architecture.md', 'an unknown graph'],
    ['none.demo://resource/static/document/architecture.md', 'a graph proxying no resources'],
    ['vault.demo://resource/static/document/architecture.md', 'another tenant\'s graph (beta/vault proxies it)']]) {
    const e = await failure(client.readResource({ uri }));
    check(`${why} is not served (-32002): ${uri}`, e && e.code === -32002, String(e));
  }
  const [pr, ppages] = await pages((p) => client.listPrompts(p), 'prompts');
  const names = pr.map((p) => p.name).sort();
  check(`prompts/list: ev's, hostile's (both its pages) and sel's proxied prompts (${names.length} over ${ppages} pages)`,
    names.includes('ev.ev_args-prompt') && names.includes('sel.weather') && names.includes('hostile.p1') &&
    names.includes('hostile.p2') && !names.includes('sel.hello') && !names.includes('sel.completable-prompt') &&
    names.every((n) => /^(ev|hostile|sel)\./.test(n)), names);
  const g = await client.getPrompt({ name: 'ev.ev_args-prompt', arguments: { city: 'Paris', state: 'Texas' } });
  check('prompts/get with arguments through _all', g.messages[0].content.text.includes('Paris, Texas'), g);
  const w = await client.getPrompt({ name: 'sel.weather', arguments: { city: 'Oslo' } });
  check('... a renamed one keeps its graph\'s description', w.messages[0].content.text.includes('Oslo') &&
    w.description === 'asks the weather', w);
  for (const name of ['sel.completable-prompt', 'vault.simple-prompt', 'ev_args-prompt', 'sel.simple-prompt']) {
    const e = await failure(client.getPrompt({ name, arguments: { city: 'x' } }));
    check(`prompts/get ${name} → -32602 (own, another tenant's, no graph, not selected)`, e && e.code === -32602, String(e));
  }
  const c = await client.complete({ ref: { type: 'ref/prompt', name: 'ev.ev_completable-prompt' },
    argument: { name: 'department', value: 'Eng' } });
  check('completion/complete of a proxied prompt through _all', JSON.stringify(c.completion.values) === '["Engineering"]', c);
  const c3 = await client.complete({ ref: { type: 'ref/resource', uri: 'ev.ev+demo://resource/dynamic/text/{resourceId}' },
    argument: { name: 'resourceId', value: '4' } });
  check('... of a proxied template variable', JSON.stringify(c3.completion.values) === '["4"]', c3);
  const c4 = await client.complete({ ref: { type: 'ref/prompt', name: 'vault.completable-prompt' },
    argument: { name: 'department', value: 'Eng' } });
  check('... of another tenant\'s graph\'s prompt: nothing', c4.completion.values.length === 0, c4);
  const e = await failure(client.listPrompts({ cursor: Buffer.from('vault\n').toString('base64url') }));
  check('a cursor naming another tenant\'s graph → -32602', e && e.code === -32602, String(e));
}

// /mcp/acme/_views/px: {"tools":[{"tool":"sel.echo"}], "resources":["sel"], "prompts":["ev"]}
async function view(client) {
  const { resources } = await client.listResources();
  check('a view lists the proxied resources of the graphs its "resources" names (sel) only',
    JSON.stringify(resources.map((r) => r.uri)) === '["sel.demo://resource/static/document/architecture.md"]', resources);
  const r = await client.readResource({ uri: 'sel.demo://resource/static/document/architecture.md' });
  check('... read through the view', r.contents[0].text.length > 100, r.contents.map((x) => x.uri));
  let e = await failure(client.readResource({ uri: 'ev.ev+demo://resource/static/document/architecture.md' }));
  check('a graph the view does not name for resources (ev) is not served (-32002)', e && e.code === -32002, String(e));
  const [pr] = await all((p) => client.listPrompts(p), 'prompts');
  check('prompts: only ev\'s (the view\'s "prompts")', pr.length > 3 && pr.every((p) => p.name.startsWith('ev.ev_')),
    pr.map((p) => p.name));
  const g = await client.getPrompt({ name: 'ev.ev_args-prompt', arguments: { city: 'Lima' } });
  check('prompts/get through the view', g.messages[0].content.text.includes('Lima'), g);
  e = await failure(client.getPrompt({ name: 'sel.weather', arguments: { city: 'x' } }));
  check('a prompt of a graph the view does not name for prompts → -32602', e && e.code === -32602, String(e));
  const c = await client.complete({ ref: { type: 'ref/prompt', name: 'ev.ev_completable-prompt' },
    argument: { name: 'department', value: 'Mar' } });
  check('completion/complete through the view', JSON.stringify(c.completion.values) === '["Marketing"]', c);
  const { tools } = await client.listTools();
  check('its tools as before (sel.echo)', tools.map((x) => x.name).join() === 'sel.echo', tools);
}

// A downstream's resources/ and prompts/list_changed relayed to the GET streams of the graph
// proxying them (lc), of _all and of a view naming lc under "resources" only (lcv); a burst of
// 50 folds into one trailing relay per downstream.list_changed_min_interval (1 s here).
// usage: node proxy_resources.mjs notify BASE_URL(/mcp/acme) KEY METRICS_URL
async function notify(base, metricsUrl) {
  const { ResourceListChangedNotificationSchema, PromptListChangedNotificationSchema } = await loadSdk('types.js');
  const streams = async () => Number((/^graphgate_mcp_streams (\d+)$/m.exec(await (await fetch(metricsUrl)).text()) || [0, -1])[1]);
  const before = await streams();
  const seen = {};
  const clients = {};
  for (const ep of ['lc', '_all', '_views/lcv']) {
    const c = new Client({ name: `notify-${ep}`, version: '1.0.0' }, { capabilities: {} });
    seen[ep] = { resources: 0, prompts: 0 };
    c.setNotificationHandler(ResourceListChangedNotificationSchema, () => { seen[ep].resources++; });
    c.setNotificationHandler(PromptListChangedNotificationSchema, () => { seen[ep].prompts++; });
    await c.connect(new StreamableHTTPClientTransport(new URL(`${base}/${ep}`),
      { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
    clients[ep] = c;
  }
  check('the SDK clients opened their GET streams (graph, _all, view)', (await until(async () => (await streams()) >= before + 3)) === true,
    [before, await streams()]);
  const want = (n) => seen.lc.resources >= n && seen.lc.prompts >= n && seen._all.resources >= n && seen._all.prompts >= n &&
    seen['_views/lcv'].resources >= n;
  await clients.lc.callTool({ name: 'change', arguments: { n: 1 } });
  check('the downstream\'s resources/ and prompts/list_changed reach the graph\'s, _all\'s and the view\'s streams',
    (await until(() => want(1))) === true, seen);
  await clients.lc.callTool({ name: 'change', arguments: { n: 50 } });
  check('a burst of 50 of each arrives as one trailing relay after the interval', (await until(() => want(2))) === true, seen);
  await clients.lc.callTool({ name: 'change', arguments: { n: 1 } });
  check('... and a later one as the next (the burst left nothing else pending)', (await until(() => want(3))) === true, seen);
  check('... so each client got exactly 3 of each, the view no prompts/list_changed (it names lc for resources only)',
    JSON.stringify(seen) === JSON.stringify({ lc: { resources: 3, prompts: 3 }, _all: { resources: 3, prompts: 3 },
      '_views/lcv': { resources: 3, prompts: 0 } }), seen);
  for (const c of Object.values(clients)) await c.close();
}

// usage: node proxy_resources.mjs subscribe BASE_URL(/mcp) KEY METRICS_URL BETA_KEY
// acme/sub and beta/sub proxy the notify server's x://a and x://b under s+; acme/hostile's
// server declares no subscriptions.
async function subscribe(base, metricsUrl, bkey) {
  const { ResourceUpdatedNotificationSchema } = await loadSdk('types.js');
  const streams = async () => Number((/^graphgate_mcp_streams (\d+)$/m.exec(await (await fetch(metricsUrl)).text()) || [0, -1])[1]);
  const before = await streams();
  const open = async (ep, k) => {
    const c = new Client({ name: `sub-${ep}`, version: '1.0.0' }, { capabilities: {} });
    const got = [];
    got.at = {}; /* uri → arrival times */
    c.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
      got.push(n.params.uri);
      (got.at[n.params.uri] ||= []).push(Date.now());
    });
    await c.connect(new StreamableHTTPClientTransport(new URL(`${base}/${ep}`), { requestInit: { headers: { Authorization: `Bearer ${k}` } } }));
    return [c, got];
  };
  const [a, got] = await open('acme/sub', key);
  const [b, bgot] = await open('beta/sub', bkey);
  const count = (l, u) => l.filter((x) => x === u).length;
  const touch = async (c, uri, n) => JSON.parse((await c.callTool({ name: 'touch', arguments: { uri, n } })).content[0].text);
  check('the SDK clients opened their GET streams', (await until(async () => (await streams()) >= before + 2)) === true, [before, await streams()]);
  check('initialize advertises resources.subscribe', a.getServerCapabilities().resources?.subscribe === true, a.getServerCapabilities());
  await a.subscribeResource({ uri: 's+x://a' });
  await a.subscribeResource({ uri: 's+x://b' });
  await b.subscribeResource({ uri: 's+x://a' });
  check('resources/subscribe of proxied URIs reaches the downstream without the prefix',
    JSON.stringify(await touch(a, 'x://none', 0)) === '["x://a","x://b"]', await touch(a, 'x://none', 0));
  let e = await failure(a.subscribeResource({ uri: 's+x://c' }));
  check('an unselected URI → -32002', e && e.code === -32002, String(e));
  e = await failure(a.subscribeResource({ uri: 'x://a' }));
  check('a URI without the prefix → -32002', e && e.code === -32002, String(e));
  await touch(a, 'x://a', 1);
  check('the downstream\'s update arrives with the prefixed URI', (await until(() => count(got, 's+x://a') >= 1)) === true, got);
  const t0 = Date.now(), n0 = count(got, 's+x://a');
  await touch(a, 'x://a', 300);
  console.log(`# 300 updates of x://a relayed on the graph's endpoint only: the call took ${Date.now() - t0} ms`);
  check('a flood of 300 updates: one arrives (at once, or as the trailing one)', (await until(() => count(got, 's+x://a') > n0)) === true, got);
  await touch(a, 'x://b', 1);
  check('... and x://b\'s as well', (await until(() => count(got, 's+x://b') >= 1)) === true, got);
  await b.subscribeResource({ uri: 's+x://b' });
  await touch(b, 'x://b', 1);
  check('beta\'s own downstream\'s update reaches beta\'s session', (await until(() => count(bgot, 's+x://b') >= 1)) === true, bgot);
  check('... and acme\'s updates never reached beta\'s session (subscribed to the same URIs)', count(bgot, 's+x://a') === 0, bgot);
  /* an upper bound, checked after several round trips: a trailing update not sent yet only lowers it */
  const flood = count(got, 's+x://a') - n0, at = got.at['s+x://a'];
  const gaps = at.slice(1).map((t, i) => t - at[i]);
  console.log(`# 300 updates of x://a within a call → ${flood} relayed within ${Date.now() - t0} ms; gaps ${gaps.join(', ')} ms`);
  check('... rate-bounded: at most 2 of the 300 relayed (one at once, one trailing)', flood >= 1 && flood <= 2, flood);
  check('... no two updates of a URI to a session within the 250 ms interval (less 100 ms of jitter)', gaps.every((g) => g >= 150), gaps);
  await a.unsubscribeResource({ uri: 's+x://a' });
  const na = count(got, 's+x://a'), nb = count(got, 's+x://b');
  await touch(a, 'x://a', 1);
  await touch(a, 'x://b', 1);
  check('after unsubscribe: a later update of x://b arrives ...', (await until(() => count(got, 's+x://b') > nb)) === true, got);
  check('... while x://a\'s does not', count(got, 's+x://a') === na, got);
  check('the update nobody heard unsubscribed the downstream from x://a',
    (await until(async () => JSON.stringify(await touch(a, 'x://none', 0)) === '["x://b"]')) === true, await touch(a, 'x://none', 0));
  await a.close();
  const [h] = await open('acme/hostile', key);
  const asked = async () => JSON.parse((await h.readResource({ uri: 'count://requests' })).contents[0].text)['resources/subscribe'] ?? 0;
  const asked0 = await asked(); /* its session is initialized by now: what it declared is known */
  e = await failure(h.subscribeResource({ uri: 'ok://a' }));
  check('a downstream without resources.subscribe: a clear error', e && e.code === -32602 && /does not support resource subscriptions/.test(e.message), String(e));
  check('... refused up front: the downstream (declaring resources without subscribe) was never asked', asked0 === 0 && await asked() === 0, [asked0, await asked()]);
  await h.close();
  await tenantwideSubscribe(open, count, bkey);
  await b.close();
}

// The same through /mcp/acme/_all and the view subv ({"resources": ["sub"]}): URIs under
// "sub.", subscribed at sub's downstream, its updates relayed with the URI mapped back; the
// view px (names sel, not sub) and beta's own _all do not hear acme's.
async function tenantwideSubscribe(open, count, bkey) {
  const [all, agot] = await open('acme/_all', key);
  const [vw, vgot] = await open('acme/_views/subv', key);
  const [px, pgot] = await open('acme/_views/px', key);
  const [ball, bgot] = await open('beta/_all', bkey);
  const [gs, ggot] = await open('acme/sub', key); /* the graph's own endpoint, alongside */
  const touch = async (uri, n) => JSON.parse((await all.callTool({ name: 'sub.touch', arguments: { uri, n } })).content[0].text);
  const A = 'sub.s+x://a';
  check('_all and the view advertise resources.subscribe (sub forwards subscriptions)',
    all.getServerCapabilities().resources?.subscribe === true && vw.getServerCapabilities().resources?.subscribe === true,
    [all.getServerCapabilities(), vw.getServerCapabilities()]);
  check('before: acme/sub\'s downstream is not subscribed to x://a', !(await touch('x://none', 0)).includes('x://a'), await touch('x://none', 0));
  await all.subscribeResource({ uri: A });
  check('resources/subscribe of "sub.s+x://a" on _all reaches sub\'s downstream as x://a',
    (await touch('x://none', 0)).includes('x://a'), await touch('x://none', 0));
  await vw.subscribeResource({ uri: A });
  await ball.subscribeResource({ uri: A }); /* beta's own sub graph: its own downstream */
  await gs.subscribeResource({ uri: 's+x://a' });
  for (const [c, uri, why] of [[px, A, 'a graph the view does not name under resources'],
    [all, 'nope.s+x://a', 'an unknown graph'], [all, 'sub.s+x://c', 'a URI sub does not select'],
    [all, 'sub.x://a', 'a URI without sub\'s prefix'], [all, 's+x://a', 'a URI without a graph'],
    [all, 'vault.demo://resource/static/document/architecture.md', 'another tenant\'s graph']]) {
    const e = await failure(c.subscribeResource({ uri }));
    check(`subscribe: ${why} → -32002 (${uri})`, e && e.code === -32002 && e.data?.uri === uri, String(e));
  }
  let e = await failure(all.subscribeResource({ uri: 'hostile.ok://a' }));
  check('subscribe through _all to a downstream without resources.subscribe: its clear error',
    e && e.code === -32602 && /does not support resource subscriptions/.test(e.message), String(e));
  const hasked = JSON.parse((await all.readResource({ uri: 'hostile.count://requests' })).contents[0].text)['resources/subscribe'];
  check('... refused up front there too: hostile\'s downstream never received a resources/subscribe', hasked === undefined, hasked);
  await touch('x://a', 1);
  check('the downstream\'s update reaches _all\'s and the view\'s sessions as "sub.s+x://a"',
    (await until(() => count(agot, A) >= 1 && count(vgot, A) >= 1)) === true, [agot, vgot]);
  check('... and the graph\'s own session as "s+x://a", as before', (await until(() => count(ggot, 's+x://a') >= 1)) === true, ggot);
  await gs.unsubscribeResource({ uri: 's+x://a' });
  const n0 = count(agot, A), t0 = Date.now();
  await touch('x://a', 300);
  console.log(`# 300 updates of x://a relayed to _all and a view (the views read from the store each time): the call took ${Date.now() - t0} ms`);
  check('a flood of 300 on _all: one arrives (at once or trailing)', (await until(() => count(agot, A) > n0)) === true, agot);
  await touch('x://none', 0); /* round trips for a late update to show */
  await touch('x://none', 0);
  check('... at most 2 of the 300 relayed to the _all session', count(agot, A) - n0 <= 2, agot);
  check('... only mapped URIs reach them (nothing else, never the graph-level one)',
    agot.every((u) => u === A) && vgot.every((u) => u === A), [agot, vgot]);
  check('the view not naming sub and beta\'s _all heard nothing of acme\'s updates', pgot.length === 0 && bgot.length === 0, [pgot, bgot]);
  await all.unsubscribeResource({ uri: A });
  const na = count(agot, A), nv = count(vgot, A);
  await touch('x://a', 1);
  check('after _all\'s unsubscribe the view still hears x://a ...', (await until(() => count(vgot, A) > nv)) === true, vgot);
  check('... and _all does not', count(agot, A) === na, agot);
  check('... the downstream still subscribed (the view holds it)', (await touch('x://none', 0)).includes('x://a'), await touch('x://none', 0));
  await vw.unsubscribeResource({ uri: A });
  /* an update nobody hears unsubscribes the downstream, at most once a second per URI: touched until then */
  check('nobody left: an update nobody heard unsubscribed the downstream from x://a', (await until(async () => {
    await touch('x://a', 1);
    return !(await touch('x://none', 0)).includes('x://a');
  })) === true, await touch('x://none', 0));
  for (const c of [all, vw, px, ball, gs]) await c.close();
  e = await failure(open('acme/_all', bkey));
  check('beta\'s key on acme\'s _all is refused (no session, nothing to subscribe)', e && /403|Forbidden|forbidden/.test(String(e)), String(e));
}

if (mode === 'subscribe') {
  try {
    await subscribe(url, process.argv[5], process.argv[6]);
    finish();
  } catch (e) {
    finish(e);
  }
} else if (mode === 'notify') {
  try {
    await notify(url, process.argv[5]);
    finish();
  } catch (e) {
    finish(e);
  }
} else try {
  const client = new Client({ name: 'proxy-resources-test', version: '1.0.0' }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(new URL(url),
    { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
  await ({ ev, sel, none, hostile, tenantwide, view })[mode](client);
  await client.close();
  finish();
} catch (e) {
  finish(e);
}
