// The built-in default spec of the process runtime runs the real OpenHands agent server
// (installed from PyPI into the cache on first use). Where no Python >= 3.12 exists, the
// start must fail at once with a message naming it, and this test says so loudly.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';

let app: TestApp;
let key: string;

beforeAll(async () => {
  app = await startTestApp('real-agent', { SANDBOX_STARTUP_TIMEOUT_MS: '120000' });
  key = await app.keyFor('agent-user');
});
afterAll(() => app.stop());

describe('default spec: the real OpenHands agent server', () => {
  it('starts a sandbox whose agent server answers with the sandbox key, pauses and deletes it', { timeout: 6 * 60_000 }, async () => {
    const started = await call(app, 'POST', '/api/v1/sandboxes', { key });
    if (started.status === 503 && /Python >= 3\.12/.test(started.body.detail)) {
      console.warn(`\n${'!'.repeat(78)}\n!! REAL AGENT SERVER NOT EXERCISED: ${started.body.detail}\n${'!'.repeat(78)}\n`);
      expect(await app.rawCollection('sandboxes').countDocuments({})).toBe(0);
      return;
    }
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const id = started.body.id as string;
    const running = await eventually(
      'the agent server to become healthy',
      async () => {
        const info = (await call(app, 'GET', `/api/v1/sandboxes?id=${id}`, { key })).body[0];
        if (info?.status === 'ERROR') throw new Error(`sandbox failed: ${info.status_reason}`);
        return info?.status === 'RUNNING' ? info : null;
      },
      120_000,
    );
    const agentUrl = running.exposed_urls[0].url as string;
    expect(await (await fetch(`${agentUrl}/alive`)).json()).toEqual({ status: 'ok' });
    expect((await fetch(`${agentUrl}/api/conversations/search`)).status).toBe(401);
    const search = await fetch(`${agentUrl}/api/conversations/search`, { headers: { 'x-session-api-key': started.body.session_api_key } });
    expect(search.status).toBe(200);
    expect(await search.json()).toMatchObject({ items: [] });

    expect((await call(app, 'POST', `/api/v1/sandboxes/${id}/pause`, { key })).status).toBe(200);
    await expect(fetch(`${agentUrl}/alive`)).rejects.toThrow();
    expect((await call(app, 'DELETE', `/api/v1/sandboxes/${id}`, { key })).status).toBe(200);
  });
});
