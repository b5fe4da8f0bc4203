// browser.mjs — the web console in Debian's headless chromium, driven by puppeteer-core:
// sign in with a tenant key, open a graph (diagram + source), call a tool through the MCP
// SDK client, watch the execution appear in the live list, open it and check the timeline
// and the highlighted path; keyboard and narrow window; a tenant's definition changes (the
// diff, approve one, reject one); no browser console error anywhere.
// Layout facts, not pictures: page width at 1366 px, computed colours, visibility, text.
// usage: node browser.mjs   (env: GG_PUB, GG_KEY, GG_ADMIN_KEY, GG_TENANT, GG_OUT, GG_CHROMIUM, GG_NPM)
// Prints "ok - ..." / "not ok - ..." lines and "N passed, N failed"; screenshots in GG_OUT.
import path from 'node:path';
import { WAIT, check, finish, launch, load, openPage, problems } from './lib_browser.mjs';

const { GG_PUB: pub, GG_KEY: key, GG_READER_KEY: readerKey, GG_ADMIN_KEY: adminKey, GG_TENANT: tenant, GG_OUT: out } = process.env;
const sdk = '@modelcontextprotocol/sdk/dist/esm';
const { Client } = await load(sdk + '/client/index.js');
const { StreamableHTTPClientTransport } = await load(sdk + '/client/streamableHttp.js');

