// The built-in default spec of the process runtime runs the real OpenHands agent server
// (installed from PyPI into the cache on first use). Where no Python >= 3.12 exists, the
// start must fail at once with a message naming it, and this test says so loudly.
// One sandbox serves every test here (each start of the real agent server costs ~6 s of CPU).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentServerClient } from '../../src/agent-server/client.js';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { startRealSandbox, type RunningSandbox } from '../helpers/real-sandbox.js';

// The web UI calls agent servers straight from the browser (cross-origin, with the session key
// header, so with a preflight): the agent server must accept the origin the UI is served from
// (PUBLIC_URL) and TRUSTED_ORIGINS, and nothing else.
const UI = 'https://agents.example.test';
const NEXT = 'https://next.example.test';
let app: TestApp;
let key: string;
let sandbox: RunningSandbox | null;

beforeAll(async () => {
  // Browsers reach the agent server at its own address here (through the service: agent-server-proxy.test.ts).
  app = await startTestApp('real-agent', {
    PUBLIC_URL: UI,
    TRUSTED_ORIGINS: NEXT,
    SANDBOX_AGENT_URLS: 'direct',
    SANDBOX_STARTUP_TIMEOUT_MS: '120000',
  });
  key = await app.keyFor('agent-user');
  sandbox = await startRealSandbox(app, key, 'REAL AGENT SERVER');
}, 3 * 60_000);
afterAll(() => app.stop());

const preflight = (agentUrl: string, origin: string) =>
  fetch(`${agentUrl}/api/conversations/search`, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': 'GET', 'access-control-request-headers': 'x-session-api-key' },
  });

describe('default spec: the real OpenHands agent server', () => {
  it('starts a sandbox whose agent server answers with the sandbox key only', async () => {
    if (!sandbox) {
      expect(await app.rawCollection('sandboxes').countDocuments({})).toBe(0);
      return;
    }
    const { agentUrl, sessionKey } = sandbox;
    expect(await (await fetch(`${agentUrl}/alive`)).json()).toEqual({ status: 'ok' });
    expect((await fetch(`${agentUrl}/api/conversations/search`)).status).toBe(401);
    const search = await fetch(`${agentUrl}/api/conversations/search`, { headers: { 'x-session-api-key': sessionKey } });
    expect(search.status).toBe(200);
    expect(await search.json()).toMatchObject({ items: [] });
  });

  it('lets the UI origin and trusted origins call the agent server, and no other site', async () => {
    if (!sandbox) return; // the first test checked that nothing was left behind
    for (const origin of [UI, NEXT]) {
      const res = await preflight(sandbox.agentUrl, origin);
      expect(res.status, origin).toBe(200);
      expect(res.headers.get('access-control-allow-origin')).toBe(origin);
      expect(res.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('x-session-api-key');
    }
    const foreign = await preflight(sandbox.agentUrl, 'https://evil.example.test');
    expect(foreign.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('pauses the sandbox (its agent server stops) and deletes it', async () => {
    if (!sandbox) return;
    const { id, agentUrl, sessionKey } = sandbox;
    // The handoff every pause starts with (src/sandbox/pause-handoff.ts) is the real server's contract.
    await expect(new AgentServerClient(agentUrl, sessionKey, 10_000).prepareForSandboxPause()).resolves.toBeUndefined();
    expect((await call(app, 'POST', `/api/v1/sandboxes/${id}/pause`, { key })).status).toBe(200);
    await expect(fetch(`${agentUrl}/alive`)).rejects.toThrow();
    expect((await call(app, 'DELETE', `/api/v1/sandboxes/${id}`, { key })).status).toBe(200);
    expect((await call(app, 'GET', `/api/v1/sandboxes?id=${id}`, { key })).body).toEqual([null]);
  });
});
