// Drives the Swagger UI at BASE/docs/ in Debian's chromium (Playwright, no downloaded browser)
// the way a person would: Authorize with the OAuth 2.0 client-credentials flow (the prefilled demo
// client), then "Try it out" on GET /users and check that the live response is a 200 page of users.
// Usage: node check.mjs http://127.0.0.1:PORT   (infra/scripts/check-docs-page.sh runs it)
// Prints each step; exits non-zero on the first failure.
import { chromium } from 'playwright-core';

const base = (process.argv[2] || '').replace(/\/+$/, '');
if (!/^https?:\/\//.test(base)) {
  console.error('usage: node check.mjs http://HOST:PORT');
  process.exit(2);
}
const STEP_TIMEOUT_MS = 15_000;
const CLIENT_ID = 'northwind-integration';
const CLIENT_SECRET = 'dev-secret-change-me';
const REQUIRED_SCOPE = 'service-api/read';

const step = (msg) => console.log(`  - ${msg}`);
function fail(msg) {
  throw new Error(msg);
}

const LAUNCH_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

// Debian's chromium has, rarely (once in a few dozen launches here), died with SIGSEGV while
// starting up, before any page: a launch is tried up to three times.
async function launch() {
  for (let attempt = 1; ; attempt++) {
    try {
      return await chromium.launch({
        executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
        args: LAUNCH_ARGS,
        timeout: 30_000,
      });
    } catch (e) {
      if (attempt >= 3) throw e;
      console.log(`  ! chromium did not start (attempt ${attempt}): ${String(e.message).split('\n')[0]}; retrying`);
    }
  }
}

const browser = await launch();

