// sdk_lib.mjs — what the gateway's SDK test scripts share: the pinned official SDK client,
// TAP-like checks with a final "N passed, N failed" line, and a bounded poll.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const sdk = path.join(process.env.GG_NPM || path.resolve(import.meta.dirname, '../npm/node_modules'),
  '@modelcontextprotocol/sdk/dist/esm');
export const loadSdk = (p) => import(pathToFileURL(path.join(sdk, p)).href);

let passed = 0, failed = 0;
export function check(desc, cond, detail) {
  if (cond) { passed++; console.log(`ok - ${desc}`); }
  else { failed++; console.log(`not ok - ${desc}${detail !== undefined ? ': ' + JSON.stringify(detail) : ''}`); }
}
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// Poll until fn() is truthy (bounded); returns its last value.
export async function until(fn, ms = 5000) {
  const end = Date.now() + ms;
  let v;
  while (!(v = await fn()) && Date.now() < end) await sleep(20);
  return v;
}
// Report an exception as a failed check, print the counts and exit with their verdict.
export function finish(e) {
  if (e) check('no exception', false, String(e && e.stack || e));
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}
