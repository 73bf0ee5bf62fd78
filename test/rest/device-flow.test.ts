// The device authorization flow as the OpenHands CLI, the CloudClient and Agent Canvas use it:
// authorize (all six fields), poll the token endpoint with a form (RFC 8628 errors until the
// code is decided, slow_down when too eager), approve on the verification page in a real
// headless browser behind the sign-in while a poller waits, then use the key as Bearer and
// revoke it. Codes are stored hashed, spent once, expire, and work across two replicas.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyText } from '../../src/crypto.js';
import { launchBrowser, type TestBrowser } from '../helpers/browser.js';
import { call, startTestApp, testDatabaseUri, type TestApp } from '../helpers/app.js';
import { runCli } from '../helpers/processes.js';
import { signIn } from '../helpers/session.js';

const ENCRYPTION_KEY = generateKeyText();
let skewMs = 0;
const clock = () => Date.now() + skewMs;
let app: TestApp;
let replica: TestApp;
let browser: TestBrowser;
let dana: string;

beforeAll(async () => {
  const env = { DEVICE_CODE_INTERVAL_SECONDS: '1', ENCRYPTION_KEY };
  app = await startTestApp('device-flow', env, { clock });
  replica = await startTestApp('device-flow-2', env, { clock, dbName: app.dbName });
  dana = await app.keyFor('dana');
  await call(app, 'POST', '/api/v1/secrets', { key: dana, body: { name: 'DANA_SECRET', value: 'dana-value' } });
  browser = await launchBrowser('device-flow');
}, 90_000);
afterAll(async () => {
  await browser?.close();
  await replica?.stop();
  await app?.stop();
});

interface Authorization {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  expires_in: number;
  interval: number;
}

async function authorize(target: TestApp = app, body: unknown = {}): Promise<Authorization> {
  const res = await call(target, 'POST', '/oauth/device/authorize', { body, headers: { 'user-agent': 'device-flow-test/1.0' } });
  expect(res.status, res.text).toBe(200);
  return res.body;
}

/** One poll as the CLI sends it: a form with device_code. */
const poll = (deviceCode: string, target: TestApp = app, extra: Record<string, string> = {}) =>
  fetch(`${target.url}/oauth/device/token`, { method: 'POST', body: new URLSearchParams({ device_code: deviceCode, ...extra }) }).then(
    async (res) => ({ status: res.status, body: (await res.json()) as Record<string, unknown>, headers: res.headers }),
  );

