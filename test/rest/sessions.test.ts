// Browser sessions: sign in with a key, the acp_session cookie authenticates every user route
// on both transports, cross-site protection, sign-out, expiry and revocation, and the
// webhooks never accept the cookie.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { signIn } from '../helpers/session.js';

const TRUSTED = 'https://next.example.test';
let app: TestApp;
let aliceKey: string;
let bobKey: string;
let ownOrigin: string;

beforeAll(async () => {
  app = await startTestApp('sessions', { TRUSTED_ORIGINS: TRUSTED });
  aliceKey = await app.keyFor('alice');
  bobKey = await app.keyFor('bob');
  ownOrigin = app.url; // http://127.0.0.1:<port>: the Host the requests carry
});
afterAll(() => app.stop());

const withCookie = (cookie: string, extra: Record<string, string> = {}) => ({ cookie, ...extra });

describe('POST /api/auth/session', () => {
  it('answers the user and expiry and sets the HttpOnly, SameSite=Strict cookie (no Secure over http)', async () => {
    const before = Date.now();
    const res = await call(app, 'POST', '/api/auth/session', { body: { api_key: aliceKey } });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['expires_at', 'user_id']);
    expect(res.body.user_id).toBe('alice');
    const expires = Date.parse(res.body.expires_at);
    expect(expires).toBeGreaterThanOrEqual(before + 43_200_000 - 1000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 43_200_000);
    const cookies = res.headers.getSetCookie();
    expect(cookies).toHaveLength(1);
    expect(cookies[0]).toMatch(/^acp_session=[A-Za-z0-9_-]{43}; HttpOnly; SameSite=Strict; Path=\/; Max-Age=43200$/);
    expect(res.text).not.toContain(cookies[0]!.split(';')[0]!.slice('acp_session='.length));
  });

  it.each([
    ['an unknown key', { api_key: 'ohk_AAAAAAAAAAAA_' + 'A'.repeat(40) }],
    ['a malformed key', { api_key: 'nope' }],
    ['no key at all', {}],
  ])('refuses %s with 401 and sets no cookie', async (_label, body) => {
    const res = await call(app, 'POST', '/api/auth/session', { body });
    expect(res).toMatchObject({ status: 401, body: { detail: 'Unauthorized' } });
    expect(res.headers.getSetCookie()).toEqual([]);
  });

  it('refuses a revoked key', async () => {
    const revoked = await app.server.deps.services.apiKeys.create('alice');
    await app.server.deps.services.apiKeys.revoke(revoked.info.id);
    expect(await call(app, 'POST', '/api/auth/session', { body: { api_key: revoked.key } })).toMatchObject({ status: 401 });
  });

  it('answers bad input with 422 in the validation shape', async () => {
    const res = await call(app, 'POST', '/api/auth/session', { body: { api_key: 42 } });
    expect(res.status).toBe(422);
    expect(res.body.detail[0]).toMatchObject({ loc: ['body', 'api_key'], type: 'string_type' });
    expect(JSON.stringify(res.body)).not.toContain('42');
  });

  it('refuses a sign-in made by another site (login CSRF) but takes our own and trusted origins', async () => {
    expect(
      await call(app, 'POST', '/api/auth/session', { body: { api_key: aliceKey }, headers: { origin: 'https://evil.example' } }),
    ).toMatchObject({ status: 403, body: { detail: 'Forbidden' } });
    expect(
      await call(app, 'POST', '/api/auth/session', { body: { api_key: aliceKey }, headers: { 'sec-fetch-site': 'cross-site' } }),
    ).toMatchObject({ status: 403 });
    await signIn(app, aliceKey, { origin: ownOrigin, 'sec-fetch-site': 'same-origin' });
    await signIn(app, aliceKey, { origin: TRUSTED });
  });

  it('stores only the SHA-256 of the session id, with the key id, user and times', async () => {
    const { sessionId } = await signIn(app, aliceKey);
    const hash = crypto.createHash('sha256').update(sessionId).digest('hex');
    const doc = await app.rawCollection('sessions').findOne({ _id: hash as never });
    expect(doc).toMatchObject({ userId: 'alice', apiKeyId: aliceKey.split('_')[1] });
    expect(doc!.expiresAt.getTime() - doc!.createdAt.getTime()).toBe(43_200_000);
    const dump = JSON.stringify(await app.rawCollection('sessions').find({}).toArray());
    expect(dump).not.toContain(sessionId);
    expect(dump).not.toContain(aliceKey);
  });
});

