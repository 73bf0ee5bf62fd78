// The agent servers' callbacks are charged to their sandbox (RATE_LIMIT_PER_SANDBOX), not to the
// address they come from: every local sandbox calls back from 127.0.0.1, so one chatty sandbox
// must not use up the others' callbacks, nor a user's requests from the same machine. Only a
// proven session key opens a sandbox's bucket: a forged one naming a sandbox is charged to the
// address (RATE_LIMIT_PER_IP), like any request without credentials. Over real HTTP, both
// transports, against sandboxes running the fake agent server.
// SANDBOX_ISOLATION=none: the callbacks are sent by the test; isolation is not what this tests.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { FAKE_AGENT_SPEC } from '../helpers/specs.js';

const PER_SANDBOX = 5;
const PER_IP = 4;
let app: TestApp;

beforeAll(async () => {
  app = await startTestApp(
    'sandbox-rate-limits',
    {
      RATE_LIMIT_PER_SANDBOX: String(PER_SANDBOX),
      RATE_LIMIT_PER_IP: String(PER_IP),
      RATE_LIMIT_PER_USER: '100',
      RATE_LIMIT_WINDOW_MS: '3600000',
      SANDBOX_ISOLATION: 'none',
    },
    { specs: [FAKE_AGENT_SPEC] },
  );
});
afterAll(() => app?.stop());

const conversationId = () => crypto.randomBytes(16).toString('hex');

/** One callback as an agent server sends it: events of a conversation unknown here (acknowledged, 200). */
function callback(
  route: 'd6' | 'key-only' | 'trpc',
  sandbox: { id: string; session_api_key: string },
  sessionKey = sandbox.session_api_key,
) {
  const headers = { 'x-session-api-key': sessionKey };
  if (route === 'd6') return call(app, 'POST', `/api/v1/webhooks/${sandbox.id}/events/${conversationId()}`, { body: [], headers });
  if (route === 'key-only') return call(app, 'POST', `/api/v1/webhooks/events/${conversationId()}`, { body: [], headers });
  return call(app, 'POST', '/trpc/agentCallbacks.eventsByKey', {
    body: { json: { conversation_id: conversationId(), events: [] } },
    headers,
  });
}

describe('rate limits of sandbox callbacks', () => {
  it("charges each sandbox's callbacks to that sandbox: one exhausted, the other still answered", async () => {
    const key = await app.keyFor('two-sandboxes');
    const started = await Promise.all([1, 2].map(() => call(app, 'POST', '/api/v1/sandboxes', { key })));
    for (const res of started) expect(res.status, res.text).toBe(200);
    const [a, b] = started.map((res) => res.body as { id: string; session_api_key: string });

    // Forged keys naming sandbox A (and none at all) are the address's to pay, until it is refused.
    for (let i = 0; i < PER_IP; i++) {
      const forged = i % 2 ? await callback('d6', a!, 'forged-key') : await call(app, 'GET', '/api/settings');
      expect(forged.status).toBe(401);
    }
    const refused = await callback('d6', a!, 'forged-key');
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);

    // Sandbox A's own bucket is whole: every route and transport counts in it.
    const routes = ['d6', 'key-only', 'trpc', 'd6', 'key-only'] as const;
    for (const route of routes) expect((await callback(route, a!)).status, route).toBe(200);
    const limited = await callback('key-only', a!);
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual({ message: 'Too many requests' });
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    const limitedTrpc = await callback('trpc', a!);
    expect(limitedTrpc.status).toBe(429);
    expect(limitedTrpc.headers.get('retry-after')).toMatch(/^\d+$/);

    // Sandbox B, in the same window and from the same address, is answered in full.
    for (const route of routes) expect((await callback(route, b!)).status, route).toBe(200);
    expect((await callback('d6', b!)).status).toBe(429);
    // And the user's own requests from that address are the user's.
    expect((await call(app, 'GET', '/api/secrets', { key })).status).toBe(200);
  });
});
