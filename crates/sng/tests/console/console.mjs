// The web console's main scenarios in a real browser (see lib.mjs for the shared part); the Rust
// test is crates/sng/tests/e2e/console.rs.
import { fs, base, token, tenant, workspace, has, check, seen, accessible, tabTo, signIn, rows, openWorkspace, main } from './lib.mjs';

async function browse(page, context) {
  // A wrong token is refused, on the sign-in page.
  await page.goto(`${base}/ui/login`);
  await accessible(page, 'the sign-in page');
  await page.fill('#token', 'sng_not-a-token');
  const [refused] = await Promise.all([page.waitForResponse((r) => r.url().endsWith('/ui/login') && r.request().method() === 'POST'), page.click('#sign-in')]);
  check(refused.status() === 401, `a wrong token answers 401, not ${refused.status()}`);
  check((await page.textContent('.error')).includes('not valid'), 'the sign-in page says the token is not valid');

  await signIn(page, token);
  const cookies = await context.cookies();
  const session = cookies.find((c) => c.name === 'sng_console');
  check(session && session.httpOnly && session.sameSite === 'Strict' && !session.secure, `the session cookie is HttpOnly, SameSite=Strict (not Secure over plain HTTP): ${JSON.stringify(session)}`);
  check(!cookies.some((c) => c.value.includes(token)), 'the token is not in a cookie');

  // Tenants: the token sees its own, marked sandbox.
  check(JSON.stringify(await rows(page, 'tenants')) === JSON.stringify([tenant]), 'the tenants page lists only the token\'s tenant');
  check((await page.textContent('#tenants')).includes('sandbox'), 'a non-production tenant shows `sandbox`');
  check((await page.textContent('#tenants tbody td:nth-child(3)')).trim() === '57', 'the tenant holds 57 workspaces');
  await accessible(page, 'the tenants page');
  await Promise.all([page.waitForURL(has(`/ui/t/${tenant}/workspaces`)), page.click(`#tenants a`)]);

  // The first page: 50 workspaces, a link to the next one.
  const first = await rows(page, 'workspaces');
  check(first.length === 50, `the first page holds 50 workspaces, not ${first.length}`);
  check(first.includes('db-1'), 'the first page lists db-1');
  await accessible(page, 'the workspaces page');
  await Promise.all([page.waitForURL(has('after=')), page.click('#next-page')]);
  const second = await rows(page, 'workspaces');
  check(second.length === 7 && second.includes('web-1') && !second.some((n) => first.includes(n)), `the second page holds the 7 others: ${second}`);
  check((await page.$('#next-page')) === null, 'the last page has no next page');

  // Filters: status, label, name.
  await page.goto(`${base}/ui/t/${tenant}/workspaces`);
  await page.selectOption('#status', 'AwaitingApproval');
  await Promise.all([page.waitForURL(has('status=AwaitingApproval')), page.click('#filter')]);
  check(JSON.stringify(await rows(page, 'workspaces')) === '["db-1"]', 'status AwaitingApproval: db-1 only');
  check((await page.textContent('#workspaces')).includes('AwaitingApproval'), 'its badge says AwaitingApproval');
  await page.selectOption('#status', 'Ready');
  await Promise.all([page.waitForURL(has('status=Ready')), page.click('#filter')]);
  check(JSON.stringify(await rows(page, 'workspaces')) === '["web-1"]', 'status Ready: web-1 only');
  await page.selectOption('#status', '');
  await page.fill('#label', 'team=web');
  await Promise.all([page.waitForURL(has('label=team%3Dweb')), page.click('#filter')]);
  check(JSON.stringify(await rows(page, 'workspaces')) === '["web-1"]', 'label team=web: web-1 only');
  await page.fill('#label', '');
  await page.fill('#q', 'db');
  await Promise.all([page.waitForURL(has('q=db')), page.click('#filter')]);
  check(JSON.stringify(await rows(page, 'workspaces')) === '["db-1"]', 'name search db: db-1 only');
  await page.goto(`${base}/ui/t/${tenant}/workspaces?status=Suspended`);
  check((await rows(page, 'workspaces')).length === 50, 'status Suspended: a full page of the 55 suspended ones');

  // A workspace: its module and pinned digest, conditions, output keys (no values), runs.
  await openWorkspace(page, 'web-1');
  check((await page.textContent('#pinned-digest')).startsWith('sha256:'), 'the pinned digest is shown');
  await accessible(page, 'a workspace page');
  check((await page.textContent('#conditions')).includes('Ready'), 'the conditions are shown');
  const keys = await page.$$eval('#output-keys code', (cs) => cs.map((c) => c.textContent));
  check(keys.includes('token') && keys.includes('name'), `the output keys are shown: ${keys}`);
  const runLinks = await page.$$('#runs tbody a');
  check(runLinks.length >= 1, 'the runs are listed');
  await Promise.all([page.waitForURL(has('/runs/')), runLinks[0].click()]);
  seen.push(await page.content());
  const run = await page.textContent('#run');
  check(run.includes('sha256:') && run.includes('web-1'), `the run shows its workspace and module digest: ${run}`);
  check((await page.textContent('#log')).length > 0, 'the run shows its log');
  await accessible(page, 'a run page');

  // Another tenant's workspace, and a run that does not exist: 404.
  for (const p of ['/ui/t/other/workspaces/hidden', '/ui/t/other/workspaces', `/ui/t/${tenant}/runs/run-does-not-exist`]) {
    const r = await page.goto(`${base}${p}`);
    check(r.status() === 404, `${p} answers 404, not ${r.status()}`);
  }
  await accessible(page, 'an error page');

  // Sign out: the session is over.
  await page.goto(`${base}/ui/tenants`);
  await Promise.all([page.waitForURL(has('/ui/login')), page.click('#sign-out')]);
  await page.goto(`${base}/ui/tenants`);
  check(page.url().endsWith('/ui/login'), 'after sign-out, a page sends to the sign-in page');
}

