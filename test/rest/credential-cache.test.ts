// Verified API keys are remembered for AUTH_CACHE_TTL_MS per process. What that may never
// cost: a revoked key keeps working past the bound on any replica, or on the revoking replica
// at all; or a remembered key answers for another user or for an altered secret. Two replicas
// share one database; each has its own clock, moved by the test instead of waited for.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyText } from '../../src/crypto.js';
import { call, startTestApp, testDatabaseUri, uniqueDbName, type TestApp } from '../helpers/app.js';
import { runCli } from '../helpers/processes.js';

const TTL_MS = 5_000;
const encryptionKey = generateKeyText();
const dbName = uniqueDbName('keycache');
const clocks = { a: Date.now(), b: Date.now() };
let a: TestApp;
let b: TestApp;

beforeAll(async () => {
  // The clocks jump hours: only the absolute expiry is under test here (the idle timeout: sessions.test.ts).
  const env = { AUTH_CACHE_TTL_MS: String(TTL_MS), ENCRYPTION_KEY: encryptionKey, SESSION_IDLE_SECONDS: 'off' };
  a = await startTestApp('keycache-a', env, { dbName, clock: () => clocks.a });
  b = await startTestApp('keycache-b', env, { dbName, clock: () => clocks.b });
});
afterAll(async () => {
  await a.stop();
  await b.stop();
});

const keyIdOf = (key: string) => key.split('_')[1]!;
const status = async (app: TestApp, key: string) => (await call(app, 'GET', '/api/settings', { key })).status;

async function userWithSettings(userId: string, model: string): Promise<string> {
  const key = await a.keyFor(userId);
  expect((await call(a, 'POST', '/api/settings', { key, body: { llm_model: model } })).status).toBe(200);
  return key;
}

describe('revocation', () => {
  it('refuses a key at once on the replica that revoked it, and on another replica once the bound has passed', async () => {
    const key = await userWithSettings('rev-1', 'm1');
    expect(await status(a, key)).toBe(200);
    expect(await status(b, key)).toBe(200); // both replicas now remember it

    expect(await a.server.deps.services.apiKeys.revoke(keyIdOf(key))).toBe(true);
    expect(await status(a, key)).toBe(401);

    // Replica b verified the key before the revocation and may trust that until the bound...
    clocks.b += TTL_MS - 1;
    expect(await status(b, key)).toBe(200);
    // ...and not a moment longer.
    clocks.b += 1;
    expect(await status(b, key)).toBe(401);
    expect(await status(b, key)).toBe(401);
  });

  it('refuses a key revoked by the CLI (another process) on every replica within the bound', async () => {
    const key = await userWithSettings('rev-2', 'm2');
    expect(await status(a, key)).toBe(200);
    expect(await status(b, key)).toBe(200);

    const revoked = await runCli(['keys', 'revoke', keyIdOf(key)], { MONGODB_URI: testDatabaseUri(dbName), ENCRYPTION_KEY: encryptionKey });
    expect(revoked.code, revoked.stderr).toBe(0);

    clocks.a += TTL_MS;
    clocks.b += TTL_MS;
    expect(await status(a, key)).toBe(401);
    expect(await status(b, key)).toBe(401);
  });

  it('does not remember a key that failed, so a key refused once is never let in by the cache', async () => {
    const key = await userWithSettings('rev-3', 'm3');
    await a.server.deps.services.apiKeys.revoke(keyIdOf(key));
    expect(await status(b, key)).toBe(401); // b never saw it valid
    expect(await status(b, key)).toBe(401);
  });
});

describe('isolation', () => {
  it('answers every request with the user of its own key, also when interleaved', async () => {
    const alice = await userWithSettings('cache-alice', 'alice-model');
    const bob = await userWithSettings('cache-bob', 'bob-model');
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) => {
        const [key, expected] = i % 2 ? [alice, 'alice-model'] : [bob, 'bob-model'];
        return call(a, 'GET', '/api/settings', { key }).then((res) => [res.body?.llm_model, expected]);
      }),
    );
    for (const [got, expected] of answers) expect(got).toBe(expected);
  });

  it('refuses a key with a remembered key id but another secret', async () => {
    const alice = await userWithSettings('cache-alice-2', 'alice-model');
    expect(await status(a, alice)).toBe(200);
    const [prefix, id, secret] = alice.split('_');
    const altered = `${prefix}_${id}_${secret!.slice(0, -1)}${secret!.endsWith('A') ? 'B' : 'A'}`;
    expect(await status(a, altered)).toBe(401);
    expect(await status(a, alice)).toBe(200);
  });
});

