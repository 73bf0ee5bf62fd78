// OpenID Connect sign-in in a real browser (Debian chromium) against a real provider
// (oidc-provider) on another site than the service (localhost vs 127.0.0.1): from the sign-in
// page's link through the provider's login and consent pages back to the service, signed in
// on the page asked for. The session cookie is SameSite=Strict, which a browser does not send
// on a redirect chain that began at another site: the callback's page moves on by itself, and
// this shows the browser then sends it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/processes.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { launchBrowser, type TestBrowser } from '../helpers/browser.js';
import { startOidcProvider, type TestProvider } from '../helpers/oidc-provider.js';

let app: TestApp;
let provider: TestProvider;
let browser: TestBrowser;

beforeAll(async () => {
  const port = await freePort();
  app = await startTestApp('browser-oidc', {
    OIDC_ISSUER: `http://localhost:${port}`,
    OIDC_CLIENT_ID: 'acp-test',
    OIDC_ALLOWED_DOMAINS: 'example.com',
  });
  provider = await startOidcProvider(
    port,
    `${app.url}/oauth/oidc/callback`,
    { ada: { email: 'ada@example.com', email_verified: true } },
    'localhost',
  );
  browser = await launchBrowser('oidc-signin');
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await provider?.close();
  await app?.stop();
});

describe('OpenID Connect sign-in in a browser', () => {
  it('goes from the sign-in page to the provider and back, signed in on the page asked for', async () => {
    const page = await browser.newPage();
    await page.goto(`${app.url}/`);
    expect(new URL(page.url()).pathname).toBe('/signin');
    await Promise.all([page.waitForURL((url) => url.hostname === 'localhost'), page.click('#oidc')]);
    await browser.screenshot(page, 'provider login');
    await page.fill('input[name=login]', 'ada');
    await page.fill('input[name=password]', 'any');
    await page.click('button[type=submit]');
    // The provider's consent page, then back to the service.
    const consent = page.getByRole('button', { name: 'Continue' });
    await consent.waitFor();
    await browser.screenshot(page, 'provider consent');
    await Promise.all([page.waitForURL(`${app.url}/`), consent.click()]);
    expect(await page.textContent('#user')).toBe('ada@example.com');
    await browser.screenshot(page, 'signed in');
  });
});
