// toolkit_loop.mjs — the authoring loop an agent runs, end to end through the official SDK
// client, and the attacks on run_graph/put_graph (see toolkit_loop.sh for the server's limits).
// usage: node toolkit_loop.mjs PUB INT EVPORT ADMIN WRITER KEY BETA → "N passed, N failed".
import { loadSdk, check, finish, until } from './sdk_lib.mjs';

const [base, internal, evport, admin, writer, key, beta] = process.argv.slice(2);
const { Client } = await loadSdk('client/index.js');
const { StreamableHTTPClientTransport } = await loadSdk('client/streamableHttp.js');

async function connect(path, k) {
  const c = new Client({ name: 'toolkit-loop', version: '1.0.0' }, { capabilities: {} });
  await c.connect(new StreamableHTTPClientTransport(new URL(base + path),
    { requestInit: { headers: { Authorization: `Bearer ${k}` } } }));
  return c;
}
async function rest(path) {
  const r = await fetch(base + path, { headers: { Authorization: `Bearer ${admin}` } });
  return { status: r.status, body: await r.json().catch(() => null) };
}
const executions = async (q = '') => (await rest(`/admin/tenants/acme/executions?limit=100${q}`)).body.executions;

// the graph the agent writes: echo through server-everything, then upper-case it
const graph = (extra = '') => `version: "1.0"
server: {name: "loop", version: "1.0.0"}
${extra}mcpServers:
  everything: {type: "streamableHttp", url: "http://127.0.0.1:${evport}/mcp"}
tools:
  - name: "shout"
    description: "echo a message in capitals"
    inputSchema: {type: "object", properties: {m: {type: "string"}}, required: [m]}
    nodes:
      - {id: "entry", type: "entry", next: "echo"}
      - {id: "echo", type: "mcp", server: "everything", tool: "echo", args: {message: {expr: "$.entry.m"}}, next: "up"}
      - {id: "up", type: "transform", transform: {expr: '{"said": $uppercase($.echo)}'}, next: "exit"}
      - {id: "exit", type: "exit"}
`;
// one transform tool: expr is the whole node (a failing one, a loop, a big value)
const oneNode = (expr, loop = false) => `version: "1.0"
server: {name: "one", version: "1.0.0"}
${loop ? 'executionLimits: {maxNodeExecutions: 1000000}\n' : ''}tools:
  - name: "t"
    description: "one transform"
    inputSchema: {type: "object"}
    nodes:
      - {id: "entry", type: "entry", next: "calc"}
      - {id: "calc", type: "transform", transform: {expr: '${expr}'}, next: "${loop ? 'again' : 'exit'}"}
${loop ? `      - id: "again"
        type: "switch"
        conditions:
          - {rule: {"==": [1, 1]}, next: "calc"}
        next: "exit"
` : ''}      - {id: "exit", type: "exit"}
`;
const sc = (r) => r.structuredContent || {};
let t0, ms;

