// Request limits over real HTTP: per-user and per-IP token buckets shared by REST and tRPC
// (429, Retry-After, the reference's body / TOO_MANY_REQUESTS with retryAfterSeconds), health
// endpoints never limited, and "off" as a value.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { startFakeGitProvider, type FakeGitProvider } from '../helpers/fake-git-provider.js';

const apps: TestApp[] = [];
let provider: FakeGitProvider;

beforeAll(async () => {
  provider = await startFakeGitProvider();
  provider.validTokens.add('ghp_limits');
});
afterAll(async () => {
  for (const app of apps) await app.stop();
  await provider.close();
});

async function start(label: string, env: Record<string, string>): Promise<TestApp> {
  const app = await startTestApp(label, { RATE_LIMIT_WINDOW_MS: '600000', GITHUB_API_URL: provider.url, ...env });
  apps.push(app);
  return app;
}

const trpcGet = (app: TestApp, path: string, key?: string) =>
  call(app, 'GET', `/trpc/${path}?input=${encodeURIComponent(JSON.stringify({ json: {} }))}`, key ? { key } : {});

function expectRestLimited(res: Awaited<ReturnType<typeof call>>) {
  expect(res.status).toBe(429);
  expect(res.body).toEqual({ message: 'Too many requests' });
  expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
}

function expectTrpcLimited(res: Awaited<ReturnType<typeof call>>) {
  expect(res.status).toBe(429);
  expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
  const error = (Array.isArray(res.body) ? res.body[0] : res.body).error.json;
  expect(error.data).toMatchObject({ code: 'TOO_MANY_REQUESTS', httpStatus: 429, retryAfterSeconds: expect.any(Number) });
  expect(error.data.retryAfterSeconds).toBeGreaterThanOrEqual(1);
}

describe('per-user rate limit (RATE_LIMIT_PER_USER)', () => {
  it('counts REST requests and tRPC calls (each call of a batch) in one bucket per user', async () => {
    const app = await start('limits-user', { RATE_LIMIT_PER_USER: '6', RATE_LIMIT_PER_IP: 'off' });
    const alice = await app.keyFor('alice');
    const bob = await app.keyFor('bob');
    for (let i = 0; i < 3; i++) expect((await call(app, 'GET', '/api/secrets', { key: alice })).status).toBe(200);
    const batch = await call(
      app,
      'GET',
      `/trpc/secrets.list,settings.get?batch=1&input=${encodeURIComponent('{"0":{"json":{}},"1":{"json":{}}}')}`,
      {
        key: alice,
      },
    );
    expect(batch.body[0].result.data.json).toEqual({ custom_secrets: [] });
    expect((await trpcGet(app, 'secrets.list', alice)).status).toBe(200); // the sixth

    expectRestLimited(await call(app, 'GET', '/api/secrets', { key: alice }));
    expectTrpcLimited(await trpcGet(app, 'secrets.list', alice));
    // Other users and the open endpoints are not affected.
    expect((await call(app, 'GET', '/api/secrets', { key: bob })).status).toBe(200);
    for (const path of ['/alive', '/health', '/ready', '/metrics']) expect((await call(app, 'GET', path)).status, path).toBe(200);
  });

  it('counts the calls a streamed start makes too', async () => {
    const app = await start('limits-stream', { RATE_LIMIT_PER_USER: '3', RATE_LIMIT_PER_IP: 'off' });
    const key = await app.keyFor('streamer');
    const first = await call(app, 'POST', '/api/v1/app-conversations/stream-start', { key, body: {} });
    expect(first.status).toBe(200); // two calls: start and watch (the task fails: no settings)
    expect((await call(app, 'GET', '/api/secrets', { key })).status).toBe(200);
    expectRestLimited(await call(app, 'POST', '/api/v1/app-conversations/stream-start', { key, body: {} }));
  });
});

describe('per-IP rate limit (RATE_LIMIT_PER_IP)', () => {
  it('limits unauthenticated requests on both transports, never the health endpoints', async () => {
    const app = await start('limits-ip', { RATE_LIMIT_PER_IP: '5', RATE_LIMIT_PER_USER: 'off' });
    for (let i = 0; i < 4; i++) expect((await call(app, 'GET', '/api/settings')).status).toBe(401);
    expect((await trpcGet(app, 'settings.get')).status).toBe(401); // the fifth
    expectRestLimited(await call(app, 'GET', '/api/settings'));
    expectTrpcLimited(await trpcGet(app, 'settings.get'));
    // A forwarded address is ignored unless TRUST_PROXY says which proxies to believe.
    expectRestLimited(await call(app, 'GET', '/api/settings', { headers: { 'x-forwarded-for': '203.0.113.9' } }));
    // The reads open to anyone with a public conversation's link, its page included.
    expectRestLimited(await call(app, 'GET', `/api/shared-conversations?ids=${'a'.repeat(32)}`));
    expectRestLimited(await call(app, 'GET', `/shared/conversations/${'a'.repeat(32)}`));
    for (let i = 0; i < 10; i++) {
      for (const path of ['/alive', '/health', '/ready', '/metrics']) expect((await call(app, 'GET', path)).status, path).toBe(200);
    }
  });

  it('tells clients apart by X-Forwarded-For behind a trusted proxy', async () => {
    const app = await start('limits-proxy', { RATE_LIMIT_PER_IP: '2', RATE_LIMIT_PER_USER: 'off', TRUST_PROXY: 'loopback' });
    const from = (ip: string) => call(app, 'GET', '/api/settings', { headers: { 'x-forwarded-for': ip } });
    expect((await from('203.0.113.1')).status).toBe(401);
    expect((await from('203.0.113.1')).status).toBe(401);
    expectRestLimited(await from('203.0.113.1'));
    expect((await from('203.0.113.2')).status).toBe(401);
  });

  it('is off when configured "off" (the bench measures the service that way)', async () => {
    const app = await start('limits-off', { RATE_LIMIT_PER_IP: 'off', RATE_LIMIT_PER_USER: 'off' });
    const key = await app.keyFor('busy');
    const statuses = await Promise.all(Array.from({ length: 60 }, () => call(app, 'GET', '/api/secrets', { key }).then((r) => r.status)));
    expect(new Set(statuses)).toEqual(new Set([200]));
  });
});
