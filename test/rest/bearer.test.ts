// `Authorization: Bearer <api key>`, as today's clients send it (the CloudClient, the SDK
// workspace, the CLI, the Cloud API examples), wherever X-Session-API-Key works, on both
// transports. With both headers the Bearer key decides the user; X-Session-API-Key is then a
// sandbox's key that only scopes what that sandbox may see.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestApp, type TestApp } from '../helpers/app.js';

let app: TestApp;
let alice: string;
let bob: string;

beforeAll(async () => {
  app = await startTestApp('bearer');
  alice = await app.keyFor('bearer-alice');
  bob = await app.keyFor('bearer-bob');
  expect((await call(app, 'POST', '/api/settings', { key: alice, body: { llm_model: 'openai/alice' } })).status).toBe(200);
  expect((await call(app, 'POST', '/api/settings', { key: bob, body: { llm_model: 'openai/bob' } })).status).toBe(200);
});
afterAll(() => app.stop());

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
const trpcSettings = (headers: Record<string, string>) =>
  fetch(`${app.url}/trpc/settings.get?input=${encodeURIComponent(JSON.stringify({ json: {} }))}`, { headers });

describe('Bearer credentials', () => {
  it('authenticate REST and tRPC requests as the key header does', async () => {
    const rest = await call(app, 'GET', '/api/settings', { headers: bearer(alice) });
    expect(rest.status).toBe(200);
    expect(rest.body.llm_model).toBe('openai/alice');
    const trpc = await trpcSettings(bearer(alice));
    expect(trpc.status).toBe(200);
    expect(((await trpc.json()) as { result: { data: { json: { llm_model: string } } } }).result.data.json.llm_model).toBe('openai/alice');
    expect((await call(app, 'GET', '/api/settings', { headers: { authorization: `bearer ${alice}` } })).status).toBe(200);
  });

  it('decide the user when both headers come: the Bearer key, never the other', async () => {
    const both = await call(app, 'GET', '/api/settings', { headers: { ...bearer(alice), 'x-session-api-key': bob } });
    expect(both.body.llm_model).toBe('openai/alice');
    // A wrong Bearer key is no user, even beside a valid key header.
    expect((await call(app, 'GET', '/api/settings', { headers: { ...bearer('ohk_nope'), 'x-session-api-key': bob } })).status).toBe(401);
    expect((await trpcSettings({ ...bearer('ohk_nope'), 'x-session-api-key': bob })).status).toBe(401);
  });

  it('leave other Authorization schemes alone, and refuse a request with none of the credentials', async () => {
    expect((await call(app, 'GET', '/api/settings', { headers: { authorization: `Basic ${btoa('x:y')}` } })).status).toBe(401);
    expect(
      (await call(app, 'GET', '/api/settings', { headers: { authorization: `Basic ${btoa('x:y')}`, 'x-session-api-key': bob } })).body
        .llm_model,
    ).toBe('openai/bob');
    expect((await call(app, 'GET', '/api/settings', { headers: { authorization: 'Bearer' } })).status).toBe(401);
  });

  it('are allowed by the CORS preflight of a browser client', async () => {
    const preflight = await fetch(`${app.url}/api/v1/app-conversations/search`, {
      method: 'OPTIONS',
      headers: {
        origin: 'http://localhost:3001',
        'access-control-request-method': 'GET',
        'access-control-request-headers': 'authorization,content-type',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-headers')).toBe('authorization,content-type');
  });
});
