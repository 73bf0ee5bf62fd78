// Git provider tokens through the procedures (createCaller, no HTTP), against a fake provider on
// 127.0.0.1: a token is stored only once its provider accepted it (asked as each provider wants:
// Bearer, Basic for Bitbucket's user:app_password, a self-hosted host's own API path), encrypted;
// a rejected or unverifiable token stores nothing, also beside accepted ones; a save replaces the
// whole map, keeps a stored token sent without one and revalidates it on a host change; tokens
// and settings live in one document without overwriting each other; unsetting keeps custom
// secrets. The statuses and bodies of the same refusals are in test/rest/secrets.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/processes.js';
import { refusal, startTestDomain, type TestDomain } from '../helpers/domain.js';
import { startFakeGitProvider, type FakeGitProvider } from '../helpers/fake-git-provider.js';

let domain: TestDomain;
let provider: FakeGitProvider;
let deadUrl: string;

beforeAll(async () => {
  provider = await startFakeGitProvider();
  deadUrl = `http://127.0.0.1:${await freePort()}`; // nothing listens here
  domain = await startTestDomain('git-provider-tokens', {
    GITHUB_API_URL: provider.url,
    GITLAB_API_URL: `${provider.url}/api/v4`,
    BITBUCKET_API_URL: `${provider.url}/2.0`,
    PROVIDER_TIMEOUT_MS: '2000',
    // The fake self-hosted hosts run on 127.0.0.1: a loopback address only the operator can allow.
    GIT_PROVIDER_HOSTS: '127.0.0.1',
  });
});
afterAll(async () => {
  await domain?.stop();
  await provider?.close();
});

let counter = 0;
const newUser = () => `tokens-${++counter}`;
/** provider_tokens_set as the settings read it (saved first: a token alone saves no settings). */
const tokensSet = async (userId: string) => {
  await domain.as(userId).settings.save({});
  return (await domain.as(userId).settings.get()).provider_tokens_set;
};
const add = (userId: string, provider_tokens: Record<string, { token?: string; host?: string | null }>) =>
  domain.as(userId).gitProviders.add({ provider_tokens } as never);

