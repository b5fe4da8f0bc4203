// oauth_consent.mjs — the official TypeScript SDK client (@modelcontextprotocol/sdk) calling
// one tool of a graphgate endpoint with a bearer token, as a user's MCP client does: prints
// one JSON line, {"result": CallToolResult} or {"error": {code, message, data}} (a
// URLElicitationRequiredError, -32042, carries data.elicitations).
// usage: node oauth_consent.mjs URL TOKEN TOOL
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [url, token, tool] = process.argv.slice(2);
const root = process.env.GG_NPM || path.resolve(import.meta.dirname, '../npm/node_modules');
const load = (p) => import(pathToFileURL(path.join(root, p)).href);
const { Client } = await load('@modelcontextprotocol/sdk/dist/esm/client/index.js');
const { StreamableHTTPClientTransport } = await load('@modelcontextprotocol/sdk/dist/esm/client/streamableHttp.js');

const client = new Client({ name: 'consent-test', version: '1.0.0' }, { capabilities: { elicitation: { url: {} } } });
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
let out;
try {
  await client.connect(transport);
  out = { result: await client.callTool({ name: tool, arguments: {} }) };
} catch (e) {
  out = { error: { code: e.code, message: e.message, data: e.data } };
}
console.log(JSON.stringify(out));
await client.close().catch(() => {});
