// The workspace and run detail of the web console in a real browser (see lib.mjs for the shared
// part); the Rust test is crates/sng/tests/e2e/console_detail.rs. The tenant holds
// net <- app <- web (app drifted, web awaiting a manual approval); SNG_RUN names a run.
import { fs, base, token, tenant, workspace, has, check, seen, accessible, signIn, openWorkspace, main } from './lib.mjs';
import path from 'node:path';

const text = async (page, sel) => ((await page.textContent(sel)) || '').replace(/\s+/g, ' ');

// `make screenshots`: the page saved as NAME.png again, scrolled to `sel` (the detail sits
// below what the shared audit's screenshot shows).
async function shot(page, sel, name) {
  if (!process.env.SNG_SCREENSHOTS) return;
  await page.$eval(sel, (el) => el.scrollIntoView({ block: 'start' }));
  fs.mkdirSync(process.env.SNG_SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(process.env.SNG_SCREENSHOTS, `${name}.png`) });
}

// The graph's table: workspace → [relation, status].
async function graphRows(page) {
  const rows = await page.$$eval('#graph-list tbody tr', (trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent.trim())));
  return Object.fromEntries(rows.map(([name, relation, status]) => [name, [relation, status]]));
}

async function workspacePage(page) {
  await signIn(page, token);
  await openWorkspace(page, workspace);
  // The explain chain: drifted, with its next action.
  const chain = await text(page, '#explain-chain');
  check(chain.includes('sng drift workspace app'), `the chain says what to run next: ${chain}`);
  check((await page.$('#explain-drift')) !== null, 'the chain links to the drift');
  check((await page.$('#explain-refresh')) !== null, 'an admin may check the drift again: a button');
  // The graph: its parent and child with their statuses, each node a link.
  const g = await graphRows(page);
  check(JSON.stringify(g.net) === JSON.stringify(['parent', 'Ready']), `net is the parent, Ready: ${JSON.stringify(g)}`);
  check(JSON.stringify(g.web) === JSON.stringify(['child', 'AwaitingApproval']), `web is the child, awaiting approval: ${JSON.stringify(g)}`);
  check(g.app && g.app[0] === 'this workspace' && g.app[1] === 'Drifted', `app is this one, drifted: ${JSON.stringify(g)}`);
  const nodes = await page.$$eval('#graph svg a', (as) => as.map((a) => [a.getAttribute('href'), a.textContent]));
  check(nodes.length === 3, `three nodes drawn: ${JSON.stringify(nodes)}`);
  check(nodes.some(([href, t]) => href === `/ui/t/${tenant}/workspaces/web` && t.includes('AwaitingApproval')), `web's node is a link with its status in words: ${JSON.stringify(nodes)}`);
  check((await page.$$('#graph svg line.g-edge')).length === 2, 'two edges: net -> app -> web');
  // Drift per resource and attribute; no value.
  const drift = await text(page, '#drift-changes');
  check(drift.includes('file_document.f') && drift.includes('update') && drift.includes('content'), `the drift names the resource and attribute: ${drift}`);
  check(!(await page.content()).includes('hacked'), 'no value of the drift reaches the page');
  // State versions: serial, lineage, run; never the body.
  const versions = await page.$$eval('#state-versions tbody tr', (trs) => trs.map((tr) => tr.querySelector('td').textContent));
  check(versions.length >= 1 && versions.every((s) => /^\d+$/.test(s)), `state versions with their serials: ${versions}`);
  check((await page.$$('#state-versions a[href*="/runs/"]')).length >= 1, 'a state version links its run');
  // Outputs: the plain one's value, never the sensitive one's.
  const outputs = await text(page, '#output-keys');
  check(outputs.includes('greeting') && outputs.includes('hello-out'), `an admin sees the plain output's value: ${outputs}`);
  check(outputs.includes('token') && outputs.includes('sensitive: never shown'), `the sensitive output's value is never shown: ${outputs}`);
  await accessible(page, 'the workspace detail');
  await shot(page, '#explain', 'workspace-detail');
  // A node of the graph opens its workspace.
  await Promise.all([page.waitForURL(has('/workspaces/net')), page.click('#graph svg a[href$="/workspaces/net"]')]);
  seen.push(await page.content());
  const parent = await graphRows(page);
  check(parent.web && parent.web[0] === 'connected', `from net, web is connected through app: ${JSON.stringify(parent)}`);
}

