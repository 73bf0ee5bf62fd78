// The built-in default spec of the process runtime runs the real OpenHands agent server
// (installed from PyPI into the cache on first use). Where no Python >= 3.12 exists, the
// start must fail at once with a message naming it, and this test says so loudly.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { startRealSandbox } from '../helpers/real-sandbox.js';

let app: TestApp;
let key: string;

beforeAll(async () => {
  app = await startTestApp('real-agent', { SANDBOX_STARTUP_TIMEOUT_MS: '120000' });
  key = await app.keyFor('agent-user');
});
afterAll(() => app.stop());

describe('default spec: the real OpenHands agent server', () => {
  it('starts a sandbox whose agent server answers with the sandbox key, pauses and deletes it', { timeout: 6 * 60_000 }, async () => {
    const sandbox = await startRealSandbox(app, key, 'REAL AGENT SERVER');
    if (!sandbox) {
      expect(await app.rawCollection('sandboxes').countDocuments({})).toBe(0);
      return;
    }
    const { id, agentUrl, sessionKey } = sandbox;
    expect(await (await fetch(`${agentUrl}/alive`)).json()).toEqual({ status: 'ok' });
    expect((await fetch(`${agentUrl}/api/conversations/search`)).status).toBe(401);
    const search = await fetch(`${agentUrl}/api/conversations/search`, { headers: { 'x-session-api-key': sessionKey } });
    expect(search.status).toBe(200);
    expect(await search.json()).toMatchObject({ items: [] });

    expect((await call(app, 'POST', `/api/v1/sandboxes/${id}/pause`, { key })).status).toBe(200);
    await expect(fetch(`${agentUrl}/alive`)).rejects.toThrow();
    expect((await call(app, 'DELETE', `/api/v1/sandboxes/${id}`, { key })).status).toBe(200);
  });
});
