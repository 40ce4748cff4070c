// The console's administration pages and actions in a real browser (see lib.mjs for the shared
// part); the Rust test is crates/sng/tests/e2e/console_admin.rs. SNG_RUN names a past run.
import { base, token, tenant, workspace, has, check, seen, accessible, signIn, rows, openWorkspace, main } from './lib.mjs';

const run = process.env.SNG_RUN || '';
const PAGES = ['events', 'audit', 'policies', 'quarantine', 'agents'];

async function open(page, path) {
  const r = await page.goto(`${base}${path}`);
  check(r.status() === 200, `${path} answers ${r.status()}`);
  seen.push(await page.content());
  return r;
}

async function text(page, sel) {
  return (await page.textContent(sel)) || '';
}

async function pages(page) {
  await signIn(page, token);
  // Tenants: quota use beside the badge.
  const cells = await page.$$eval('#tenants tbody tr:first-child td', (tds) => tds.map((td) => td.textContent.trim()));
  check(cells[1].includes('sandbox'), `the tenant is marked sandbox: ${cells}`);
  check(cells[2] === '2 / 10', `workspaces used / quota: ${cells[2]}`);
  check(/^[1-9][0-9]* \/ 100$/.test(cells[4]), `runs this hour / quota: ${cells[4]}`);
  await accessible(page, 'the tenants page with quota use');

  // The tenant's navigation, from its workspaces page.
  await open(page, `/ui/t/${tenant}/workspaces`);
  await Promise.all([page.waitForURL(has('/events')), page.click('nav.tenant-nav a[href$="/events"]')]);
  const types = await rows(page, 'events');
  check(types.includes('run.planned') && types.includes('run.completed'), `the events are listed: ${types}`);
  check((await text(page, '#events')).includes('app'), 'the events name their workspace');
  check((await page.getAttribute('nav.tenant-nav a[aria-current=page]', 'href')).endsWith('/events'), 'the navigation marks the page');
  await accessible(page, 'the events page');

  await page.click('nav.tenant-nav a[href$="/audit"]');
  await page.waitForURL(has('/audit'));
  const audit = await text(page, '#audit');
  check(audit.includes('apply') && audit.includes('Workspace app') && audit.includes('token:'), `the audit shows actor, action, target: ${audit.slice(0, 300)}`);
  await accessible(page, 'the audit page');

  await page.click('nav.tenant-nav a[href$="/policies"]');
  await page.waitForURL(has('/policies'));
  check(JSON.stringify(await rows(page, 'policies')) === '["notes"]', 'the policy notes is listed');
  const decisions = await text(page, '#decisions');
  check(decisions.includes('notes') && decisions.includes('denied') && decisions.includes('app'), `its decisions are listed: ${decisions.slice(0, 300)}`);
  check((await page.$('#decisions a[href*="/runs/"]')) !== null, 'a decision links its run');
  await accessible(page, 'the policies page');

  await page.click('nav.tenant-nav a[href$="/quarantine"]');
  await page.waitForURL(has('/quarantine'));
  const q = await text(page, '#quarantine');
  check(q.includes('db') && q.includes('Superseded'), `the superseded plan is quarantined: ${q.slice(0, 300)}`);
  await accessible(page, 'the quarantine page');

  await page.click('nav.tenant-nav a[href$="/agents"]');
  await page.waitForURL(has('/agents'));
  check(JSON.stringify(await rows(page, 'pools')) === '["edge"]', 'the pool edge is listed');
  check(JSON.stringify(await rows(page, 'agents')) === '["edge-1"]', 'the agent edge-1 is listed');
  check((await text(page, '#agents')).includes('0 / 2'), 'with its slots');
  await accessible(page, 'the agents page');

  // A malformed page position is refused, naming the field.
  const bad = await page.goto(`${base}/ui/t/${tenant}/events?before=x`);
  check(bad.status() === 400 && (await text(page, '#error')).includes('before'), `a bad ?before= answers 400 naming it, not ${bad.status()}`);

  // Another tenant's pages: 404.
  for (const p of [...PAGES.map((x) => `/ui/t/other/${x}`), '/ui/t/other/runs/run-x/rollback']) {
    const r = await page.goto(`${base}${p}`);
    check(r.status() === 404, `${p} answers 404, not ${r.status()}`);
  }
}

