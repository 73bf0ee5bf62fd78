// The secrets routes' wire bytes, V0 (/api/secrets, /api/add-git-providers,
// /api/unset-provider-tokens) and V1 (/api/v1/secrets, as today's clients call them with
// Bearer): the statuses, the failure bodies each surface answers ({"message"} and {"error"} for
// V0, {"detail"} for V1), the 422 validation shapes, names with URL-special characters in the
// path, and a rejected git token kept out of the answer. The rules behind them (what is stored,
// paging, refusals, isolation, the providers' checks) are tested through the procedures in
// test/domain/secrets.test.ts and test/domain/git-provider-tokens.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/processes.js';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { startFakeGitProvider, type FakeGitProvider } from '../helpers/fake-git-provider.js';

let app: TestApp;
let provider: FakeGitProvider;
let key: string;

beforeAll(async () => {
  provider = await startFakeGitProvider();
  provider.validTokens.add('ghp_v1');
  app = await startTestApp('secrets', {
    GITHUB_API_URL: provider.url,
    GITLAB_API_URL: `${provider.url}/api/v4`,
    PROVIDER_TIMEOUT_MS: '2000',
    // A self-hosted host on 127.0.0.1: a loopback address only the operator can allow.
    GIT_PROVIDER_HOSTS: '127.0.0.1',
  });
  key = await app.keyFor('secret-owner');
});
afterAll(async () => {
  await app?.stop();
  await provider?.close();
});

const v1 = (method: string, path: string, body?: unknown) =>
  call(app, method, path, { headers: { authorization: `Bearer ${key}` }, ...(body === undefined ? {} : { body }) });

describe('/api/secrets', () => {
  it('answers 201 to a create, 200 with its message to a rename and a delete, and lists as {"custom_secrets"}', async () => {
    const created = await call(app, 'POST', '/api/secrets', { key, body: { name: 'OPENAI_KEY', value: 'sk-custom-123' } });
    expect(created).toMatchObject({ status: 201, body: { message: 'Secret created successfully' } });
    const listed = await call(app, 'GET', '/api/secrets', { key });
    expect(listed).toMatchObject({ status: 200, body: { custom_secrets: [{ name: 'OPENAI_KEY', description: '' }] } });
    expect(listed.text).not.toContain('sk-custom-123');
    const renamed = await call(app, 'PUT', '/api/secrets/OPENAI_KEY', { key, body: { name: 'LLM_KEY' } });
    expect(renamed).toMatchObject({ status: 200, body: { message: 'Secret updated successfully' } });
    const deleted = await call(app, 'DELETE', '/api/secrets/LLM_KEY', { key });
    expect(deleted).toMatchObject({ status: 200, body: { message: 'Secret deleted successfully' } });
  });

  it('answers 400 {"message"} for a duplicate name and on a rename collision', async () => {
    await call(app, 'POST', '/api/secrets', { key, body: { name: 'DUP', value: '1' } });
    const dup = await call(app, 'POST', '/api/secrets', { key, body: { name: 'DUP', value: '2' } });
    expect(dup).toMatchObject({ status: 400, body: { message: 'Secret DUP already exists' } });
    await call(app, 'POST', '/api/secrets', { key, body: { name: 'OTHER', value: '3' } });
    const collision = await call(app, 'PUT', '/api/secrets/OTHER', { key, body: { name: 'DUP' } });
    expect(collision).toMatchObject({ status: 400, body: { message: 'Secret DUP already exists' } });
  });

  it('answers 404 {"error"} for an unknown secret on update and delete', async () => {
    expect(await call(app, 'PUT', '/api/secrets/NOPE', { key, body: { name: 'X' } })).toMatchObject({
      status: 404,
      body: { error: 'Secret with ID NOPE not found' },
    });
    expect(await call(app, 'DELETE', '/api/secrets/NOPE', { key })).toMatchObject({
      status: 404,
      body: { error: 'Secret with ID NOPE not found' },
    });
  });

  it('validates the body: name and value are required', async () => {
    const res = await call(app, 'POST', '/api/secrets', { key, body: { description: 'x' } });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ loc: ['body', 'name'], type: 'missing' }),
        expect.objectContaining({ loc: ['body', 'value'], type: 'missing' }),
      ]),
    );
  });

  it('handles names with URL-special characters in the path', async () => {
    const name = 'my secret/with.dots';
    expect((await call(app, 'POST', '/api/secrets', { key, body: { name, value: 'v' } })).status).toBe(201);
    expect((await call(app, 'DELETE', `/api/secrets/${encodeURIComponent(name)}`, { key })).status).toBe(200);
  });
});

