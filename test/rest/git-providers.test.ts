import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/processes.js';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { startFakeGitProvider, type FakeGitProvider } from '../helpers/fake-git-provider.js';

// The fake self-hosted hosts run on 127.0.0.1: a loopback address only the operator can allow.
const LOOPBACK = '127.0.0.1';

let app: TestApp;
let provider: FakeGitProvider;
let deadUrl: string;

beforeAll(async () => {
  provider = await startFakeGitProvider();
  deadUrl = `http://127.0.0.1:${await freePort()}`; // nothing listens here
  app = await startTestApp('gitproviders', {
    GITHUB_API_URL: provider.url,
    GITLAB_API_URL: `${provider.url}/api/v4`,
    BITBUCKET_API_URL: `${provider.url}/2.0`,
    PROVIDER_TIMEOUT_MS: '2000',
    GIT_PROVIDER_HOSTS: LOOPBACK,
  });
});
afterAll(async () => {
  await app.stop();
  await provider.close();
});

const newUser = async () => {
  const userId = `u-${Math.random().toString(36).slice(2, 10)}`;
  return { userId, key: await app.keyFor(userId) };
};
const tokensSet = async (key: string) => {
  await call(app, 'POST', '/api/settings', { key, body: {} });
  return (await call(app, 'GET', '/api/settings', { key })).body.provider_tokens_set;
};

describe('POST /api/add-git-providers', () => {
  it('stores a token the provider accepts, encrypted, and reports it in provider_tokens_set', async () => {
    const { userId, key } = await newUser();
    provider.validTokens.add('ghp_valid_1');
    const res = await call(app, 'POST', '/api/add-git-providers', {
      key,
      body: { provider_tokens: { github: { token: 'ghp_valid_1', host: null } } },
    });
    expect(res).toMatchObject({ status: 200, body: { message: 'Git providers stored' } });
    expect(provider.requests.at(-1)).toEqual({ path: '/user', authorization: 'Bearer ghp_valid_1' });
    expect(await tokensSet(key)).toEqual({ github: null });

    const raw = await app.rawCollection('settings').findOne({ userId });
    expect(raw?.providerTokens?.github?.token).toMatch(/^enc:v1:/);
    expect(JSON.stringify(raw)).not.toContain('ghp_valid_1');
    expect(await app.server.deps.services.gitProviders.resolve(userId)).toEqual({
      github: { token: 'ghp_valid_1', host: null, user_id: null },
    });
  });

  it('answers 401 with the reference message for a token the provider rejects, storing nothing', async () => {
    const { key } = await newUser();
    const res = await call(app, 'POST', '/api/add-git-providers', { key, body: { provider_tokens: { gitlab: { token: 'glpat-wrong' } } } });
    expect(res).toMatchObject({ status: 401, body: { error: 'Invalid token. Please make sure it is a valid gitlab token.' } });
    expect(provider.requests.at(-1)?.path).toBe('/api/v4/user');
    expect(await tokensSet(key)).toEqual({});
  });

  it('answers 502 when the provider cannot be reached, distinct from an invalid token', async () => {
    const { key } = await newUser();
    const res = await call(app, 'POST', '/api/add-git-providers', {
      key,
      body: { provider_tokens: { github: { token: 'ghp_any', host: deadUrl } } },
    });
    expect(res).toMatchObject({ status: 502, body: { error: 'Could not reach github to validate the token' } });
    expect(res.text).not.toContain('ghp_any');
  });

  it('answers 502 when the provider answers with a server error', async () => {
    const { key } = await newUser();
    provider.failWith = 503;
    try {
      const res = await call(app, 'POST', '/api/add-git-providers', {
        key,
        body: { provider_tokens: { github: { token: 'ghp_valid_1' } } },
      });
      expect(res.status).toBe(502);
    } finally {
      provider.failWith = null;
    }
  });

  it('validates a self-hosted host given with an http:// scheme against that host', async () => {
    const { userId, key } = await newUser();
    provider.validTokens.add('ghe_token');
    const res = await call(app, 'POST', '/api/add-git-providers', {
      key,
      body: { provider_tokens: { github: { token: 'ghe_token', host: provider.url } } },
    });
    expect(res.status).toBe(200);
    expect(provider.requests.at(-1)).toEqual({ path: '/api/v3/user', authorization: 'Bearer ghe_token' });
    expect(await tokensSet(key)).toEqual({ github: provider.url });
    expect((await app.server.deps.services.gitProviders.resolve(userId)).github?.host).toBe(provider.url);
  });

  it('uses Basic auth for Bitbucket user:app_password credentials', async () => {
    const { key } = await newUser();
    provider.validTokens.add('ada:app-pass');
    const res = await call(app, 'POST', '/api/add-git-providers', {
      key,
      body: { provider_tokens: { bitbucket: { token: 'ada:app-pass' } } },
    });
    expect(res.status).toBe(200);
    expect(provider.requests.at(-1)).toEqual({
      path: '/2.0/user',
      authorization: `Basic ${Buffer.from('ada:app-pass').toString('base64')}`,
    });
  });

  it('replaces the whole map, keeps a stored token sent without one, and revalidates it on a host change', async () => {
    const { userId, key } = await newUser();
    provider.validTokens.add('ghp_keep').add('glpat_ok');
    await call(app, 'POST', '/api/add-git-providers', {
      key,
      body: { provider_tokens: { github: { token: 'ghp_keep' }, gitlab: { token: 'glpat_ok' } } },
    });
    expect(await tokensSet(key)).toEqual({ github: null, gitlab: null });

    // github without a token keeps its stored token; gitlab, omitted, is removed.
    await call(app, 'POST', '/api/add-git-providers', { key, body: { provider_tokens: { github: { token: '' } } } });
    expect(await tokensSet(key)).toEqual({ github: null });
    expect((await app.server.deps.services.gitProviders.resolve(userId)).github?.token).toBe('ghp_keep');

    // Moving the stored token to another host validates it there first.
    const before = provider.requests.length;
    const moved = await call(app, 'POST', '/api/add-git-providers', { key, body: { provider_tokens: { github: { host: provider.url } } } });
    expect(moved.status).toBe(200);
    expect(provider.requests.slice(before)).toEqual([{ path: '/api/v3/user', authorization: 'Bearer ghp_keep' }]);
    const refused = await call(app, 'POST', '/api/add-git-providers', { key, body: { provider_tokens: { github: { host: deadUrl } } } });
    expect(refused.status).toBe(502);
    expect(await tokensSet(key)).toEqual({ github: provider.url });
  });

  it('rejects an unknown provider with 422 and an enterprise_sso token with 401', async () => {
    const { key } = await newUser();
    const unknown = await call(app, 'POST', '/api/add-git-providers', { key, body: { provider_tokens: { gitea: { token: 'x' } } } });
    expect(unknown.status).toBe(422);
    expect(unknown.body.detail).toContainEqual(
      expect.objectContaining({ loc: ['body', 'provider_tokens', 'gitea'], type: 'extra_forbidden' }),
    );
    const sso = await call(app, 'POST', '/api/add-git-providers', { key, body: { provider_tokens: { enterprise_sso: { token: 'x' } } } });
    expect(sso).toMatchObject({ status: 401, body: { error: 'Invalid token. Please make sure it is a valid enterprise_sso token.' } });
  });

  it('stores nothing when one of several tokens is rejected', async () => {
    const { key } = await newUser();
    provider.validTokens.add('ghp_fine');
    const res = await call(app, 'POST', '/api/add-git-providers', {
      key,
      body: { provider_tokens: { github: { token: 'ghp_fine' }, gitlab: { token: 'glpat-bad' } } },
    });
    expect(res.status).toBe(401);
    expect(await tokensSet(key)).toEqual({});
  });
});

