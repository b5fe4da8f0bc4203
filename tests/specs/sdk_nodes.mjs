// sdk_nodes.mjs — the official TypeScript MCP SDK client against the node-knowledge MCP
// endpoint (/mcp/nodes or /internal/mcp/nodes). usage: node sdk_nodes.mjs URL [KEY]
// Prints "ok - ..." / "not ok - ..." lines and a final "N passed, N failed".
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [url, key] = process.argv.slice(2);
const sdk = path.join(path.resolve(import.meta.dirname, '../npm/node_modules'), '@modelcontextprotocol/sdk/dist/esm');
const load = (p) => import(pathToFileURL(path.join(sdk, p)).href);
const { Client } = await load('client/index.js');
const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');

let passed = 0, failed = 0;
const check = (desc, cond, detail) => {
  if (cond) { passed++; console.log(`ok - ${desc}`); }
  else { failed++; console.log(`not ok - ${desc}${detail !== undefined ? ': ' + JSON.stringify(detail).slice(0, 400) : ''}`); }
};
const headers = key ? { Authorization: `Bearer ${key}` } : {};
try {
  const client = new Client({ name: 'graphgate-nodes-test', version: '1.0.0' }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  check('serverInfo names the node service', client.getServerVersion()?.name === 'graphgate-nodes', client.getServerVersion());
  check('instructions present', /get_node_details/.test(client.getInstructions() || ''));
  const { tools } = await client.listTools();
  check('tools/list: the three tools', tools.map((t) => t.name).sort().join() === 'get_node_details,get_node_types,search_nodes', tools.map((t) => t.name));
  const types = await client.callTool({ name: 'get_node_types', arguments: {} });
  const sc = types.structuredContent;
  check('get_node_types: 9 families', sc && Object.keys(sc).length === 9 && sc.HUMAN_IN_THE_LOOP.includes('SLACK_INTERACTION'), sc);
  check('get_node_types: graphgate\'s own GRAPH family first', sc && Object.keys(sc)[0] === 'GRAPH', sc && Object.keys(sc));
  check('get_node_types: text mirrors structuredContent', JSON.stringify(JSON.parse(types.content[0].text)) === JSON.stringify(sc));
  const f = await client.callTool({ name: 'get_node_types', arguments: { type_filter: 'GRAPH' } });
  check('get_node_types type_filter', JSON.stringify(f.structuredContent) === '{"GRAPH":["ASK","ELICIT","ENTRY","EXIT","MCP","ROOTS","SAMPLE","SWITCH","TRANSFORM"]}', f.structuredContent);
  const bad = await client.callTool({ name: 'get_node_types', arguments: { type_filter: 'NOPE' } });
  check('unknown type_filter → isError listing the types', bad.isError === true && /TRIGGER/.test(bad.content[0].text) && /MEMORY/.test(bad.content[0].text), bad);
  const d = await client.callTool({ name: 'get_node_details', arguments: {
    nodes: [{ node_type: 'AI_AGENT', subtype: 'ANTHROPIC_CLAUDE' }, { node_type: 'FLOW_NODE', subtype: 'IF' }, { node_type: 'TOOL', subtype: 'SLAK_MCP_TOOL' }],
    include_examples: false } });
  const nodes = d.structuredContent?.nodes || [];
  check('get_node_details: three entries in order', nodes.length === 3 && nodes[0].subtype === 'ANTHROPIC_CLAUDE' && nodes[1].subtype === 'IF', nodes.map((n) => n.subtype));
  check('get_node_details: include_examples=false honoured', nodes[0] && !('examples' in nodes[0]) && 'input_params_schema' in nodes[0]);
  check('get_node_details: attached_nodes on AI_AGENT', JSON.stringify(nodes[0]?.attached_nodes) === '["TOOL","MEMORY"]');
  check('get_node_details: _NODE corrected with warning', nodes[1]?.node_type === 'FLOW' && /without '_NODE' suffix/.test(nodes[1]?.warning || ''), nodes[1]);
  check('get_node_details: unknown subtype → error + suggestions', nodes[2]?.error && nodes[2].suggestions?.[0]?.subtype === 'SLACK_MCP_TOOL', nodes[2]);
  const batch = Array.from({ length: 100 }, (_, i) => ({ node_type: 'GRAPH', subtype: ['ENTRY', 'MCP', 'TRANSFORM', 'SWITCH', 'EXIT'][i % 5] }));
  const b = await client.callTool({ name: 'get_node_details', arguments: { nodes: batch, include_examples: false, include_schemas: false } });
  check('get_node_details: batch of 100 in one call', b.structuredContent?.nodes?.length === 100 && b.structuredContent.nodes[99].subtype === 'EXIT');
  const s = await client.callTool({ name: 'search_nodes', arguments: { query: 'send email through smtp', limit: 3 } });
  check('search_nodes: best match first', s.structuredContent?.results?.[0]?.subtype === 'SEND_EMAIL', s.structuredContent);
  const s2 = await client.callTool({ name: 'search_nodes', arguments: { query: 'json logic routing', type_filter: 'GRAPH' } });
  check('search_nodes: type_filter', s2.structuredContent?.results?.length > 0 && s2.structuredContent.results.every((r) => r.node_type === 'GRAPH') && s2.structuredContent.results[0].subtype === 'SWITCH', s2.structuredContent);
  const s3 = await client.callTool({ name: 'search_nodes', arguments: { query: 'loop over a list' } });
  const r3 = s3.structuredContent?.results || [];
  check('search_nodes: a graph-building query ranks the GRAPH node first, the workflow catalog after', r3[0]?.node_type === 'GRAPH' && r3.some((r) => r.node_type === 'FLOW' && r.subtype === 'LOOP'), r3.slice(0, 3));
  const tl = await client.listTools();
  check('tool descriptions name the GRAPH family and the workflow catalog', tl.tools.every((t) => /GRAPH/.test(t.description) && /workflow catalog/.test(t.description) && !/workflow nodes/.test(t.description)), tl.tools.map((t) => t.description));
  await client.close();
} catch (e) {
  check('SDK session', false, String(e && e.stack || e));
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