describe('storing git provider tokens', () => {
  it('stores a token the provider accepts, encrypted, and reports it in provider_tokens_set', async () => {
    const userId = newUser();
    provider.validTokens.add('ghp_valid_1');
    expect(await add(userId, { github: { token: 'ghp_valid_1', host: null } })).toEqual({ message: 'Git providers stored' });
    expect(provider.requests.at(-1)).toEqual({ path: '/user', authorization: 'Bearer ghp_valid_1' });
    expect(await tokensSet(userId)).toEqual({ github: null });
    const raw = await domain.deps.db.models.Settings.collection.findOne({ userId });
    expect(raw?.providerTokens?.github?.token).toMatch(/^enc:v1:/);
    expect(JSON.stringify(raw)).not.toContain('ghp_valid_1');
    expect(await domain.deps.services.gitProviders.resolve(userId)).toEqual({
      github: { token: 'ghp_valid_1', host: null, user_id: null },
    });
  });

  it('refuses a token the provider rejects (UNAUTHORIZED invalid_provider_token, the reference message), storing nothing', async () => {
    const userId = newUser();
    expect(await refusal(add(userId, { gitlab: { token: 'glpat-wrong' } }))).toMatchObject({
      code: 'UNAUTHORIZED',
      reason: 'invalid_provider_token',
      message: 'Invalid token. Please make sure it is a valid gitlab token.',
    });
    expect(provider.requests.at(-1)?.path).toBe('/api/v4/user');
    expect(await tokensSet(userId)).toEqual({});
  });

  it('tells an unreachable or failing provider (BAD_GATEWAY provider_unreachable) from an invalid token, storing nothing', async () => {
    const userId = newUser();
    const unreachable = await refusal(add(userId, { github: { token: 'ghp_any', host: deadUrl } }));
    expect(unreachable).toMatchObject({
      code: 'BAD_GATEWAY',
      reason: 'provider_unreachable',
      message: 'Could not reach github to validate the token',
    });
    expect(unreachable.message).not.toContain('ghp_any');
    provider.validTokens.add('ghp_valid_1');
    provider.failWith = 503;
    try {
      expect(await refusal(add(userId, { github: { token: 'ghp_valid_1' } }))).toMatchObject({
        code: 'BAD_GATEWAY',
        reason: 'provider_unreachable',
      });
    } finally {
      provider.failWith = null;
    }
    expect(await tokensSet(userId)).toEqual({});
  });

  it('validates a self-hosted host given with an http:// scheme against that host', async () => {
    const userId = newUser();
    provider.validTokens.add('ghe_token');
    await add(userId, { github: { token: 'ghe_token', host: provider.url } });
    expect(provider.requests.at(-1)).toEqual({ path: '/api/v3/user', authorization: 'Bearer ghe_token' });
    expect(await tokensSet(userId)).toEqual({ github: provider.url });
    expect((await domain.deps.services.gitProviders.resolve(userId)).github?.host).toBe(provider.url);
  });

  it('uses Basic auth for Bitbucket user:app_password credentials', async () => {
    const userId = newUser();
    provider.validTokens.add('ada:app-pass');
    await add(userId, { bitbucket: { token: 'ada:app-pass' } });
    expect(provider.requests.at(-1)).toEqual({
      path: '/2.0/user',
      authorization: `Basic ${Buffer.from('ada:app-pass').toString('base64')}`,
    });
    expect(await tokensSet(userId)).toEqual({ bitbucket: null });
  });

  it('replaces the whole map, keeps a stored token sent without one, and revalidates it on a host change', async () => {
    const userId = newUser();
    provider.validTokens.add('ghp_keep').add('glpat_ok');
    await add(userId, { github: { token: 'ghp_keep' }, gitlab: { token: 'glpat_ok' } });
    expect(await tokensSet(userId)).toEqual({ github: null, gitlab: null });

    // github without a token keeps its stored token; gitlab, omitted, is removed.
    await add(userId, { github: { token: '' } });
    expect(await tokensSet(userId)).toEqual({ github: null });
    expect((await domain.deps.services.gitProviders.resolve(userId)).github?.token).toBe('ghp_keep');

    // Moving the stored token to another host validates it there first.
    const before = provider.requests.length;
    await add(userId, { github: { host: provider.url } });
    expect(provider.requests.slice(before)).toEqual([{ path: '/api/v3/user', authorization: 'Bearer ghp_keep' }]);
    expect(await refusal(add(userId, { github: { host: deadUrl } }))).toMatchObject({ code: 'BAD_GATEWAY' });
    expect(await tokensSet(userId)).toEqual({ github: provider.url });
  });

  it('refuses an unknown provider (BAD_REQUEST naming it) and an enterprise_sso token (UNAUTHORIZED)', async () => {
    const userId = newUser();
    expect(await refusal(add(userId, { gitea: { token: 'x' } }))).toMatchObject({
      code: 'BAD_REQUEST',
      issues: [{ code: 'unrecognized_keys', path: ['provider_tokens'], keys: ['gitea'] }],
    });
    expect(await refusal(add(userId, { enterprise_sso: { token: 'x' } }))).toMatchObject({
      code: 'UNAUTHORIZED',
      reason: 'invalid_provider_token',
      message: 'Invalid token. Please make sure it is a valid enterprise_sso token.',
    });
    expect(await tokensSet(userId)).toEqual({});
  });

  it('stores nothing when one of several tokens is rejected', async () => {
    const userId = newUser();
    provider.validTokens.add('ghp_fine');
    expect(await refusal(add(userId, { github: { token: 'ghp_fine' }, gitlab: { token: 'glpat-bad' } }))).toMatchObject({
      code: 'UNAUTHORIZED',
    });
    expect(await tokensSet(userId)).toEqual({});
  });
});

describe('provider tokens in the settings document', () => {
  it('leave settings unsaved (NOT_FOUND) when only tokens are stored, and show in them once settings are saved', async () => {
    const userId = newUser();
    provider.validTokens.add('ghp_before_settings');
    await add(userId, { github: { token: 'ghp_before_settings', host: provider.url } });
    expect(await refusal(domain.as(userId).settings.get())).toMatchObject({ code: 'NOT_FOUND', reason: 'settings_not_found' });
    await domain.as(userId).settings.save({ language: 'fr' });
    expect(await domain.as(userId).settings.get()).toMatchObject({ language: 'fr', provider_tokens_set: { github: provider.url } });
  });

  it('survive a settings save, and a token change keeps the saved settings', async () => {
    const userId = newUser();
    const user = domain.as(userId);
    await user.settings.save({ llm_model: 'openai/gpt-4o' });
    provider.validTokens.add('ghp_with_settings');
    await add(userId, { github: { token: 'ghp_with_settings' } });
    await user.settings.save({ language: 'de' });
    expect(await user.settings.get()).toMatchObject({ llm_model: 'openai/gpt-4o', language: 'de', provider_tokens_set: { github: null } });
    await user.gitProviders.unset();
    expect(await user.settings.get()).toMatchObject({ llm_model: 'openai/gpt-4o', provider_tokens_set: {} });
  });

  it('are all removed by unset, which keeps custom secrets', async () => {
    const userId = newUser();
    provider.validTokens.add('ghp_gone');
    await add(userId, { github: { token: 'ghp_gone' } });
    await domain.as(userId).secrets.create({ name: 'KEEP', value: 'v' });
    expect(await domain.as(userId).gitProviders.unset()).toEqual({ message: 'Unset Git provider tokens' });
    expect(await tokensSet(userId)).toEqual({});
    expect(await domain.deps.services.gitProviders.resolve(userId)).toEqual({});
    expect(await domain.as(userId).secrets.list()).toEqual({ custom_secrets: [{ name: 'KEEP', description: '' }] });
  });
});