describe('/api/v1/secrets', () => {
  it('answers 201 to a create and a page as {"items", "next_page_id"}', async () => {
    expect(await v1('POST', '/api/v1/secrets', { name: 'V1_KEY', value: 'sk-v1-value', description: 'LLM' })).toMatchObject({
      status: 201,
      body: { message: 'Secret created successfully' },
    });
    const page = await v1('GET', '/api/v1/secrets/search?limit=100&name__contains=v1_');
    expect(page).toMatchObject({ status: 200, body: { items: [{ name: 'V1_KEY', description: 'LLM' }], next_page_id: null } });
    expect(page.text).not.toContain('sk-v1-value');
  });

  it('answers the V1 failure bodies: 400 on a taken name, 404 on an unknown one, 422 on a bad limit or name', async () => {
    await v1('POST', '/api/v1/secrets', { name: 'TAKEN', value: '1' });
    expect(await v1('POST', '/api/v1/secrets', { name: 'TAKEN', value: '2' })).toMatchObject({
      status: 400,
      body: { detail: 'Secret TAKEN already exists' },
    });
    expect(await v1('PUT', '/api/v1/secrets/NOPE', { name: 'X' })).toMatchObject({
      status: 404,
      body: { detail: 'Secret with ID NOPE not found' },
    });
    expect(await v1('DELETE', '/api/v1/secrets/NOPE')).toMatchObject({ status: 404, body: { detail: 'Secret with ID NOPE not found' } });
    expect((await v1('GET', '/api/v1/secrets/search?limit=101')).status).toBe(422);
    expect((await v1('POST', '/api/v1/secrets', { name: '', value: 'x' })).status).toBe(422);
  });

  it('answers the git provider routes with their messages, a rejected token as 401 {"detail"} without the token', async () => {
    const stored = await v1('POST', '/api/v1/secrets/git-providers', { provider_tokens: { github: { token: 'ghp_v1' } } });
    expect(stored).toMatchObject({ status: 200, body: { message: 'Git providers stored' } });
    const refused = await v1('POST', '/api/v1/secrets/git-providers', { provider_tokens: { github: { token: 'ghp_wrong' } } });
    expect(refused).toMatchObject({ status: 401, body: { detail: 'Invalid token. Please make sure it is a valid github token.' } });
    expect(refused.text).not.toContain('ghp_wrong');
    expect((await v1('POST', '/api/v1/secrets/git-providers', { provider_tokens: { nope: { token: 'x' } } })).status).toBe(422);
    expect(await v1('DELETE', '/api/v1/secrets/git-providers')).toMatchObject({
      status: 200,
      body: { message: 'Unset Git provider tokens' },
    });
  });
});

describe('/api/add-git-providers and /api/unset-provider-tokens', () => {
  it('answer 200 with their messages, a rejected token 401 {"error"}, an unreachable provider 502 {"error"}, never the token', async () => {
    const stored = await call(app, 'POST', '/api/add-git-providers', { key, body: { provider_tokens: { github: { token: 'ghp_v1' } } } });
    expect(stored).toMatchObject({ status: 200, body: { message: 'Git providers stored' } });
    const rejected = await call(app, 'POST', '/api/add-git-providers', {
      key,
      body: { provider_tokens: { gitlab: { token: 'glpat-wrong' } } },
    });
    expect(rejected).toMatchObject({ status: 401, body: { error: 'Invalid token. Please make sure it is a valid gitlab token.' } });
    expect(rejected.text).not.toContain('glpat-wrong');
    const deadUrl = `http://127.0.0.1:${await freePort()}`; // nothing listens here
    const unreachable = await call(app, 'POST', '/api/add-git-providers', {
      key,
      body: { provider_tokens: { github: { token: 'ghp_any', host: deadUrl } } },
    });
    expect(unreachable).toMatchObject({ status: 502, body: { error: 'Could not reach github to validate the token' } });
    expect(unreachable.text).not.toContain('ghp_any');
    expect(await call(app, 'POST', '/api/unset-provider-tokens', { key })).toMatchObject({
      status: 200,
      body: { message: 'Unset Git provider tokens' },
    });
  });

  it('answer an unknown provider with 422 naming it in the validation shape', async () => {
    const unknown = await call(app, 'POST', '/api/add-git-providers', { key, body: { provider_tokens: { gitea: { token: 'x' } } } });
    expect(unknown.status).toBe(422);
    expect(unknown.body.detail).toContainEqual(
      expect.objectContaining({ loc: ['body', 'provider_tokens', 'gitea'], type: 'extra_forbidden' }),
    );
  });
});
