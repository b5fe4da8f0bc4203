// oauth_consent.mjs — the official TypeScript SDK client (@modelcontextprotocol/sdk) calling
// one tool of a graphgate endpoint with a bearer token, as a user's MCP client does: prints
// one JSON line, {"result": CallToolResult} or {"error": {code, message, data}} (a
// URLElicitationRequiredError, -32042, carries data.elicitations).
// With ACCOUNT and WORKDIR: the -32042's URL is then opened in a user agent signed in as
// ACCOUNT (curl following redirects with cookies) while the session stays connected; the
// line also holds `opened` (the page's status), `complete` (the elicitationId of the
// notifications/elicitation/complete the session got within 10 s, or null) and `retry` (the
// same call again on the same session).
// usage: node oauth_consent.mjs URL TOKEN TOOL [ACCOUNT WORKDIR]
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [url, token, tool, account, workdir] = process.argv.slice(2);
const root = process.env.GG_NPM || path.resolve(import.meta.dirname, '../npm/node_modules');
const load = (p) => import(pathToFileURL(path.join(root, p)).href);
const { Client } = await load('@modelcontextprotocol/sdk/dist/esm/client/index.js');
const { StreamableHTTPClientTransport } = await load('@modelcontextprotocol/sdk/dist/esm/client/streamableHttp.js');
const { ElicitationCompleteNotificationSchema } = await load('@modelcontextprotocol/sdk/dist/esm/types.js');
const { execFile } = await import('node:child_process');
const browse = (u) => new Promise((resolve) => execFile('curl', ['-sS', '-L', '--max-redirs', '20', '--max-time', '60',
  '-c', `${workdir}/jar.push`, '-b', `${workdir}/jar.push`, '-H', `X-Test-Account: ${account}`, '-o', `${workdir}/page.push.html`,
  '-w', '%{http_code}', u], (err, out) => resolve(err ? `curl: ${err.message}` : out)));

const client = new Client({ name: 'consent-test', version: '1.0.0' }, { capabilities: { elicitation: { url: {} } } });
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
let completed = null;
const complete = new Promise((resolve) => client.setNotificationHandler(ElicitationCompleteNotificationSchema, (n) => {
  completed = n.params.elicitationId;
  resolve();
}));
const callOnce = async () => {
  try {
    return { result: await client.callTool({ name: tool, arguments: {} }) };
  } catch (e) {
    return { error: { code: e.code, message: e.message, data: e.data } };
  }
};
let out;
try {
  await client.connect(transport);
  out = await callOnce();
  const el = out.error?.data?.elicitations?.[0];
  if (account && el) {
    out.opened = await browse(el.url);
    await Promise.race([complete, new Promise((r) => setTimeout(r, 10000))]);
    out.complete = completed;
    out.retry = await callOnce();
  }
} catch (e) {
  out = { error: { code: e.code, message: e.message, data: e.data } };
}
console.log(JSON.stringify(out));
await client.close().catch(() => {});
