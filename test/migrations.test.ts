// Start-up data moves (src/db/migrations.ts): data written by an earlier version reads the same
// afterwards, and a second start changes nothing.
import { MongoClient } from 'mongodb';
import { afterAll, describe, expect, it } from 'vitest';
import { generateKeyText, SecretBox } from '../src/crypto.js';
import { tokenContext } from '../src/git/git-providers.service.js';
import { call, startTestApp, testDatabaseUri, uniqueDbName } from './helpers/app.js';

const dbName = uniqueDbName('migrations');
const encryptionKey = generateKeyText();
const client = new MongoClient(testDatabaseUri(dbName));
afterAll(() => client.close());

describe('git provider tokens from their former collection', () => {
  it('move into the settings document, keeping saved settings, once', async () => {
    const box = SecretBox.fromStrings(encryptionKey);
    const legacy = client.db().collection('git_provider_tokens');
    const now = new Date();
    const token = (user: string) => ({ token: box.encrypt(`ghp_${user}`, tokenContext(user, 'github')), host: null, user_id: null });
    await legacy.insertMany([
      { userId: 'with-settings', tokens: { github: token('with-settings') }, updatedAt: now },
      { userId: 'tokens-only', tokens: { github: token('tokens-only') }, updatedAt: now },
    ]);
    await client.db().collection('settings').insertOne({ userId: 'with-settings', language: 'fr', updatedAt: now });

    for (const round of [1, 2]) {
      const app = await startTestApp(`migrations-${round}`, { MONGODB_URI: testDatabaseUri(dbName), ENCRYPTION_KEY: encryptionKey });
      try {
        expect(await legacy.countDocuments()).toBe(0);
        const key = await app.keyFor('with-settings');
        expect((await call(app, 'GET', '/api/settings', { key })).body).toMatchObject({
          language: 'fr',
          provider_tokens_set: { github: null },
        });
        const tokensOnly = await app.keyFor('tokens-only');
        expect((await call(app, 'GET', '/api/settings', { key: tokensOnly })).status).toBe(404);
        for (const user of ['with-settings', 'tokens-only']) {
          expect((await app.server.deps.services.gitProviders.resolve(user)).github?.token).toBe(`ghp_${user}`);
        }
        expect(await client.db().collection('settings').countDocuments()).toBe(2);
      } finally {
        await app.stop();
      }
    }
  });
});

describe('sandboxes stored before the idle and retention policies', () => {
  it('get their clocks at start-up, so the passes need not look for them', async () => {
    const sandboxes = client.db().collection<{ _id: string; lastUsedAt?: Date | null; desiredSince?: Date | null }>('sandboxes');
    const earlier = new Date(Date.now() - 86_400_000);
    const record = (id: string, desired: string) => ({
      _id: id,
      userId: 'legacy-sandboxes',
      specId: 'legacy-spec',
      desired,
      runningConversations: [],
      createdAt: earlier,
      updatedAt: earlier,
    });
    await sandboxes.insertMany([record('legacy-running', 'running'), record('legacy-paused', 'paused')]);
    const before = new Date();
    const app = await startTestApp('migrations-clocks', { MONGODB_URI: testDatabaseUri(dbName), ENCRYPTION_KEY: encryptionKey });
    try {
      const running = await sandboxes.findOne({ _id: 'legacy-running' });
      const paused = await sandboxes.findOne({ _id: 'legacy-paused' });
      expect(running?.lastUsedAt?.getTime()).toBeGreaterThanOrEqual(before.getTime());
      expect(paused?.desiredSince?.getTime()).toBeGreaterThanOrEqual(before.getTime());
      // Only what had no clock: a paused sandbox keeps no lastUsedAt it never had.
      expect(paused?.lastUsedAt ?? null).toBeNull();
    } finally {
      await app.stop();
    }
  });
});
