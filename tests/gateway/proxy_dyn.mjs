// proxy_dyn.mjs — a real MCP server (the official SDK's McpServer over stdio) whose tool
// list grows at runtime: `add_tool {name}` registers a tool of that name, which makes the SDK
// send notifications/tools/list_changed. The names are kept in a file (argv[2]) so a
// restarted child lists the same tools. Used by tests/gateway/proxy.sh.
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadSdk } from './sdk_lib.mjs';

const { McpServer } = await loadSdk('server/mcp.js');
const { StdioServerTransport } = await loadSdk('server/stdio.js');
const nm = process.env.GG_NPM || path.resolve(import.meta.dirname, '../npm/node_modules');
const { z } = await import(pathToFileURL(path.join(nm, 'zod/index.js')).href);

const file = process.argv[2];
const server = new McpServer({ name: 'dyn', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
const added = new Set();
function addTool(name) {
  if (added.has(name)) return;
  added.add(name);
  server.registerTool(name, { description: `dynamic ${name} tool`, inputSchema: { when: z.string() } },
    async ({ when }) => ({ content: [{ type: 'text', text: `${name} ran ${when}` }] }));
}
server.registerTool('add_tool', { description: 'adds a tool named name', inputSchema: { name: z.string() } },
  async ({ name }) => {
    appendFileSync(file, `${name}\n`);
    addTool(name); // the SDK sends notifications/tools/list_changed
    return { content: [{ type: 'text', text: `added ${name}` }] };
  });
for (const n of existsSync(file) ? readFileSync(file, 'utf8').split(/\s+/).filter(Boolean) : []) addTool(n);
await server.connect(new StdioServerTransport());
