// One user's key never reveals or changes another user's data: another user's records
// behave exactly as if absent, through the V0 routes and the 2026 ones alike.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { startFakeGitProvider, type FakeGitProvider } from '../helpers/fake-git-provider.js';

let app: TestApp;
let provider: FakeGitProvider;
let alice: string;
let bob: string;

beforeAll(async () => {
  provider = await startFakeGitProvider();
  provider.validTokens.add('ghp_alice');
  app = await startTestApp('isolation', { GITHUB_API_URL: provider.url });
  alice = await app.keyFor('alice');
  bob = await app.keyFor('bob');
  await call(app, 'POST', '/api/settings', {
    key: alice,
    body: { llm_model: 'alice-model', llm_api_key: 'sk-alice', git_user_name: 'Alice' },
  });
  await call(app, 'POST', '/api/add-git-providers', { key: alice, body: { provider_tokens: { github: { token: 'ghp_alice' } } } });
  await call(app, 'POST', '/api/secrets', { key: alice, body: { name: 'ALICE_SECRET', value: 'alice-value' } });
});
afterAll(async () => {
  await app.stop();
  await provider.close();
});

describe('user isolation', () => {
  it("does not show alice's settings, tokens or secrets to bob", async () => {
    expect(await call(app, 'GET', '/api/settings', { key: bob })).toMatchObject({ status: 404, body: { error: 'Settings not found' } });
    expect((await call(app, 'GET', '/api/secrets', { key: bob })).body).toEqual({ custom_secrets: [] });
    await call(app, 'POST', '/api/settings', { key: bob, body: { llm_model: 'bob-model' } });
    const bobSettings = (await call(app, 'GET', '/api/settings', { key: bob })).body;
    expect(bobSettings).toMatchObject({ llm_model: 'bob-model', llm_api_key_set: false, provider_tokens_set: {}, git_user_name: null });
  });

  it("does not let bob change or delete alice's secrets", async () => {
    expect(await call(app, 'PUT', '/api/secrets/ALICE_SECRET', { key: bob, body: { name: 'STOLEN' } })).toMatchObject({ status: 404 });
    expect(await call(app, 'DELETE', '/api/secrets/ALICE_SECRET', { key: bob })).toMatchObject({ status: 404 });
    // Bob may use the same name for his own secret without touching alice's.
    expect((await call(app, 'POST', '/api/secrets', { key: bob, body: { name: 'ALICE_SECRET', value: 'bob-value' } })).status).toBe(201);
    expect(await app.server.deps.services.secrets.resolve('alice')).toEqual([
      { name: 'ALICE_SECRET', value: 'alice-value', description: '' },
    ]);
  });

  it("leaves alice's data intact after bob's saves and token changes", async () => {
    await call(app, 'POST', '/api/settings', { key: bob, body: { llm_api_key: '', git_user_name: 'Bob' } });
    await call(app, 'POST', '/api/unset-provider-tokens', { key: bob });
    const aliceSettings = (await call(app, 'GET', '/api/settings', { key: alice })).body;
    expect(aliceSettings).toMatchObject({
      llm_model: 'alice-model',
      llm_api_key_set: true,
      git_user_name: 'Alice',
      provider_tokens_set: { github: null },
    });
    expect((await call(app, 'GET', '/api/secrets', { key: alice })).body).toEqual({
      custom_secrets: [{ name: 'ALICE_SECRET', description: '' }],
    });
  });

  it("keeps alice's secrets and tokens out of bob's V1 searches, and out of his reach", async () => {
    const bearer = (key: string) => ({ headers: { authorization: `Bearer ${key}` } });
    await call(app, 'POST', '/api/v1/secrets', { ...bearer(alice), body: { name: 'ALICE_ONLY', value: 'alice-only-value' } });
    const search = await call(app, 'GET', '/api/v1/secrets/search?name__contains=ALICE', bearer(bob));
    expect(search.body.items.map((s: { name: string }) => s.name)).toEqual(['ALICE_SECRET']); // bob's own, same name
    expect((await app.server.deps.services.secrets.resolve('bob')).map((s) => s.value)).toEqual(['bob-value']);
    expect((await call(app, 'PUT', '/api/v1/secrets/ALICE_ONLY', { ...bearer(bob), body: { name: 'X' } })).status).toBe(404);
    // Bob holds no git token: the V1 searches do not fall back to anyone else's.
    const repos = await call(app, 'GET', '/api/v1/git/repositories/search?provider=github', bearer(bob));
    expect(repos).toMatchObject({ status: 401, body: { detail: expect.stringContaining('Git provider token required') } });
  });

  it("binds ciphertexts to their owner: alice's encrypted value copied to bob does not decrypt", async () => {
    const aliceDoc = await app.rawCollection('settings').findOne({ userId: 'alice' });
    await app.rawCollection('settings').updateOne({ userId: 'bob' }, { $set: { llm_api_key: aliceDoc?.llm_api_key } });
    await expect(app.server.deps.services.settings.resolve('bob')).rejects.toThrow();
    await app.rawCollection('settings').updateOne({ userId: 'bob' }, { $unset: { llm_api_key: '' } });
  });
});

