// The console live without reload (issue 16, item 4) in a real browser (see lib.mjs for the
// shared part); the Rust test is crates/sng/tests/e2e/console_live.rs. SNG_WORKSPACE is a
// workspace whose run waits for the file SNG_RELEASE.
import { fs, base, token, tenant, workspace, check, seen, accessible, signIn, rows, main } from './lib.mjs';

// The status badge of workspace `name` on the list page.
const badge = (page, name) => page.$$eval('#workspaces tbody tr', (trs, name) => {
  const row = trs.find((tr) => tr.cells[0].textContent.trim() === name);
  return row ? row.cells[1].textContent.trim() : null;
}, name);

const streaming = (page) => page.waitForSelector('body[data-live="open"]', { timeout: 30000 });

// Wait until `fn` (evaluated in the page with `arg`) is true, checking every 100 ms (the
// page's CSP forbids the eval of page.waitForFunction's polling).
async function until(page, what, fn, arg, timeout = 120000) {
  const end = Date.now() + timeout;
  while (!(await page.evaluate(fn, arg))) {
    if (Date.now() > end) throw new Error(`check failed: ${what} (waited ${timeout} ms)`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// The list, the workspace and its run open in three tabs while the run goes on; the run is
// released; each page changes in place: the badge, the conditions, the log and the phase.
async function live(page, context) {
  await signIn(page, token);
  await page.goto(`${base}/ui/t/${tenant}/workspaces`);
  seen.push(await page.content());
  check((await rows(page, 'workspaces')).includes(workspace), `the list shows ${workspace}`);
  const before = await badge(page, workspace);
  check(before === 'Planning' || before === 'Applying', `${workspace} is running: ${before}`);
  await streaming(page);
  await accessible(page, 'the live workspaces page');
  // A workspace applied meanwhile (through the API) appears in the list, in its place by name.
  const applied = await page.request.post(`${base}/api/v1/tenants/${tenant}/apply`, {
    headers: { Authorization: `Bearer ${token}` },
    data: { items: [{ apiVersion: 'tofu.stackngo.io/v1alpha1', kind: 'Workspace', metadata: { name: 'added', labels: { team: 'x' } }, spec: { module: { source: 'oci://r.example/acme/none' }, suspend: true } }] },
  });
  check(applied.ok(), `the API applies a workspace: ${applied.status()} ${await applied.text()}`);
  await until(page, 'the new workspace appears in the list', () => [...document.querySelectorAll('#workspaces tbody tr')].some((tr) => tr.cells[0].textContent.trim() === 'added'));
  const names = await rows(page, 'workspaces');
  check(JSON.stringify(names) === JSON.stringify([...names].sort()), `the new row is in its place by name: ${names}`);
  check((await page.textContent('#workspaces tbody tr:has(a[href$="/workspaces/added"])')).includes('Suspended'), 'the new row shows its status');

  const wsPage = await context.newPage();
  await wsPage.goto(`${base}/ui/t/${tenant}/workspaces/${workspace}`);
  seen.push(await wsPage.content());
  await streaming(wsPage);
  check(await wsPage.isVisible('#cancel'), 'the run going on can be cancelled');
  check((await wsPage.getAttribute('#live', 'data-workspace')) === workspace, 'the workspace page follows its workspace');

  // A child's page: `slow` in its dependency graph, coloured by its status.
  const childPage = await context.newPage();
  await childPage.goto(`${base}/ui/t/${tenant}/workspaces/after`);
  seen.push(await childPage.content());
  await streaming(childPage);
  const node = `#graph a.g-node[href$="/workspaces/${workspace}"]`;
  const nodeStatus = await childPage.textContent(`${node} .g-status`);
  check(nodeStatus === 'Planning' || nodeStatus === 'Applying', `the graph shows ${workspace} running: ${nodeStatus}`);

  const runPage = await context.newPage();
  await runPage.goto(`${base}/ui/t/${tenant}/workspaces/${workspace}`);
  const [run] = await runPage.$$eval('#runs tbody a', (as) => as.map((a) => a.getAttribute('href')));
  await runPage.goto(`${base}${run}`);
  seen.push(await runPage.content());
  check((await runPage.getAttribute('#live', 'data-stream')).includes('&run='), 'the run page streams its run');
  await until(runPage, 'the run page streams', () => document.body.dataset.live === 'open' && !!document.getElementById('live').dataset.lastEvent);
  check((await runPage.textContent('#run-phase')) === 'Running', 'the run is Running');
  await accessible(runPage, 'the live run page');
  const logBefore = (await runPage.textContent('#log')).length;

  for (const p of [page, wsPage, runPage, childPage]) await p.evaluate(() => { window.sngNotReloaded = true; });
  // Focus stays where the user put it.
  await page.focus('#q');

  // The run goes on: its resource was waiting for this file.
  fs.writeFileSync(process.env.SNG_RELEASE, 'go');

  await runPage.waitForSelector('#log[data-ended]', { timeout: 120000 });
  check((await runPage.textContent('#run-phase')) === 'Succeeded', 'the phase turns Succeeded on the run page');
  const log = await runPage.textContent('#log');
  check(log.length > logBefore && log.includes('Apply complete'), `the rest of the log appeared: ${log.slice(logBefore)}`);
  check((await runPage.getAttribute('body', 'data-live')) === 'ended', 'the run page closed its stream at the end');
  seen.push(log);

  await until(page, 'the badge turns Ready on the list', (name) => {
    const row = [...document.querySelectorAll('#workspaces tbody tr')].find((tr) => tr.cells[0].textContent.trim() === name);
    return !!row && row.cells[1].textContent.trim() === 'Ready';
  }, workspace);
  check((await page.getAttribute(`#workspaces tbody tr:has(a[href$="/workspaces/${workspace}"]) .badge`, 'class')).includes('st-Ready'), 'the badge is coloured Ready');
  check((await page.textContent('#live-status')).includes(`${workspace}: Ready`), 'the change is announced (aria-live polite)');
  check(await page.evaluate(() => document.activeElement && document.activeElement.id === 'q'), 'the focus did not move');
  seen.push(await page.content());

  await until(wsPage, 'the badge turns Ready on the workspace page', () => {
    const b = document.querySelector('h1 .badge[class*="st-"]');
    return !!b && b.textContent === 'Ready';
  });
  const conditions = await wsPage.$$eval('#conditions tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((td) => td.textContent)));
  check(conditions.some(([type, status]) => type === 'Ready' && status === 'True'), `the conditions changed in place: ${JSON.stringify(conditions)}`);
  await until(wsPage, 'the run turns Succeeded in the runs table', () => {
    const row = document.querySelector('#runs tbody tr');
    return !!row && row.cells[3].textContent === 'Succeeded';
  });
  check(!(await wsPage.isVisible('#cancel')), 'the cancel button goes with the run');
  await accessible(wsPage, 'the live workspace page');
  seen.push(await wsPage.content());

  await until(childPage, 'the parent turns Ready in the graph', (sel) => {
    const n = document.querySelector(sel);
    return !!n && n.querySelector('.g-status').textContent === 'Ready';
  }, node);
  check((await childPage.getAttribute(node, 'class')).includes('st-Ready'), 'the graph node is coloured Ready');
  check((await childPage.textContent('#graph-list')).includes('Ready'), 'the graph\'s table says Ready too');
  await accessible(childPage, 'the live dependency graph');

  for (const p of [page, wsPage, runPage, childPage]) check(await p.evaluate(() => window.sngNotReloaded === true), 'without a reload');
}

// A viewer's live pages: the stream opens, and no button but the page's own (filter, tenant
// switch, sign out); the canary is checked in every answer by main().
async function viewer(page) {
  await signIn(page, token);
  await page.goto(`${base}/ui/t/${tenant}/workspaces`);
  await streaming(page);
  seen.push(await page.content());
  const buttons = await page.$$eval('button', (bs) => bs.map((b) => b.textContent.trim()));
  check(JSON.stringify(buttons.sort()) === JSON.stringify(['Filter', 'Go', 'Sign out']), `a viewer sees only the page's own buttons: ${buttons}`);
  await page.goto(`${base}/ui/t/${tenant}/workspaces/${workspace}`);
  await streaming(page);
  seen.push(await page.content());
  const wsButtons = await page.$$eval('main button', (bs) => bs.map((b) => b.textContent.trim()));
  check(wsButtons.length === 0, `no action button for a viewer: ${wsButtons}`);
  // What the stream sent since the page's revision 0: every workspace of the tenant, read in
  // the page as a viewer; no secret value in it.
  const sent = await page.evaluate((name) => new Promise((resolve) => {
    const es = new EventSource(document.getElementById('live').dataset.stream.replace(/since=\d+/, 'since=0'));
    const got = [];
    es.addEventListener('workspace', (e) => {
      got.push(e.data);
      if (got.length >= 2 && got.some((d) => JSON.parse(d).name === name)) { es.close(); resolve(got); }
    });
  }), workspace);
  seen.push(...sent);
  check(sent.some((d) => JSON.parse(d).name === workspace), `the viewer's stream sends the tenant's workspaces: ${sent}`);
}

await main({ live, viewer });
