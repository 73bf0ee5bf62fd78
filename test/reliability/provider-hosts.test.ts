// Users name the self-hosted git host the service sends their token to. GIT_PROVIDER_HOSTS
// limits those hosts (no request leaves for another one), and a token that cannot be sent in
// a header is refused as invalid without any request.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { startFakeGitProvider, type FakeGitProvider } from '../helpers/fake-git-provider.js';

let app: TestApp;
let provider: FakeGitProvider;
let key: string;

beforeAll(async () => {
  provider = await startFakeGitProvider();
  provider.validTokens.add('ghp_allowed_host');
  app = await startTestApp('provider-hosts', { GITHUB_API_URL: provider.url, GIT_PROVIDER_HOSTS: new URL(provider.url).host });
  key = await app.keyFor('hosts-user');
});
afterAll(async () => {
  await app.stop();
  await provider.close();
});

const add = (token: string, host: string | null) =>
  call(app, 'POST', '/api/add-git-providers', { key, body: { provider_tokens: { github: { token, host } } } });

describe('git provider hosts', () => {
  it('refuses a host that is not allowed, before sending anything', async () => {
    const before = provider.requests.length;
    for (const host of ['169.254.169.254', 'http://localhost:9', 'git.example.com']) {
      const res = await add('ghp_allowed_host', host);
      expect(res.status, host).toBe(422);
      expect(res.body.detail[0].msg).toContain('is not allowed');
    }
    expect(provider.requests.length).toBe(before);
  });

  it('checks the token on an allowed self-hosted host', async () => {
    const res = await add('ghp_allowed_host', provider.url);
    expect(res.status).toBe(200);
    expect(provider.requests.at(-1)?.path).toBe('/api/v3/user');
  });

  it('answers a token that is no header value as invalid, without a request', async () => {
    const before = provider.requests.length;
    for (const token of ['ghp_ä', 'two words', 'line\nbreak']) {
      const res = await add(token, null);
      expect(res.status, JSON.stringify(token)).toBe(401);
      expect(res.body).toEqual({ error: 'Invalid token. Please make sure it is a valid github token.' });
    }
    expect(provider.requests.length).toBe(before);
  });
});