describe('user isolation on the 2026 routes', () => {
  const bearer = (key: string) => ({ headers: { authorization: `Bearer ${key}` } });

  it("shows bob nothing of alice's nested settings, profiles or user record, and lets him change none of them", async () => {
    await call(app, 'POST', '/api/v1/settings/profiles/alice-llm', {
      ...bearer(alice),
      body: { llm: { model: 'm', api_key: 'sk-alice-profile' } },
    });
    await call(app, 'POST', '/api/agent-profiles/alice-agent', { ...bearer(alice), body: { llm_profile_ref: 'alice-llm' } });
    const bobV1 = (await call(app, 'GET', '/api/v1/settings', bearer(bob))).body;
    expect(bobV1).toMatchObject({
      agent_settings: { llm: { model: 'bob-model' } },
      llm_profiles: { profiles: {} },
      llm_api_key_set: false,
    });
    expect((await call(app, 'GET', '/api/v1/settings/profiles', bearer(bob))).body.profiles).toEqual([]);
    expect((await call(app, 'GET', '/api/v1/settings/profiles/alice-llm', bearer(bob))).status).toBe(404);
    expect((await call(app, 'POST', '/api/v1/settings/profiles/alice-llm/activate', { ...bearer(bob), body: {} })).status).toBe(404);
    expect((await call(app, 'GET', '/api/agent-profiles', bearer(bob))).body.profiles).toEqual([]);
    const me = await call(app, 'GET', '/api/v1/users/me', bearer(bob));
    expect(me.body).toMatchObject({ id: 'bob', llm_model: 'bob-model' });
    expect(me.text).not.toContain('alice');
    for (const path of [
      '/api/organizations/alice/me',
      '/api/organizations/alice/profiles',
      '/api/organizations/alice/profiles/alice-llm',
    ]) {
      expect((await call(app, 'GET', path, bearer(bob))).status, path).toBe(404);
    }
    expect((await call(app, 'DELETE', '/api/organizations/alice/profiles/alice-llm', bearer(bob))).status).toBe(404);
    await call(app, 'DELETE', '/api/v1/settings/profiles/alice-llm', bearer(bob));
    await call(app, 'DELETE', '/api/agent-profiles/alice-agent', bearer(bob));
    expect((await call(app, 'GET', '/api/v1/settings/profiles/alice-llm', bearer(alice))).body).toMatchObject({ api_key_set: true });
    expect((await call(app, 'GET', '/api/agent-profiles/alice-agent', bearer(alice))).status).toBe(200);
    expect((await call(app, 'GET', '/api/keys/current', bearer(bob))).body).toMatchObject({ user_id: 'bob', org_id: 'bob' });
  });
});