async function viewer(page) {
  await signIn(page, token);
  for (const name of ['db-1', 'web-1']) {
    await openWorkspace(page, name);
    check((await page.$('#approve')) === null, `a viewer sees no approve button on ${name}`);
    const buttons = await page.$$eval('main button, main form[method=post]', (els) => els.length);
    check(buttons === 0, `a viewer sees no action on ${name} (${buttons} buttons or forms)`);
  }
  // The approve route refuses a viewer even with the session's own CSRF token.
  const csrf = await page.getAttribute('header input[name=csrf]', 'value');
  const r = await page.request.post(`${base}/ui/t/${tenant}/workspaces/db-1/approve`, { form: { csrf, plan_id: 'x' } });
  check(r.status() === 403, `a viewer's approval answers 403, not ${r.status()}`);
}

async function approve(page) {
  await signIn(page, token);
  await openWorkspace(page, workspace);
  // Without the session's CSRF token, the form is refused.
  const plan = await page.getAttribute('input[name=plan_id]', 'value');
  const forged = await page.request.post(`${base}/ui/t/${tenant}/workspaces/${workspace}/approve`, { form: { csrf: 'forged', plan_id: plan } });
  check(forged.status() === 403, `a form without the session's CSRF token answers 403, not ${forged.status()}`);
  const csrf = await page.getAttribute('#approve-form input[name=csrf]', 'value');
  const elsewhere = await page.request.post(`${base}/ui/t/${tenant}/workspaces/${workspace}/approve`, { form: { csrf, plan_id: plan }, headers: { Origin: 'http://evil.example' } });
  check(elsewhere.status() === 403, `a form sent from another site answers 403, not ${elsewhere.status()}`);
  check((await page.getAttribute('#approve', 'class')) === 'primary', 'a plan outside production: a plain approve button');
  await accessible(page, 'the approval form');
  check((await page.$('#confirm')) === null, 'no name to re-type outside production');
  await Promise.all([page.waitForURL(has('notice=approved')), page.click('#approve')]);
  check((await page.textContent('#notice')).includes('approved'), 'the page says the plan is approved');
}