async function runPage(page) {
  await signIn(page, token);
  const r = await page.goto(`${base}/ui/t/${tenant}/runs/${process.env.SNG_RUN}`);
  check(r.status() === 200, `the run page answers ${r.status()}`);
  seen.push(await page.content());
  check((await text(page, '#plan-counts')).includes('+1 to add'), `the plan counts: ${await text(page, '#plan-counts')}`);
  const diff = await text(page, '#diff');
  check(diff.includes('file_document.f') && diff.includes('create'), `the diff names the resource and its action: ${diff}`);
  check(diff.includes('content') && /secret \(sensitive\)/.test(diff), `the sensitive attribute is marked, its value masked: ${diff}`);
  const steps = await page.$$eval('#steps tbody tr td:first-child', (tds) => tds.map((td) => td.textContent));
  for (const s of ['plan', 'apply']) check(steps.includes(s), `step ${s} is timed: ${steps}`);
  check(steps.includes('init') || steps.includes('init-reused'), `the init step is shown: ${steps}`);
  check((await text(page, '#run')).includes('sha256:'), 'the module digest is shown');
  check((await text(page, '#run-actor')).includes('applied by token'), `who wrote the manifest: ${await text(page, '#run-actor')}`);
  await accessible(page, 'the run detail');
  await shot(page, '#run-actor', 'run-detail');
}

async function viewer(page) {
  await signIn(page, token);
  await openWorkspace(page, workspace);
  const actions = await page.$$eval('main button, main form[method=post]', (els) => els.length);
  check(actions === 0, `a viewer sees no action (${actions} buttons or forms)`);
  check((await page.$('#explain-drift')) !== null, 'a viewer still sees where the drift is');
  const outputs = await text(page, '#output-keys');
  check(outputs.includes('greeting') && outputs.includes('not shown to viewers') && !outputs.includes('hello-out'), `a viewer sees no output value: ${outputs}`);
  check(!(await page.content()).includes('hello-out'), 'no output value anywhere on the page');
  check((await graphRows(page)).web !== undefined, 'a viewer sees the graph');
  await accessible(page, 'the workspace detail of a viewer');
  const r = await page.goto(`${base}/ui/t/${tenant}/runs/${process.env.SNG_RUN}`);
  check(r.status() === 200, `the run page answers ${r.status()}`);
  seen.push(await page.content());
  const onRun = await page.$$eval('main button, main form[method=post]', (els) => els.length);
  check(onRun === 0, `a viewer sees no action on a run (${onRun})`);
  // Another tenant: the same run and workspace under its name answer 404.
  for (const p of [`/ui/t/other/runs/${process.env.SNG_RUN}`, `/ui/t/other/workspaces/${workspace}`]) {
    const other = await page.goto(`${base}${p}`);
    check(other.status() === 404, `${p} answers 404, not ${other.status()}`);
  }
}

async function approve(page) {
  await signIn(page, token);
  await openWorkspace(page, workspace);
  const chain = await text(page, '#explain-chain');
  check(chain.includes('AwaitingApproval'), `the chain says the plan awaits approval: ${chain}`);
  check((await page.$('#explain-approve')) !== null, 'the chain offers the approval as a button');
  check(JSON.stringify((await graphRows(page)).app) === JSON.stringify(['parent', 'Drifted']), 'the parent app shows Drifted');
  await accessible(page, 'the explain chain approval');
  await Promise.all([page.waitForURL(has('notice=approved')), page.click('#explain-approve')]);
  check((await page.textContent('#notice')).includes('approved'), 'the page says the plan is approved');
}

async function approvedRun(page) {
  await signIn(page, token);
  const r = await page.goto(`${base}/ui/t/${tenant}/runs/${process.env.SNG_RUN}`);
  check(r.status() === 200, `the run page answers ${r.status()}`);
  seen.push(await page.content());
  const decisions = await text(page, '#decisions');
  check(decisions.includes('approved (applied by this run)'), `the approval is shown: ${decisions}`);
  const by = await page.$eval('#decisions tbody tr td:nth-child(3)', (td) => td.textContent.trim());
  check(by.length > 0, 'the approval says who');
  check((await text(page, '#run')).includes('→'), 'the state serials before and after');
}

await main({ workspace: workspacePage, run: runPage, viewer, approve, 'approved-run': approvedRun });