describe('provider tokens in the settings document', () => {
  it('leaves settings unsaved (404) when only tokens are stored, and reports them once settings are saved', async () => {
    const { key } = await newUser();
    provider.validTokens.add('ghp_before_settings');
    const added = await call(app, 'POST', '/api/add-git-providers', {
      key,
      body: { provider_tokens: { github: { token: 'ghp_before_settings', host: provider.url } } },
    });
    expect(added.status).toBe(200);
    expect(await call(app, 'GET', '/api/settings', { key })).toMatchObject({ status: 404, body: { error: 'Settings not found' } });
    await call(app, 'POST', '/api/settings', { key, body: { language: 'fr' } });
    const read = await call(app, 'GET', '/api/settings', { key });
    expect(read.body).toMatchObject({ language: 'fr', provider_tokens_set: { github: provider.url } });
  });

  it('a settings save keeps the stored tokens, and a token change keeps the saved settings', async () => {
    const { key } = await newUser();
    await call(app, 'POST', '/api/settings', { key, body: { llm_model: 'openai/gpt-4o' } });
    provider.validTokens.add('ghp_with_settings');
    await call(app, 'POST', '/api/add-git-providers', { key, body: { provider_tokens: { github: { token: 'ghp_with_settings' } } } });
    await call(app, 'POST', '/api/settings', { key, body: { language: 'de' } });
    expect((await call(app, 'GET', '/api/settings', { key })).body).toMatchObject({
      llm_model: 'openai/gpt-4o',
      language: 'de',
      provider_tokens_set: { github: null },
    });
    await call(app, 'POST', '/api/unset-provider-tokens', { key });
    expect((await call(app, 'GET', '/api/settings', { key })).body).toMatchObject({ llm_model: 'openai/gpt-4o', provider_tokens_set: {} });
  });
});

describe('POST /api/unset-provider-tokens', () => {
  it('removes every provider token and keeps custom secrets', async () => {
    const { key } = await newUser();
    provider.validTokens.add('ghp_gone');
    await call(app, 'POST', '/api/add-git-providers', { key, body: { provider_tokens: { github: { token: 'ghp_gone' } } } });
    await call(app, 'POST', '/api/secrets', { key, body: { name: 'KEEP', value: 'v' } });
    const res = await call(app, 'POST', '/api/unset-provider-tokens', { key });
    expect(res).toMatchObject({ status: 200, body: { message: 'Unset Git provider tokens' } });
    expect(await tokensSet(key)).toEqual({});
    expect((await call(app, 'GET', '/api/secrets', { key })).body).toEqual({ custom_secrets: [{ name: 'KEEP', description: '' }] });
  });
});
