// One user never sees or changes another user's data: another user's records behave exactly as
// if absent, through the V0 procedures and the 2026 ones alike (settings, git tokens, secrets,
// LLM and agent profiles, the user record, the personal organisation, the key itself), and an
// encrypted value is bound to its owner. Through the procedures (createCaller, no HTTP).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refusal, startTestDomain, type TestDomain } from '../helpers/domain.js';
import { startFakeGitProvider, type FakeGitProvider } from '../helpers/fake-git-provider.js';

let domain: TestDomain;
let provider: FakeGitProvider;
const alice = () => domain.as('alice');
const bob = () => domain.as('bob');

beforeAll(async () => {
  provider = await startFakeGitProvider();
  provider.validTokens.add('ghp_alice');
  domain = await startTestDomain('isolation', { GITHUB_API_URL: provider.url });
  await alice().settings.save({ llm_model: 'alice-model', llm_api_key: 'sk-alice', git_user_name: 'Alice' });
  await alice().gitProviders.add({ provider_tokens: { github: { token: 'ghp_alice' } } });
  await alice().secrets.create({ name: 'ALICE_SECRET', value: 'alice-value' });
});
afterAll(async () => {
  await domain?.stop();
  await provider?.close();
});

describe('user isolation', () => {
  it("does not show alice's settings, tokens or secrets to bob", async () => {
    expect(await refusal(bob().settings.get())).toMatchObject({ code: 'NOT_FOUND', reason: 'settings_not_found' });
    expect(await bob().secrets.list()).toEqual({ custom_secrets: [] });
    await bob().settings.save({ llm_model: 'bob-model' });
    expect(await bob().settings.get()).toMatchObject({
      llm_model: 'bob-model',
      llm_api_key_set: false,
      provider_tokens_set: {},
      git_user_name: null,
    });
  });

  it("does not let bob change or delete alice's secrets", async () => {
    expect(await refusal(bob().secrets.update({ secret_id: 'ALICE_SECRET', name: 'STOLEN' }))).toMatchObject({ code: 'NOT_FOUND' });
    expect(await refusal(bob().secrets.delete({ secret_id: 'ALICE_SECRET' }))).toMatchObject({ code: 'NOT_FOUND' });
    // Bob may use the same name for his own secret without touching alice's.
    await bob().secrets.create({ name: 'ALICE_SECRET', value: 'bob-value' });
    expect(await domain.deps.services.secrets.resolve('alice')).toEqual([{ name: 'ALICE_SECRET', value: 'alice-value', description: '' }]);
  });

  it("leaves alice's data intact after bob's saves and token changes", async () => {
    await bob().settings.save({ llm_api_key: '', git_user_name: 'Bob' });
    await bob().gitProviders.unset();
    expect(await alice().settings.get()).toMatchObject({
      llm_model: 'alice-model',
      llm_api_key_set: true,
      git_user_name: 'Alice',
      provider_tokens_set: { github: null },
    });
    expect(await alice().secrets.list()).toEqual({ custom_secrets: [{ name: 'ALICE_SECRET', description: '' }] });
  });

  it("keeps alice's secrets and tokens out of bob's V1 searches, and out of his reach", async () => {
    await alice().secretsV1.create({ name: 'ALICE_ONLY', value: 'alice-only-value' });
    const search = await bob().secretsV1.search({ name__contains: 'ALICE' });
    expect(search.items.map((s) => s.name)).toEqual(['ALICE_SECRET']); // bob's own, same name
    expect((await domain.deps.services.secrets.resolve('bob')).map((s) => s.value)).toEqual(['bob-value']);
    expect(await refusal(bob().secretsV1.update({ secret_id: 'ALICE_ONLY', name: 'X' }))).toMatchObject({ code: 'NOT_FOUND' });
    // Bob holds no git token: the V1 searches do not fall back to anyone else's.
    expect(await refusal(bob().gitV1.repositories({ provider: 'github' }))).toMatchObject({
      code: 'UNAUTHORIZED',
      reason: 'git_token_required',
      message: expect.stringContaining('Git provider token required'),
    });
  });

  it("binds ciphertexts to their owner: alice's encrypted value copied to bob does not decrypt", async () => {
    const settings = domain.deps.db.models.Settings.collection;
    const aliceDoc = await settings.findOne({ userId: 'alice' });
    expect(aliceDoc?.llm_api_key).toMatch(/^enc:v1:/);
    await settings.updateOne({ userId: 'bob' }, { $set: { llm_api_key: aliceDoc?.llm_api_key } });
    await expect(domain.deps.services.settings.resolve('bob')).rejects.toThrow();
    await settings.updateOne({ userId: 'bob' }, { $unset: { llm_api_key: '' } });
    expect(await domain.deps.services.settings.resolve('bob')).toMatchObject({ llm_api_key: null });
  });
});

describe('user isolation on the 2026 procedures', () => {
  it("shows bob nothing of alice's nested settings, profiles or user record, and lets him change none of them", async () => {
    await alice().settingsV1.profilesSave({ name: 'alice-llm', llm: { model: 'm', api_key: 'sk-alice-profile' } });
    await alice().agentProfiles.save({ name: 'alice-agent', llm_profile_ref: 'alice-llm' });
    expect(await bob().settingsV1.get()).toMatchObject({
      agent_settings: { llm: { model: 'bob-model' } },
      llm_profiles: { profiles: {} },
      llm_api_key_set: false,
    });
    expect((await bob().settingsV1.profilesList({})).profiles).toEqual([]);
    expect(await refusal(bob().settingsV1.profilesGet({ name: 'alice-llm' }))).toMatchObject({
      code: 'NOT_FOUND',
      reason: 'llm_profile_not_found',
    });
    expect(await refusal(bob().settingsV1.profilesActivate({ name: 'alice-llm' }))).toMatchObject({ code: 'NOT_FOUND' });
    expect((await bob().agentProfiles.list()).profiles).toEqual([]);
    const me = await bob().users.me({});
    expect(me).toMatchObject({ id: 'bob', llm_model: 'bob-model' });
    expect(JSON.stringify(me)).not.toContain('alice');
    // The organisation's procedures take its org_id beside the plain input (typed for REST clients).
    const inAlicesOrg = [
      () => bob().organizations.me({ org_id: 'alice' }),
      () => bob().organizations.profilesList({ org_id: 'alice' } as never),
      () => bob().organizations.profilesGet({ org_id: 'alice', name: 'alice-llm' } as never),
      () => bob().organizations.profilesDelete({ org_id: 'alice', name: 'alice-llm' } as never),
    ];
    for (const call of inAlicesOrg) {
      expect(await refusal(call())).toMatchObject({ code: 'NOT_FOUND', reason: 'organization_not_found' });
    }
    // Deleting is idempotent: bob's deletes of names he does not have change nothing of alice's.
    await bob().settingsV1.profilesDelete({ name: 'alice-llm' });
    await bob().agentProfiles.delete({ name: 'alice-agent' });
    expect(await alice().settingsV1.profilesGet({ name: 'alice-llm' })).toMatchObject({ api_key_set: true });
    expect((await alice().agentProfiles.get({ name: 'alice-agent' })).profile).toMatchObject({ name: 'alice-agent' });
    // A key of bob's describes bob, in his own organisation.
    expect(await (await domain.withNewKey('bob')).account.currentKey()).toMatchObject({ user_id: 'bob', org_id: 'bob' });
  });
});