describe('browser sessions (remembered the same way)', () => {
  async function signIn(userId: string): Promise<{ cookie: string; key: string }> {
    const key = await userWithSettings(userId, `${userId}-model`);
    const res = await call(a, 'POST', '/api/auth/session', { body: { api_key: key } });
    expect(res.status).toBe(200);
    return { cookie: res.headers.get('set-cookie')!.split(';')[0]!, key };
  }
  const byCookie = async (app: TestApp, cookie: string) => (await call(app, 'GET', '/api/settings', { headers: { cookie } })).status;

  it('ends a signed-out session at once on its replica, and on another once the bound has passed', async () => {
    const { cookie } = await signIn('sess-1');
    expect(await byCookie(a, cookie)).toBe(200);
    expect(await byCookie(b, cookie)).toBe(200);
    expect((await call(a, 'DELETE', '/api/auth/session', { headers: { cookie, origin: a.url } })).status).toBe(200);
    expect(await byCookie(a, cookie)).toBe(401);
    clocks.b += TTL_MS - 1;
    expect(await byCookie(b, cookie)).toBe(200);
    clocks.b += 1;
    expect(await byCookie(b, cookie)).toBe(401);
  });

  it("ends a revoked key's sessions at once on the revoking replica, and everywhere within the bound", async () => {
    const { cookie, key } = await signIn('sess-2');
    expect(await byCookie(a, cookie)).toBe(200);
    expect(await byCookie(b, cookie)).toBe(200);
    await a.server.deps.services.apiKeys.revoke(keyIdOf(key));
    expect(await byCookie(a, cookie)).toBe(401);
    clocks.b += TTL_MS;
    expect(await byCookie(b, cookie)).toBe(401);
  });

  it("ends a key's sessions when the CLI (another process) revokes it, on both replicas within the bound", async () => {
    const { cookie, key } = await signIn('sess-cli');
    expect(await byCookie(a, cookie)).toBe(200);
    expect(await byCookie(b, cookie)).toBe(200); // both replicas remember the session now
    const revoked = await runCli(['keys', 'revoke', keyIdOf(key)], { MONGODB_URI: testDatabaseUri(dbName), ENCRYPTION_KEY: encryptionKey });
    expect(revoked.code, revoked.stderr).toBe(0);
    // The CLI deleted the sessions with the key, and the audit log says the operator did.
    expect(await a.rawCollection('sessions').countDocuments({ apiKeyId: keyIdOf(key) })).toBe(0);
    expect(await a.rawCollection('audit_events').findOne({ action: 'cli.keys.revoke', 'target.key_id': keyIdOf(key) })).toMatchObject({
      userId: 'operator',
      outcome: 'ok',
      via: 'cli',
    });
    clocks.a += TTL_MS - 1;
    clocks.b += TTL_MS - 1;
    expect(await byCookie(b, cookie)).toBe(200); // may still be trusted inside the bound...
    clocks.a += 1;
    clocks.b += 1;
    expect(await byCookie(a, cookie)).toBe(401); // ...and on no replica past it
    expect(await byCookie(b, cookie)).toBe(401);
  });

  it('ends the sessions of a key revoked without deleting them (a revocation cut short), within the bound', async () => {
    const { cookie, key } = await signIn('sess-cut');
    expect(await byCookie(a, cookie)).toBe(200);
    expect(await byCookie(b, cookie)).toBe(200);
    // Only the key's record changes, as when a revoking process dies before deleting the sessions.
    await a.rawCollection('api_keys').updateOne({ _id: keyIdOf(key) as never }, { $set: { revokedAt: new Date() } });
    expect(await a.rawCollection('sessions').countDocuments({ apiKeyId: keyIdOf(key) })).toBe(1);
    clocks.a += TTL_MS;
    clocks.b += TTL_MS;
    expect(await byCookie(a, cookie)).toBe(401);
    expect(await byCookie(b, cookie)).toBe(401);
  });

  it('ends the session a sign-in replaces on the other replica within the bound', async () => {
    const { cookie, key } = await signIn('sess-rotate');
    expect(await byCookie(b, cookie)).toBe(200);
    const again = await call(a, 'POST', '/api/auth/session', { body: { api_key: key }, headers: { cookie, origin: a.url } });
    expect(again.status).toBe(200);
    expect(await byCookie(a, cookie)).toBe(401);
    clocks.b += TTL_MS;
    expect(await byCookie(b, cookie)).toBe(401);
    expect(await byCookie(b, again.headers.getSetCookie()[0]!.split(';')[0]!)).toBe(200);
  });

  it('never serves a remembered session past its expiry', async () => {
    const { cookie } = await signIn('sess-3');
    expect(await byCookie(a, cookie)).toBe(200);
    const expiresAt = (await call(a, 'GET', '/api/auth/session', { headers: { cookie } })).body.expires_at as string;
    clocks.a = new Date(expiresAt).getTime() - 1000; // verified again a second before the session ends...
    expect(await byCookie(a, cookie)).toBe(200);
    clocks.a += 1000; // ...and remembered for seconds longer, but the session is over
    expect(await byCookie(a, cookie)).toBe(401);
  });
});