const approve = (userCode: string, key: string, action = 'approve', target: TestApp = app) =>
  call(target, 'POST', '/oauth/device/verify-authenticated', {
    rawBody: new URLSearchParams({ user_code: userCode, action }).toString(),
    headers: { 'x-session-api-key': key, 'content-type': 'application/x-www-form-urlencoded' },
  });

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls as a well-behaved device until the answer is no longer pending (the CLI's loop). */
async function pollUntilDecided(deviceCode: string, interval: number, target: TestApp = app) {
  for (let i = 0; i < 120; i++) {
    const res = await poll(deviceCode, target);
    if (res.status === 200 || (res.body.error !== 'authorization_pending' && res.body.error !== 'slow_down')) return res;
    if (res.body.error === 'slow_down') interval = Number(res.body.interval);
    await sleep(interval * 1000);
  }
  throw new Error('the device was never decided');
}

describe('POST /oauth/device/authorize', () => {
  it('answers all six fields the CLI requires, and stores neither code in clear', async () => {
    const started = await authorize();
    expect(Object.keys(started).sort()).toEqual(
      ['device_code', 'expires_in', 'interval', 'user_code', 'verification_uri', 'verification_uri_complete'].sort(),
    );
    expect(started).toMatchObject({ expires_in: 600, interval: 1, verification_uri: `${app.url}/oauth/device` });
    expect(started.user_code).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    expect(started.device_code.length).toBeGreaterThanOrEqual(43);
    expect(started.verification_uri_complete).toBe(`${app.url}/oauth/device?user_code=${encodeURIComponent(started.user_code)}`);
    const stored = JSON.stringify(await app.rawCollection('device_codes').find({}).toArray());
    expect(stored).not.toContain(started.device_code);
    expect(stored).not.toContain(started.user_code.replace('-', ''));
    // RFC 8628 clients post a form; anything else is refused.
    const form = await call(app, 'POST', '/oauth/device/authorize', {
      rawBody: 'client_id=cli',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(form.status).toBe(200);
    const text = await call(app, 'POST', '/oauth/device/authorize', { rawBody: 'hi', headers: { 'content-type': 'text/plain' } });
    expect(text.status).toBe(415);
  });
});

describe('POST /oauth/device/token', () => {
  it('answers authorization_pending, then slow_down with a longer interval to a device polling too soon', async () => {
    const { device_code } = await authorize();
    expect(await poll(device_code)).toMatchObject({ status: 400, body: { error: 'authorization_pending' } });
    const eager = await poll(device_code);
    expect(eager).toMatchObject({ status: 400, body: { error: 'slow_down', interval: 6 } });
    expect(eager.headers.get('cache-control')).toContain('no-store');
    // The other replica knows: the interval lives with the request in the database.
    expect((await poll(device_code, replica)).body).toMatchObject({ error: 'slow_down', interval: 11 });
  });

  it('refuses an unknown code, another grant type, and a missing code', async () => {
    expect(await poll('x'.repeat(43))).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    const { device_code } = await authorize();
    expect(await poll(device_code, app, { grant_type: 'authorization_code' })).toMatchObject({
      status: 400,
      body: { error: 'unsupported_grant_type' },
    });
    const missing = await fetch(`${app.url}/oauth/device/token`, { method: 'POST', body: new URLSearchParams({}) });
    expect(missing.status).toBe(422);
  });

  it('answers access_denied after a denial and expired_token after the code expired', async () => {
    const denied = await authorize();
    expect(await approve(denied.user_code, dana, 'deny')).toMatchObject({ status: 200, body: { success: true, status: 'denied' } });
    expect(await poll(denied.device_code)).toMatchObject({ status: 400, body: { error: 'access_denied' } });
    const late = await authorize();
    skewMs += 601_000;
    try {
      expect(await poll(late.device_code)).toMatchObject({ status: 400, body: { error: 'expired_token' } });
      expect(await approve(late.user_code, dana)).toMatchObject({ status: 404 });
    } finally {
      skewMs -= 601_000;
    }
  });

  it('hands out the key once, to the device whose code was approved, on any replica', async () => {
    const started = await authorize(replica);
    expect(await approve(started.user_code.toLowerCase().replace('-', ' '), dana)).toMatchObject({
      status: 200,
      body: { status: 'approved' },
    });
    expect(await approve(started.user_code, dana)).toMatchObject({ status: 404 }); // decided already
    const granted = await pollUntilDecided(started.device_code, started.interval);
    expect(granted).toMatchObject({ status: 200, body: { token_type: 'Bearer', access_token: expect.stringMatching(/^ohk_/) } });
    expect(granted.body).not.toHaveProperty('expires_in');
    expect(await poll(started.device_code, replica)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    const listed = (await call(app, 'GET', '/api/v1/secrets/search', { headers: { authorization: `Bearer ${granted.body.access_token}` } }))
      .body;
    expect(listed.items.map((s: { name: string }) => s.name)).toEqual(['DANA_SECRET']);
  });
});

describe('approval', () => {
  it('needs a signed-in user, and a browser session only from our own origin', async () => {
    const started = await authorize();
    const form = new URLSearchParams({ user_code: started.user_code }).toString();
    const post = (headers: Record<string, string>) =>
      call(app, 'POST', '/oauth/device/verify-authenticated', {
        rawBody: form,
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      });
    expect(await post({})).toMatchObject({ status: 401 });
    const { cookie } = await signIn(app, dana);
    expect(await post({ cookie, origin: 'http://evil.example' })).toMatchObject({ status: 403 });
    expect(await post({ cookie })).toMatchObject({ status: 403 }); // a state change by cookie names its origin
    expect(await post({ cookie, 'sec-fetch-site': 'cross-site', origin: app.url })).toMatchObject({ status: 403 });
    expect((await poll(started.device_code)).body.error).toBe('authorization_pending');
    expect(await post({ cookie, origin: app.url })).toMatchObject({ status: 200, body: { status: 'approved' } });
    expect(await approve('BCDF-GHJK', dana)).toMatchObject({ status: 404, body: { detail: expect.stringContaining('unknown') } });
  });
});

describe('the verification page, end to end in a browser', () => {
  it('signs in, shows who approves what, approves; the waiting device gets a key it can use until it is revoked', async () => {
    const started = await authorize(app, { client_name: 'OpenHands CLI <test>' });
    const device = pollUntilDecided(started.device_code, started.interval);
    const page = await browser.newPage();
    await page.goto(started.verification_uri_complete);
    expect(new URL(page.url()).pathname).toBe('/signin');
    await page.fill('#api-key', dana);
    await Promise.all([page.waitForURL((url) => url.pathname === '/oauth/device'), page.click('button[type=submit]')]);
    expect(new URL(page.url()).searchParams.get('user_code')).toBe(started.user_code);
    expect(await page.textContent('#user')).toBe('dana');
    expect(await page.textContent('#user-code')).toBe(started.user_code);
    expect(await page.textContent('#client')).toBe('OpenHands CLI <test>'); // as text, never markup
    expect(await page.textContent('#user-agent')).toBe('device-flow-test/1.0');
    await browser.screenshot(page, 'verification page');
    await page.click('#approve');
    await page.locator('#result', { hasText: 'Approved' }).waitFor();
    await browser.screenshot(page, 'approved');

    const granted = await device;
    expect(granted.status).toBe(200);
    const bearer = { authorization: `Bearer ${granted.body.access_token}` };
    expect((await call(app, 'GET', '/api/v1/secrets/search', { headers: bearer })).body.items).toEqual([
      { name: 'DANA_SECRET', description: '' },
    ]);
    // An API key of dana like any other: the operator's CLI lists it with its label and revokes it.
    const cliEnv = { MONGODB_URI: testDatabaseUri(app.dbName), ENCRYPTION_KEY };
    const listed = await runCli(['keys', 'list', '--user', 'dana'], cliEnv);
    const line = listed.stdout.split('\n').find((l) => l.endsWith('\tdevice: OpenHands CLI <test>'));
    expect(line, listed.stdout + listed.stderr).toMatch(/^\w+\tdana\t\S+\tactive\t/);
    expect(granted.body.access_token).toContain(`_${line!.split('\t')[0]}_`);
    const revoked = await runCli(['keys', 'revoke', line!.split('\t')[0]!], cliEnv);
    expect(revoked.code, revoked.stderr).toBe(0);
    skewMs += 5_000; // AUTH_CACHE_TTL_MS: how long a replica may still trust a key verified before
    try {
      expect((await call(app, 'GET', '/api/v1/secrets/search', { headers: bearer })).status).toBe(401);
      expect((await call(replica, 'GET', '/api/v1/secrets/search', { headers: bearer })).status).toBe(401);
    } finally {
      skewMs -= 5_000;
    }

    // The same code again: the page says it is spent and offers to enter another.
    await page.goto(started.verification_uri_complete);
    await page.locator('#unknown').waitFor();
    expect(await page.locator('#request').count()).toBe(0);
  });

  it('denies from the page, and offers a field for a code typed by hand', async () => {
    const started = await authorize();
    const page = await browser.newPage();
    await page.goto(started.verification_uri);
    await page.fill('#api-key', dana);
    await Promise.all([page.waitForURL((url) => url.pathname === '/oauth/device'), page.click('button[type=submit]')]);
    await page.fill('#code-input', started.user_code.toLowerCase());
    await Promise.all([page.waitForURL((url) => url.searchParams.has('user_code')), page.click('#continue')]);
    expect(await page.textContent('#client')).toBe('not said');
    await page.click('#deny');
    await page.locator('#result', { hasText: 'Denied' }).waitFor();
    expect(await pollUntilDecided(started.device_code, started.interval)).toMatchObject({ status: 400, body: { error: 'access_denied' } });
  });
});