describe('the cookie authenticates', () => {
  it('REST reads and, from our own origin, writes', async () => {
    const { cookie } = await signIn(app, aliceKey);
    const saved = await call(app, 'POST', '/api/settings', {
      body: { llm_model: 'cookie-model' },
      headers: withCookie(cookie, { origin: ownOrigin }),
    });
    expect(saved).toMatchObject({ status: 200, body: { message: 'Settings stored' } });
    expect(await call(app, 'GET', '/api/settings', { headers: withCookie(cookie) })).toMatchObject({
      status: 200,
      body: { llm_model: 'cookie-model' },
    });
    expect(await call(app, 'GET', '/api/auth/session', { headers: withCookie(cookie) })).toMatchObject({
      status: 200,
      body: { user_id: 'alice', expires_at: expect.stringMatching(/Z$/) },
    });
  });

  it("answers Agent Canvas's POST /api/authenticate (200 signed in, 401 not) and sends /login?returnTo= to the sign-in page", async () => {
    const { cookie } = await signIn(app, aliceKey);
    // Canvas posts no body (axios with null data: an empty form).
    const emptyForm = { origin: ownOrigin, 'content-type': 'application/x-www-form-urlencoded' };
    expect(await call(app, 'POST', '/api/authenticate', { headers: withCookie(cookie, emptyForm) })).toMatchObject({
      status: 200,
      body: { message: 'User authenticated' },
    });
    expect((await call(app, 'POST', '/api/authenticate', { headers: { origin: ownOrigin } })).status).toBe(401);
    // A form with something in it is still refused: JSON only.
    const form = await call(app, 'POST', '/api/authenticate', { rawBody: 'a=1', headers: withCookie(cookie, emptyForm) });
    expect(form.status).toBe(415);
    const login = await fetch(`${app.url}/login?returnTo=${encodeURIComponent('/conversations/abc?x=1')}`, { redirect: 'manual' });
    expect(login.status).toBe(302);
    expect(login.headers.get('location')).toBe(`/signin?next=${encodeURIComponent('/conversations/abc?x=1')}`);
    // Elsewhere is not a place to return to: the sign-in page goes home instead.
    const away = await fetch(`${app.url}/login?returnTo=${encodeURIComponent('https://evil.example/')}`, { redirect: 'manual' });
    const signin = await fetch(new URL(away.headers.get('location')!, app.url), { headers: { accept: 'text/html' } });
    expect(await signin.text()).toContain('data-next="/"');
  });

  it('tRPC queries, mutations (from a trusted origin) and the subscription', async () => {
    const { cookie } = await signIn(app, bobKey);
    const input = encodeURIComponent(JSON.stringify({ json: {} }));
    const mutation = await call(app, 'POST', '/trpc/settings.save', {
      body: { json: { llm_model: 'bob-trpc' } },
      headers: withCookie(cookie, { origin: TRUSTED }),
    });
    expect(mutation.status).toBe(200);
    const query = await call(app, 'GET', `/trpc/settings.get?input=${input}`, { headers: withCookie(cookie) });
    expect(query.body.result.data.json.llm_model).toBe('bob-trpc');

    const sse = await fetch(
      `${app.url}/trpc/appConversations.watchStartTask?input=${encodeURIComponent(JSON.stringify({ json: { task_id: 'a'.repeat(32) } }))}`,
      {
        headers: { cookie, accept: 'text/event-stream' },
      },
    );
    const anonymous = await fetch(
      `${app.url}/trpc/appConversations.watchStartTask?input=${encodeURIComponent(JSON.stringify({ json: { task_id: 'a'.repeat(32) } }))}`,
      {
        headers: { accept: 'text/event-stream' },
      },
    );
    const [authed, refused] = await Promise.all([sse.text(), anonymous.text()]);
    // The signed-in subscription reaches the procedure (an unknown task), the anonymous one does not.
    expect(authed).toContain('Start task not found');
    expect(authed).not.toContain('UNAUTHORIZED');
    expect(refused).toContain('UNAUTHORIZED');
  });

  it("keeps users apart: alice's session never reads bob's data", async () => {
    const { cookie } = await signIn(app, aliceKey);
    const settings = await call(app, 'GET', '/api/settings', { headers: withCookie(cookie) });
    expect(settings.body.llm_model).not.toBe('bob-trpc');
  });

  it('lets the header win over the cookie', async () => {
    const { cookie } = await signIn(app, aliceKey);
    expect(await call(app, 'GET', '/api/settings', { headers: withCookie(cookie, { 'x-session-api-key': 'wrong' }) })).toMatchObject({
      status: 401,
    });
    const asBob = await call(app, 'GET', '/api/auth/session', { key: bobKey, headers: withCookie(cookie) });
    expect(asBob.body).toEqual({ user_id: 'bob', expires_at: null });
  });
});

