/* console.js — graphgate's web console: hash-routed pages over the admin REST API, with the
 * signed-in key kept in sessionStorage only (gone when the tab closes). No framework, no
 * build step; every text from the server goes through textContent, never innerHTML. */
'use strict';

(() => {
  const KEY = 'graphgate.key', TENANT = 'graphgate.tenant';
  const main = document.getElementById('main');
  const nav = document.getElementById('nav');
  const signoutBtn = document.getElementById('signout');
  const status = document.getElementById('status');
  let timer = null;      /* the live-tail poll of the executions page */
  let routeSeq = 0;      /* a page whose data arrives after the route changed is dropped */
  let lastTenant = '';   /* the tenant an admin looked at last: its links stay in the nav */

  const session = {
    get key() { return sessionStorage.getItem(KEY) || ''; },
    get tenant() { return sessionStorage.getItem(TENANT) || ''; },
    get admin() { return !this.tenant; },
    set(key, tenant) { sessionStorage.setItem(KEY, key); sessionStorage.setItem(TENANT, tenant); },
    clear() { sessionStorage.removeItem(KEY); sessionStorage.removeItem(TENANT); oauth.clear(); },
  };

  /* ---- DOM helpers ------------------------------------------------------------------ */

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    setAttrs(e, attrs);
    for (const k of kids.flat()) if (k !== null && k !== undefined && k !== false) e.append(k);
    return e;
  }
  function svgEl(tag, attrs, ...kids) {
    const e = document.createElementNS('http://www.w3.org/2000/svg', tag);
    setAttrs(e, attrs);
    for (const k of kids.flat()) if (k !== null && k !== undefined) e.append(k);
    return e;
  }
  function setAttrs(e, attrs) {
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'text') e.textContent = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
  }
  const link = (href, text, attrs) => el('a', Object.assign({ href }, attrs || {}), text);
  const enc = encodeURIComponent;

  /* seq: the route the page was started for; a page whose data arrives after the user
   * moved on is dropped instead of replacing the newer one. */
  function render(seq, title, ...kids) {
    if (seq !== routeSeq) return;
    document.title = title + ' · graphgate console';
    main.replaceChildren(el('h1', { text: title }), ...kids.flat().filter((k) => k !== null && k !== undefined && k !== false));
    status.textContent = title + ' loaded';
  }
  /* "insufficient_scope: Required scope: graphs:write (needs graphs:write)": the code, the
   * message and the scope the key lacks. */
  function errorBox(e) {
    return el('div', { class: 'error', role: 'alert' },
      el('strong', { class: 'error-code', text: e.code ? e.code + ': ' : 'Error: ' }),
      el('span', { class: 'error-message', text: e.message || String(e) }),
      e.scope ? el('span', { class: 'error-scope', text: ' (needs ' + e.scope + ')' }) : null);
  }
  /* A run's error as text, unescaped: a string as it is; {code, message, …} as
   * "code: message" and then its other fields one a line ("position: 7"). */
  function errorText(e) {
    if (e === null || e === undefined) return '';
    if (typeof e !== 'object') return String(e);
    const head = [e.code, e.message].filter((v) => typeof v === 'string' && v).join(': ');
    const rest = Object.entries(e).filter(([k]) => k !== 'code' && k !== 'message')
      .map(([k, v]) => k + ': ' + (typeof v === 'string' ? v : JSON.stringify(v)));
    return [head || JSON.stringify(e)].concat(rest).join('\n');
  }
  const empty = (text) => el('p', { class: 'empty' }, text);
  const pretty = (v) => visible(JSON.stringify(v, null, 2));
  /* Invisible and direction-changing characters (tag characters, zero-width, bidi: the set
   * of src/util/suspicious.c) as ⟨U+XXXX⟩, so text a downstream controls shows what a model
   * would read. */
  const SUSPICIOUS = /[\u{E0000}-\u{E007F}\u200B-\u200F\u2060\uFEFF\u202A-\u202E\u2066-\u2069]/gu;
  const visible = (s) => (typeof s === 'string'
    ? s.replace(SUSPICIOUS, (c) => '\u27e8U+' + c.codePointAt(0).toString(16).toUpperCase().padStart(4, '0') + '\u27e9') : s);
  function when(iso) {
    if (!iso) return '—';
    const d = new Date(iso);
    return isNaN(d) ? String(iso) : d.toISOString().replace('T', ' ').replace(/\.\d+Z$|Z$/, ' UTC');
  }
  function ms(v) {
    if (typeof v !== 'number' || isNaN(v)) return '—';
    if (v < 1) return v.toFixed(3) + ' ms';
    return v < 1000 ? (Math.round(v * 10) / 10) + ' ms' : (v / 1000).toFixed(2) + ' s';
  }

  function table(caption, headers, rows, cls) {
    return el('div', { class: 'scroll' }, el('table', { class: cls },
      el('caption', { text: caption }),
      el('thead', {}, el('tr', {}, headers.map((h) => el('th', { scope: 'col', text: h })))),
      el('tbody', {}, rows.map((cells) => el('tr', {}, cells.map((c) => el('td', {}, c)))))));
  }

  /* ---- API -------------------------------------------------------------------------- */

  class ApiError extends Error {
    constructor(status, code, message, scope) { super(message); this.status = status; this.code = code; this.scope = scope; }
  }
  /* An error answer: {"error":{"code","message","required_scope"}}, or the older
   * {"error":"code","message":…,"required_scope":…} some 403s gave. */
  function apiError(r, answer) {
    const e = answer && answer.error;
    const o = e && typeof e === 'object' ? e : (answer || {});
    const code = typeof e === 'string' ? e : o.code;
    const err = new ApiError(r.status, code || 'http_' + r.status, o.message || r.statusText,
      typeof o.required_scope === 'string' ? o.required_scope : '');
    err.body = answer; /* the rest of it: a refused upload's "errors" and "warnings" */
    return err;
  }
  /* body: a string is sent as YAML, anything else as JSON; method defaults to POST with a
   * body, GET without. */
  async function api(path, body, method) {
    let r;
    await oauthFresh();
    const init = { headers: { Authorization: 'Bearer ' + session.key }, cache: 'no-store' };
    if (method) init.method = method;
    if (body !== undefined) {
      init.method = method || 'POST';
      init.headers['Content-Type'] = typeof body === 'string' ? 'application/yaml' : 'application/json';
      init.body = typeof body === 'string' ? body : JSON.stringify(body);
    }
    try {
      r = await fetch(path, init);
    } catch (e) {
      throw new ApiError(0, 'network', 'the gateway did not answer (' + e.message + ')');
    }
    let answer = null;
    try { answer = await r.json(); } catch (e) { answer = null; }
    if (!r.ok) throw apiError(r, answer);
    return answer;
  }

  /* ---- pages ------------------------------------------------------------------------ */

  function signInPage(message) {
    const keyIn = el('input', { id: 'key', name: 'key', type: 'password', required: true,
      autocomplete: 'off', spellcheck: 'false', 'aria-describedby': 'key-help' });
    const tenantIn = el('input', { id: 'tenant', name: 'tenant', type: 'text', autocomplete: 'off',
      spellcheck: 'false', 'aria-describedby': 'tenant-help' });
    const out = el('div', { id: 'signin-error' });
    message = message || oauthError;
    oauthError = null;
    if (message) out.append(errorBox(message));
    const form = el('form', { class: 'card signin', novalidate: true },
      el('label', { for: 'key', text: 'API key' }), keyIn,
      el('p', { id: 'key-help', class: 'help', text: 'Kept in this tab only (sessionStorage); every request uses its scopes.' }),
      el('label', { for: 'tenant', text: 'Tenant (leave empty for an admin key)' }), tenantIn,
      el('p', { id: 'tenant-help', class: 'help', text: 'A tenant key needs graphs:write to read graphs and executions.' }),
      el('button', { type: 'submit', text: 'Sign in' }), out);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const key = keyIn.value.trim(), tenant = tenantIn.value.trim();
      if (!key) { out.replaceChildren(errorBox({ code: 'missing_key', message: 'enter an API key' })); keyIn.focus(); return; }
      session.set(key, tenant);
      try {
        await api(tenant ? '/admin/tenants/' + enc(tenant) + '/graphs' : '/admin/tenants');
      } catch (e) {
        session.clear();
        out.replaceChildren(errorBox(e));
        return;
      }
      location.hash = tenant ? '#/t/' + enc(tenant) : '#/tenants';
    });
    render(routeSeq, 'Sign in', form, oauthForm());
    keyIn.focus();
  }

  async function tenantsPage() {
    const seq = routeSeq;
    const d = await api('/admin/tenants');
    const list = d.tenants || [];
    render(seq, 'Tenants', list.length
      ? table('Tenants (' + list.length + ')', ['Tenant', 'Created', 'Graphs', 'Active keys', 'Executions'], list.map((t) => {
        const name = typeof t === 'string' ? t : t.name;
        const count = (n) => typeof n === 'number' ? String(n) : '—';
        return [link('#/t/' + enc(name), name), when(t.created_at), count(t.graphs),
          link('#/t/' + enc(name) + '/keys', count(t.keys), { 'aria-label': 'Keys of ' + name + ': ' + count(t.keys) }),
          link('#/t/' + enc(name) + '/executions', 'executions')];
      }), 'tenants')
      : empty('No tenants yet. Create one with "graphgate tenant create NAME" or PUT /admin/tenants/NAME.'));
  }

  /* An admin's key management for one tenant: list, create (the secret shown once) and
   * revoke, through /admin/tenants/{t}/keys and DELETE /admin/keys/{id}. */
  const SCOPES = ['tools:read', 'tools:execute', 'graphs:write', 'health:check', 'admin'];
  async function keysPage(t) {
    const seq = routeSeq;
    const d = await api('/admin/tenants/' + enc(t) + '/keys');
    const list = d.keys || [];
    const out = el('div', { id: 'key-result', 'aria-live': 'polite' });
    const nameIn = el('input', { id: 'k-name', name: 'name', type: 'text', maxlength: 64, autocomplete: 'off' });
    const boxes = SCOPES.map((sc) => el('input', { type: 'checkbox', id: 'k-' + sc.replace(':', '-'), value: sc,
      checked: sc === 'tools:read' || sc === 'tools:execute' }));
    const form = el('form', { class: 'filters keys-form', 'aria-label': 'Create a key' },
      el('label', { for: 'k-name', text: 'Name' }), nameIn,
      el('fieldset', {}, el('legend', { text: 'Scopes' }), boxes.map((b) => el('span', { class: 'live' }, b,
        el('label', { for: b.id, text: b.value })))),
      el('button', { type: 'submit', text: 'Create key' }));
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const scopes = boxes.filter((b) => b.checked).map((b) => b.value);
      try {
        const k = await api('/admin/tenants/' + enc(t) + '/keys', { name: nameIn.value.trim(), scopes });
        /* the secret is in this answer only: shown once, never stored by the console */
        await keysPage(t);
        document.getElementById('key-result').replaceChildren(el('div', { class: 'card secret', role: 'status' },
          el('p', {}, 'Key ', el('code', { text: k.id }), ' created. Copy its secret now; it is not shown again:'),
          el('pre', { class: 'wrap', id: 'new-secret', text: k.key })));
      } catch (e) {
        out.replaceChildren(errorBox(e));
      }
    });
    const revoke = (k) => el('button', { type: 'button', class: 'revoke', 'data-key': k.id, text: 'Revoke',
      'aria-label': 'Revoke key ' + k.id, onclick: async () => {
        if (!window.confirm('Revoke key ' + k.id + (k.name ? ' (' + k.name + ')' : '') + '? Calls with it stop at once.')) return;
        try {
          await api('/admin/keys/' + enc(k.id), undefined, 'DELETE');
          await keysPage(t);
        } catch (e) {
          out.replaceChildren(errorBox(e));
        }
      } });
    render(seq, 'Keys of ' + t, form, out, list.length
      ? table('Keys (' + list.length + ')', ['Id', 'Name', 'Scopes', 'Created', 'Last used', 'State'], list.map((k) => [
        el('code', { text: k.id }), k.name || '—', (Array.isArray(k.scopes) ? k.scopes : [String(k.scopes)]).join(', '),
        when(k.created_at), when(k.last_used_at), k.revoked ? 'revoked ' + when(k.revoked_at) : revoke(k)]), 'keys')
      : empty('No keys yet.'));
  }

  async function graphsPage(t) {
    const seq = routeSeq;
    const d = await api('/admin/tenants/' + enc(t) + '/graphs');
    const list = d.graphs || [];
    render(seq, 'Graphs of ' + t,
      el('p', {}, link('#/t/' + enc(t) + '/executions', 'Executions of ' + t)),
      list.length
        ? table('Graphs (' + list.length + ')', ['Graph', 'Active version', 'Versions', 'Updated'],
          list.map((g) => [link('#/t/' + enc(t) + '/g/' + enc(g.name), g.name), String(g.active_version),
            String(g.versions), when(g.updated_at)]))
        : empty('No graphs yet. Upload one with PUT /admin/tenants/' + t + '/graphs/NAME (YAML body).'));
  }

  async function graphPage(t, g, version, toolName) {
    const seq = routeSeq;
    const base = '/admin/tenants/' + enc(t) + '/graphs/' + enc(g);
    const [active, vers] = await Promise.all([api(base), api(base + '/versions')]);
    const v = version || active.version;
    const doc = await api('/console/api/tenants/' + enc(t) + '/graphs/' + enc(g) + '/versions/' + v + '/document');
    const tools = (doc.document && Array.isArray(doc.document.tools)) ? doc.document.tools : [];
    const tool = tools.find((x) => x.name === toolName) || tools[0];
    const here = '#/t/' + enc(t) + '/g/' + enc(g) + '/v/' + v;

    const versions = el('ol', { class: 'versions', reversed: true }, (vers.versions || []).map((x) =>
      el('li', {}, link('#/t/' + enc(t) + '/g/' + enc(g) + '/v/' + x.version, 'v' + x.version,
        x.version === v ? { 'aria-current': 'page' } : {}),
        ' ', when(x.created_at), x.active ? el('span', { class: 'badge', text: 'active' }) : null)));
    const toolNav = el('nav', { class: 'tools', 'aria-label': 'Tools of ' + g }, tools.map((x) =>
      link(here + '/tool/' + enc(x.name), x.name, x === tool ? { 'aria-current': 'true', class: 'on' } : {})));
    const source = v === active.version
      ? el('pre', { class: 'source', tabindex: '0', 'aria-label': 'YAML source of v' + v, text: active.source })
      : el('pre', { class: 'source', tabindex: '0', 'aria-label': 'Source of v' + v + ' as JSON', text: pretty(doc.document) });

    render(seq, g + ' (' + t + ')',
      el('p', {}, 'Active version ', el('strong', { text: 'v' + active.version }),
        v !== active.version ? ' · viewing v' + v : '', ' · ',
        link('#/t/' + enc(t) + '/executions?graph=' + enc(g), 'Executions of this graph'), ' · ',
        link('#/t/' + enc(t) + '/draft?from=' + enc(g), 'Edit, check and publish a draft of it')),
      el('div', { class: 'split' },
        el('section', { 'aria-labelledby': 'h-diagram' },
          el('h2', { id: 'h-diagram', text: tool ? 'Tool ' + tool.name : 'Tools' }), toolNav,
          tool ? el('p', { class: 'help', text: visible(tool.description || '') }) : null,
          tool ? diagram(tool, null) : empty('This version defines no tools.')),
        el('section', { 'aria-labelledby': 'h-source' },
          el('h2', { id: 'h-source', text: 'Source v' + v }), source,
          el('h2', { text: 'Versions' }), versions)));
  }

  async function executionsPage(t, q) {
    const seq = routeSeq;
    const params = new URLSearchParams();
    for (const k of ['graph', 'tool', 'status', 'since', 'cursor']) if (q.get(k)) params.set(k, q.get(k));
    params.set('limit', '50');
    /* a refused filter (a bad "since") is said beside the form, which stays to fix it */
    let failure = null;
    const [d, gl] = await Promise.all([
      api('/admin/tenants/' + enc(t) + '/executions?' + params).catch((e) => {
        if (e.status === 401 || !e.status) throw e;
        failure = e;
        return {};
      }),
      api('/admin/tenants/' + enc(t) + '/graphs')]);
    /* the API has no duration filter: the page filters what it fetched and says so */
    const minMs = parseFloat(q.get('min_ms') || '');
    const fetched = d.executions || [];
    const list = isNaN(minMs) ? fetched : fetched.filter((x) => (x.duration_ms || 0) >= minMs);
    const graphSel = el('select', { id: 'f-graph', name: 'graph' }, el('option', { value: '', text: 'any' }),
      (gl.graphs || []).map((g) => el('option', { value: g.name, text: g.name, selected: q.get('graph') === g.name })));
    const toolIn = el('input', { id: 'f-tool', name: 'tool', type: 'text', value: q.get('tool') || '' });
    const statusSel = el('select', { id: 'f-status', name: 'status' },
      ['', 'running', 'succeeded', 'failed', 'cancelled', 'interrupted', 'invalid_input'].map((s) =>
        el('option', { value: s, text: s || 'any', selected: (q.get('status') || '') === s })));
    const sinceIn = el('input', { id: 'f-since', name: 'since', type: 'text', value: q.get('since') || '',
      placeholder: '2026-01-31T12:00:00Z', size: 22, 'aria-describedby': 'f-since-help' });
    const minIn = el('input', { id: 'f-min', name: 'min_ms', type: 'number', min: 0, step: 'any', value: q.get('min_ms') || '', size: 6 });
    const live = el('input', { id: 'f-live', type: 'checkbox', checked: q.get('live') === '1' });
    const form = el('form', { class: 'filters', role: 'search', 'aria-label': 'Filter executions' },
      el('label', { for: 'f-graph', text: 'Graph' }), graphSel,
      el('label', { for: 'f-tool', text: 'Tool' }), toolIn,
      el('label', { for: 'f-status', text: 'Status' }), statusSel,
      el('label', { for: 'f-since', text: 'Since' }), sinceIn,
      el('span', { id: 'f-since-help', class: 'sr-only', text: 'ISO 8601 UTC time or milliseconds since 1970' }),
      el('label', { for: 'f-min', text: 'Min duration (ms)' }), minIn,
      el('button', { type: 'submit', text: 'Apply' }),
      el('span', { class: 'live' }, live, el('label', { for: 'f-live', text: 'Live (every 2 s)' })));
    const go = () => {
      const p = new URLSearchParams();
      if (graphSel.value) p.set('graph', graphSel.value);
      if (toolIn.value.trim()) p.set('tool', toolIn.value.trim());
      if (statusSel.value) p.set('status', statusSel.value);
      if (sinceIn.value.trim()) p.set('since', sinceIn.value.trim());
      if (minIn.value.trim()) p.set('min_ms', minIn.value.trim());
      if (live.checked) p.set('live', '1');
      location.hash = '#/t/' + enc(t) + '/executions' + (p.toString() ? '?' + p : '');
    };
    form.addEventListener('submit', (ev) => { ev.preventDefault(); go(); });
    live.addEventListener('change', go);

    const rows = list.map((x) => [
      /* 8 hex digits tell runs apart on a page; the full id is in the link and its tooltip */
      link('#/x/' + enc(x.id), String(x.id).slice(0, 8), { class: 'mono', title: x.id, 'aria-label': 'Execution ' + x.id }),
      link('#/t/' + enc(t) + '/g/' + enc(x.graph) + '/v/' + x.version, x.graph + ' v' + x.version),
      x.tool, el('span', { class: 'st st-' + x.status, text: x.status }), when(x.started_at), ms(x.duration_ms),
      x.error ? el('span', { class: 'err-text', text: errorText(x.error).split('\n')[0] }) : '']);
    const more = d.next_cursor
      ? el('p', {}, link('#/t/' + enc(t) + '/executions?' + new URLSearchParams(Object.assign(
        Object.fromEntries(q), { cursor: d.next_cursor })), 'Older executions')) : null;
    if (failure) {
      if (/^since/.test(failure.message)) sinceIn.setAttribute('aria-invalid', 'true');
      return render(seq, 'Executions of ' + t, form, el('div', { id: 'filter-error' }, errorBox(failure)));
    }
    render(seq, 'Executions of ' + t, form,
      list.length < fetched.length ? el('p', { class: 'muted', text: (fetched.length - list.length) +
        ' of the ' + fetched.length + ' fetched runs are shorter than ' + minMs + ' ms and hidden.' }) : null,
      list.length ? table('Executions (' + list.length + (d.next_cursor ? '+' : '') + ')',
        ['Id', 'Graph', 'Tool', 'Status', 'Started', 'Duration', 'Error'], rows, 'executions')
        : empty('No executions match. Call a tool of one of this tenant\'s graphs (POST /mcp/' + t + '/GRAPH) and it shows here.'),
      more);
    if (live.checked && seq === routeSeq) timer = setTimeout(() => route(), 2000);
  }

  async function executionPage(id) {
    const seq = routeSeq;
    const x = await api('/admin/executions/' + enc(id) + (oauth.info ? '?tenant=' + enc(session.tenant) : ''));
    if (seq === routeSeq && x.tenant) navigation(x.tenant);
    const nodes = Array.isArray(x.nodes) ? x.nodes : [];
    /* Nodes run one after another, so a step starts no earlier than the one before ended:
     * that keeps the waterfall readable when a run is shorter than the timestamps' 1 ms. */
    const t0 = Date.parse(x.started_at);
    const offs = [];
    nodes.forEach((n, i) => {
      const ts = Date.parse(n.started_at) - t0;
      const prevEnd = i ? offs[i - 1] + (nodes[i - 1].duration_ms || 0) : 0;
      offs.push(Math.max(isNaN(ts) ? 0 : ts, prevEnd));
    });
    const last = nodes.length ? offs[nodes.length - 1] + (nodes[nodes.length - 1].duration_ms || 0) : 0;
    const total = Math.max(x.duration_ms || 0, last) || 1;

    const seenCount = new Map();
    const rows = nodes.map((n, i) => {
      const off = offs[i];
      /* what the history functions saw when this node started: $previousNode() (the output
       * of the step before) and $executionCount(id) (runs so far, this one not counted) */
      const ctx = el('p', { class: 'context' }, el('span', { class: 'muted', text: 'Context at step ' + (i + 1) + ': ' }),
        el('code', { text: '$previousNode() = ' + (i ? clip(JSON.stringify(nodes[i - 1].output) || 'null', 80) +
          ' (output of ' + nodes[i - 1].node_id + ')' : 'null') }), ' · ',
        el('code', { text: '$executionCount("' + n.node_id + '") = ' + (seenCount.get(n.node_id) || 0) }),
        seenCount.size ? [' · ', el('span', { class: 'muted', text: 'counts so far: ' +
          [...seenCount].map(([k, c]) => k + ' ×' + c).join(', ') })] : null);
      seenCount.set(n.node_id, (seenCount.get(n.node_id) || 0) + 1);
      const bar = el('span', { class: 'bar' + (n.error ? ' bar-err' : '') });
      bar.style.marginLeft = (100 * off / total).toFixed(2) + '%';
      bar.style.width = Math.max(0.5, 100 * (n.duration_ms || 0) / total).toFixed(2) + '%';
      const detail = el('details', {}, el('summary', { text: 'input / output' + (n.error ? ' / error' : '') + ' / context' }), ctx,
        el('h4', { text: 'Input' }), el('pre', { text: pretty(n.input) }),
        el('h4', { text: 'Output' }), el('pre', { text: pretty(n.output) }),
        n.error ? [el('h4', { text: 'Error' }), el('pre', { class: 'err-text wrap', text: errorText(n.error) })] : null);
      return el('li', { id: 'step-' + i, class: 'step' + (n.error ? ' failed' : ''), tabindex: '-1',
        'data-node': n.node_id },
        el('div', { class: 'step-head' },
          el('span', { class: 'step-n', text: String(i + 1) }),
          el('strong', { class: 'mono', text: n.node_id }),
          el('span', { class: 'type type-' + n.node_type, text: n.node_type }),
          el('span', { class: 'muted', text: '+' + ms(off) + ' · ' + ms(n.duration_ms) })),
        el('div', { class: 'track', 'aria-hidden': 'true' }, bar), detail);
    });
    const timeline = nodes.length
      ? el('ol', { class: 'timeline', 'aria-label': 'Timeline: ' + nodes.length + ' steps' }, rows)
      : empty('No node records were kept for this run.');
    const diag = el('div', { class: 'diagram-slot' }, el('p', { class: 'muted', text: 'Loading diagram…' }));
    const t = x.tenant;
    render(seq, 'Execution ' + x.id,
      el('dl', { class: 'facts' },
        el('dt', { text: 'Status' }), el('dd', {}, el('span', { class: 'st st-' + x.status, text: x.status })),
        el('dt', { text: 'Graph' }), el('dd', {}, link('#/t/' + enc(t) + '/g/' + enc(x.graph) + '/v/' + x.version + '/tool/' + enc(x.tool),
          t + ' / ' + x.graph + ' v' + x.version)),
        el('dt', { text: 'Tool' }), el('dd', { text: x.tool }),
        /* who called: an OAuth principal (subject, client, issuer), else the API key's id */
        x.caller ? [el('dt', { text: 'Caller' }), el('dd', { class: 'caller' }, el('strong', { text: x.caller.subject }),
          el('span', { class: 'muted', text: ' via ' + (x.caller.client_id || '?') + ' · ' + x.caller.issuer }))]
          : x.key_id ? [el('dt', { text: 'Caller' }), el('dd', { class: 'caller' }, 'key ', el('code', { text: x.key_id }))] : null,
        el('dt', { text: 'Started' }), el('dd', { text: when(x.started_at) }),
        el('dt', { text: 'Duration' }), el('dd', { text: ms(x.duration_ms) }),
        x.trace_id ? [el('dt', { text: 'Trace' }), el('dd', {}, el('code', { class: 'trace-id', text: x.trace_id }))] : null,
        x.error ? [el('dt', { text: 'Error' }), el('dd', { class: 'err-text wrap', text: errorText(x.error) })] : null),
      x.nodes_truncated ? el('p', { class: 'warn', text: x.nodes_dropped + ' node records were dropped (history limits).' }) : null,
      el('div', { class: 'split' },
        el('section', { class: 'sticky', 'aria-labelledby': 'h-path' }, el('h2', { id: 'h-path', text: 'Path taken' }), diag),
        el('section', { 'aria-labelledby': 'h-timeline' }, el('h2', { id: 'h-timeline', text: 'Timeline' }), timeline)),
      el('details', {}, el('summary', { text: 'Arguments and result' }),
        el('h4', { text: 'Arguments' }), el('pre', { text: pretty(x.arguments) }),
        el('h4', { text: 'Result' }), el('pre', { text: pretty(x.result) })));

    try {
      const doc = await api('/console/api/tenants/' + enc(t) + '/graphs/' + enc(x.graph) + '/versions/' + x.version + '/document');
      if (seq !== routeSeq) return;
      const tool = ((doc.document && doc.document.tools) || []).find((y) => y.name === x.tool);
      const failed = new Set(nodes.filter((n) => n.error).map((n) => n.node_id));
      diag.replaceChildren(tool ? diagram(tool, nodes.map((n) => n.node_id), null, failed) : empty('Tool ' + x.tool + ' is not in v' + x.version + '.'));
    } catch (e) {
      if (seq === routeSeq) diag.replaceChildren(errorBox(e));
    }
  }

  /* A draft checked by the gateway (POST /console/api/tenants/{t}/check, nothing stored):
   * every diagnostic listed with its position and placed on its node in the diagrams. */
  async function draftPage(t, q) {
    const seq = routeSeq;
    const from = q.get('from');
    const area = el('textarea', { id: 'draft', name: 'draft', rows: 18, spellcheck: 'false', wrap: 'off',
      'aria-describedby': 'draft-help' });
    if (from) area.value = (await api('/admin/tenants/' + enc(t) + '/graphs/' + enc(from))).source || '';
    const nameIn = el('input', { id: 'draft-name', name: 'name', type: 'text', value: from || '', required: true,
      maxlength: 64, spellcheck: 'false', autocomplete: 'off' });
    const out = el('div', { id: 'draft-result', 'aria-live': 'polite' });
    const publish = el('button', { type: 'button', id: 'publish', text: 'Publish' });
    const form = el('form', { class: 'draft' },
      el('label', { for: 'draft', text: 'Graph source (YAML or JSON)' }), editor(area),
      el('p', { id: 'draft-help', class: 'help', text: 'Check validates it like an upload (downstream policy excepted) and draws it; ' +
        'nothing is stored. Publish uploads it as a new version of the graph named below, which becomes the active one.' }),
      el('label', { for: 'draft-name', text: 'Graph name' }), nameIn,
      el('div', { class: 'actions' }, el('button', { type: 'submit', text: 'Check' }), publish));
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      out.replaceChildren(el('p', { class: 'muted', text: 'Checking…' }));
      try {
        const r = await api('/console/api/tenants/' + enc(t) + '/check', area.value);
        out.replaceChildren(...draftResult(r, area).flat().filter((k) => k !== null));
      } catch (e) {
        out.replaceChildren(errorBox(e));
      }
    });
    /* PUT /admin/tenants/{t}/graphs/{g}: a new version, active once it validates */
    publish.addEventListener('click', async () => {
      const g = nameIn.value.trim();
      if (!g) { out.replaceChildren(errorBox({ code: 'missing_name', message: 'name the graph to publish' })); nameIn.focus(); return; }
      out.replaceChildren(el('p', { class: 'muted', text: 'Publishing…' }));
      try {
        const r = await api('/admin/tenants/' + enc(t) + '/graphs/' + enc(g), area.value, 'PUT');
        out.replaceChildren(el('p', { class: 'ok-text', id: 'published' }, 'Published ',
          link('#/t/' + enc(t) + '/g/' + enc(g) + '/v/' + r.version, g + ' v' + r.version),
          r.active ? ', now the active version.' : '.'),
        (r.warnings || []).length ? el('p', { class: 'warn', text: r.warnings.length + ' warning(s): ' +
          r.warnings.map((w) => w.message).join('; ') }) : null);
      } catch (e) {
        const b = e.body || {};
        out.replaceChildren(errorBox(e), diagList((b.errors || []).concat(b.warnings || []), area));
      }
    });
    render(seq, 'Check or publish a draft (' + t + ')', form, out);
  }

  /* A textarea with line numbers beside it, scrolled with it (lines do not wrap). */
  function editor(area) {
    const gutter = el('pre', { class: 'gutter', 'aria-hidden': 'true' });
    const number = () => {
      const n = area.value.split('\n').length;
      if (gutter.dataset.lines !== String(n)) {
        gutter.textContent = Array.from({ length: n }, (_, i) => i + 1).join('\n') + '\n';
        gutter.dataset.lines = String(n);
        gutter.style.width = 'calc(' + (String(n).length + 1) + 'ch + 12px)';
      }
      gutter.scrollTop = area.scrollTop;
    };
    area.addEventListener('input', number);
    area.addEventListener('scroll', () => { gutter.scrollTop = area.scrollTop; });
    number();
    return el('div', { class: 'editor' }, gutter, area);
  }

  /* Put the caret on line:column (1-based) of the editor and scroll it into view. */
  function jumpTo(area, line, column) {
    const lines = area.value.split('\n');
    const l = Math.min(Math.max(1, line), lines.length);
    let at = 0;
    for (let i = 0; i < l - 1; i++) at += lines[i].length + 1;
    at += Math.min(Math.max(0, (column || 1) - 1), lines[l - 1].length);
    area.focus();
    area.setSelectionRange(at, at);
    const lh = parseFloat(getComputedStyle(area).lineHeight) || 18;
    area.scrollTop = Math.max(0, (l - 3) * lh);
    area.dispatchEvent(new Event('scroll'));
  }

  /* Diagnostics listed, each position a button that puts the caret there. */
  function diagList(diags, area) {
    return diags.length ? el('ul', { class: 'diags' }, diags.map((d) => el('li', { class: 'diag-' + d.severity },
      el('strong', { text: d.severity + ' ' }),
      d.line ? el('button', { type: 'button', class: 'mono pos', title: 'Go to line ' + d.line + ', column ' + d.column,
        text: d.line + ':' + d.column, onclick: () => jumpTo(area, d.line, d.column) }) : null, ' ',
      d.tool ? 'tool ' + d.tool + ' ' : '', d.node ? 'node ' + d.node + ': ' : '', d.message))) : null;
  }

  function draftResult(r, area) {
    const diags = r.diagnostics || [];
    const errors = diags.filter((d) => d.severity === 'error').length;
    const list = diagList(diags, area);
    const tools = (r.document && Array.isArray(r.document.tools)) ? r.document.tools : [];
    return [el('p', { class: r.ok ? 'ok-text' : 'err-text', role: r.ok ? null : 'alert',
      text: r.ok ? 'Valid' + (diags.length ? ', with ' + diags.length + ' warning(s).' : '.') : errors + ' error(s), ' + (diags.length - errors) + ' warning(s).' }),
    list,
    tools.map((tool) => el('section', { class: 'draft-tool', 'aria-label': 'Tool ' + tool.name },
      el('h2', { text: 'Tool ' + (tool.name || '?') }),
      diagram(tool, null, diags.filter((d) => d.tool === tool.name && d.node))))];
  }

  /* The node-spec service's tools through POST /mcp/invoke (needs tools:execute). */
  async function specTool(name, args) {
    const d = await api('/mcp/invoke', { name, arguments: args });
    const r = d && d.result;
    if (!r || r.isError) {
      const text = r && r.content && r.content[0] ? r.content[0].text : JSON.stringify(d && d.error);
      throw new ApiError(0, 'tool_error', name + ': ' + text);
    }
    return r.structuredContent;
  }

  async function specsPage(q) {
    const seq = routeSeq;
    const query = (q.get('q') || '').trim(), type = q.get('type') || '';
    const types = await specTool('get_node_types', {});
    const qIn = el('input', { id: 's-q', name: 'q', type: 'search', value: query, maxlength: 200 });
    const typeSel = el('select', { id: 's-type', name: 'type' }, el('option', { value: '', text: 'any' }),
      Object.keys(types).map((t) => el('option', { value: t, text: t, selected: t === type })));
    const form = el('form', { class: 'filters', role: 'search', 'aria-label': 'Search node specifications' },
      el('label', { for: 's-q', text: 'Search' }), qIn, el('label', { for: 's-type', text: 'Type' }), typeSel,
      el('button', { type: 'submit', text: 'Search' }));
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const p = new URLSearchParams();
      if (qIn.value.trim()) p.set('q', qIn.value.trim());
      if (typeSel.value) p.set('type', typeSel.value);
      location.hash = '#/specs' + (p.toString() ? '?' + p : '');
    });
    const specLink = (t, st) => link('#/specs/' + enc(t) + '/' + enc(st), t + ' / ' + st);
    let body;
    if (query) {
      const args = { query, limit: 50 };
      if (type) args.type_filter = type;
      const found = await specTool('search_nodes', args);
      const list = found.results || [];
      body = list.length
        ? el('ol', { class: 'results', 'aria-label': list.length + ' results' }, list.map((r) => el('li', {},
          specLink(r.node_type, r.subtype), el('p', { class: 'help', text: visible(r.description || '') }))))
        : empty('No node specification matches "' + query + '".');
    } else {
      body = el('div', { class: 'spec-types' }, Object.entries(types).filter(([t]) => !type || t === type).map(([t, subs]) =>
        el('section', { 'aria-label': t }, el('h2', { text: t + ' (' + subs.length + ')' }),
          el('ul', {}, subs.map((st) => el('li', {}, specLink(t, st)))))));
    }
    render(seq, 'Node specifications', form, body);
  }

  async function specPage(type, subtype) {
    const seq = routeSeq;
    const d = await specTool('get_node_details', { nodes: [{ node_type: type, subtype }] });
    const spec = (d.nodes || d.results || [d])[0] || d;
    render(seq, type + ' / ' + subtype, el('p', {}, link('#/specs', 'All node specifications')),
      spec && spec.description ? el('p', { text: visible(spec.description) }) : null,
      specBody(spec || {}),
      el('details', {}, el('summary', { text: 'The specification as JSON' }),
        el('pre', { class: 'source', tabindex: '0', 'aria-label': 'Specification of ' + type + ' / ' + subtype, text: pretty(spec) })));
  }

  /* A spec as tables: its scalar facts, each map of fields (configurations, input_params,
   * output_params: field → {type, required, default, options, description}) as a table of
   * fields, each list of objects (output_ports) as a table, anything else as JSON. */
  const cell = (v) => v === undefined ? '' : (v !== null && typeof v === 'object' ? el('code', { text: JSON.stringify(v) }) : String(v));
  const isObj = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
  function specBody(spec) {
    const facts = [], parts = [];
    for (const [k, v] of Object.entries(spec)) {
      /* the description leads the page; the legacy parameters list and the default_* maps
       * repeat what the field tables show */
      if (k === 'description' || k === 'parameters' || k.startsWith('default_')) continue;
      const title = k.replace(/_/g, ' ');
      if (v === null || typeof v !== 'object') facts.push(el('dt', { text: title }), el('dd', { text: String(v) }));
      else if (isObj(v) && Object.values(v).every(isObj) && Object.keys(v).length) {
        parts.push(el('h2', { text: title }), table(title + ' (' + Object.keys(v).length + ')',
          ['Field', 'Type', 'Required', 'Default', 'Description'], Object.entries(v).map(([f, d]) => [
            el('code', { text: f }), cell(d.type), d.required ? 'yes' : 'no', cell(d.default),
            visible(d.description || '') + (Array.isArray(d.options) ? ' One of: ' + d.options.join(', ') + '.' : '')]), 'spec-fields'));
      } else if (Array.isArray(v) && v.length && v.every(isObj)) {
        const cols = [...new Set(v.flatMap((o) => Object.keys(o)))];
        parts.push(el('h2', { text: title }), table(title + ' (' + v.length + ')', cols, v.map((o) => cols.map((c) => cell(o[c])))));
      } else if (Array.isArray(v) && v.every((x) => x === null || typeof x !== 'object')) {
        facts.push(el('dt', { text: title }), el('dd', { text: v.join(', ') }));
      } else {
        parts.push(el('h2', { text: title }), el('pre', { text: pretty(v) }));
      }
    }
    return [facts.length ? el('dl', { class: 'facts spec-facts' }, facts) : null].concat(parts);
  }

  /* ---- the diagram ------------------------------------------------------------------ */

  /* A switch rule in a few words: {"==": [{"var": "$.entry.tier"}, "pro"]} → $.entry.tier == "pro". */
  function ruleText(r, depth) {
    if (depth > 4) return '…';
    if (r === null || typeof r !== 'object') return JSON.stringify(r);
    if (Array.isArray(r)) return '[' + r.map((x) => ruleText(x, depth + 1)).join(', ') + ']';
    const ops = Object.keys(r);
    if (ops.length !== 1) return JSON.stringify(r);
    const op = ops[0], a = Array.isArray(r[op]) ? r[op] : [r[op]];
    if (op === 'var') return String(a[0]);
    if (op === 'and' || op === 'or') return a.map((x) => '(' + ruleText(x, depth + 1) + ')').join(' ' + op + ' ');
    if (op === '!') return 'not ' + ruleText(a[0], depth + 1);
    if (a.length === 2) return ruleText(a[0], depth + 1) + ' ' + op + ' ' + ruleText(a[1], depth + 1);
    return op + '(' + a.map((x) => ruleText(x, depth + 1)).join(', ') + ')';
  }
  const clip = (s, n) => s.length > n ? s.slice(0, n - 1) + '…' : s;

  function toolEdges(nodes) {
    const edges = [];
    for (const n of nodes) {
      if (n.type === 'switch' && Array.isArray(n.conditions)) {
        n.conditions.forEach((c, i) => {
          const to = c.next || c.target;
          if (to) edges.push({ from: n.id, to, label: c.rule !== undefined ? (i + 1) + ': ' + ruleText(c.rule, 0) : 'default' });
        });
        if (n.next) edges.push({ from: n.id, to: n.next, label: 'default' });
      } else if (n.next) edges.push({ from: n.id, to: n.next, label: '' });
    }
    return edges;
  }

  /* Layers by breadth-first distance from the entry; an edge to the same or an earlier
   * layer is a loop and is drawn around the nodes on the right. visited: node ids in run
   * order; failed: a Set of the ids of nodes that failed. */
  function diagram(tool, visited, diags, failed) {
    const problems = new Map();
    for (const d of diags || []) problems.set(d.node, (problems.get(d.node) || []).concat(d));
    const nodes = (Array.isArray(tool.nodes) ? tool.nodes : []).filter((n) => n && typeof n.id === 'string');
    for (const n of nodes) if (typeof n.type !== 'string') n.type = '?';
    if (!nodes.length) return empty('This tool has no nodes.');
    const byId = new Map(nodes.map((n) => [n.id, n]));
    const edges = toolEdges(nodes).filter((e) => byId.has(e.to));
    const depth = new Map();
    const start = nodes.find((n) => n.type === 'entry') || nodes[0];
    depth.set(start.id, 0);
    for (const queue = [start.id]; queue.length;) {
      const id = queue.shift();
      for (const e of edges) if (e.from === id && !depth.has(e.to)) { depth.set(e.to, depth.get(id) + 1); queue.push(e.to); }
    }
    let maxD = Math.max(...depth.values());
    for (const n of nodes) if (!depth.has(n.id)) depth.set(n.id, ++maxD);
    const layers = [];
    for (const n of nodes) (layers[depth.get(n.id)] = layers[depth.get(n.id)] || []).push(n);
    const W = 168, H = 46, GX = 36, GY = 84, PAD = 24, LOOP = 26;
    const cols = Math.max(...layers.map((l) => (l || []).length));
    const loops = edges.filter((e) => depth.get(e.to) <= depth.get(e.from));
    const LABEL = 170; /* room right of the loop arcs for their labels */
    const width = PAD * 2 + cols * W + (cols - 1) * GX + (loops.length ? LOOP * (loops.length + 1) + LABEL : 0);
    const LANE = 6; /* the gap between the lanes of two back-edges */
    const height = PAD * 2 + layers.length * H + (layers.length - 1) * GY + (loops.length ? 10 + LANE * loops.length : 0);
    const pos = new Map();
    layers.forEach((l, d) => (l || []).forEach((n, i) => {
      const rowW = l.length * W + (l.length - 1) * GX;
      const x0 = PAD + (cols * W + (cols - 1) * GX - rowW) / 2;
      pos.set(n.id, { x: x0 + i * (W + GX), y: PAD + d * (H + GY) });
    }));

    const seen = new Set(visited || []);
    const taken = new Set();
    if (visited) for (let i = 1; i < visited.length; i++) taken.add(visited[i - 1] + '\u0000' + visited[i]);
    const counts = new Map();
    for (const id of visited || []) counts.set(id, (counts.get(id) || 0) + 1);

    const uid = 'm' + Math.random().toString(36).slice(2, 8);
    const svg = svgEl('svg', { class: 'diagram', viewBox: '0 0 ' + width + ' ' + height, width, height,
      role: 'group', 'aria-label': 'Diagram of tool ' + tool.name + ': ' + nodes.length + ' nodes, ' + edges.length + ' edges' +
        (visited ? ', ' + seen.size + ' visited' : '') },
    svgEl('defs', {}, ['', '-on'].map((s) => svgEl('marker', { id: uid + s, viewBox: '0 0 10 10', refX: 9, refY: 5,
      markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse', class: 'arrow' + s },
    svgEl('path', { d: 'M0,0 L10,5 L0,10 z' })))));

    let loopN = 0;
    const labelsAt = new Map();
    const edgeLayer = svgEl('g', { class: 'edges' });
    const labelLayer = svgEl('g', { class: 'labels' });
    edges.forEach((e) => {
      const a = pos.get(e.from), b = pos.get(e.to);
      const on = taken.has(e.from + '\u0000' + e.to);
      let d, lx, ly;
      const loop = depth.get(e.to) <= depth.get(e.from);
      if (!loop) {
        const sx = a.x + W / 2, sy = a.y + H, tx = b.x + W / 2, ty = b.y;
        d = 'M' + sx + ',' + sy + ' C' + sx + ',' + (sy + GY / 2) + ' ' + tx + ',' + (ty - GY / 2) + ' ' + tx + ',' + ty;
        /* labels sit just above their target, stacked when several edges share one */
        const k = labelsAt.get(e.to) || 0;
        if (e.label) labelsAt.set(e.to, k + 1);
        lx = tx; ly = ty - 8 - 14 * k;
      } else {
        /* a back-edge leaves its source's bottom, runs in the gap below it to a lane right
         * of every column, up that lane to the gap above its target and enters it from the
         * top: it never crosses a node, so no other node seems to loop */
        const k = loopN++;
        const rx = PAD + cols * W + (cols - 1) * GX + LOOP * loopN;
        const sx = a.x + W - 16 - LANE * k, tx = b.x + W - 16 - LANE * k;
        const y1 = a.y + H + 10 + LANE * k, y2 = Math.max(4, b.y - 10 - LANE * k);
        d = 'M' + sx + ',' + (a.y + H) + ' V' + y1 + ' H' + rx + ' V' + y2 + ' H' + tx + ' V' + b.y;
        lx = rx + 4; ly = (y1 + y2) / 2 + 4;
      }
      edgeLayer.append(svgEl('path', { d, class: 'edge' + (loop ? ' loop' : '') + (on ? ' taken' : ''), 'marker-end': 'url(#' + uid + (on ? '-on' : '') + ')' },
        svgEl('title', { text: e.from + ' → ' + e.to + (e.label ? ' (' + e.label + ')' : '') })));
      if (e.label) labelLayer.append(svgEl('text', { x: lx, y: ly, class: 'edge-label', 'text-anchor': loop ? 'start' : 'middle' },
        svgEl('title', { text: e.label }), clip(e.label, 26)));
    });
    const nodeLayer = svgEl('g', { class: 'nodes' });
    for (const n of nodes) {
      const p = pos.get(n.id);
      const c = counts.get(n.id);
      const probs = problems.get(n.id) || [];
      const bad = probs.some((d) => d.severity === 'error') ? ' has-error' : (probs.length ? ' has-warning' : '');
      const fail = failed && failed.has(n.id);
      const label = n.id + ' (' + n.type + ')' + (visited ? (c ? ', ran ' + c + (c > 1 ? ' times' : ' time') : ', not run') : '') +
        (fail ? ', failed' : '') +
        probs.map((d) => '; ' + d.severity + ' at ' + d.line + ':' + d.column + ': ' + d.message).join('');
      const g = svgEl('g', { class: 'node type-' + n.type + (seen.has(n.id) ? ' visited' : '') + (visited && !seen.has(n.id) ? ' skipped' : '') + bad + (fail ? ' failed' : ''),
        tabindex: 0, role: 'button', 'aria-label': label, 'data-node': n.id },
      svgEl('title', { text: label }),
      svgEl('rect', { x: p.x, y: p.y, width: W, height: H, rx: n.type === 'switch' ? 2 : 10 }),
      svgEl('text', { x: p.x + W / 2, y: p.y + 19, 'text-anchor': 'middle', class: 'node-id' }, clip(n.id, 20)),
      svgEl('text', { x: p.x + W / 2, y: p.y + 36, 'text-anchor': 'middle', class: 'node-type' },
        n.type + (n.type === 'mcp' && n.tool ? ': ' + clip(String(n.tool), 14) : '') + (c > 1 ? ' ×' + c : '')),
      probs.length ? svgEl('text', { x: p.x + W - 10, y: p.y + 16, 'text-anchor': 'middle', class: 'node-flag' }, '!') : null);
      const focusStep = () => {
        const step = main.querySelector('.step[data-node="' + CSS.escape(n.id) + '"]');
        if (step) { step.scrollIntoView({ block: 'nearest' }); step.focus(); }
      };
      g.addEventListener('click', focusStep);
      g.addEventListener('keydown', (ev) => { if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); focusStep(); } });
      nodeLayer.append(g);
    }
    svg.append(edgeLayer, nodeLayer, labelLayer);
    const legend = el('p', { class: 'legend' }, ['entry', 'transform', 'switch', 'mcp', 'exit'].map((ty) =>
      el('span', { class: 'key type-' + ty, text: ty })), visited ? el('span', { class: 'key visited', text: 'on the path' }) : null,
    failed && failed.size ? el('span', { class: 'key failed', text: 'failed' }) : null);
    return el('figure', { class: 'diagram-wrap' }, el('div', { class: 'scroll' }, svg), legend);
  }

  /* Changes of the tenant's pinned downstream tool definitions (issue 28): each pending or
   * rejected change with its diff — the fields changed, the incompatible schema changes,
   * suspicious characters (shown as ⟨U+XXXX⟩) — and the new definition; Approve and Reject
   * call /admin/tenants/{t}/downstream/changes/{id}/approve|reject. */
  async function changesPage(t) {
    const seq = routeSeq;
    const d = await api('/admin/tenants/' + enc(t) + '/downstream');
    const list = d.changes || [];
    const out = el('div', { id: 'change-result', 'aria-live': 'polite' });
    const decide = (c, what, label) => el('button', { type: 'button', class: 'decide', 'data-change': c.id,
      'data-action': what, text: label, 'aria-label': label + ' the change of ' + visible(c.server + ' / ' + c.tool),
      onclick: async () => {
        try {
          const r = await api('/admin/tenants/' + enc(t) + '/downstream/changes/' + enc(c.id) + '/' + what, undefined, 'POST');
          await changesPage(t);
          document.getElementById('change-result').replaceChildren(el('p', { class: 'card', role: 'status',
            text: 'The change of ' + visible(r.server + ' / ' + r.tool) + ' was ' + r.status + '.' }));
        } catch (e) {
          out.replaceChildren(errorBox(e));
        }
      } });
    const card = (c) => {
      const diff = c.diff || {}, sus = diff.suspicious;
      const bad = Array.isArray(diff.incompatible) ? diff.incompatible : [];
      return el('section', { class: 'card change', 'data-change': c.id, 'data-status': c.status },
        el('h2', { text: visible(c.server + ' / ' + c.tool) }),
        el('p', { class: 'muted', text: c.kind + ' · ' + c.status + ' · ' + when(c.created_at) }),
        el('dl', { class: 'facts' },
          el('dt', { text: 'Fields changed' }),
          el('dd', { class: 'fields', text: (Array.isArray(diff.fields) ? diff.fields : []).join(', ') || '—' }),
          el('dt', { text: 'Incompatible' }),
          el('dd', {}, bad.length ? el('ul', { class: 'incompatible' }, bad.map((b) => el('li', { text: visible(b) })))
            : 'none'),
          sus ? el('dt', { text: 'Suspicious text' }) : null,
          sus ? el('dd', { class: 'suspicious', text: sus.count + ' invisible or direction-changing character(s), the first '
            + sus.first + ' at ' + sus.at }) : null),
        el('h4', { text: c.definition ? 'New definition' : 'Removed by the server' }),
        c.definition ? el('pre', { class: 'definition wrap', text: pretty(c.definition) }) : null,
        c.status === 'pending' ? el('p', { class: 'decisions' }, decide(c, 'approve', 'Approve'), ' ',
          decide(c, 'reject', 'Reject')) : null);
    };
    render(seq, 'Definition changes of ' + t, out, list.length ? list.map(card)
      : empty('No changes of pinned downstream tool definitions.'));
  }

  /* ---- sign-in through the tenant's authorization server ------------------------------
   * OAuth 2.1 in the browser (docs/oauth.md): the console resource's metadata (RFC 9728),
   * the authorization server's (RFC 8414, then OpenID discovery), dynamic registration as a
   * public client, authorization code with PKCE (S256), `state` and `resource` (RFC 8707),
   * the code exchanged here, and the access token kept in sessionStorage as the "key". The
   * page runs at /console?tenant=T so that its CSP lets it talk to T's servers. */
  const OAUTH = 'graphgate.oauth', PENDING = 'graphgate.oauth.pending', START = 'graphgate.oauth.start';
  let oauthError = null; /* a failed sign-in, shown by the next sign-in page */
  const oauth = {
    get info() { try { return JSON.parse(sessionStorage.getItem(OAUTH) || 'null'); } catch (e) { return null; } },
    set info(v) { sessionStorage.setItem(OAUTH, JSON.stringify(v)); },
    clear() { sessionStorage.removeItem(OAUTH); sessionStorage.removeItem(PENDING); sessionStorage.removeItem(START); },
  };
  const b64url = (buf) => btoa(String.fromCharCode(...new Uint8Array(buf)))
    .replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  const randomText = (n) => b64url(crypto.getRandomValues(new Uint8Array(n)));
  const redirectUri = (t) => location.origin + '/console?tenant=' + enc(t);
  const pageTenant = () => new URLSearchParams(location.search).get('tenant') || '';

  /* A JSON answer from anywhere (no API key sent): an OAuth error's description as message. */
  async function getJson(url, init) {
    let r;
    try { r = await fetch(url, Object.assign({ cache: 'no-store', credentials: 'omit' }, init || {})); } catch (e) {
      throw new ApiError(0, 'network', new URL(url, location.href).origin + ' did not answer (' + e.message + ')');
    }
    let answer = null;
    try { answer = await r.json(); } catch (e) { answer = null; }
    if (!r.ok) {
      const err = apiError(r, answer);
      if (answer && typeof answer.error_description === 'string') err.message = answer.error_description;
      throw err;
    }
    return answer;
  }
  async function asMetadata(issuer) {
    const u = new URL(issuer), p = u.pathname.replace(/\/$/, '');
    for (const url of [u.origin + '/.well-known/oauth-authorization-server' + p,
      u.origin + '/.well-known/openid-configuration' + p, issuer.replace(/\/$/, '') + '/.well-known/openid-configuration']) {
      let m = null;
      try { m = await getJson(url); } catch (e) { continue; }
      if (m && m.issuer === issuer) return m; /* RFC 8414 section 3.3 */
    }
    throw new ApiError(0, 'oauth_metadata', 'no authorization server metadata for ' + issuer);
  }
  const form = (o) => ({ method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(o) });

  async function oauthStart(t) {
    if (pageTenant() !== t) { /* reload as /console?tenant=t: its CSP names t's servers */
      sessionStorage.setItem(START, t);
      location.assign(redirectUri(t));
      return;
    }
    const prm = await getJson('/.well-known/oauth-protected-resource/admin/tenants/' + enc(t)).catch((e) => {
      throw e.status === 404 ? new ApiError(404, 'not_found', 'tenant ' + t + ' signs in with no authorization server') : e;
    });
    const issuer = (prm.authorization_servers || [])[0];
    const m = await asMetadata(issuer);
    if (!(m.code_challenge_methods_supported || []).includes('S256'))
      throw new ApiError(0, 'oauth_pkce', issuer + ' does not offer PKCE with S256');
    if (!m.registration_endpoint) throw new ApiError(0, 'oauth_registration', issuer + ' offers no dynamic client registration');
    const redirect = redirectUri(t), scope = (prm.scopes_supported || []).join(' ');
    const reg = await getJson(m.registration_endpoint, { method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ client_name: 'graphgate console', redirect_uris: [redirect], response_types: ['code'],
        grant_types: ['authorization_code', 'refresh_token'], token_endpoint_auth_method: 'none', scope }) });
    const verifier = randomText(32), state = randomText(16);
    const challenge = b64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)));
    sessionStorage.setItem(PENDING, JSON.stringify({ tenant: t, issuer, resource: prm.resource, client_id: reg.client_id,
      token_endpoint: m.token_endpoint, verifier, state, redirect }));
    const q = new URLSearchParams({ response_type: 'code', client_id: reg.client_id, redirect_uri: redirect, state,
      code_challenge: challenge, code_challenge_method: 'S256', resource: prm.resource });
    if (scope) q.set('scope', scope);
    location.assign(m.authorization_endpoint + (m.authorization_endpoint.includes('?') ? '&' : '?') + q);
  }

  /* The token answer kept: who it names is read from the JWT for display only (the gateway
   * verifies it on every request). */
  function oauthKeep(p, tok) {
    if (!tok || typeof tok.access_token !== 'string') throw new ApiError(0, 'oauth_token', 'no access token in the answer');
    if (tok.token_type && tok.token_type.toLowerCase() !== 'bearer')
      throw new ApiError(0, 'oauth_token', 'a ' + tok.token_type + ' token: the console uses bearer tokens');
    let c = {};
    try { c = JSON.parse(atob(tok.access_token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/'))); } catch (e) { c = {}; }
    const life = typeof tok.expires_in === 'number' ? tok.expires_in * 1000 : (c.exp ? c.exp * 1000 - Date.now() : 300000);
    oauth.info = { tenant: p.tenant, issuer: p.issuer, resource: p.resource, client_id: p.client_id,
      token_endpoint: p.token_endpoint, refresh_token: tok.refresh_token || p.refresh_token || '',
      exp: Date.now() + life, sub: typeof c.sub === 'string' ? c.sub : '',
      client: typeof c.client_id === 'string' ? c.client_id : p.client_id };
    session.set(tok.access_token, p.tenant);
  }

  /* On load: a sign-in to go on with after the reload, or the authorization server's answer
   * (code and state), which leaves the address bar and the history at once. */
  async function oauthCallback() {
    const q = new URLSearchParams(location.search);
    const start = sessionStorage.getItem(START);
    sessionStorage.removeItem(START);
    if (start && start === q.get('tenant') && !q.has('state')) return oauthStart(start);
    if (!q.has('state') || !(q.has('code') || q.has('error'))) return;
    const p = (() => { try { return JSON.parse(sessionStorage.getItem(PENDING) || 'null'); } catch (e) { return null; } })();
    sessionStorage.removeItem(PENDING);
    history.replaceState(null, '', location.pathname + '?tenant=' + enc(q.get('tenant') || '') + '#/');
    if (!p || q.get('state') !== p.state) throw new ApiError(0, 'oauth_state', 'this sign-in answer was not asked for here');
    if (q.has('error')) throw new ApiError(0, q.get('error'), q.get('error_description') || 'the sign-in was refused');
    if (q.has('iss') && q.get('iss') !== p.issuer) throw new ApiError(0, 'oauth_issuer', 'the answer came from another issuer'); /* RFC 9207 */
    oauthKeep(p, await getJson(p.token_endpoint, form({ grant_type: 'authorization_code', code: q.get('code'),
      redirect_uri: p.redirect, client_id: p.client_id, code_verifier: p.verifier, resource: p.resource })));
  }

  /* Before each request: a token about to expire is refreshed when there is a refresh
   * token; otherwise the user signs in again (a 401, as the gateway would answer). */
  async function oauthFresh() {
    const i = oauth.info;
    if (!i || Date.now() < i.exp - 15000) return;
    if (i.refresh_token) {
      try {
        return oauthKeep(i, await getJson(i.token_endpoint, form({ grant_type: 'refresh_token',
          refresh_token: i.refresh_token, client_id: i.client_id, resource: i.resource })));
      } catch (e) { /* sign in again */ }
    }
    throw new ApiError(401, 'token_expired', 'the sign-in through ' + i.issuer + ' has expired: sign in again');
  }

  function oauthForm() {
    const tIn = el('input', { id: 'oauth-tenant', name: 'tenant', type: 'text', required: true, autocomplete: 'off',
      spellcheck: 'false', value: pageTenant() || null, 'aria-describedby': 'oauth-help' });
    const out = el('div', { id: 'oauth-error' });
    const f = el('form', { class: 'card signin', id: 'oauth-signin', novalidate: true },
      el('label', { for: 'oauth-tenant', text: 'Tenant' }), tIn,
      el('p', { id: 'oauth-help', class: 'help',
        text: 'Sign in through the tenant\u2019s authorization server (OAuth, in this browser); the token stays in this tab.' }),
      el('button', { type: 'submit', text: 'Sign in with the tenant\u2019s authorization server' }), out);
    f.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const t = tIn.value.trim();
      if (!t) { out.replaceChildren(errorBox({ code: 'missing_tenant', message: 'enter a tenant' })); tIn.focus(); return; }
      oauthStart(t).catch((e) => out.replaceChildren(errorBox(e)));
    });
    return f;
  }

  /* "Signed in as alice (client …) through https://as…": a token's principal, in the header. */
  const whoami = el('span', { id: 'whoami', class: 'muted' });
  signoutBtn.before(whoami);
  function showWho() {
    const i = session.key && oauth.info;
    whoami.textContent = i ? 'Signed in as ' + (i.sub || '?') + ' (client ' + i.client + ') through ' + i.issuer : '';
  }

  /* ---- routing ---------------------------------------------------------------------- */

  /* An admin's links follow the tenant of the page shown; a tenant key's stay on its own. */
  function navigation(routeTenant) {
    const items = [];
    /* pages without a tenant in their address (an execution, the specs) keep the last one */
    if (routeTenant) lastTenant = routeTenant;
    const t = session.tenant || lastTenant;
    if (session.key) {
      if (session.admin) items.push(link('#/tenants', 'Tenants'));
      if (t) {
        items.push(link('#/t/' + enc(t), session.admin ? 'Graphs of ' + t : 'Graphs'));
        items.push(link('#/t/' + enc(t) + '/executions', session.admin ? 'Executions of ' + t : 'Executions'));
        if (session.admin) items.push(link('#/t/' + enc(t) + '/keys', 'Keys of ' + t));
        if (session.admin) items.push(link('#/t/' + enc(t) + '/changes', 'Definition changes of ' + t));
      }
    }
    if (session.key && !oauth.info) items.push(link('#/specs', 'Node specs')); /* /mcp/invoke takes keys only */
    showWho();
    const here = location.hash.split('?')[0];
    for (const a of items) if (a.getAttribute('href') === here) a.setAttribute('aria-current', 'page');
    nav.replaceChildren(...items);
    signoutBtn.hidden = !session.key;
  }

  async function route() {
    clearTimeout(timer);
    const seq = ++routeSeq;
    const raw = location.hash.replace(/^#/, '') || '/';
    const [path, query] = raw.split('?');
    const q = new URLSearchParams(query || '');
    let parts;
    try { parts = path.split('/').filter(Boolean).map(decodeURIComponent); } catch (e) { parts = ['?']; }
    navigation(parts[0] === 't' ? parts[1] : '');
    if (!session.key) return signInPage();
    try { await oauthFresh(); } catch (e) { /* an expired sign-in: every page would fail alike */
      session.clear(); lastTenant = ''; navigation(); return signInPage(e);
    }
    try {
      if (parts.length === 0) location.replace(session.admin ? '#/tenants' : '#/t/' + enc(session.tenant));
      else if (parts[0] === 'tenants') await tenantsPage();
      else if (parts[0] === 't' && parts.length === 2) await graphsPage(parts[1]);
      else if (parts[0] === 't' && parts[2] === 'executions') await executionsPage(parts[1], q);
      else if (parts[0] === 't' && parts[2] === 'draft') await draftPage(parts[1], q);
      else if (parts[0] === 't' && parts[2] === 'keys') await keysPage(parts[1]);
      else if (parts[0] === 't' && parts[2] === 'changes') await changesPage(parts[1]);
      else if (parts[0] === 't' && parts[2] === 'g') {
        const v = parts[4] === 'v' ? parseInt(parts[5], 10) : 0;
        const tool = parts[6] === 'tool' ? parts[7] : (parts[4] === 'tool' ? parts[5] : '');
        await graphPage(parts[1], parts[3], v > 0 ? v : 0, tool);
      } else if (parts[0] === 'x' && parts[1]) await executionPage(parts[1]);
      else if (parts[0] === 'specs' && parts.length === 3) await specPage(parts[1], parts[2]);
      else if (parts[0] === 'specs') await specsPage(q);
      else render(seq, 'Not found', empty('No console page at ' + raw + '.'), el('p', {}, link('#/', 'Start page')));
    } catch (e) {
      if (seq !== routeSeq) return;
      if (e.status === 401) { session.clear(); lastTenant = ''; navigation(); return signInPage(e); }
      render(seq, 'Could not load this page', errorBox(e), el('p', {}, link('#/', 'Start page')));
    }
  }

  signoutBtn.addEventListener('click', () => { session.clear(); lastTenant = ''; location.hash = '#/'; route(); });
  window.addEventListener('hashchange', route);
  oauthCallback().catch((e) => { oauthError = e; }).finally(route);
})();
