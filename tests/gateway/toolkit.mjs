// toolkit.mjs — the authoring loop an agent runs, through the official SDK client: find node
// types on /mcp/nodes, check a graph and its expressions on /mcp/toolkit (errors with their
// positions, loops stopped by the time limit, oversized input refused), then publish it (the
// shell script does the upload) and call it.
// usage: node toolkit.mjs loop BASE KEY GRAPH_FILE BAD_FILE → "ok - ..." lines and "N passed, N failed".
import fs from 'node:fs';
import { loadSdk, check, finish } from './sdk_lib.mjs';

// node toolkit.mjs call BASE KEY → calls the published graph's tool on /mcp/acme/prices.
// node toolkit.mjs scope BASE READ_KEY → a tools:read key's tools/call on /mcp/toolkit.
const [mode, base, key, goodFile, badFile] = process.argv.slice(2);
const { Client } = await loadSdk('client/index.js');
const { StreamableHTTPClientTransport } = await loadSdk('client/streamableHttp.js');

async function connect(path) {
  const c = new Client({ name: 'toolkit-test', version: '1.0.0' }, { capabilities: {} });
  await c.connect(new StreamableHTTPClientTransport(new URL(base + path),
    { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
  return c;
}

try {
  if (mode === 'call') {
    const g = await connect('/mcp/acme/prices');
    const r = await g.callTool({ name: 'total', arguments: { items: [{ price: 2 }, { price: 3 }], rate: 10 } });
    check('the published graph answers on its own endpoint: {total: 50}', !r.isError && r.structuredContent.total === 50, r);
    await g.close();
    finish();
  }
  if (mode === 'scope') {
    const c = await connect('/mcp/toolkit');
    let msg = '';
    try { await c.callTool({ name: 'test_jsonlogic', arguments: { rule: true } }); } catch (e) { msg = String(e.message); }
    check('a tools:read key lists but may not call a toolkit tool (403 insufficient scope)', /403|scope/i.test(msg), msg);
    await c.close();
    finish();
  }
  if (mode === 'beta') {
    const c = await connect('/mcp/toolkit');
    const r = await c.callTool({ name: 'list_downstream_tools', arguments: {} });
    check("another tenant's list_downstream_tools shows none of acme's catalogs",
      !r.isError && Array.isArray(r.structuredContent.servers) && r.structuredContent.servers.length === 0, r.structuredContent);
    await c.close();
    finish();
  }
  const nodes = await connect('/mcp/nodes');
  const s = await nodes.callTool({ name: 'search_nodes', arguments: { query: 'transform', limit: 5 } });
  check('search_nodes on /mcp/nodes answers', !s.isError && s.content.length > 0, s);
  const types = await nodes.callTool({ name: 'get_node_types', arguments: {} });
  check('get_node_types answers', !types.isError, types);
  await nodes.close();

  const tk = await connect('/mcp/toolkit');
  const { tools } = await tk.listTools();
  check('tools/list on /mcp/toolkit: validate_graph, test_jsonata, test_jsonlogic',
    ['validate_graph', 'test_jsonata', 'test_jsonlogic'].every((n) => tools.some((t) => t.name === n)), tools.map((t) => t.name));

  const ds = await tk.callTool({ name: 'list_downstream_tools', arguments: {} });
  const ev = !ds.isError && ds.structuredContent.servers.find((x) => x.server === 'everything');
  check('list_downstream_tools: server-everything with its echo tool and inputSchema',
    ev && ev.tools.some((t) => t.name === 'echo' && t.inputSchema) && ev.fetched_at, ds.structuredContent);
  const one = await tk.callTool({ name: 'list_downstream_tools', arguments: { server: 'nope' } });
  check('list_downstream_tools for an unknown server: an error result', one.isError, one);
  const bad = await tk.callTool({ name: 'validate_graph', arguments: { yaml: fs.readFileSync(badFile, 'utf8') } });
  const d = bad.structuredContent;
  check('validate_graph on a broken graph: not valid, errors counted', d && d.valid === false && d.error_count >= 2, d);
  check('... the unknown next target at its line, with a column (14:>1)', d && d.diagnostics.some((x) =>
    x.severity === 'error' && x.line === 14 && x.column > 1), d && d.diagnostics);
  check('... the JSONata syntax error at its line (13)', d && d.diagnostics.some((x) =>
    x.severity === 'error' && x.line === 13), d && d.diagnostics);
  const good = await tk.callTool({ name: 'validate_graph', arguments: { yaml: fs.readFileSync(goodFile, 'utf8') } });
  check('validate_graph on the fixed graph: valid, no errors',
    good.structuredContent && good.structuredContent.valid === true && good.structuredContent.error_count === 0, good);
  // the server runs with body_limit 4 MiB, graphs.max_bytes 1 MiB
  const huge = await tk.callTool({ name: 'validate_graph', arguments: { yaml: 'x'.repeat(3 << 20) } });
  check('a 3 MB source is refused as too_large (graphs.max_bytes, as an upload)',
    huge.isError && huge.structuredContent.error.code === 'too_large', huge.structuredContent);
  let hmsg = '';
  try { await tk.callTool({ name: 'validate_graph', arguments: { yaml: 'x'.repeat(5 << 20) } }); } catch (e) { hmsg = String(e.message); }
  check('a 5 MB request is refused before it is parsed (the body limit)', /too_large/.test(hmsg), hmsg);

  const j = await tk.callTool({ name: 'test_jsonata', arguments: {
    expression: '$sum(items.price) * $rate', context: { items: [{ price: 2 }, { price: 3 }] }, bindings: { rate: 10 } } });
  check('test_jsonata: $sum(items.price) * $rate = 50', !j.isError && j.structuredContent.result === 50, j);
  const je = await tk.callTool({ name: 'test_jsonata', arguments: { expression: 'items[price > ]' } });
  check('test_jsonata: a syntax error with its code and position',
    je.isError && je.structuredContent.error.code.startsWith('S0') && je.structuredContent.error.position > 0, je.structuredContent);
  const t0 = Date.now();
  const loop = await tk.callTool({ name: 'test_jsonata', arguments: {
    expression: '($f := function($n){ $n < 0 ? 0 : $f($n + 1) }; $f(0))' } }); // a tail call: no depth limit
  const ms = Date.now() - t0;
  check(`an endless expression stops with the time limit (D1012, 2 s) in ${ms} ms`,
    loop.isError && loop.structuredContent.error.code === 'D1012' && ms >= 1900 && ms < 15000, loop.structuredContent);
  const deep = await tk.callTool({ name: 'test_jsonata', arguments: { expression: '('.repeat(20000) + '1' + ')'.repeat(20000) } });
  check('20000 nested parentheses: an error result, the server keeps answering',
    deep.isError && typeof deep.structuredContent.error.code === 'string', deep.structuredContent);
  const u = await tk.callTool({ name: 'test_jsonata', arguments: { expression: 'nothing', context: {} } });
  check('test_jsonata: undefined is told apart from null', !u.isError && u.structuredContent.undefined === true, u);

  const l = await tk.callTool({ name: 'test_jsonlogic', arguments: {
    rule: { and: [{ '>': [{ var: 'n' }, 3] }, { in: ['a', { var: 's' }] }] }, data: { n: 5, s: 'abc' } } });
  check('test_jsonlogic: result true, truthy', !l.isError && l.structuredContent.result === true && l.structuredContent.truthy === true, l);
  const le = await tk.callTool({ name: 'test_jsonlogic', arguments: { rule: { nope: [1] } } });
  check('test_jsonlogic: an unknown operation is an error result',
    le.isError && le.structuredContent.error.code === 'unknown_operation', le.structuredContent);
  let threw = false;
  try { await tk.callTool({ name: 'no_such_tool', arguments: {} }); } catch (e) { threw = true; }
  check('an unknown tool is a JSON-RPC error', threw);
  await tk.close();
  finish();
} catch (e) {
  finish(e);
}
