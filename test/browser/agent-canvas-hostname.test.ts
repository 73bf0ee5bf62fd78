// Agent Canvas served by the service as deployed on a hostname behind TLS (canvas.test, mapped to
// 127.0.0.1 in Chromium): off loopback, Canvas in cookie mode asks POST /api/authenticate before
// anything and sends a signed-out visitor to /login?returnTo=. Its link lands on the service's
// sign-in page and back; the session cookie is Secure; Canvas is told it is signed in and shows
// the backend connected. Then it runs a conversation: its agent server is reached through the
// service's origin (/agent-servers/<sandbox id>, src/http/agent-server-proxy.ts), calls and
// socket alike, as a browser on another host would.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../helpers/app.js';
import { recordTraffic } from '../helpers/agent-canvas.js';
import { afterSignIn, RUN_TIMEOUT, startCanvasRig, type HostnameRig } from '../helpers/agent-canvas-run.js';

const HOSTNAME = 'canvas.test';
let rig: HostnameRig;

beforeAll(async () => {
  rig = await startCanvasRig('agent-canvas-hostname', { hostname: HOSTNAME });
});

afterAll(async () => {
  await rig?.close();
});

describe('Agent Canvas on a hostname behind TLS', () => {
  it(
    'signs in by cookie through /login?returnTo=, with a Secure cookie, is told it is signed in, and runs a conversation',
    { timeout: RUN_TIMEOUT },
    async () => {
      const { app, browser, front } = rig;
      const origin = front.url;
      expect(new URL(origin).hostname).toBe(HOSTNAME);
      const key = await app.keyFor('canvas-hostname');
      const page = await browser.newPage({ viewport: { width: 1600, height: 1000 }, ignoreHTTPSErrors: true });
      const traffic = recordTraffic(page, [origin]);
      await page.goto(`${origin}/login?returnTo=${encodeURIComponent('/settings/app')}`);
      expect(new URL(page.url()).pathname).toBe('/signin');
      await page.fill('#api-key', key);
      await Promise.all([page.waitForURL(`${origin}/settings/app`), page.click('button[type=submit]')]);
      const [session] = (await page.context().cookies(origin)).filter((c) => c.name === 'acp_session');
      expect(session).toMatchObject({ secure: true, httpOnly: true, sameSite: 'Strict' });
      await page.locator('[data-testid=backend-status-dot][data-status=connected]').first().waitFor();
      await rig.shot(page, 'hostname-signed-in');
      // Canvas asked whether it was signed in (it does only off loopback) and was told yes.
      const asked = traffic.seen.filter((s) => s.method === 'POST' && s.url === `${origin}/api/authenticate`);
      expect(asked.length).toBeGreaterThan(0);
      expect(asked.map((s) => s.status)).toEqual(asked.map(() => 200));
      expect(traffic.seen.filter((s) => s.url.startsWith(`${origin}/api/`) && s.authorization)).toEqual([]);
      // Its sign-in report is answered (and not kept).
      expect(traffic.seen.filter((s) => s.url === `${origin}/api/analytics/events`).map((s) => s.status)).toEqual([200]);
      // The conversation: Canvas calls the agent server and opens its socket on this origin only.
      const sockets: string[] = [];
      page.on('websocket', (ws) => sockets.push(ws.url()));
      await page.goto(`${origin}/`);
      await afterSignIn(rig, page, origin, 'hostname', key, false);
      expect(sockets.filter((url) => url.includes('/sockets/events/'))).toContainEqual(
        expect.stringMatching(new RegExp(`^wss://${HOSTNAME}:\\d+/agent-servers/[0-9a-f]{32}/sockets/events/`)),
      );
      const agentCalls = traffic.seen.filter((s) => s.url.startsWith(`${origin}/agent-servers/`));
      expect(agentCalls.length).toBeGreaterThan(0);
      expect(traffic.seen.filter((s) => /^https?:\/\/(127\.0\.0\.1|localhost)[:/]/.test(s.url))).toEqual([]);
      expect(traffic.problems()).toEqual([]);
      // Signed out everywhere: the next visit goes back to the sign-in page.
      expect((await call(app, 'POST', '/api/auth/sessions/end-all', { key, body: {} })).status).toBe(200);
      await page.goto(`${origin}/`);
      expect(new URL(page.url()).pathname).toBe('/signin');
    },
  );
});
