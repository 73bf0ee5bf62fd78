// Agent Canvas served from another origin locked to the service (as Canvas's own static server
// does), signed in through Canvas's "Connect to OpenHands": the device flow, approved on the
// service's verification page behind its sign-in; the key it gets is listed and revocable (the
// run itself: test/helpers/agent-canvas-run.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../helpers/app.js';
import { recordTraffic } from '../helpers/agent-canvas.js';
import { afterSignIn, bearer, expectHarmless, RUN_TIMEOUT, startCanvasRig, type ElsewhereRig } from '../helpers/agent-canvas-run.js';

let rig: ElsewhereRig;

beforeAll(async () => {
  rig = await startCanvasRig('agent-canvas-device', { elsewhere: true });
});

afterAll(async () => {
  await rig?.close();
});

describe('Agent Canvas served elsewhere', () => {
  it('signs in through "Connect to OpenHands" (the device flow), runs a conversation', { timeout: RUN_TIMEOUT }, async () => {
    const { app, browser, elsewhere, front } = rig;
    const key = await app.keyFor('canvas-device');
    const page = await browser.newPage({ viewport: { width: 1600, height: 1000 }, ignoreHTTPSErrors: true });
    const traffic = recordTraffic(page, [front.url, elsewhere.url]);
    await page.goto(`${elsewhere.url}/`);
    const [popup] = await Promise.all([page.waitForEvent('popup'), page.getByTestId('add-backend-login-button').click()]);
    const popupTraffic = recordTraffic(popup, [front.url]);
    await popup.waitForURL((url) => url.pathname === '/signin');
    await popup.fill('#api-key', key);
    await Promise.all([popup.waitForURL((url) => url.pathname === '/oauth/device'), popup.click('button[type=submit]')]);
    expect(await popup.textContent('#user')).toBe('canvas-device');
    await rig.shot(popup, 'device-0-verify');
    await popup.click('#approve');
    await popup.locator('#result', { hasText: 'Approved' }).waitFor();
    await popup.waitForEvent('close', { timeout: 60_000 }); // Canvas closes it once it has its key
    await afterSignIn(rig, page, elsewhere.url, 'device', key, false);

    // The key the device flow issued: Canvas's, listed with the user's keys, revocable.
    const issued = (await app.server.deps.services.apiKeys.list('canvas-device')).filter((k) => k.label?.startsWith('device: '));
    expect(issued).toHaveLength(1);
    const stored = String(await page.evaluate("localStorage.getItem('openhands-backends')"));
    const canvasKey = /"apiKey":"(ohk_[^"]+)"/.exec(stored)![1]!;
    expect(canvasKey.startsWith(`ohk_${issued[0]!.id}_`)).toBe(true);
    expect((await call(app, 'GET', '/api/keys/current', bearer(canvasKey))).status).toBe(200);
    await app.server.deps.services.apiKeys.revoke(issued[0]!.id);
    await expect.poll(async () => (await call(app, 'GET', '/api/keys/current', bearer(canvasKey))).status).toBe(401);
    // Canvas sees it: its backend is no longer connected, the user logged out.
    await page.reload();
    await page.locator('[data-testid=backend-status-dot][data-status=disconnected]').first().waitFor();
    await page.getByText('Logged out').first().waitFor();
    await rig.shot(page, 'device-8-key-revoked');
    // Key mode: every API call of Canvas carried the key it got (the device flow's own calls need none).
    const sent = traffic.seen.filter((s) => s.url.startsWith(`${front.url}/api/`) && s.method !== 'OPTIONS');
    expect(sent.filter((s) => !s.authorization)).toEqual([]);
    expectHarmless(traffic, front.url, 'device');
    expect(popupTraffic.problems()).toEqual([]);
  });
});
