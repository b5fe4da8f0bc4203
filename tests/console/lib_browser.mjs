// lib_browser.mjs — what the console's browser tests (browser.mjs, oauth_signin.mjs) share:
// Debian's headless chromium launched by puppeteer-core, a page whose console errors and
// warnings and page errors are collected, the "ok - ..." / "not ok - ..." lines and the
// "N passed, N failed" summary.  env: GG_OUT (profile, screenshots), GG_CHROMIUM, GG_NPM.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const { GG_OUT: out, GG_CHROMIUM: chromium, GG_NPM: npm } = process.env;

// A module of the pinned npm packages (tests/npm/node_modules).
export const load = (p) => import(pathToFileURL(path.join(npm, p)).href);
export const WAIT = { timeout: 45000 }; // generous: a loaded 2-core CI machine runs both builds
export const problems = []; // browser console errors and warnings, page errors
const counts = { passed: 0, failed: 0 };
export const check = (desc, cond, detail) => {
  if (cond) { counts.passed++; console.log(`ok - ${desc}`); }
  else { counts.failed++; console.log(`not ok - ${desc}${detail !== undefined ? ': ' + JSON.stringify(detail) : ''}`); }
};

export async function launch() {
  const puppeteer = (await load('puppeteer-core/lib/puppeteer/puppeteer-core.js')).default;
  return puppeteer.launch({
    executablePath: chromium, headless: true, userDataDir: path.join(out, 'profile'),
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
  });
}

// A new 1280×800 page feeding problems, with its helpers: shot(name) saves a full-page
// screenshot in GG_OUT, texts(selector) the trimmed text of each match.
export async function openPage(browser) {
  const page = await browser.newPage();
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warn') problems.push(`console.${m.type()}: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push('pageerror: ' + e.message));
  await page.setViewport({ width: 1280, height: 800 });
  const shot = (name) => page.screenshot({ path: path.join(out, name + '.png'), fullPage: true });
  const texts = (sel) => page.$$eval(sel, (els) => els.map((e) => e.textContent.trim()));
  return { page, shot, texts };
}

// Closes the browser, prints the summary and exits (1 when a check failed).
export async function finish(browser) {
  await browser.close();
  console.log(`${counts.passed} passed, ${counts.failed} failed`);
  process.exit(counts.failed ? 1 : 0);
}