let exitCode = 0;
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
  context.setDefaultTimeout(STEP_TIMEOUT_MS);
  const page = await context.newPage();

  // Requests off the server and script errors: printed as warnings at the end, not failures.
  const pageErrors = [];
  const offHost = new Set();
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  page.on('request', (req) => {
    const url = req.url();
    if (!url.startsWith(base) && !url.startsWith('data:') && !url.startsWith('blob:')) {
      offHost.add(url);
    }
  });

  await page.goto(`${base}/docs/`, { waitUntil: 'domcontentloaded' });
  await page.locator('.opblock').first().waitFor();
  const title = (await page.locator('.information-container .title').first().innerText()).split('\n')[0];
  step(`opened ${base}/docs/: "${title.trim()}", ${await page.locator('.opblock').count()} operations`);

  // 1. Authorize: the dialog's OAuth2 (clientCredentials) section.
  await page.locator('.auth-wrapper button.authorize').click();
  const modal = page.locator('.dialog-ux .modal-ux');
  await modal.waitFor();
  const oauth = modal
    .locator('.auth-container')
    .filter({ has: page.locator('h4', { hasText: 'clientCredentials' }) });
  if ((await oauth.count()) !== 1) fail('no OAuth2 (clientCredentials) section in the Authorize dialog');
  step('Authorize dialog open, OAuth2 (clientCredentials) section found');

  for (const [id, want, label] of [
    ['#client_id_clientCredentials', CLIENT_ID, 'client_id'],
    ['#client_secret_clientCredentials', CLIENT_SECRET, 'client_secret'],
  ]) {
    const input = oauth.locator(id);
    const got = await input.inputValue();
    if (got === want) {
      step(`${label} prefilled`);
    } else {
      // Not a failure of the flow, but the brief says the UI prefills them: say so loudly.
      console.log(`  ! ${label} was ${got ? 'prefilled with another value' : 'empty'}; filling it in`);
      await input.fill(want);
    }
  }

  // Ask for the read scope only (initOAuth preselects all four): "select none", then tick
  // service-api/read. The checkboxes are hidden inputs styled through their labels: click the label.
  const boxes = oauth.locator('.scopes input[type=checkbox]');
  const checkedScopes = () =>
    boxes.evaluateAll((els) => els.filter((e) => e.checked).map((e) => e.dataset.value));
  step(`scopes offered: ${(await boxes.evaluateAll((els) => els.map((e) => e.dataset.value))).join(' ')}; preselected: ${(await checkedScopes()).join(' ') || 'none'}`);
  await oauth.locator('.scopes h2 a', { hasText: 'select none' }).click();
  const scopeBox = oauth.locator(`.scopes input[type=checkbox][data-value="${REQUIRED_SCOPE}"]`);
  if ((await scopeBox.count()) !== 1) fail(`no ${REQUIRED_SCOPE} scope checkbox`);
  if (await scopeBox.isChecked()) fail('"select none" left the scopes checked');
  await oauth.locator(`label[for="${await scopeBox.getAttribute('id')}"]`).click();
  const scopes = await checkedScopes();
  if (scopes.join(' ') !== REQUIRED_SCOPE) fail(`scopes selected are "${scopes.join(' ')}", wanted ${REQUIRED_SCOPE}`);
  step(`clicked "select none", then ticked ${REQUIRED_SCOPE}: selected ${scopes.join(' ')}`);

  const tokenResponse = page.waitForResponse(
    (r) => new URL(r.url()).pathname === '/oauth2/token' && r.request().method() === 'POST',
  );
  await oauth.locator('button.authorize').click();
  const token = await tokenResponse;
  if (token.status() !== 200) {
    fail(`POST /oauth2/token answered ${token.status()}: ${(await token.text()).slice(0, 300)}`);
  }
  const tokenBody = await token.json();
  if (!tokenBody.access_token) fail('token response has no access_token');
  const sent = new URLSearchParams(token.request().postData() || '');
  if (sent.get('grant_type') !== 'client_credentials') fail(`token request grant_type was ${sent.get('grant_type')}`);
  if (tokenBody.scope !== undefined && !String(tokenBody.scope).split(' ').includes(REQUIRED_SCOPE)) {
    fail(`token granted scope "${tokenBody.scope}", without ${REQUIRED_SCOPE}`);
  }
  step(`POST /oauth2/token (grant_type client_credentials, scope "${sent.get('scope')}") -> 200, token_type ${tokenBody.token_type}, scope "${tokenBody.scope ?? ''}"`);

  // Swagger UI shows "Authorized" and a Logout button in the section once it holds a token;
  // an error from the token endpoint would show in .errors instead.
  await oauth.locator('h6', { hasText: 'Authorized' }).waitFor();
  if ((await oauth.locator('.errors').count()) > 0) {
    fail(`Authorize dialog shows an error: ${await oauth.locator('.errors').innerText()}`);
  }
  step('dialog shows the oauth2 scheme as Authorized');
  await oauth.locator('button.btn-done').click();
  await modal.waitFor({ state: 'detached' });
  const lockState = await page.locator('.auth-wrapper button.authorize').getAttribute('class');
  if (!/\blocked\b/.test(lockState)) fail(`Authorize button is not locked after authorizing (class "${lockState}")`);
  step('dialog closed, Authorize button shows locked');

  // 2. GET /users: expand, Try it out, Execute.
  const op = page.locator('#operations-Users-listUsers');
  await op.waitFor();
  await op.locator('.opblock-summary-control').click();
  await op.locator('.opblock-body').waitFor();
  step('expanded GET /users (listUsers)');

  // tryItOutEnabled may already have switched the block to "Try it out" mode (button says Cancel).
  const tryOut = op.locator('button.try-out__btn');
  if ((await tryOut.innerText()).trim() === 'Try it out') {
    await tryOut.click();
    step('clicked Try it out');
  } else {
    step('Try it out already on (tryItOutEnabled)');
  }

  const usersResponse = page.waitForResponse(
    (r) => new URL(r.url()).pathname === '/users' && r.request().method() === 'GET',
  );
  await op.locator('button.execute').click();
  const users = await usersResponse;
  const authHeader = (await users.request().allHeaders())['authorization'] || '';
  if (!authHeader.startsWith('Bearer ')) fail('GET /users was sent without a Bearer token');
  step(`clicked Execute: GET ${new URL(users.url()).pathname}${new URL(users.url()).search} sent with the Bearer token, network status ${users.status()}`);

  // The rendered live response (not just the network): status cell and body.
  const live = op.locator('.responses-wrapper .live-responses-table .response');
  await live.first().waitFor();
  const status = (await live.first().locator('.response-col_status').innerText()).trim();
  const body = await live.first().locator('.response-col_description pre').first().innerText();
  if (status !== '200') fail(`rendered response code is ${status}, not 200; body: ${body.slice(0, 300)}`);
  if (!body.includes('"pagination"')) fail(`rendered response body has no "pagination": ${body.slice(0, 300)}`);
  step(`rendered response: code ${status}, body has "pagination" (${body.length} chars)`);

  if (offHost.size > 0) {
    console.log(`  ! the page requested ${offHost.size} URL(s) off the server: ${[...offHost].join(', ')}`);
  }
  if (pageErrors.length > 0) {
    console.log(`  ! page errors: ${pageErrors.join(' | ')}`);
  }
  console.log('browser flow OK: authorized with client credentials, GET /users tried out -> 200 with pagination');
} catch (e) {
  console.error(`browser flow FAILED: ${e.message}`);
  exitCode = 1;
} finally {
  await browser.close();
}
process.exit(exitCode);
