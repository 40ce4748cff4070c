// Shared by the browser scripts of the web console (console.mjs and the others in this
// directory): Debian's chromium driven by playwright-core. One scenario per run (argv[2]); the Rust test (crates/sng/tests/e2e/console.rs) starts the server, makes
// the tenants, workspaces and runs, and gives the URL and tokens in the environment:
//   SNG_URL, SNG_TOKEN, SNG_TENANT, SNG_CANARY, SNG_NODE_TOOLS (.tools/node), and per scenario
//   SNG_WORKSPACE; SNG_SCREENSHOTS (a directory: `make screenshots`) saves each audited page
//   there. Prints `ok SCENARIO` and exits 0 when every check holds; exits 1 naming
//   the first that does not.
import { createRequire } from 'node:module';
import fs from 'node:fs';
export { fs };
import path from 'node:path';

const require = createRequire(path.join(process.env.SNG_NODE_TOOLS, 'package.json'));
export const { chromium } = require('playwright-core');

export const base = process.env.SNG_URL;
export const token = process.env.SNG_TOKEN;
export const tenant = process.env.SNG_TENANT;
export const canary = process.env.SNG_CANARY;
export const workspace = process.env.SNG_WORKSPACE || '';
export const scenario = process.argv[2];

// Waits for a URL that contains `part`.
export const has = (part) => (u) => u.href.includes(part);

export function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
}

// Every page's HTML is kept, to check no secret value ever reached the browser.
export const seen = [];

// The accessibility of the page in view: axe-core's serious or critical violations fail.
const axeSource = fs.readFileSync(path.join(process.env.SNG_NODE_TOOLS, 'node_modules/axe-core/axe.min.js'), 'utf8');
export const audited = [];
export async function accessible(page, what) {
  // Evaluated over the DevTools protocol: the page's Content-Security-Policy stays as it is.
  await page.evaluate(axeSource);
  const bad = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ['violations'] });
    return r.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  });
  check(bad.length === 0, `${what}: accessibility violations: ${bad.join('; ')}`);
  audited.push(what);
  // `make screenshots`: each audited page, as docs/screenshots/NAME.png.
  if (process.env.SNG_SCREENSHOTS) {
    const name = what.replace(/^(the|a|an) /, '').replace(/[^a-z0-9]+/gi, '-').toLowerCase();
    fs.mkdirSync(process.env.SNG_SCREENSHOTS, { recursive: true });
    // An action's page: its form in view.
    const action = await page.$('#approve-form, p.actions');
    if (action) await action.scrollIntoViewIfNeeded();
    await page.screenshot({ path: path.join(process.env.SNG_SCREENSHOTS, `${name}.png`) });
  }
}

// Press Tab until the focused element is the one `wanted` names (a CSS selector).
export async function tabTo(page, wanted) {
  for (let i = 0; i < 80; i++) {
    await page.keyboard.press('Tab');
    if (await page.evaluate((sel) => document.activeElement && document.activeElement.matches(sel), wanted)) return;
  }
  throw new Error(`check failed: ${wanted} cannot be reached with the keyboard`);
}

export async function signIn(page, tok) {
  const r = await page.goto(`${base}/ui/`);
  check(r.ok(), `GET /ui/ answers ${r.status()}`);
  check(page.url().endsWith('/ui/login'), `an anonymous browser lands on the sign-in page, not ${page.url()}`);
  await page.fill('#token', tok);
  await Promise.all([page.waitForURL(has('/ui/tenants')), page.click('#sign-in')]);
}

export async function rows(page, table) {
  return page.$$eval(`#${table} tbody tr td:first-child`, (tds) => tds.map((td) => td.textContent.trim()));
}

export async function openWorkspace(page, name) {
  const r = await page.goto(`${base}/ui/t/${tenant}/workspaces/${name}`);
  check(r.status() === 200, `workspace ${name} answers ${r.status()}`);
  seen.push(await page.content());
}

// Runs the scenario argv[2] names from `scenarios` (name → async (page, context)), checks that
// no answer held the canary, prints `ok SCENARIO` and exits.
export async function main(scenarios) {
  const browser = await chromium.launch({
    executablePath: process.env.SNG_CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
  let code = 0;
  try {
    const context = await browser.newContext({ viewport: { width: 1100, height: 700 } });
    const page = await context.newPage();
    // Every answer the browser gets is checked for the canary too.
    page.on('response', async (r) => {
      try {
        seen.push(await r.text());
      } catch {}
    });
    const run = scenarios[scenario];
    if (!run) throw new Error(`unknown scenario ${scenario}`);
    await run(page, context);
    for (const html of seen) check(!canary || !html.includes(canary), 'no secret value reaches the browser');
    console.log(`ok ${scenario} (${seen.length} pages and answers checked; accessibility: ${audited.join(', ') || 'none'})`);
  } catch (e) {
    console.error(e.stack || String(e));
    code = 1;
  } finally {
    await browser.close();
  }
  process.exit(code);
}