describe('cross-site protection of the cookie', () => {
  it.each([
    ['without an Origin', {}],
    ['from a foreign origin', { origin: 'https://evil.example' }],
    ['from our origin under another scheme', { origin: 'OWN_ORIGIN_OVER_HTTPS' }],
  ])('refuses a cookie state change %s with 403', async (_label, given: Record<string, string>) => {
    const headers = given.origin === 'OWN_ORIGIN_OVER_HTTPS' ? { origin: ownOrigin.replace('http:', 'https:') } : given;
    const { cookie } = await signIn(app, aliceKey);
    const res = await call(app, 'POST', '/api/settings', { body: { llm_model: 'csrf' }, headers: withCookie(cookie, headers) });
    expect(res).toMatchObject({ status: 403, body: { detail: 'Forbidden' } });
    const del = await call(app, 'DELETE', '/api/secrets/ANY', { headers: withCookie(cookie, headers) });
    expect(del.status).toBe(403);
    expect((await call(app, 'GET', '/api/settings', { headers: withCookie(cookie) })).body.llm_model).not.toBe('csrf');
  });

  it('refuses every mutation of a tRPC batch, and the raw stream-start route', async () => {
    const { cookie } = await signIn(app, aliceKey);
    const batch = await call(app, 'POST', '/trpc/settings.save,secrets.create?batch=1', {
      body: { 0: { json: { llm_model: 'csrf' } }, 1: { json: { name: 'CSRF', value: 'x' } } },
      headers: withCookie(cookie, { origin: 'https://evil.example' }),
    });
    expect(batch.body.map((r: { error: { json: { data: { code: string } } } }) => r.error.json.data.code)).toEqual([
      'FORBIDDEN',
      'FORBIDDEN',
    ]);
    const stream = await call(app, 'POST', '/api/v1/app-conversations/stream-start', { body: {}, headers: withCookie(cookie) });
    expect(stream).toMatchObject({ status: 403, body: { detail: 'Forbidden' } });
  });

  it('refuses any cookie request a browser marks cross-site, even a read', async () => {
    const { cookie } = await signIn(app, aliceKey);
    expect(await call(app, 'GET', '/api/settings', { headers: withCookie(cookie, { 'sec-fetch-site': 'cross-site' }) })).toMatchObject({
      status: 403,
      body: { detail: 'Forbidden' },
    });
    expect((await call(app, 'GET', '/api/settings', { headers: withCookie(cookie, { 'sec-fetch-site': 'same-origin' }) })).status).toBe(
      200,
    );
  });

  it('refuses a cookie read that announces a foreign origin (a page on another port of the same host)', async () => {
    const { cookie } = await signIn(app, aliceKey);
    const foreign = ownOrigin.replace(/:(\d+)$/, (_m, port) => `:${Number(port) + 1}`);
    expect(await call(app, 'GET', '/api/settings', { headers: withCookie(cookie, { origin: foreign }) })).toMatchObject({ status: 403 });
    expect((await call(app, 'GET', '/api/auth/session', { headers: withCookie(cookie, { origin: ownOrigin }) })).status).toBe(200);
    expect((await call(app, 'GET', '/api/auth/session', { headers: withCookie(cookie, { origin: TRUSTED }) })).status).toBe(200);
  });

  it('leaves header-authenticated requests alone', async () => {
    const res = await call(app, 'POST', '/api/settings', {
      key: aliceKey,
      body: { git_user_name: 'Alice' },
      headers: { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
    });
    expect(res.status).toBe(200);
  });
});

describe('the webhooks never accept the cookie', () => {
  it.each([
    ['POST', '/api/v1/webhooks/some-sandbox/conversations'],
    ['POST', '/api/v1/webhooks/some-sandbox/events/some-conversation'],
    ['GET', '/api/v1/webhooks/secrets'],
  ])('%s %s answers 401 to a signed-in browser', async (method, path) => {
    const { cookie } = await signIn(app, aliceKey);
    const res = await call(app, method, path, {
      headers: withCookie(cookie, { origin: ownOrigin }),
      ...(method === 'POST' ? { body: path.includes('/events/') ? [] : {} } : {}),
    });
    expect(res.status).toBe(401);
  });
});

describe('ending a session', () => {
  it('signs out: deletes the record, clears the cookie, and the old cookie stops working', async () => {
    const { cookie, sessionId } = await signIn(app, aliceKey);
    const out = await call(app, 'DELETE', '/api/auth/session', { headers: withCookie(cookie, { origin: ownOrigin }) });
    expect(out).toMatchObject({ status: 200, body: { success: true } });
    expect(out.headers.getSetCookie()).toEqual(['acp_session=; Max-Age=0; Path=/; HttpOnly; SameSite=Strict']);
    const hash = crypto.createHash('sha256').update(sessionId).digest('hex');
    expect(await app.rawCollection('sessions').findOne({ _id: hash as never })).toBeNull();
    expect(await call(app, 'GET', '/api/settings', { headers: withCookie(cookie) })).toMatchObject({
      status: 401,
      body: { detail: 'Unauthorized' },
    });
  });

  it("ends with the d6 UI's Logout (POST /api/unset-provider-tokens by cookie); a key caller keeps its key", async () => {
    const { cookie, sessionId } = await signIn(app, aliceKey);
    const other = await signIn(app, aliceKey); // another browser of the same user stays signed in
    const out = await call(app, 'POST', '/api/unset-provider-tokens', { headers: withCookie(cookie, { origin: ownOrigin }) });
    expect(out).toMatchObject({ status: 200, body: { message: 'Unset Git provider tokens' } });
    expect(out.headers.getSetCookie()).toEqual(['acp_session=; Max-Age=0; Path=/; HttpOnly; SameSite=Strict']);
    const hash = crypto.createHash('sha256').update(sessionId).digest('hex');
    expect(await app.rawCollection('sessions').findOne({ _id: hash as never })).toBeNull();
    expect((await call(app, 'GET', '/api/settings', { headers: withCookie(cookie) })).status).toBe(401);
    expect((await call(app, 'GET', '/api/auth/session', { headers: withCookie(other.cookie) })).status).toBe(200);
    // From another site it changes nothing: the session stays.
    const foreign = await call(app, 'POST', '/api/unset-provider-tokens', {
      headers: withCookie(other.cookie, { origin: 'https://evil.example' }),
    });
    expect(foreign.status).toBe(403);
    expect((await call(app, 'GET', '/api/auth/session', { headers: withCookie(other.cookie) })).status).toBe(200);
    // With the key header there is no browser session to end and no cookie is touched.
    const byKey = await call(app, 'POST', '/api/unset-provider-tokens', { key: aliceKey });
    expect(byKey.status).toBe(200);
    expect(byKey.headers.getSetCookie()).toEqual([]);
    expect((await call(app, 'GET', '/api/settings', { key: aliceKey })).status).not.toBe(401);
  });

  it('ends at its expiry', async () => {
    const { cookie, sessionId } = await signIn(app, aliceKey);
    const hash = crypto.createHash('sha256').update(sessionId).digest('hex');
    await app.rawCollection('sessions').updateOne({ _id: hash as never }, { $set: { expiresAt: new Date(Date.now() - 1000) } });
    expect((await call(app, 'GET', '/api/auth/session', { headers: withCookie(cookie) })).status).toBe(401);
  });

  it('ends after SESSION_IDLE_SECONDS without use, and each use starts its idle time again', async () => {
    const idle = await signIn(app, aliceKey);
    const used = await signIn(app, aliceKey);
    const hashOf = (id: string) => crypto.createHash('sha256').update(id).digest('hex');
    const lastSeen = (id: string, at: Date) =>
      app.rawCollection('sessions').updateOne({ _id: hashOf(id) as never }, { $set: { lastSeenAt: at } });
    await lastSeen(idle.sessionId, new Date(Date.now() - 2 * 3600_000 - 1000)); // the default: 2 h
    await lastSeen(used.sessionId, new Date(Date.now() - 2 * 3600_000 + 60_000));
    expect((await call(app, 'GET', '/api/auth/session', { headers: withCookie(idle.cookie) })).status).toBe(401);
    expect(await app.rawCollection('sessions').findOne({ _id: hashOf(idle.sessionId) as never })).toBeNull();
    expect((await call(app, 'GET', '/api/auth/session', { headers: withCookie(used.cookie) })).status).toBe(200);
    const seen = (await app.rawCollection('sessions').findOne({ _id: hashOf(used.sessionId) as never }))!.lastSeenAt as Date;
    expect(Date.now() - seen.getTime()).toBeLessThan(60_000);
  });

  it('signs out everywhere: every browser session of the user ends, other users and the key stay', async () => {
    const here = await signIn(app, aliceKey);
    const elsewhere = await signIn(app, aliceKey);
    const bob = await signIn(app, bobKey);
    const out = await call(app, 'POST', '/api/auth/sessions/end-all', {
      headers: withCookie(here.cookie, { origin: ownOrigin }),
      body: {},
    });
    expect(out.status).toBe(200);
    expect(out.body).toMatchObject({ success: true, ended_sessions: expect.any(Number) });
    expect(out.body.ended_sessions).toBeGreaterThanOrEqual(2);
    expect(out.headers.getSetCookie()).toEqual(['acp_session=; Max-Age=0; Path=/; HttpOnly; SameSite=Strict']);
    for (const { cookie } of [here, elsewhere])
      expect((await call(app, 'GET', '/api/auth/session', { headers: withCookie(cookie) })).status).toBe(401);
    expect((await call(app, 'GET', '/api/auth/session', { headers: withCookie(bob.cookie) })).status).toBe(200);
    expect((await call(app, 'GET', '/api/auth/session', { key: aliceKey })).status).toBe(200);
    expect(await app.rawCollection('sessions').countDocuments({ userId: 'alice' })).toBe(0);
    // From another site it changes nothing.
    const again = await signIn(app, aliceKey);
    const foreign = await call(app, 'POST', '/api/auth/sessions/end-all', {
      headers: withCookie(again.cookie, { origin: 'https://evil.example' }),
      body: {},
    });
    expect(foreign.status).toBe(403);
    expect((await call(app, 'GET', '/api/auth/session', { headers: withCookie(again.cookie) })).status).toBe(200);
  });

  it('ends when its key is revoked, and leaves sessions of other keys alone', async () => {
    const extra = await app.server.deps.services.apiKeys.create('alice');
    const doomed = await signIn(app, extra.key);
    const other = await signIn(app, aliceKey);
    await app.server.deps.services.apiKeys.revoke(extra.info.id);
    expect((await call(app, 'GET', '/api/auth/session', { headers: withCookie(doomed.cookie) })).status).toBe(401);
    expect((await call(app, 'GET', '/api/auth/session', { headers: withCookie(other.cookie) })).status).toBe(200);
  });

  it('rotates at sign-in: the session cookie sent along ends, the new one is another id (REST and tRPC)', async () => {
    const first = await signIn(app, aliceKey);
    // Signing in again from a browser that still holds a session (even as another user).
    const second = await signIn(app, bobKey, withCookie(first.cookie, { origin: ownOrigin }));
    expect(second.sessionId).not.toBe(first.sessionId);
    expect((await call(app, 'GET', '/api/auth/session', { headers: withCookie(first.cookie) })).status).toBe(401);
    const hash = crypto.createHash('sha256').update(first.sessionId).digest('hex');
    expect(await app.rawCollection('sessions').findOne({ _id: hash as never })).toBeNull();
    expect((await call(app, 'GET', '/api/auth/session', { headers: withCookie(second.cookie) })).body.user_id).toBe('bob');

    const viaTrpc = await call(app, 'POST', '/trpc/auth.signIn', {
      body: { json: { api_key: aliceKey } },
      headers: withCookie(second.cookie, { origin: ownOrigin }),
    });
    expect(viaTrpc.status).toBe(200);
    const third = viaTrpc.headers.getSetCookie()[0]!.split(';')[0]!;
    expect(third).not.toBe(second.cookie);
    expect((await call(app, 'GET', '/api/auth/session', { headers: withCookie(second.cookie) })).status).toBe(401);
    expect((await call(app, 'GET', '/api/auth/session', { headers: withCookie(third) })).body.user_id).toBe('alice');
  });

  it('keeps the session when a sign-in fails (a wrong key signs nobody out)', async () => {
    const held = await signIn(app, aliceKey);
    const failed = await call(app, 'POST', '/api/auth/session', {
      body: { api_key: 'ohk_AAAAAAAAAAAA_' + 'A'.repeat(40) },
      headers: withCookie(held.cookie, { origin: ownOrigin }),
    });
    expect(failed.status).toBe(401);
    expect((await call(app, 'GET', '/api/auth/session', { headers: withCookie(held.cookie) })).status).toBe(200);
  });

  it('refuses forged, truncated and unknown cookies', async () => {
    for (const value of ['', 'x', 'A'.repeat(43), 'A'.repeat(44), '../../etc']) {
      expect((await call(app, 'GET', '/api/settings', { headers: { cookie: `acp_session=${value}` } })).status).toBe(401);
    }
  });
});

describe('the cookie over https', () => {
  it('is Secure when a trusted proxy says https, and not when an untrusted client claims it', async () => {
    const proxied = await startTestApp('sessions-proxy', { TRUST_PROXY: 'loopback' });
    try {
      const key = await proxied.keyFor('carol');
      expect((await signIn(proxied, key, { 'x-forwarded-proto': 'https' })).setCookie).toMatch(/; Secure$/);
      expect((await signIn(proxied, key)).setCookie).not.toContain('Secure');
    } finally {
      await proxied.stop();
    }
    expect((await signIn(app, aliceKey, { 'x-forwarded-proto': 'https' })).setCookie).not.toContain('Secure');
  });

  it('is Secure when SESSION_COOKIE_SECURE is set, with the configured TTL', async () => {
    const configured = await startTestApp('sessions-secure', { SESSION_COOKIE_SECURE: 'true', SESSION_TTL_SECONDS: '600' });
    try {
      const { setCookie } = await signIn(configured, await configured.keyFor('dave'));
      expect(setCookie).toMatch(/; Max-Age=600; Secure$/);
    } finally {
      await configured.stop();
    }
  });

  it('ends SESSION_API_KEY sessions when the configured key changes', async () => {
    const single = await startTestApp('sessions-env', { SESSION_API_KEY: 'single-user-key-1' });
    try {
      const { cookie, body } = await signIn(single, 'single-user-key-1');
      expect(body.user_id).toBe('default');
      expect((await call(single, 'GET', '/api/auth/session', { headers: { cookie } })).status).toBe(200);
      const { ApiKeysService } = await import('../../src/services/identity/api-keys.service.js');
      const { SessionsService } = await import('../../src/services/identity/sessions.service.js');
      const models = single.server.deps.db.models;
      const rotated = new SessionsService(models.Session, new ApiKeysService(models.ApiKey, 'single-user-key-2'), 600);
      expect(await rotated.authenticateSession(cookie.slice('acp_session='.length))).toBeNull();
    } finally {
      await single.stop();
    }
  });
});