async function viewer(page) {
  await signIn(page, token);
  // db awaits approval: an operator would see approve and discard there.
  const paths = ['/ui/tenants', ...PAGES.map((x) => `/ui/t/${tenant}/${x}`), `/ui/t/${tenant}/runs/${run}`, `/ui/t/${tenant}/workspaces/${workspace}`, `/ui/t/${tenant}/workspaces/db`];
  for (const p of paths) {
    await open(page, p);
    const actions = await page.$$eval('main button, main form[method=post], main a.button', (els) => els.length);
    check(actions === 0, `a viewer sees no action on ${p} (${actions})`);
  }
  check((await page.$('#rollback')) === null, 'no rollback for a viewer');
  await accessible(page, 'a workspace page for a viewer');
  const csrf = await page.getAttribute('header input[name=csrf]', 'value');
  const rb = await page.goto(`${base}/ui/t/${tenant}/runs/${run}/rollback`);
  check(rb.status() === 403, `the rollback page refuses a viewer: ${rb.status()}`);
  for (const p of [`/ui/t/${tenant}/workspaces/${workspace}/suspend`, `/ui/t/${tenant}/workspaces/db/discard`, `/ui/t/${tenant}/runs/${run}/rollback`, `/ui/t/${tenant}/quarantine/q-000000000000/discard`]) {
    const r = await page.request.post(`${base}${p}`, { form: { csrf } });
    check(r.status() === 403, `POST ${p} refuses a viewer: ${r.status()}`);
  }
}

async function discard(page) {
  await signIn(page, token);
  await open(page, `/ui/t/${tenant}/quarantine`);
  const button = await page.$('#quarantine button');
  check(button !== null, 'an operator sees a discard button');
  await Promise.all([page.waitForURL(has('notice=discarded')), button.click()]);
  check((await text(page, '#notice')).includes('discarded'), 'the page says the plan is discarded');
  check((await text(page, '#quarantine')).includes('discarded by'), 'the entry says who discarded it');
  check((await page.$('#quarantine button')) === null, 'no discard button left');
  await accessible(page, 'the quarantine page after a discard');
}

async function discardPlan(page) {
  await signIn(page, token);
  await openWorkspace(page, workspace);
  check((await page.$('#approve')) !== null && (await page.$('#discard')) !== null, 'a plan awaiting approval: approve and discard');
  await accessible(page, 'the discard button');
  await Promise.all([page.waitForURL(has('notice=plan-discarded')), page.click('#discard')]);
  check((await text(page, '#notice')).includes('Plan discarded'), 'the page says the plan is discarded');
  check((await page.$('#discard')) === null && (await page.$('#approve')) === null, 'nothing left to approve or discard');
  check((await text(page, '#conditions')).includes('PlanDiscarded'), 'the conditions say the plan was discarded');
}

async function suspend(page) {
  await signIn(page, token);
  await openWorkspace(page, workspace);
  check((await page.$('#resume')) === null, 'a running workspace offers no resume');
  await Promise.all([page.waitForURL(has('notice=suspended')), page.click('#suspend')]);
  check((await text(page, '#notice')).includes('suspended'), 'the page says the workspace is suspended');
  check((await page.$('#suspend')) === null, 'a suspended workspace offers no suspend');
  await accessible(page, 'the resume button');
  await Promise.all([page.waitForURL(has('notice=resumed')), page.click('#resume')]);
  check((await text(page, '#notice')).includes('resumed'), 'the page says the workspace is resumed');
  check((await page.$('#suspend')) !== null, 'the suspend button is back');
}

async function rollback(page) {
  await signIn(page, token);
  await open(page, `/ui/t/${tenant}/runs/${run}`);
  await Promise.all([page.waitForURL(has('/rollback')), page.click('#rollback')]);
  seen.push(await page.content());
  const plan = await text(page, '#rollback-plan');
  check(plan.includes('sha256:') && plan.includes('+1 ~0 -0') && plan.includes(run), `the run's plan is shown first: ${plan}`);
  check((await page.getAttribute('#rollback-confirm', 'class')) === 'primary', 'outside production: a plain button');
  check((await page.$('#confirm')) === null, 'no name to re-type outside production');
  await accessible(page, 'the rollback confirmation page');
  await Promise.all([page.waitForURL(has('notice=rolledback')), page.click('#rollback-confirm')]);
  check((await text(page, '#notice')).includes('Rollback started'), 'the page says the rollback started');
}

async function prodRollback(page) {
  await signIn(page, token);
  await open(page, `/ui/t/${tenant}/runs/${run}/rollback`);
  check((await page.getAttribute('#rollback-confirm', 'class')) === 'danger', 'a rollback that destroys in production: a red button');
  await accessible(page, 'the production rollback confirmation');
  await page.fill('#confirm', 'wrong-name');
  check(await page.isDisabled('#rollback-confirm'), 'a wrong name keeps the button disabled');
  await page.$eval('#rollback-confirm', (b) => { b.disabled = false; });
  const [refused] = await Promise.all([page.waitForNavigation(), page.click('#rollback-confirm')]);
  check(refused.status() === 428, `a wrong re-typed name answers 428, not ${refused.status()}`);
  check((await text(page, '#error')).includes(workspace), 'the refusal names the workspace');
  await open(page, `/ui/t/${tenant}/runs/${run}/rollback`);
  await page.fill('#confirm', workspace);
  await Promise.all([page.waitForURL(has('notice=rolledback')), page.click('#rollback-confirm')]);
  check((await text(page, '#notice')).includes('Rollback started'), 'the page says the rollback started');
}

await main({ pages, viewer, discard, 'discard-plan': discardPlan, suspend, rollback, 'prod-rollback': prodRollback });
