// The one front door (src/http/): a request of every kind passes the pipeline exactly once —
// one request id, one access line, CORS headers once — and the per-client-IP limit charges
// each /api and /trpc request without credentials once (a tRPC batch once per call), and
// nothing else: a request with a user's key is its user's to pay (test/reliability/limits.test.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestApp, type TestApp } from '../helpers/app.js';

const BUDGET = 2;
const ORIGIN = 'http://localhost:5173';
let app: TestApp;
let key: string;
const logLines: string[] = [];

beforeAll(async () => {
  app = await startTestApp('front-door', { RATE_LIMIT_PER_IP: String(BUDGET), RATE_LIMIT_WINDOW_MS: '3600000' }, { logLines });
  key = await app.keyFor('door-user');
});
afterAll(() => app.stop());

/** Access lines written for a request id (the logger batches its writes: flush first). */
function accessLinesOf(id: string): unknown[] {
  app.server.deps.log.flush();
  return logLines.map((line) => JSON.parse(line) as { msg?: string; reqId?: string }).filter((l) => l.msg === 'request' && l.reqId === id);
}

const trpcInput = (value: unknown) => encodeURIComponent(JSON.stringify({ json: value }));

/** Requests of every kind, each with what it costs against the per-IP budget. */
const KINDS: { name: string; cost: number; send: () => Promise<Response> }[] = [
  { name: 'health', cost: 0, send: () => fetch(`${app.url}/alive`) },
  { name: 'metrics', cost: 0, send: () => fetch(`${app.url}/metrics`) },
  { name: 'REST procedure with a key', cost: 0, send: () => fetch(`${app.url}/api/settings`, { headers: { 'x-session-api-key': key } }) },
  { name: 'REST route of the table (webhook secrets)', cost: 1, send: () => fetch(`${app.url}/api/v1/webhooks/secrets`) },
  {
    name: 'REST upload',
    cost: 1,
    send: () => fetch(`${app.url}/api/conversations/${'a'.repeat(32)}/upload-files`, { method: 'POST', body: new FormData() }),
  },
  {
    name: 'tRPC batch of two with a key',
    cost: 0,
    send: () =>
      fetch(`${app.url}/trpc/secrets.list,settings.get?batch=1&input=${trpcInput({})}`, { headers: { 'x-session-api-key': key } }),
  },
  { name: 'OpenAPI document (open)', cost: 0, send: () => fetch(`${app.url}/api/openapi.json`) },
  { name: 'docs page', cost: 0, send: () => fetch(`${app.url}/docs`) },
  { name: 'sign-in page', cost: 0, send: () => fetch(`${app.url}/signin`) },
  { name: 'not a route', cost: 0, send: () => fetch(`${app.url}/nothing-here`) },
  {
    name: 'preflight',
    cost: 0,
    send: () =>
      fetch(`${app.url}/api/settings`, { method: 'OPTIONS', headers: { origin: ORIGIN, 'access-control-request-method': 'POST' } }),
  },
];

describe('the front door', () => {
  it('passes every kind of request through the pipeline once, and charges only /api and /trpc, once each', async () => {
    let spent = 0;
    for (const kind of KINDS) {
      const res = await kind.send();
      await res.arrayBuffer();
      spent += kind.cost;
      const id = res.headers.get('x-request-id');
      expect(id, kind.name).toMatch(/^[0-9a-f-]{36}$/);
      expect(accessLinesOf(id!), kind.name).toHaveLength(1);
      expect(res.status, kind.name).not.toBe(429);
    }
    expect(spent).toBe(BUDGET);
    // The budget is used up exactly: the next charged request of either transport is refused.
    expect((await call(app, 'GET', '/api/settings')).status).toBe(429);
    expect((await fetch(`${app.url}/trpc/settings.get?input=${trpcInput({})}`)).status).toBe(429);
    // An /api path no route takes is charged too (and answered 429 before it is looked up).
    expect((await call(app, 'GET', '/api/no-such-route')).status).toBe(429);
    // The user's key still works from the same address: it is charged to the user.
    expect((await call(app, 'GET', '/api/secrets', { key })).status).toBe(200);
    // What is not /api or /trpc stays open.
    expect((await fetch(`${app.url}/alive`)).status).toBe(200);
  });

  it('answers CORS once per request: the preflight here, the allowed origin echoed once', async () => {
    const preflight = await fetch(`${app.url}/api/settings`, {
      method: 'OPTIONS',
      headers: { origin: ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    expect(preflight.headers.get('access-control-allow-credentials')).toBe('true');
    expect(preflight.headers.get('access-control-allow-headers')).toBe('content-type');
    const simple = await fetch(`${app.url}/alive`, { headers: { origin: ORIGIN } });
    expect(simple.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    expect(simple.headers.get('vary')).toBe('Origin');
    const foreign = await fetch(`${app.url}/alive`, { headers: { origin: 'https://elsewhere.example' } });
    expect(foreign.headers.get('access-control-allow-origin')).toBeNull();
  });
});