async function prodApprove(page) {
  await signIn(page, token);
  await openWorkspace(page, workspace);
  check((await page.textContent('h1')).includes('PROD'), 'a production tenant\'s workspace shows PROD');
  check((await page.getAttribute('#approve', 'class')) === 'danger', 'a destroying plan in production: a red button');
  await accessible(page, 'the production approval form');
  await page.fill('#confirm', 'wrong-name');
  check(await page.isDisabled('#approve'), 'a wrong name keeps the button disabled');
  // Sent anyway (the script's check bypassed), the server refuses it.
  await page.$eval('#approve', (b) => { b.disabled = false; });
  const [refused] = await Promise.all([page.waitForNavigation(), page.click('#approve')]);
  check(refused.status() === 428, `a wrong re-typed name answers 428, not ${refused.status()}`);
  check((await page.textContent('#error')).includes(workspace), 'the refusal names the workspace');
  await openWorkspace(page, workspace);
  await page.fill('#confirm', workspace);
  check(!(await page.isDisabled('#approve')), 'the right name enables the button');
  await Promise.all([page.waitForURL(has('notice=approved')), page.click('#approve')]);
  check((await page.textContent('#notice')).includes('approved'), 'the page says the plan is approved');
}

async function prodCreate(page) {
  await signIn(page, token);
  await openWorkspace(page, workspace);
  check((await page.getAttribute('#approve', 'class')) === 'primary', 'a plan that only creates, even in production: a plain button');
  await Promise.all([page.waitForURL(has('notice=approved')), page.click('#approve')]);
}

async function liveLog(page) {
  await signIn(page, token);
  await openWorkspace(page, workspace);
  await Promise.all([page.waitForURL(has('/runs/')), page.click('#runs tbody a')]);
  check((await page.$('#log[data-follow]')) !== null, 'a running run\'s log is followed');
  check((await page.textContent('#run-phase')) === 'Running', 'the run is Running');
  const before = (await page.textContent('#log')).length;
  await page.evaluate(() => { window.sngNotReloaded = true; });
  // The run goes on: its resource was waiting for this file.
  fs.writeFileSync(process.env.SNG_RELEASE, 'go');
  await page.waitForSelector('#log[data-ended]', { timeout: 120000 });
  check((await page.textContent('#run-phase')) === 'Succeeded', 'the phase turns Succeeded on the page');
  const after = await page.textContent('#log');
  check(after.length > before && after.includes('Apply complete'), `the rest of the log appeared: ${after.slice(before)}`);
  check(await page.evaluate(() => window.sngNotReloaded === true), 'without a reload');
  seen.push(after);
}

// The main flow with the keyboard only: sign in, a tenant, a workspace, a run.
async function keyboard(page) {
  await page.goto(`${base}/ui/login`);
  await tabTo(page, '#token');
  await page.keyboard.type(token);
  await Promise.all([page.waitForURL(has('/ui/tenants')), page.keyboard.press('Enter')]);
  await tabTo(page, `#tenants a[href="/ui/t/${tenant}/workspaces"]`);
  await Promise.all([page.waitForURL(has('/workspaces')), page.keyboard.press('Enter')]);
  await tabTo(page, '#q');
  await page.keyboard.type(workspace);
  await Promise.all([page.waitForURL(has(`q=${workspace}`)), page.keyboard.press('Enter')]);
  await tabTo(page, `#workspaces a[href$="/workspaces/${workspace}"]`);
  await Promise.all([page.waitForURL(has(`/workspaces/${workspace}`)), page.keyboard.press('Enter')]);
  await tabTo(page, '#runs tbody a');
  await Promise.all([page.waitForURL(has('/runs/')), page.keyboard.press('Enter')]);
  await tabTo(page, '#log');
  await tabTo(page, '#sign-out');
  await Promise.all([page.waitForURL(has('/ui/login')), page.keyboard.press('Enter')]);
}

// An operator's buttons: `Refresh now` (a workspace with spec.refresh), `Cancel the run` (a
// run going on); SNG_ACTION names which.
async function act(page) {
  const action = process.env.SNG_ACTION;
  await signIn(page, token);
  await openWorkspace(page, workspace);
  check((await page.$(`#${action}`)) !== null, `the ${action} button is shown`);
  await accessible(page, `the ${action} button`);
  await Promise.all([page.waitForURL(has('notice=')), page.click(`#${action}`)]);
  const notice = await page.textContent('#notice');
  check(notice.includes(action === 'refresh' ? 'Refresh due now' : 'cancelled'), `the page says what was done: ${notice}`);
}

const scenarios = { browse, viewer, approve, 'prod-create': prodCreate, 'prod-approve': prodApprove, 'live-log': liveLog, keyboard, act };


await main(scenarios);
