// relay_gone.mjs — what a holder's answer and a caller's going away do to a forwarded relay
// round (relay2026.sh): replica E holds the runs with one execution slot for the tenant
// (tenants.max_concurrent_executions 1), B forwards retries to it. E's refusal of a retry for
// want of a slot comes back through B with its Retry-After; a client of B that goes away during
// a plain-JSON forward gets the run cancelled on E (B closes the forward, E sees its client go),
// waited for as E's record of the run, never a sleep.
//   node relay_gone.mjs EPUB EINT BPUB KEY ADMIN   → checks, "N passed, N failed"
import { check, until, finish } from './sdk_lib.mjs';

const [ePub, eInt, bPub, key, admin] = process.argv.slice(2);
const CAPS = { elicitation: { form: {}, url: {} }, sampling: {}, roots: {} };
let nextId = 0;
// one 2026-07-28 tools/call of graph px by hand, plain JSON only (accept: application/json)
// → {status, retryAfter, msg}; extra: inputResponses/requestState; signal ends it
async function call(base, tool, extra = {}, signal = AbortSignal.timeout(20000)) {
  const params = { name: tool, arguments: tool === 'r_ask' ? { who: 'gone' } : {}, ...extra,
    _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': CAPS } };
  const res = await fetch(`${base}/mcp/acme/px`, { method: 'POST', signal,
    body: JSON.stringify({ jsonrpc: '2.0', id: ++nextId, method: 'tools/call', params }),
    headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${key}`,
      'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': tool } });
  const text = await res.text();
  let msg;
  try { msg = JSON.parse(text); } catch { msg = { unparsed: text }; }
  return { status: res.status, retryAfter: res.headers.get('retry-after'), msg };
}
// the one form question of a first round, answered
const answer = (r) => {
  const k = Object.keys(r?.inputRequests ?? {})[0];
  return { inputResponses: { [k]: { action: 'accept', content: { answer: 'gone' } } }, requestState: r?.requestState };
};
const adm = async (path) => (await fetch(`${ePub}/admin${path}`, { headers: { authorization: `Bearer ${admin}` } })).json();
const slowRuns = async (q = '') => ((await adm(`/tenants/acme/executions?tool=r_slow&limit=1000${q}`)).executions ?? []);
// E's calls started and not finished (a parked round's is finished: its run waits without a call)
const running = async () => Number((await (await fetch(`${eInt}/metrics`)).text()).match(/^graphgate_tool_calls_running (\d+)/m)?.[1]);

try {
  const seen = new Set((await slowRuns()).map((e) => e.id));
  const s1 = (await call(ePub, 'r_slow')).msg?.result, s2 = (await call(ePub, 'r_ask')).msg?.result;
  const run = (await slowRuns('&status=running')).find((e) => !seen.has(e.id));
  check('gone: two rounds parked on replica E (r_slow\'s run recorded running)',
    s1?.resultType === 'input_required' && s2?.resultType === 'input_required' && run, { s1, s2, run });
  // r_slow's retry through B: E resumes the run (its downstream then works up to 20 s), which
  // holds the tenant's one execution slot there
  const idle = await running(), ac = new AbortController();
  const pending = call(bPub, 'r_slow', answer(s1), ac.signal).then((r) => `answered ${r.status}`, (e) => `aborted: ${e.name}`);
  const took = await until(async () => (await running()) > idle, 10000);
  check(`gone: E runs the retry B forwarded (calls running on E: ${idle} -> ${await running()})`, idle === 0 && took, idle);
  const busy = await call(bPub, 'r_ask', answer(s2));
  check('retry-after: E refuses another retry through B for want of a slot: its 429 and Retry-After come back through B',
    busy.status === 429 && busy.retryAfter === '1' && busy.msg?.error?.code === -32000 &&
    /concurrent executions/.test(busy.msg?.error?.message ?? ''), busy);
  // the first retry's client goes away: B closes its forward, E sees its client go and cancels
  // the run as for a client of its own (r_slow's work would take 20 s more)
  const t0 = Date.now();
  ac.abort();
  const how = await pending;
  const end = await until(async () => { const r = await adm(`/executions/${run?.id}`); return r?.status !== 'running' && r; }, 10000);
  check(`gone: a client of B that goes away mid-forward gets the run on E cancelled (recorded ${end?.status}, ${Date.now() - t0} ms)`,
    how.startsWith('aborted') && end?.status === 'cancelled', { how, end: end && { status: end.status, error: end.error } });
} catch (e) {
  finish(e);
}
finish();
