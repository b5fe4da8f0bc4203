// oauth_client.mjs — an official TypeScript SDK client connecting to a graphgate endpoint with
// its own OAuth support, as a hosted MCP client does: the 401's challenge → protected-resource
// metadata → authorization-server metadata → dynamic client registration → authorization code
// with PKCE and the `resource` parameter → token → tools/list and tools/call. The browser part
// (sign-in and consent at the authorization server) is a headless user agent following
// redirects with cookies; the test server signs alice in and consents on its own.
// usage: node oauth_client.mjs v1|v2 URL TOOL ARGS_JSON
// Prints one "ok - ..." / "not ok - ..." line per check and a final "N passed, N failed".
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [era, url, tool, argsText] = process.argv.slice(2);
const root = process.env.GG_NPM || path.resolve(import.meta.dirname, '../npm/node_modules');
const load = (p) => import(pathToFileURL(path.join(root, p)).href);
let Client, Transport, UnauthorizedError;
if (era === 'v2') {
  ({ Client, StreamableHTTPClientTransport: Transport, UnauthorizedError } = await load('@modelcontextprotocol/client/dist/index.mjs'));
} else {
  ({ Client } = await load('@modelcontextprotocol/sdk/dist/esm/client/index.js'));
  ({ StreamableHTTPClientTransport: Transport } = await load('@modelcontextprotocol/sdk/dist/esm/client/streamableHttp.js'));
  ({ UnauthorizedError } = await load('@modelcontextprotocol/sdk/dist/esm/client/auth.js'));
}

let passed = 0, failed = 0;
const check = (desc, cond, detail) => {
  if (cond) { passed++; console.log(`ok - ${desc}`); }
  else { failed++; console.log(`not ok - ${desc}${detail !== undefined ? ': ' + JSON.stringify(detail).slice(0, 400) : ''}`); }
};

const REDIRECT = 'http://127.0.0.1:1/callback';
class Provider {
  constructor() { this.saved = {}; }
  get redirectUrl() { return REDIRECT; }
  get clientMetadata() {
    return {
      client_name: `graphgate test ${era}`, redirect_uris: [REDIRECT], application_type: 'native',
      grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() { return this.saved.client; }
  saveClientInformation(c) { this.saved.client = c; }
  tokens() { return this.saved.tokens; }
  saveTokens(t) { this.saved.tokens = t; }
  redirectToAuthorization(u) { this.authUrl = new URL(u); }
  saveCodeVerifier(v) { this.saved.verifier = v; }
  codeVerifier() { return this.saved.verifier; }
  saveDiscoveryState(s) { this.saved.discovery = s; }
  discoveryState() { return this.saved.discovery; }
}

// The user agent: follow redirects (cookies kept) until the authorization server sends it
// back to the redirect URI with the code.
async function userAgent(start) {
  const jar = new Map();
  let at = start.href;
  const hops = [];
  for (let hop = 0; hop < 20; hop++) {
    hops.push(at.replace(/\?.*/, ''));
    if (at.startsWith(REDIRECT)) return new URL(at).searchParams;
    const r = await fetch(at, { redirect: 'manual', headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') } });
    for (const c of r.headers.getSetCookie()) {
      const [kv] = c.split(';');
      const i = kv.indexOf('=');
      jar.set(kv.slice(0, i), kv.slice(i + 1));
    }
    const loc = r.headers.get('location');
    if (!loc) throw new Error(`the authorization server stopped at ${at} with ${r.status}: ${(await r.text()).slice(0, 300)}`);
    at = new URL(loc, at).href;
  }
  throw new Error(`too many redirects: ${hops.join(' → ')}`);
}

const makeClient = () => new Client({ name: `graphgate-oauth-${era}`, version: '1.0.0' },
  era === 'v2' ? { capabilities: {}, versionNegotiation: { mode: 'auto' } } : { capabilities: {} });

try {
  const provider = new Provider();
  let client = makeClient();
  let transport = new Transport(new URL(url), { authProvider: provider });
  let refused = null;
  try { await client.connect(transport); } catch (e) { refused = e; }
  check('without a token the client is sent to authorize', refused instanceof UnauthorizedError && provider.authUrl,
    String(refused));
  const au = provider.authUrl;
  check('the authorization request names this endpoint as the resource (RFC 8707)',
    au && au.searchParams.get('resource') === url, au && au.search);
  check('PKCE S256 is used', au && au.searchParams.get('code_challenge_method') === 'S256', au && au.search);
  check('the scope comes from the challenge', au && /tools:execute/.test(au.searchParams.get('scope') || ''), au && au.search);
  check('the client registered dynamically', provider.saved.client && provider.saved.client.client_id, provider.saved.client);
  const back = await userAgent(au);
  check('the authorization server answered with a code', back.get('code'), [...back]);
  if (era === 'v2') await transport.finishAuth(back);
  else await transport.finishAuth(back.get('code'));
  check('the client holds an access token', provider.saved.tokens && provider.saved.tokens.access_token);
  await client.close().catch(() => {});

  client = makeClient();
  transport = new Transport(new URL(url), { authProvider: provider });
  await client.connect(transport);
  if (era === 'v2') check('negotiated 2026-07-28', client.getNegotiatedProtocolVersion() === '2026-07-28',
    client.getNegotiatedProtocolVersion());
  else check('a 2025-11-25 session', !!transport.sessionId, transport.sessionId);
  const { tools } = await client.listTools();
  check('tools/list with the token', tools.some((t) => t.name === tool), tools.map((t) => t.name));
  const res = await client.callTool({ name: tool, arguments: JSON.parse(argsText) });
  check('tools/call with the token', res && !res.isError, res);
  console.log(`result ${JSON.stringify(res.structuredContent ?? res.content)}`);
  await client.close();
} catch (e) {
  check('the OAuth flow completes', false, String(e && e.stack || e));
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