try {
  // 1. find node types
  const nodes = await connect('/mcp/nodes', writer);
  const s = await nodes.callTool({ name: 'search_nodes', arguments: { query: 'send a slack message', limit: 3 } });
  check('search_nodes on /mcp/nodes answers', !s.isError && s.content.length > 0, s);
  const d = await nodes.callTool({ name: 'get_node_details',
    arguments: { nodes: [{ node_type: 'EXTERNAL_ACTION', subtype: 'SLACK' }], include_examples: false } });
  check('get_node_details answers', !d.isError && d.content.length > 0, d);
  await nodes.close();

  const tk = await connect('/mcp/toolkit', writer);
  const { tools } = await tk.listTools();
  const rg = tools.find((t) => t.name === 'run_graph'), pg = tools.find((t) => t.name === 'put_graph');
  check('tools/list: run_graph with yaml, tool, arguments in its inputSchema', rg && rg.description &&
    ['yaml', 'tool'].every((k) => rg.inputSchema.required.includes(k)) && rg.inputSchema.properties.arguments, rg);
  check('tools/list: put_graph (name, yaml) naming the graphs:write scope', pg && /graphs:write/.test(pg.description) &&
    ['name', 'yaml'].every((k) => pg.inputSchema.required.includes(k)), pg);

  // 2. discover the downstream tool, 3. validate
  const ds = await tk.callTool({ name: 'list_downstream_tools', arguments: {} });
  const ev = !ds.isError && sc(ds).servers.find((x) => x.server === 'everything');
  check('list_downstream_tools: server-everything offers echo', ev && ev.tools.some((t) => t.name === 'echo'), sc(ds));
  const v = await tk.callTool({ name: 'validate_graph', arguments: { yaml: graph() } });
  check('validate_graph: the written graph is valid', sc(v).valid === true, sc(v));

  // 4. run it without storing
  const before = (await executions()).length;
  const r = await tk.callTool({ name: 'run_graph', arguments: { yaml: graph(), tool: 'shout', arguments: { m: 'hi there' } } });
  const rr = sc(r);
  check('run_graph: ok, the exit output {said: "ECHO: HI THERE"}', !r.isError && rr.ok === true &&
    rr.output && rr.output.said === 'ECHO: HI THERE' && rr.stored === false, rr);
  const tr = rr.trace || [];
  check('run_graph trace: entry, echo (mcp), up (transform), exit in order',
    tr.map((n) => `${n.node}:${n.type}`).join(',') === 'entry:entry,echo:mcp,up:transform,exit:exit', tr);
  const echo = tr.find((n) => n.node === 'echo') || {};
  check('... the mcp node: its input {message} and output (the downstream result), a duration',
    echo.input && echo.input.message === 'hi there' && /hi there/.test(JSON.stringify(echo.output)) &&
    typeof echo.duration_ms === 'number' && echo.started_at > 0, echo);
  check('... the transform node: its output', tr.some((n) => n.node === 'up' && n.output && n.output.said === 'ECHO: HI THERE'), tr);

  // a failing node: the error with the expression position, node and trace
  const f = await tk.callTool({ name: 'run_graph', arguments: { yaml: oneNode('$.entry.n + 1'), tool: 't', arguments: { n: 'x' } } });
  const fe = sc(f).error || {};
  const fn = (sc(f).trace || []).find((n) => n.node === 'calc') || {};
  check('run_graph: a failing expression → isError, error code, node "calc" and position',
    f.isError && sc(f).ok === false && fe.node === 'calc' && typeof fe.code === 'string' && fe.position > 0, sc(f));
  check('... its trace record carries the error with its position and the node input',
    fn.error && fn.error.position > 0 && fn.input && fn.input.entry && fn.input.entry.n === 'x', fn);
  const bad = await tk.callTool({ name: 'run_graph', arguments: { yaml: oneNode('$.entry.n +'), tool: 't' } });
  check('run_graph on an invalid graph: the diagnostics with line and column',
    bad.isError && (sc(bad).diagnostics || []).some((x) => x.severity === 'error' && x.line === 9 && x.column > 1), sc(bad));
  const unk = await tk.callTool({ name: 'run_graph', arguments: { yaml: graph(), tool: 'nope' } });
  check('run_graph of a tool the graph lacks: unknown_tool', unk.isError && sc(unk).error.code === 'unknown_tool', sc(unk));

  // nothing stored: the stored graph's call below is recorded; the toolkit runs are not
  const g = await rest('/admin/tenants/acme/graphs/loop');
  check('nothing published by run_graph: GET /admin/tenants/acme/graphs/loop → 404', g.status === 404, g);
  const evc = await connect('/mcp/acme/ev', key);
  await evc.callTool({ name: 'say', arguments: { m: 'marker' } });
  await evc.close();
  const after = await until(async () => { const l = await executions(); return l.length > before && l; }, 15000);
  check('no history row from run_graph: only the stored graph call added one',
    after && after.length === before + 1 && after.every((e) => e.graph === 'ev'), after);

  // 5. publish, 6. call it
  const p = await tk.callTool({ name: 'put_graph', arguments: { name: 'loop', yaml: graph() } });
  check('put_graph: version 1 of acme/loop with tool shout', !p.isError && sc(p).version === 1 && sc(p).tenant === 'acme' &&
    sc(p).tools.includes('shout'), sc(p));
  const pub = await connect('/mcp/acme/loop', key);
  const c = await pub.callTool({ name: 'shout', arguments: { m: 'hi there' } });
  check('the published graph answers on /mcp/acme/loop as run_graph did', !c.isError && c.structuredContent.said === 'ECHO: HI THERE', c);
  await pub.close();
  const au = await rest('/admin/audit?tenant=acme&limit=50');
  check('the audit log: graph.put of loop (version 1)', au.status === 200 &&
    au.body.entries.some((e) => e.action === 'graph.put' && e.target === 'loop'), au.body);
  const p2 = await tk.callTool({ name: 'put_graph', arguments: { name: 'loop', yaml: oneNode('$.entry.n +') } });
  check('put_graph of an invalid graph: 422 validation with the errors at their lines, version unchanged',
    p2.isError && sc(p2).status === 422 && sc(p2).errors.some((x) => x.line === 9) &&
    (await rest('/admin/tenants/acme/graphs/loop')).body.version === 1, sc(p2));

  // no worker waits on a downstream: with one worker, three runs each waiting 2 s on
  // server-everything end together in about 2 s (held workers would take 6 s at least), and a
  // call made meanwhile answers at once. The 8 s cap leaves a slow (sanitizer, loaded)
  // machine room: its 2 s downstream wait was seen taking 3.5 s
  const slow = graph().replace('tool: "echo", args: {message: {expr: "$.entry.m"}}, next: "up"',
    'tool: "trigger-long-running-operation", args: {duration: 2, steps: 2}, next: "exit"');
  t0 = Date.now();
  const runs = [1, 2, 3].map(() => tk.callTool({ name: 'run_graph', arguments: { yaml: slow, tool: 'shout', arguments: { m: 'x' } } }));
  await new Promise((res) => setTimeout(res, 300));
  const t1 = Date.now();
  const quick = await tk.callTool({ name: 'test_jsonlogic', arguments: { rule: { '+': [1, 2] } } });
  const quickMs = Date.now() - t1;
  const done3 = await Promise.all(runs);
  ms = Date.now() - t0;
  check(`one worker: 3 run_graph calls waiting 2 s downstream end in ${ms} ms (< 5500), all ok`,
    done3.every((x) => !x.isError && sc(x).ok) && ms >= 1900 && ms < 5500, done3.map(sc));
  check(`... and a call made while they wait answers in ${quickMs} ms (< 1500)`,
    !quick.isError && sc(quick).result === 3 && quickMs < 1500, sc(quick));

  // ---- attacks ----
  t0 = Date.now();
  // each round heavy enough that the 8 s cap, not the 1,000,000-node limit, stops it on a fast machine
  const spin = await tk.callTool({ name: 'run_graph', arguments: { yaml: oneNode('$sum([1..20000])', true), tool: 't' } });
  ms = Date.now() - t0;
  check(`an endless loop stops at the 8 s time cap (in ${ms} ms): an error result, not a hang`,
    spin.isError && sc(spin).ok === false && sc(spin).error.code === 'limit' && ms >= 7900 && ms < 30000, sc(spin).error);
  check('... its trace is cut at history.max_run_records (50) and says how many were dropped',
    sc(spin).trace.length <= 50 && sc(spin).trace_truncated && sc(spin).trace_truncated.dropped > 0, sc(spin).trace_truncated);
  const more = await tk.callTool({ name: 'run_graph', arguments: {
    yaml: oneNode('1').replace('tools:', 'executionLimits: {maxExecutionTimeMs: 600000}\ntools:'), tool: 't' } });
  check('a graph asking for more time than the cap is refused, as an upload is',
    more.isError && JSON.stringify(sc(more)).includes('cap'), sc(more));
  const mem = await tk.callTool({ name: 'run_graph', arguments: { yaml: oneNode('$count([1..50000000])'), tool: 't' } });
  check('memory past limits.eval_memory_bytes fails the run', mem.isError && sc(mem).ok === false, sc(mem).error);
  const big = await tk.callTool({ name: 'run_graph', arguments: { yaml: oneNode('$pad("", 100000, "x")'), tool: 't' } });
  const bn = (sc(big).trace || []).find((n) => n.node === 'calc') || {};
  check('a 100 kB node output is cut in the trace at history.max_payload ({truncated: true})',
    sc(big).ok === true && bn.output && bn.output.truncated === true, bn);
  const huge = await tk.callTool({ name: 'run_graph', arguments: { yaml: 'x'.repeat(2 << 20), tool: 't' } });
  check('a 2 MB source is refused (graphs.max_bytes)', huge.isError && sc(huge).error.code === 'too_large', sc(huge).error);
  const self = await tk.callTool({ name: 'run_graph', arguments: {
    yaml: graph().replace(`http://127.0.0.1:${evport}/mcp`, `${internal}/internal/mcp/acme/ev`), tool: 'shout', arguments: { m: 'x' } } });
  check('run_graph cannot reach the gateway itself (/internal): a policy error',
    self.isError && /own listeners|policy/.test(JSON.stringify(sc(self))), sc(self));
  const blocked = await tk.callTool({ name: 'run_graph', arguments: {
    yaml: graph().replace('127.0.0.1', '10.255.255.1'), tool: 'shout', arguments: { m: 'x' } } });
  check('run_graph cannot reach a host the policy does not list', blocked.isError &&
    /policy|not allowed/.test(JSON.stringify(sc(blocked))), sc(blocked));
  await tk.close();

  const ro = await connect('/mcp/toolkit', key);
  const np = await ro.callTool({ name: 'put_graph', arguments: { name: 'sneaky', yaml: graph() } });
  check('a key without graphs:write: put_graph fails naming the missing scope',
    np.isError && sc(np).error.code === 'insufficient_scope' && sc(np).error.required_scope === 'graphs:write', sc(np));
  check('... and nothing was published', (await rest('/admin/tenants/acme/graphs/sneaky')).status === 404);
  await ro.close();

  const bt = await connect('/mcp/toolkit', beta);
  let msg = '';
  try {
    const x = await bt.callTool({ name: 'put_graph', arguments: { name: 'loop', yaml: oneNode('1'), tenant: 'acme' } });
    if (x.isError) msg = JSON.stringify(sc(x) || x.content);
  } catch (e) { msg = String(e.message); }
  check('no argument names another tenant: put_graph with tenant "acme" is refused', msg !== '', msg);
  const bp = await bt.callTool({ name: 'put_graph', arguments: { name: 'loop', yaml: oneNode('1') } });
  check("beta's put_graph publishes beta/loop, never acme's", !bp.isError && sc(bp).tenant === 'beta' &&
    (await rest('/admin/tenants/acme/graphs/loop')).body.version === 1, sc(bp));
  const bev = await bt.callTool({ name: 'run_graph', arguments: { yaml: graph(), tool: 'shout', arguments: { m: 'x' } } });
  check("beta's run_graph of the same graph is refused by beta's policy (the grant is acme's)",
    bev.isError && /policy|not allowed/.test(JSON.stringify(sc(bev))), sc(bev));
  await bt.close();
  finish();
} catch (e) {
  finish(e);
}
