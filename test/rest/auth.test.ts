// Every contract route refuses a missing or wrong key. Driven from the generated OpenAPI
// document and the router itself, so a new route cannot escape the check.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROCEDURES } from '../../routers/index.js';
import { openApiDocument } from '../../src/http/rest/openapi-document.js';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { FAKE_AGENT_SPEC } from '../helpers/specs.js';

let app: TestApp;
let validKey: string;
let revokedKey: string;

beforeAll(async () => {
  // A valid key's POST /api/v1/sandboxes starts a sandbox: the fake agent server's, not the real one's (~6 s of CPU).
  app = await startTestApp('auth', {}, { specs: [FAKE_AGENT_SPEC] });
  validKey = await app.keyFor('alice');
  const revoked = await app.server.deps.services.apiKeys.create('alice');
  revokedKey = revoked.key;
  await app.server.deps.services.apiKeys.revoke(revoked.info.id);
});
afterAll(() => app.stop());

// Which routes authenticate with something other than a user key (webhooks: the sandbox's
// session key or a signed access token; the device flow's own steps: nothing), from the
// procedures' meta.
const otherAuth = new Map(
  [...PROCEDURES.values()].flatMap((p) =>
    p.meta?.openapi && p.meta.auth ? [[`${p.meta.openapi.method} ${p.meta.openapi.path}`, p.meta.auth]] : [],
  ),
);
const operations = Object.entries(openApiDocument().paths ?? {}).flatMap(([path, item]) =>
  (['get', 'post', 'put', 'patch', 'delete'] as const)
    .filter((m) => (item as Record<string, unknown>)[m])
    .map((m) => ({
      method: m.toUpperCase(),
      path: path.replace(/\{[^}]+\}/g, 'some-id'),
      auth: otherAuth.get(`${m.toUpperCase()} ${path}`) ?? 'user',
    })),
);

/** The key-only sandbox routes answer the reference's words for a missing or unknown key. */
const refusal = (auth: string, label: string) =>
  auth !== 'sandbox-key'
    ? { detail: 'Unauthorized' }
    : { detail: label === 'no key' || label === 'an empty key' ? 'X-Session-API-Key header is required' : 'Invalid session API key' };

const wrongKeys: [string, Record<string, string>][] = [
  ['no key', {}],
  ['an empty key', { 'x-session-api-key': '' }],
  ['a malformed key', { 'x-session-api-key': 'not-a-key' }],
  ['an unknown well-formed key', { 'x-session-api-key': 'ohk_AAAAAAAAAAAA_' + 'A'.repeat(40) }],
];

describe('REST authentication', () => {
  it('covers a non-empty route inventory', () => {
    expect(operations.length).toBeGreaterThanOrEqual(49);
  });

  describe.each(operations.filter((op) => op.auth !== 'none'))('$method $path', ({ method, path, auth }) => {
    it.each(wrongKeys)('refuses %s with 401', async (label, headers) => {
      const res = await call(app, method, path, { headers, ...(method === 'GET' || method === 'DELETE' ? {} : { body: {} }) });
      expect(res.status).toBe(401);
      expect(res.body).toEqual(refusal(auth, label));
      expect(res.headers.get('content-type')).toMatch(/application\/json/);
    });

    it('refuses a revoked key', async () => {
      const res = await call(app, method, path, { key: revokedKey, ...(method === 'GET' || method === 'DELETE' ? {} : { body: {} }) });
      expect(res.status).toBe(401);
    });

    it(auth === 'user' ? 'lets a valid key past authentication' : `refuses a user key (it takes a ${auth} credential)`, async () => {
      const res = await call(app, method, path, { key: validKey, ...(method === 'GET' || method === 'DELETE' ? {} : { body: {} }) });
      // Past authentication a route may still answer 401 in its own words (the git routes'
      // "Git provider token required." when no provider token is stored), never the key's refusal.
      if (auth === 'user') expect(res.status === 401 ? res.body : res.status).not.toEqual({ detail: 'Unauthorized' });
      else expect(res.status).toBe(401);
    });
  });

  it('keeps health, readiness, metrics and docs open', async () => {
    expect((await call(app, 'GET', '/alive')).body).toEqual({ status: 'ok' });
    expect((await call(app, 'GET', '/health')).body).toBe('OK');
    expect(await call(app, 'GET', '/ready')).toMatchObject({ status: 200, body: { status: 'ready', checks: { database: true } } });
    const metrics = await call(app, 'GET', '/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.text).toContain('http_requests_total');
    expect((await call(app, 'GET', '/api/openapi.json')).body.openapi).toMatch(/^3\./);
    const docs = await call(app, 'GET', '/api/docs');
    expect(docs.text).toContain('swagger-ui');
    expect((await call(app, 'GET', '/api/docs/assets/swagger-ui-bundle.js')).status).toBe(200);
  });

  it('keeps the docs page out of frames and its types as sent, as the other pages', async () => {
    for (const path of ['/api/docs', '/docs']) {
      const { headers } = await call(app, 'GET', path);
      expect(headers.get('content-type'), path).toMatch(/^text\/html/);
      expect(headers.get('x-frame-options'), path).toBe('DENY');
      expect(headers.get('content-security-policy'), path).toBe("frame-ancestors 'none'");
      expect(headers.get('x-content-type-options'), path).toBe('nosniff');
    }
    const bundle = await call(app, 'GET', '/api/docs/assets/swagger-ui-bundle.js');
    expect(bundle.headers.get('x-content-type-options')).toBe('nosniff');
  });
});

describe('tRPC authentication', () => {
  it.each([...PROCEDURES.values()].filter((p) => p.type !== 'subscription' && p.meta?.auth !== 'none'))(
    '$path refuses a request without a key',
    async ({ path, type }) => {
      const res =
        type === 'query'
          ? await call(app, 'GET', `/trpc/${path}?input=${encodeURIComponent(JSON.stringify({ json: {} }))}`)
          : await call(app, 'POST', `/trpc/${path}`, { body: { json: {} } });
      expect(res.status).toBe(401);
      expect(res.body.error.json.data.code).toBe('UNAUTHORIZED');
    },
  );
});
