// Agent Canvas served by the service and signed in on its sign-in page; Canvas, locked to its
// own origin, then uses the session cookie (the run itself: test/helpers/agent-canvas-run.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordTraffic } from '../helpers/agent-canvas.js';
import { afterSignIn, expectHarmless, RUN_TIMEOUT, startCanvasRig, type CanvasRig } from '../helpers/agent-canvas-run.js';

let rig: CanvasRig;

beforeAll(async () => {
  rig = await startCanvasRig('agent-canvas-cookie');
});

afterAll(async () => {
  await rig?.close();
});

describe('Agent Canvas served by the service', () => {
  it('signs in on its sign-in page (then the cookie), runs a conversation', { timeout: RUN_TIMEOUT }, async () => {
    const { app, browser } = rig;
    const key = await app.keyFor('canvas-cookie');
    const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
    const traffic = recordTraffic(page, [app.url]);
    await page.goto(`${app.url}/`);
    expect(new URL(page.url()).pathname).toBe('/signin');
    await page.fill('#api-key', key);
    await Promise.all([page.waitForURL(`${app.url}/`), page.click('button[type=submit]')]);
    await afterSignIn(rig, page, app.url, 'cookie', key, true);
    // Cookie mode: no request of Canvas to the service carried a key.
    const sent = traffic.seen.filter((s) => s.url.startsWith(`${app.url}/api/`));
    expect(sent.length).toBeGreaterThan(40);
    expect(sent.filter((s) => s.authorization)).toEqual([]);
    expectHarmless(traffic, app.url, 'cookie');
  });
});
