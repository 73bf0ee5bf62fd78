// Signing in with a real browser (Debian chromium): an unauthenticated visit is sent to the
// sign-in page, a wrong key is refused on the page, the right one lands on the requested path,
// the page's own same-origin requests are then authenticated by the cookie alone, and signing
// out ends it. The ?next= target never leaves the origin.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type TestBrowser } from '../helpers/browser.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

let app: TestApp;
let browser: TestBrowser;
let key: string;

beforeAll(async () => {
  app = await startTestApp('browser-signin');
  key = await app.keyFor('erin');
  browser = await launchBrowser('signin');
});
afterAll(async () => {
  await browser?.close();
  await app?.stop();
});

describe('browser sign-in', () => {
  it('redirects, refuses a wrong key, signs in, uses the cookie, and signs out', async () => {
    const page = await browser.newPage();
    await page.goto(`${app.url}/`);
    expect(new URL(page.url()).pathname).toBe('/signin');
    expect(new URL(page.url()).searchParams.get('next')).toBe('/');
    await browser.screenshot(page, 'sign-in page');

    await page.fill('#api-key', 'ohk_AAAAAAAAAAAA_' + 'A'.repeat(40));
    await page.click('button[type=submit]');
    await page.locator('#error', { hasText: 'not valid' }).waitFor();
    await browser.screenshot(page, 'wrong key');

    await page.fill('#api-key', key);
    await Promise.all([page.waitForURL(`${app.url}/`), page.click('button[type=submit]')]);
    expect(await page.textContent('#user')).toBe('erin');
    await browser.screenshot(page, 'signed in');

    const cookies = await page.context().cookies();
    expect(cookies).toEqual([
      expect.objectContaining({ name: 'acp_session', httpOnly: true, sameSite: 'Strict', path: '/', secure: false }),
    ]);
    expect(await page.evaluate('document.cookie')).toBe(''); // HttpOnly: invisible to scripts

    // The page's own requests carry no key, only the cookie; the browser adds Origin to the POST.
    const saved = await page.evaluate(`fetch('/api/settings', { method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ llm_model: 'from-the-browser' }) }).then((r) => r.status)`);
    expect(saved).toBe(200);
    const read = await page.evaluate(`fetch('/api/settings').then((r) => r.json())`);
    expect(read).toMatchObject({ llm_model: 'from-the-browser' });

    await Promise.all([page.waitForURL(/\/signin$/), page.click('#signout')]);
    expect(await page.evaluate(`fetch('/api/settings').then((r) => r.status)`)).toBe(401);
    expect(await page.context().cookies()).toEqual([]);
  });

  it.each([
    '//evil.example/',
    '/.//evil.example/',
    '/%2F%2Fevil.example',
    '/\\evil.example',
    'https://evil.example/',
    'javascript:alert(1)',
  ])('never follows next=%s off the origin', async (next) => {
    const page = await browser.newPage();
    await page.goto(`${app.url}/signin?next=${encodeURIComponent(next)}`);
    await page.fill('#api-key', key);
    await Promise.all([page.waitForURL(`${app.url}/`), page.click('button[type=submit]')]);
    expect(new URL(page.url()).origin).toBe(app.url);
  });
});
