// The web UI calls agent servers straight from the browser (cross-origin, with the session key
// header, so with a preflight). The real OpenHands agent server must accept the origin the UI is
// served from (PUBLIC_URL) and TRUSTED_ORIGINS, and nothing else.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { startRealSandbox } from '../helpers/real-sandbox.js';

const UI = 'https://agents.example.test';
const NEXT = 'https://next.example.test';
let app: TestApp;
let key: string;

beforeAll(async () => {
  app = await startTestApp('agent-cors', { PUBLIC_URL: UI, TRUSTED_ORIGINS: NEXT, SANDBOX_STARTUP_TIMEOUT_MS: '120000' });
  key = await app.keyFor('cors-user');
});
afterAll(() => app.stop());

const preflight = (agentUrl: string, origin: string) =>
  fetch(`${agentUrl}/api/conversations/search`, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': 'GET', 'access-control-request-headers': 'x-session-api-key' },
  });

describe('agent-server CORS', () => {
  it('lets the UI origin and trusted origins call the agent server, and no other site', { timeout: 6 * 60_000 }, async () => {
    const sandbox = await startRealSandbox(app, key, 'AGENT-SERVER CORS');
    if (!sandbox) {
      expect(await app.rawCollection('sandboxes').countDocuments({})).toBe(0);
      return;
    }
    const { id, agentUrl } = sandbox;
    for (const origin of [UI, NEXT]) {
      const res = await preflight(agentUrl, origin);
      expect(res.status, origin).toBe(200);
      expect(res.headers.get('access-control-allow-origin')).toBe(origin);
      expect(res.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('x-session-api-key');
    }
    const foreign = await preflight(agentUrl, 'https://evil.example.test');
    expect(foreign.headers.get('access-control-allow-origin')).toBeNull();
    expect((await call(app, 'DELETE', `/api/v1/sandboxes/${id}`, { key })).status).toBe(200);
  });
});
