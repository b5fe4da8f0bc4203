// oauth_signin.mjs — the console's sign-in through a tenant's authorization server in
// Debian's headless chromium (puppeteer-core), against the real oidc-provider fixture whose
// account "alice" signs in and consents at once: authorization code + PKCE, the graphs
// listed, who is signed in shown, nothing left in the address or in localStorage; an expired
// sign-in asks to sign in again; sign out; the API-key sign-in beside it still works.
// usage: node oauth_signin.mjs   (env: GG_PUB, GG_KEY, GG_TENANT, GG_ISS, GG_OUT, GG_CHROMIUM, GG_NPM)
// Prints "ok - ..." / "not ok - ..." lines and "N passed, N failed"; screenshots in GG_OUT.
import { WAIT, check, finish, launch, openPage, problems } from './lib_browser.mjs';

const { GG_PUB: pub, GG_KEY: key, GG_TENANT: tenant, GG_ISS: iss } = process.env;
const visited = [];    // every address the page was at

const browser = await launch();
try {
  const { page, shot, texts } = await openPage(browser);
  page.on('request', (r) => { if (r.isNavigationRequest() && r.frame() === page.mainFrame()) visited.push(r.url()); });
  const store = () => page.evaluate(() => ({ key: sessionStorage.getItem('graphgate.key') || '',
    oauth: JSON.parse(sessionStorage.getItem('graphgate.oauth') || 'null'), local: localStorage.length, cookie: document.cookie }));

  // ---- sign in through the authorization server
  await page.goto(pub + '/console', { waitUntil: 'networkidle0' });
  await page.waitForSelector('#oauth-tenant', WAIT);
  check('the sign-in page offers both: an API key and the tenant\'s authorization server',
    (await page.$$('#key')).length === 1 && (await page.$$('label[for=oauth-tenant]')).length === 1);
  await page.type('#oauth-tenant', tenant);
  await page.click('#oauth-signin button[type=submit]');
  await page.waitForSelector('table a[href$="/g/collatz"]', WAIT);
  check('signed in through the authorization server: the tenant\'s graphs listed', (await texts('tbody tr td:first-child')).includes('collatz'));
  check('  the browser went to the authorization server and came back',
    visited.some((u) => u.startsWith(iss + '/auth')) && visited.some((u) => u.includes('code=')), visited);
  const who = await page.$eval('#whoami', (e) => e.textContent);
  check('  who is signed in is shown (subject, client, issuer)', who.includes('alice') && who.includes('client ') && who.includes(iss), who);
  const s = await store();
  check('  the token is in sessionStorage only (no localStorage, no cookie)', s.key.split('.').length === 3 && s.local === 0 && s.cookie === '', s.local);
  check('  it is a token for the tenant\'s console resource', (() => {
    try { return JSON.parse(Buffer.from(s.key.split('.')[1], 'base64url')).aud === pub + '/admin/tenants/' + tenant; } catch (e) { return false; }
  })());
  const url = page.url();
  check('  no code, state or token left in the address', !/code=|state=|access_token/.test(url) && !url.includes(s.key) && url.startsWith(pub + '/console?tenant=' + tenant), url);
  check('  nor in the tab\'s history entry', await page.evaluate(() => !/code=|state=/.test(location.href)));
  await shot('oauth-graphs');

  // a graph with its diagram (the console's own document route takes the token too)
  await page.click('nav a[href$="/executions"]');
  await page.waitForFunction(() => document.title.startsWith('Executions') || document.querySelector('main .error'), WAIT);
  check('the executions page loads with the token', (await page.$$('main .error')).length === 0, await texts('main .error'));
  check('the Node specs link (API keys only) is not offered', (await page.$$('nav a[href="#/specs"]')).length === 0);

  // ---- expiry: the console asks to sign in again (no refresh token was granted)
  await page.evaluate(() => { const i = JSON.parse(sessionStorage.getItem('graphgate.oauth')); i.exp = Date.now() - 1000;
    sessionStorage.setItem('graphgate.oauth', JSON.stringify(i)); location.hash = '#/t/' + encodeURIComponent(i.tenant); }); /* another page than the one shown */
  await page.waitForSelector('#signin-error .error-code', WAIT);
  check('an expired sign-in: the sign-in page says so', (await texts('#signin-error .error-code'))[0] === 'token_expired:');
  check('  the token is gone from sessionStorage', (await store()).key === '' && (await store()).oauth === null);
  check('  the tenant is filled in for the next sign-in', await page.$eval('#oauth-tenant', (e) => e.value) === tenant);

  // ---- again, then sign out
  await page.click('#oauth-signin button[type=submit]');
  await page.waitForSelector('table a[href$="/g/collatz"]', WAIT);
  check('signed in again', (await store()).key.length > 0);
  await page.click('#signout');
  await page.waitForSelector('#oauth-tenant', WAIT);
  const after = await store();
  check('sign out forgets the token and who signed in', after.key === '' && after.oauth === null &&
    await page.$eval('#whoami', (e) => e.textContent) === '');

  // ---- the API-key sign-in still works
  await page.type('#key', key);
  await page.type('#tenant', tenant);
  await page.keyboard.press('Enter');
  await page.waitForSelector('table a[href$="/g/collatz"]', WAIT);
  check('the API-key sign-in still works', (await store()).key === key && (await store()).oauth === null);
  check('  no principal shown for a key', await page.$eval('#whoami', (e) => e.textContent) === '');
  await shot('key-graphs');
  check('no browser console error or CSP refusal anywhere', problems.length === 0, problems);
} catch (e) {
  check('the browser session', false, String(e && e.stack || e));
  console.log('  visited: ' + JSON.stringify(visited.map((u) => u.replace(/code=[^&]*/, 'code=…'))));
} finally {
  await finish(browser);
}