const browser = await launch();
try {
  const { page, shot, texts } = await openPage(browser);
  page.on('requestfailed', (r) => problems.push('requestfailed: ' + r.url() + ' ' + (r.failure() || {}).errorText));
  const fitsWidth = () => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
  const width = () => page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
  const RED = 'rgb(207, 34, 46)'; // --bad
  // the points of every loop edge that lie inside a node's box (none when routed around)
  const loopCrossings = () => page.$$eval('svg.diagram', (svgs) => svgs.flatMap((svg) => {
    const boxes = [...svg.querySelectorAll('.node rect')].map((r) => ({ id: r.parentNode.dataset.node,
      x: +r.getAttribute('x'), y: +r.getAttribute('y'), w: +r.getAttribute('width'), h: +r.getAttribute('height') }));
    const hits = [];
    for (const p of svg.querySelectorAll('path.edge.loop')) {
      const len = p.getTotalLength();
      for (let l = 0; l <= len; l += 2) {
        const pt = p.getPointAtLength(l);
        for (const b of boxes) {
          if (pt.x > b.x + 1 && pt.x < b.x + b.w - 1 && pt.y > b.y + 1 && pt.y < b.y + b.h - 1)
            hits.push(p.querySelector('title').textContent + ' crosses ' + b.id);
        }
      }
    }
    return [...new Set(hits)];
  }));

  // ---- sign in
  await page.goto(pub + '/console', { waitUntil: 'networkidle0' });
  await page.waitForSelector('#key', WAIT);
  check('sign-in form has labelled inputs', (await page.$$eval('label[for=key], label[for=tenant]', (l) => l.length)) === 2);
  check('the key field has focus', await page.evaluate(() => document.activeElement && document.activeElement.id === 'key'));
  await shot('signin');
  await page.type('#key', key);
  await page.type('#tenant', tenant);
  await page.keyboard.press('Enter');
  await page.waitForSelector('table a[href$="/g/triage"]', WAIT);
  check('graphs of the tenant listed', (await texts('tbody tr td:first-child')).includes('triage'));
  check('key kept in sessionStorage only', await page.evaluate((k) => sessionStorage.getItem('graphgate.key') === k
    && localStorage.length === 0 && document.cookie === '', key));

  // ---- a graph: diagram, source, versions
  await page.click('table a[href$="/g/triage"]');
  await page.waitForSelector('svg.diagram .node', WAIT);
  const nodeIds = await page.$$eval('svg.diagram .node', (g) => g.map((n) => n.dataset.node));
  check('diagram draws every node', ['entry', 'route', 'incident', 'priority', 'standard', 'exit'].every((n) => nodeIds.includes(n)), nodeIds);
  check('diagram draws every edge', (await page.$$eval('svg.diagram path.edge', (p) => p.length)) === 7);
  const labels = await page.$$eval('svg.diagram .edge-label', (els) => els.map((e) => e.querySelector('title').textContent));
  check('switch branches labelled with their rules', labels.some((l) => l.includes('$.entry.severity == "critical"')) && labels.includes('default'), labels);
  check('YAML source shown', (await page.$eval('pre.source', (p) => p.textContent)).includes('title: "Ticket triage"'));
  check('versions listed with the active one', (await texts('.versions li')).some((l) => l.startsWith('v1') && l.includes('active')));
  await shot('graph');

  // ---- a graph with two tools: each drawn on its own
  // (a hash-only goto keeps the old page until the new one renders: wait for the new content)
  await page.goto(pub + '/console#/t/' + tenant + '/g/two', { waitUntil: 'networkidle0' });
  await page.waitForSelector('svg.diagram .node[data-node="a"]', WAIT);
  const firstIds = await page.$$eval('svg.diagram .node', (g) => g.map((n) => n.dataset.node));
  await page.click('nav.tools a:nth-child(2)');
  await page.waitForFunction(() => document.querySelector('svg.diagram .node[data-node="b2"]'), WAIT);
  check('the tool links switch the diagram', firstIds.includes('a') && (await page.$eval('nav.tools a[aria-current]', (a) => a.textContent)) === 'second');
  // (second's description hides a tag character, U+E0041: shown visibly, issue 28)
  const helpText = await page.$eval('section[aria-labelledby="h-diagram"] p.help', (p) => p.textContent);
  check('invisible characters in a description are shown as ⟨U+XXXX⟩', helpText === 'two steps\u27e8U+E0041\u27e9', helpText);
  await page.goto(pub + '/console#/t/' + tenant + '/g/triage', { waitUntil: 'networkidle0' });
  await page.waitForSelector('a[href$="/draft?from=triage"]', WAIT);

  // ---- a draft with a broken branch: the error listed and placed on its node
  await page.click('a[href$="/draft?from=triage"]');
  await page.waitForFunction(() => { const a = document.querySelector('#draft'); return a && a.value.includes('Ticket triage'); }, WAIT);
  // (a target naming no node is an error; a call of a function nothing defines, a warning)
  await page.$eval('#draft', (a) => {
    a.value = a.value.replace('next: "incident"', 'next: "nowhere"').replace('"page_on_call": true}', '"page_on_call": $upper("x")}');
  });
  await page.click('form.draft button[type=submit]');
  await page.waitForSelector('#draft-result svg.diagram', WAIT);
  check('draft errors listed with their position', (await texts('.diags li.diag-error')).some((x) => x.includes('33:') && x.includes("'nowhere'")));
  check('draft error placed on its node', JSON.stringify(await page.$$eval('svg.diagram .node.has-error', (g) => g.map((n) => n.dataset.node))) === '["route"]');
  check('draft warning placed on its node', (await page.$$eval('svg.diagram .node.has-warning', (g) => g.map((n) => n.dataset.node))).includes('incident'));
  const gutter = await page.$eval('.editor .gutter', (g) => {
    const a = document.querySelector('#draft'), gr = g.getBoundingClientRect(), ar = a.getBoundingClientRect();
    const nums = g.textContent.trim().split('\n');
    return { lines: a.value.split('\n').length, numbers: nums.length, last: nums[nums.length - 1], left: gr.right <= ar.left + 1, shown: gr.width > 0 };
  });
  check('the editor numbers its lines, left of the text', gutter.shown && gutter.left && gutter.numbers === gutter.lines
    && gutter.last === String(gutter.lines), gutter);
  const pos = await page.$eval('.diags li.diag-error button.pos', (b) => b.textContent);
  await page.click('.diags li.diag-error button.pos');
  const caret = await page.evaluate(() => {
    const a = document.activeElement, before = a.value.slice(0, a.selectionStart).split('\n');
    return a.id + ' ' + before.length + ':' + (before[before.length - 1].length + 1);
  });
  check('a diagnostic is a button that puts the caret on its line:column', caret === 'draft ' + pos, [caret, pos]);
  const tops = await page.$eval('.editor .gutter', (g) => [g.scrollTop, document.querySelector('#draft').scrollTop]);
  check('  scrolled there, the line numbers with the text', tops[1] > 0 && Math.abs(tops[0] - tops[1]) < 1, tops);
  await shot('draft');
  // publish: a broken draft is refused with its error, a good one becomes the active version
  check('the draft names the graph it came from', (await page.$eval('#draft-name', (i) => i.value)) === 'triage');
  await page.click('#publish');
  const refused = await page.waitForSelector('#draft-result .error[role=alert]', WAIT).catch(() => null);
  // (the browser logs the refusal's 422 itself: expected here, so not a problem)
  for (let i = problems.length - 1; i >= 0; i--) if (/status of 422 /.test(problems[i])) problems.splice(i, 1);
  check('publishing a broken draft shows its error', refused !== null
    && (await refused.evaluate((a) => a.textContent)).startsWith('validation: '), refused && await refused.evaluate((a) => a.textContent));
  check('  and its diagnostics, clickable', (await texts('#draft-result .diags li.diag-error')).some((x) => x.includes("'nowhere'"))
    && (await page.$$('#draft-result .diags li.diag-error button.pos')).length > 0);
  await page.$eval('#draft', (a) => { a.value = a.value.replace('next: "nowhere"', 'next: "incident"')
    .replace('"page_on_call": $upper("x")}', '"page_on_call": true}').replace('title: "Ticket triage"', 'title: "Ticket triage, v2"'); });
  await page.click('#publish');
  const pub2 = await page.waitForSelector('#published', WAIT).catch(() => null);
  check('publish creates a new active version', pub2 !== null && /triage v2, now the active version/.test(await pub2.evaluate((p) => p.textContent)),
    pub2 && await pub2.evaluate((p) => p.textContent));
  await page.click('#published a');
  await page.waitForFunction(() => { const p = document.querySelector('pre.source'); return p && p.textContent.includes('Ticket triage, v2'); }, WAIT);
  check('  the graph page shows it active', (await texts('.versions li')).some((l) => l.startsWith('v2') && l.includes('active')));

  // ---- executions: empty, then live as a tool is called
  await page.goto(pub + '/console#/t/' + tenant + '/executions?live=1', { waitUntil: 'networkidle0' });
  await page.waitForSelector('form.filters', WAIT);
  check('empty state before any call', (await page.$('p.empty')) !== null);
  const client = new Client({ name: 'graphgate-console-test', version: '1.0.0' }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(new URL(pub + '/mcp/' + tenant + '/triage'),
    { requestInit: { headers: { Authorization: 'Bearer ' + key } } }));
  // a W3C trace context in params._meta: the execution page shows its trace id
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const res = await client.callTool({ name: 'triage', arguments: { severity: 'critical', tier: 'free' },
    _meta: { traceparent: '00-' + traceId + '-00f067aa0ba902b7-01' } });
  check('tool called through the SDK client', res && !res.isError && JSON.stringify(res).includes('incident'), res);
  await client.close();
  const row = await page.waitForSelector('tbody tr .st-succeeded', WAIT).catch(() => null);
  check('the new execution appears in the live list', row !== null);
  await shot('executions');

  // filters: status failed → empty; tool triage → the row
  await page.select('#f-status', 'failed');
  await page.click('form.filters button[type=submit]');
  await page.waitForFunction(() => location.hash.includes('status=failed') && document.querySelector('p.empty'), WAIT);
  check('status filter failed → empty state', true);
  await page.select('#f-status', '');
  await page.type('#f-tool', 'triage');
  await page.click('form.filters button[type=submit]');
  await page.waitForSelector('tbody tr a.mono', WAIT);
  check('tool filter keeps the run', (await texts('tbody tr td:nth-child(3)')).every((x) => x === 'triage'));

  // ---- one execution: timeline and path
  await page.click('tbody tr a.mono');
  await page.waitForSelector('ol.timeline li.step', WAIT);
  await page.waitForSelector('svg.diagram .node.visited', WAIT);
  const steps = await page.$$eval('ol.timeline li.step', (li) => li.map((s) => s.dataset.node));
  check('timeline lists the nodes in run order', JSON.stringify(steps) === JSON.stringify(['entry', 'route', 'incident', 'exit']), steps);
  check('each step shows its start and duration', (await texts('ol.timeline .step-head .muted')).every((x) => /^\+.* · .*(ms|s)$/.test(x)));
  check('each step has a bar', (await page.$$eval('ol.timeline .bar', (b) => b.filter((x) => x.style.width).length)) === 4);
  await page.$$eval('ol.timeline details', (d) => d.forEach((x) => { x.open = true; }));
  check('input and output of a step shown', (await page.$eval('#step-2 details', (d) => d.textContent)).includes('"queue": "incident"'));
  const visited = await page.$$eval('svg.diagram .node.visited', (g) => g.map((n) => n.dataset.node).sort());
  check('path highlighted on the diagram', JSON.stringify(visited) === JSON.stringify(['entry', 'exit', 'incident', 'route']), visited);
  check('branches not taken dimmed', (await page.$$eval('svg.diagram .node.skipped', (g) => g.length)) === 2);
  check('edges taken highlighted', (await page.$$eval('svg.diagram path.edge.taken', (p) => p.length)) === 3);
  check('the execution shows the trace id of the call', (await page.$eval('code.trace-id', (c) => c.textContent).catch(() => '')) === traceId);
  await shot('execution');

  // keyboard: a diagram node is focusable and Enter moves to its timeline step
  await page.$eval('svg.diagram .node[data-node="incident"]', (g) => g.focus());
  await page.keyboard.press('Enter');
  check('Enter on a diagram node focuses its step', await page.evaluate(() => document.activeElement.dataset.node === 'incident'));

  // ---- a failing run at 1366 px: the table, the failed node in red, the error inside its step
  await page.setViewport({ width: 1366, height: 800 });
  const c3 = new Client({ name: 'graphgate-console-test', version: '1.0.0' }, { capabilities: {} });
  await c3.connect(new StreamableHTTPClientTransport(new URL(pub + '/mcp/' + tenant + '/fail'),
    { requestInit: { headers: { Authorization: 'Bearer ' + key } } }));
  const r3 = await c3.callTool({ name: 'boom', arguments: {} });
  check('the failing tool fails', r3 && r3.isError === true, r3);
  await c3.close();
  await page.goto(pub + '/console#/t/' + tenant + '/executions', { waitUntil: 'networkidle0' });
  await page.waitForSelector('tbody tr .st-failed', WAIT);
  const ids = await page.$$eval('table.executions tbody tr td:first-child a', (as) => as.map((a) => [a.textContent, a.title, a.getAttribute('href')]));
  check('execution ids shortened to 8 characters, the full id in the tooltip and link', ids.length >= 2 && ids.every(([text, title, href]) =>
    text.length === 8 && /^[0-9a-f]{32}$/.test(title) && title.startsWith(text) && href === '#/x/' + title), ids);
  const broken = await page.$$eval('table.executions td', (tds) => tds.flatMap((td) => {
    const out = [], walk = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
    for (let n; (n = walk.nextNode());) {
      for (const m of n.data.matchAll(/\S+/g)) {
        const r = document.createRange();
        r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
        if (new Set([...r.getClientRects()].filter((x) => x.width > 0).map((x) => Math.round(x.top))).size > 1) out.push(m[0]);
      }
    }
    return out;
  }));
  check('no word in the executions table is broken across lines', broken.length === 0, broken);
  check('the executions page fits 1366 px', await fitsWidth(), await width());
  await page.click('tbody tr:has(.st-failed) a.mono');
  await page.waitForSelector('svg.diagram .node.failed', WAIT);
  check('the failed node is red in the diagram', (await page.$eval('svg.diagram .node[data-node="bad"] rect', (r) => getComputedStyle(r).stroke)) === RED);
  check('  and red in the timeline', (await page.$eval('ol.timeline li.step.failed', (s) => getComputedStyle(s).borderTopColor)) === RED);
  check('  only the failed node', JSON.stringify(await page.$$eval('svg.diagram .node.failed', (g) => g.map((n) => n.dataset.node))) === '["bad"]');
  const callerText = await page.$eval('dl.facts dd.caller', (d) => d.textContent).catch(() => null);
  check('the execution names its caller (the API key id)', /^key [0-9a-f]{16}$/.test(callerText || ''), callerText);
  await page.$eval('ol.timeline li.step.failed details', (d) => { d.open = true; });
  const errPre = await page.$eval('ol.timeline li.step.failed pre.err-text', (p) =>
    ({ text: p.textContent, ws: getComputedStyle(p).whiteSpace, fits: p.scrollWidth <= p.clientWidth }));
  check('an expanded failed step keeps the page at 1366 px', await fitsWidth(), await width());
  check('  its error wraps inside the step', errPre.ws === 'pre-wrap' && errPre.fits, errPre);
  check('  its error unescaped: a real line break and plain quotes', errPre.text.includes('first line\nsecond "quoted" part x')
    && !errPre.text.includes('\\n') && !errPre.text.includes('\\"'), errPre.text);
  check('the tenant key keeps its navigation on an execution page', JSON.stringify(await texts('#nav a')) === '["Graphs","Executions","Node specs"]',
    await texts('#nav a'));
  await shot('execution-failed');
  await page.setViewport({ width: 1280, height: 800 });

  // ---- a narrow window
  await page.setViewport({ width: 400, height: 800 });
  await new Promise((r) => setTimeout(r, 200));
  check('no horizontal page scroll at 400 px', await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1),
    await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]));
  await shot('execution-narrow');
  await page.setViewport({ width: 1280, height: 800 });

  // ---- the node-spec registry: browse, search, one spec
  await page.click('#nav a[href="#/specs"]');
  await page.waitForSelector('.spec-types section', WAIT);
  check('node specs browsed by type', (await texts('.spec-types h2')).some((h) => h.startsWith('TRIGGER (')));
  await page.type('#s-q', 'slack message');
  await page.keyboard.press('Enter');
  await page.waitForSelector('ol.results li a', WAIT);
  const hits = await texts('ol.results li a');
  check('search finds the Slack nodes', hits.some((h) => h.includes('SLACK')), hits);
  await page.click('ol.results li a');
  await page.waitForSelector('table.spec-fields', WAIT);
  check('one spec shown', (await page.$eval('h1', (h) => h.textContent)).includes('SLACK'));
  await page.goto(pub + '/console#/specs/EXTERNAL_ACTION/SLACK', { waitUntil: 'networkidle0' });
  await page.waitForFunction(() => document.querySelector('h1').textContent === 'EXTERNAL_ACTION / SLACK' && document.querySelector('table.spec-fields'), WAIT);
  check('its fields as tables with type and description', JSON.stringify(await page.$eval('table.spec-fields', (t) => [...t.tHead.rows[0].cells].map((c) => c.textContent)))
    === '["Field","Type","Required","Default","Description"]');
  const action = await page.$$eval('table.spec-fields tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent))
    .find((c) => c[0] === 'action_type'));
  check('  a field: its type, whether required and its description', action && action[1] === 'string' && action[2] === 'yes'
    && action[4].startsWith('Slack operation to perform.') && action[4].includes('send_message'), action);
  check('  the raw JSON folded away', await page.$eval('pre.source', (p) => !p.checkVisibility()));
  check('the navigation stays on a spec page', (await texts('#nav a')).includes('Executions'), await texts('#nav a'));
  await shot('spec');

  // ---- unknown page, sign out
  await page.goto(pub + '/console#/nowhere', { waitUntil: 'networkidle0' });
  check('an unknown page says so', await page.waitForFunction(() => document.querySelector('h1').textContent === 'Not found', WAIT)
    .then(() => true, () => false));
  await page.click('#signout');
  await page.waitForSelector('#key', WAIT);
  check('sign out forgets the key', await page.evaluate(() => sessionStorage.length === 0));
  check('no browser console errors, page errors or failed requests', problems.length === 0, problems);

  // ---- a wrong key: a clear error (the browser itself logs the 401, so errors are expected now)
  await page.type('#key', 'gg_nope_nope');
  await page.keyboard.press('Enter');
  const alert = await page.waitForSelector('[role=alert]', WAIT).catch(() => null);
  check('a wrong key shows an error', alert !== null && (await alert.evaluate((a) => a.textContent)).includes('unauthorized'));
  await shot('signin-error');
  // a key without graphs:write: the code, the message and the missing scope
  await page.$eval('#key', (k) => { k.value = ''; });
  await page.type('#key', readerKey);
  await page.type('#tenant', tenant);
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => { const a = document.querySelector('#signin-error [role=alert]'); return a && a.textContent.includes('insufficient_scope'); }, WAIT);
  const scopeErr = await page.$eval('#signin-error [role=alert]', (a) => a.textContent);
  check('a missing scope is named', scopeErr.startsWith('insufficient_scope: ') && scopeErr.endsWith('(needs graphs:write)'), scopeErr);
  // the older 403 body ({"error": "code", "message", "required_scope"}) reads the same
  await page.setRequestInterception(true);
  const legacy = (req) => (req.url().includes('/admin/') ? req.respond({ status: 403, contentType: 'application/json',
    body: JSON.stringify({ error: 'insufficient_scope', message: 'Required scope: graphs:write', required_scope: 'graphs:write' }) })
    : req.continue());
  page.on('request', legacy);
  const prevAlert = await page.$('#signin-error [role=alert]');
  await page.click('form.signin button[type=submit]');
  await page.waitForFunction((prev) => { const a = document.querySelector('#signin-error [role=alert]'); return a && a !== prev; }, WAIT, prevAlert);
  const legacyErr = await page.$eval('#signin-error [role=alert]', (a) => a.textContent);
  check('  the older error shape too', legacyErr === 'insufficient_scope: Required scope: graphs:write (needs graphs:write)', legacyErr);
  page.off('request', legacy);
  await page.setRequestInterception(false);
  await page.$eval('#tenant', (k) => { k.value = ''; });

  // ---- an admin key: tenants, then a graph with a loop and a run through it
  await page.$eval('#key', (k) => { k.value = ''; });
  await page.type('#key', adminKey);
  await page.keyboard.press('Enter');
  await page.waitForSelector('table a[href="#/t/' + tenant + '"]', WAIT);
  check('admin: tenants listed', (await texts('tbody tr td:first-child')).includes(tenant));
  const acmeRow = await page.$$eval('table.tenants tbody tr', (trs, t) => trs.map((tr) => [...tr.cells].map((c) => c.textContent))
    .find((c) => c[0] === t), tenant);
  check('admin: a tenant\'s graph and key counts', acmeRow && acmeRow[2] === '5' && acmeRow[3] === '3', acmeRow);
  await page.click('table.tenants a[href="#/t/' + tenant + '/keys"]');
  await page.waitForSelector('form.keys-form', WAIT);
  const nKeys = await page.$$eval('table.keys tbody tr', (r) => r.length);
  await page.type('#k-name', 'from the console');
  await page.click('form.keys-form button[type=submit]');
  const secret = await page.waitForSelector('#new-secret', WAIT).catch(() => null);
  const secretText = secret ? await secret.evaluate((p) => p.textContent) : '';
  check('admin: a new key\'s secret shown once', /^gg_/.test(secretText), secretText);
  await shot('keys');
  check('  and listed with its name and scopes', (await page.$$eval('table.keys tbody tr', (trs) => trs.map((tr) => tr.cells[1].textContent + '|' + tr.cells[2].textContent)))
    .includes('from the console|tools:read, tools:execute') && (await page.$$eval('table.keys tbody tr', (r) => r.length)) === nKeys + 1);
  const works = await page.evaluate(async (k) => (await fetch('/admin/tenants/x/graphs', { headers: { Authorization: 'Bearer ' + k } })).status, secretText);
  check('  the secret is a working key (403 for a scope it lacks, not 401)', works === 403, works);
  const newId = await page.$$eval('table.keys tbody tr', (trs) => trs.find((tr) => tr.cells[1].textContent === 'from the console').cells[0].textContent);
  page.once('dialog', (d) => d.accept());
  await page.click('button.revoke[data-key="' + newId + '"]');
  await page.waitForFunction((id) => [...document.querySelectorAll('table.keys tbody tr')].some((tr) => tr.cells[0].textContent === id
    && tr.cells[5].textContent.startsWith('revoked')), WAIT, newId);
  const after = await page.evaluate(async (k) => (await fetch('/admin/tenants/x/graphs', { headers: { Authorization: 'Bearer ' + k } })).status, secretText);
  check('  revoked: the key no longer signs in', after === 401, after);
  check('  and the secret is gone from the page', !(await page.$eval('main', (m) => m.textContent)).includes(secretText));
  await page.goto(pub + '/console#/tenants', { waitUntil: 'networkidle0' });
  await page.waitForSelector('table a[href="#/t/' + tenant + '"]', WAIT);
  await page.click('table a[href="#/t/' + tenant + '"]');
  await page.waitForSelector('table a[href$="/g/collatz"]', WAIT);
  check('admin: the tenant\'s links in the navigation', (await texts('#nav a')).includes('Executions of ' + tenant));
  await page.click('table a[href$="/g/collatz"]');
  await page.waitForSelector('svg.diagram .node', WAIT);
  const loops = await page.$$eval('svg.diagram path.edge.loop title', (t) => t.map((x) => x.textContent));
  check('a loop is drawn as a loop edge', loops.length === 1 && loops[0].startsWith('check → step'), loops);
  check('  around the nodes, through none', (await loopCrossings()).length === 0, await loopCrossings());
  await page.goto(pub + '/console#/t/' + tenant + '/g/loops', { waitUntil: 'networkidle0' });
  await page.waitForSelector('svg.diagram .node[data-node="again"]', WAIT);
  const spin = await page.$$eval('svg.diagram path.edge.loop title', (t) => t.map((x) => x.textContent));
  check('a back-edge beside another node goes around it', JSON.stringify(spin) === '["again → route"]' && (await loopCrossings()).length === 0,
    [spin, await loopCrossings()]);
  await page.goto(pub + '/console#/t/' + tenant + '/g/collatz', { waitUntil: 'networkidle0' });
  await page.waitForSelector('a[href="#/t/' + tenant + '/executions?graph=collatz"]', WAIT);
  const c2 = new Client({ name: 'graphgate-console-test', version: '1.0.0' }, { capabilities: {} });
  await c2.connect(new StreamableHTTPClientTransport(new URL(pub + '/mcp/' + tenant + '/collatz'),
    { requestInit: { headers: { Authorization: 'Bearer ' + key } } }));
  const r2 = await c2.callTool({ name: 'collatz', arguments: { n: 6 } });
  check('collatz called', r2 && !r2.isError, r2);
  await c2.close();
  await page.click('a[href="#/t/' + tenant + '/executions?graph=collatz"]');
  await page.waitForSelector('tbody tr a.mono', WAIT);
  check('graph filter from the graph page', (await texts('tbody tr td:nth-child(2)')).every((x) => x.startsWith('collatz')));
  await page.click('tbody tr a.mono');
  await page.waitForSelector('svg.diagram .node.visited', WAIT);
  const n = await page.$$eval('ol.timeline li.step', (li) => li.length);
  const textsNav = await texts('#nav a');
  check('loop run: 21 steps in the timeline', n === 21, n);
  check('loop run: the loop node counted on the diagram', (await page.$eval('svg.diagram .node[data-node="step"] .node-type', (t) => t.textContent)) === 'transform ×9');
  const ctx = await page.$$eval('ol.timeline li.step[data-node="step"] .context', (c) => c.map((x) => x.textContent));
  check('replayed context: $executionCount before the 9th step is 8', ctx.length === 9 && ctx[8].includes('$executionCount("step") = 8'), ctx[8]);
  check('replayed context: $previousNode is the check before', ctx[8].includes('(output of check)'), ctx[8]);
  check('admin: the tenant\'s links stay in the navigation on an execution page',
    ['Tenants', 'Graphs of ' + tenant, 'Executions of ' + tenant].every((x) => textsNav.includes(x)), textsNav);
  await page.$$eval('ol.timeline details', (d) => d.forEach((x) => { x.open = true; }));
  await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight));
  const stuck = await page.evaluate(() => {
    const d = document.querySelector('section.sticky svg.diagram').getBoundingClientRect();
    const first = document.querySelector('ol.timeline li.step').getBoundingClientRect();
    return { scrolled: window.scrollY > 400, top: d.top, bottom: d.bottom, firstStep: first.top, h: window.innerHeight };
  });
  check('the diagram stays in view while the steps scroll', stuck.scrolled && stuck.firstStep < 0 && stuck.top >= 0 && stuck.top < stuck.h, stuck);
  await page.evaluate(() => window.scrollTo(0, 0));
  await shot('execution-loop');

  // ---- the time and duration filters, and a bad filter's error state
  const exe = pub + '/console#/t/' + tenant + '/executions';
  await page.goto(exe + '?min_ms=100000', { waitUntil: 'networkidle0' });
  await page.waitForFunction(() => { const m = document.querySelector('#f-min'); return m && m.value === '100000'; }, WAIT);
  check('min duration hides the short runs and says so', (await page.$('p.empty')) !== null
    && (await page.$eval('main', (m) => m.textContent)).includes('shorter than 100000 ms and hidden'));
  await page.goto(exe + '?since=2999-01-01T00:00:00Z', { waitUntil: 'networkidle0' });
  await page.waitForFunction(() => { const m = document.querySelector('#f-since'); return m && m.value.startsWith('2999'); }, WAIT);
  check('since in the future → empty state', (await page.$('p.empty')) !== null);
  await page.goto(exe + '?since=yesterday', { waitUntil: 'networkidle0' });
  const bad = await page.waitForSelector('[role=alert]', WAIT).catch(() => null);
  check('a bad since shows the API\'s error', bad !== null && (await bad.evaluate((a) => a.textContent)).includes('bad_request'));
  check('  beside the form, which stays with the value to fix', await page.evaluate(() => {
    const f = document.querySelector('form.filters'), e = document.querySelector('#filter-error [role=alert]');
    return f && e && f.nextElementSibling === e.parentNode && document.querySelector('#f-since').value === 'yesterday'
      && document.querySelector('#f-since').getAttribute('aria-invalid') === 'true' && document.querySelector('h1').textContent.startsWith('Executions of');
  }));
  check('  and the navigation', (await texts('#nav a')).includes('Executions of ' + tenant), await texts('#nav a'));

  // ---- pinned definition changes (issue 28): the diff shown, one approved, one rejected
  const ct = process.env.GG_CHANGES_TENANT;
  await page.goto(pub + '/console#/t/' + ct + '/changes', { waitUntil: 'networkidle0' });
  await page.waitForSelector('section.change', WAIT);
  const cards = () => page.$$eval('section.change', (cs) => cs.map((c) => ({ id: c.dataset.change, status: c.dataset.status,
    head: c.querySelector('h2').textContent, fields: c.querySelector('.fields').textContent,
    bad: [...c.querySelectorAll('.incompatible li')].map((l) => l.textContent),
    sus: (c.querySelector('.suspicious') || {}).textContent || '', def: (c.querySelector('pre.definition') || {}).textContent || '',
    buttons: [...c.querySelectorAll('button.decide')].map((b) => b.textContent) })));
  const listed = await cards();
  const ca = listed.find((c) => c.head === 'ca / add'), cr = listed.find((c) => c.head === 'cr / add');
  check('definition changes: both pending changes listed, each with Approve and Reject', ca && cr
    && [ca, cr].every((c) => c.status === 'pending' && c.buttons.join() === 'Approve,Reject'), listed);
  check('  the navigation links the page', (await texts('#nav a')).includes('Definition changes of ' + ct), await texts('#nav a'));
  check('  the diff names the fields changed', ca && ca.fields === 'description, inputSchema', ca);
  check('  the incompatible schema changes are flagged', ca && ca.bad.includes("inputSchema property 'b' removed")
    && ca.bad.includes("inputSchema property 'note' newly required"), ca);
  check('  in red', (await page.$eval('section.change .incompatible', (u) => getComputedStyle(u).color)) === RED);
  check('  the new definition is shown', ca && ca.def.includes('id_rsa') && ca.def.includes('"note"'), ca);
  check('  a hidden tag character is shown visibly (⟨U+E0041⟩) and named', cr && cr.def.includes('\u27e8U+E0041\u27e9')
    && !cr.def.includes('\u{E0041}') && cr.sus.includes('U+E0041'), cr);
  check('  no change page wider than the window', await fitsWidth(), await width());
  await shot('changes');
  await page.click('button.decide[data-change="' + ca.id + '"][data-action="approve"]');
  await page.waitForFunction((id) => document.querySelector('#change-result [role=status]')
    && !document.querySelector('section.change[data-change="' + id + '"]'), WAIT, ca.id);
  check('approve: the change leaves the list and the page says so',
    (await page.$eval('#change-result', (r) => r.textContent)) === 'The change of ca / add was approved.');
  await page.click('button.decide[data-change="' + cr.id + '"][data-action="reject"]');
  await page.waitForFunction((id) => { const c = document.querySelector('section.change[data-change="' + id + '"]');
    return c && c.dataset.status === 'rejected'; }, WAIT, cr.id);
  const decided = await cards();
  check('reject: the change stays listed as rejected, with no buttons', decided.length === 1 && decided[0].id === cr.id
    && decided[0].buttons.length === 0, decided);
} catch (e) {
  check('browser run', false, String(e && e.stack || e));
  const pages = await browser.pages().catch(() => []);
  if (pages.length) await pages[pages.length - 1].screenshot({ path: path.join(out, 'failure.png'), fullPage: true }).catch(() => {});
  if (problems.length) console.log('# browser problems: ' + JSON.stringify(problems));
} finally {
  await finish(browser);
}
