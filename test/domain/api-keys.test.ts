// A user's own API keys through the procedures (apiKeys.*): a key past its expiry no longer
// authenticates (nor do the browser sessions it opened), a key's last use is recorded, and a
// key with no name or expiry is minted as the CLI's are. The wire shapes and statuses are in
// test/rest/account-routes.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refusal, startTestDomain, type TestDomain } from '../helpers/domain.js';
import { eventually } from '../helpers/eventually.js';

let domain: TestDomain;
const carol = () => domain.as('carol');
/** The domain's clock: the test moves it past a key's expiry instead of waiting. */
let clockOffsetMs = 0;

beforeAll(async () => {
  domain = await startTestDomain('api-keys', {}, { clock: () => Date.now() + clockOffsetMs });
});
afterAll(() => domain?.stop());

describe('a user’s own API keys', () => {
  it('mints one without a name or an end, which works until revoked', async () => {
    const created = await carol().apiKeys.create();
    expect(created).toMatchObject({ name: null, expires_at: null, last_used_at: null });
    expect(await domain.deps.services.apiKeys.authenticateApiKey(created.key)).toEqual({
      userId: 'carol',
      keyId: created.id,
      orgId: null,
      purpose: null,
    });
    await carol().apiKeys.delete({ key_id: created.id });
    expect(await domain.deps.services.apiKeys.authenticateApiKey(created.key)).toBeNull();
    expect(await refusal(carol().apiKeys.delete({ key_id: created.id }))).toMatchObject({ code: 'NOT_FOUND', reason: 'api_key_not_found' });
  });

  it('stops a key at its expiry, and the browser session it opened with it; the list still shows it, with its end', async () => {
    const expires = new Date(Date.now() + 3_600_000).toISOString();
    const created = await carol().apiKeys.create({ name: 'short', expires_at: expires });
    const { apiKeys, sessions } = domain.deps.services;
    expect(await apiKeys.authenticateApiKey(created.key)).not.toBeNull();
    const session = await sessions.open(created.key);
    // Its session ends with the key, not after the whole session lifetime.
    expect(session.expiresAt.toISOString()).toBe(expires);
    expect(await sessions.authenticateSession(session.sessionId)).not.toBeNull();
    clockOffsetMs = 3_600_000 + 1000;
    try {
      expect(await apiKeys.authenticateApiKey(created.key)).toBeNull();
      expect(await sessions.authenticateSession(session.sessionId)).toBeNull();
      await expect(sessions.open(created.key)).rejects.toThrow();
    } finally {
      clockOffsetMs = 0;
    }
    expect((await carol().apiKeys.list()).find((k) => k.id === created.id)).toMatchObject({ expires_at: expires });
  });

  it('records when a key was last used', async () => {
    const created = await carol().apiKeys.create({ name: 'used' });
    await domain.deps.services.apiKeys.authenticateApiKey(created.key);
    const used = await eventually('the use recorded', async () =>
      (await carol().apiKeys.list()).find((k) => k.id === created.id && k.last_used_at),
    );
    expect(Date.parse(used.last_used_at!)).toBeGreaterThan(Date.parse(created.created_at) - 1000);
  });
});
