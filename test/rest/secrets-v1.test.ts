// /api/v1/secrets as today's clients call it (Bearer; the CloudClient pages the search with
// limit=100 to the end, creates, renames, deletes): the same store as /api/secrets, values
// never in an answer, the V1 failure bodies, the git-provider tokens through the same service,
// and one user's secrets invisible and untouchable to another.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { startFakeGitProvider, type FakeGitProvider } from '../helpers/fake-git-provider.js';

let app: TestApp;
let provider: FakeGitProvider;
let alice: string;
let bob: string;

beforeAll(async () => {
  provider = await startFakeGitProvider();
  provider.validTokens.add('ghp_v1');
  app = await startTestApp('secrets-v1', { GITHUB_API_URL: provider.url });
  alice = await app.keyFor('v1-alice');
  bob = await app.keyFor('v1-bob');
});
afterAll(async () => {
  await app?.stop();
  await provider?.close();
});

const as = (key: string) => ({ headers: { authorization: `Bearer ${key}` } });
const v1 = (key: string, method: string, path: string, body?: unknown) =>
  call(app, method, path, { ...as(key), ...(body === undefined ? {} : { body }) });

/** What the CloudClient's listSecrets does: limit=100, then next_page_id until there is none. */
async function allNames(key: string, query = '', limit = 100): Promise<string[]> {
  const names: string[] = [];
  let pageId: string | null = null;
  do {
    const page: { status: number; body: { items: { name: string }[]; next_page_id: string | null } } = await v1(
      key,
      'GET',
      `/api/v1/secrets/search?limit=${limit}${query}${pageId ? `&page_id=${encodeURIComponent(pageId)}` : ''}`,
    );
    expect(page.status).toBe(200);
    names.push(...page.body.items.map((item) => item.name));
    pageId = page.body.next_page_id;
  } while (pageId);
  return names;
}

describe('/api/v1/secrets', () => {
  it('creates (201), searches names and descriptions only, renames and deletes', async () => {
    expect((await v1(alice, 'GET', '/api/v1/secrets/search')).body).toEqual({ items: [], next_page_id: null });
    const created = await v1(alice, 'POST', '/api/v1/secrets', { name: 'OPENAI_KEY', value: 'sk-v1-value', description: 'LLM' });
    expect(created).toMatchObject({ status: 201, body: { message: 'Secret created successfully' } });
    expect((await v1(alice, 'POST', '/api/v1/secrets', { name: 'ANTHROPIC_KEY', value: 'sk-ant-v1' })).status).toBe(201);

    const page = await v1(alice, 'GET', '/api/v1/secrets/search?limit=100');
    expect(page.body).toEqual({
      items: [
        { name: 'ANTHROPIC_KEY', description: '' },
        { name: 'OPENAI_KEY', description: 'LLM' },
      ],
      next_page_id: null,
    });
    expect(page.text).not.toContain('sk-v1-value');

    const renamed = await v1(alice, 'PUT', '/api/v1/secrets/OPENAI_KEY', { name: 'LLM_KEY', description: 'renamed' });
    expect(renamed).toMatchObject({ status: 200, body: { message: 'Secret updated successfully' } });
    expect(await app.server.deps.services.secrets.resolve('v1-alice')).toContainEqual({
      name: 'LLM_KEY',
      value: 'sk-v1-value',
      description: 'renamed',
    });
    expect(await v1(alice, 'DELETE', '/api/v1/secrets/LLM_KEY')).toMatchObject({
      status: 200,
      body: { message: 'Secret deleted successfully' },
    });
    expect(await allNames(alice)).toEqual(['ANTHROPIC_KEY']);
  });

  it('is the store of /api/secrets, both ways', async () => {
    await call(app, 'POST', '/api/secrets', { key: alice, body: { name: 'FROM_V0', value: 'v0', description: 'old door' } });
    expect(await allNames(alice)).toContain('FROM_V0');
    await v1(alice, 'POST', '/api/v1/secrets', { name: 'FROM_V1', value: 'v1' });
    const v0 = (await call(app, 'GET', '/api/secrets', { key: alice })).body.custom_secrets;
    expect(v0).toContainEqual({ name: 'FROM_V1', description: '' });
  });

  it('pages to the end and filters by a part of the name in any case, taken literally', async () => {
    for (const name of ['PAGE_A', 'PAGE_B', 'PAGE_C', 'PAGE_D', 'PAGE_E', 'PA.GE']) {
      expect((await v1(alice, 'POST', '/api/v1/secrets', { name, value: `value-${name}` })).status).toBe(201);
    }
    const everything = await allNames(alice);
    expect(await allNames(alice, '', 2)).toEqual(everything);
    expect(everything).toEqual([...everything].sort());
    expect(await allNames(alice, '&name__contains=page_', 2)).toEqual(['PAGE_A', 'PAGE_B', 'PAGE_C', 'PAGE_D', 'PAGE_E']);
    expect(await allNames(alice, '&name__contains=.')).toEqual(['PA.GE']); // "." is a dot, not "any character"
    expect(await allNames(alice, '&name__contains=nothing-like-this')).toEqual([]);
  });

  it('answers the V1 failure bodies: 400 on a taken name, 404 on an unknown one, 422 on a bad limit', async () => {
    await v1(alice, 'POST', '/api/v1/secrets', { name: 'TAKEN', value: '1' });
    expect(await v1(alice, 'POST', '/api/v1/secrets', { name: 'TAKEN', value: '2' })).toMatchObject({
      status: 400,
      body: { detail: 'Secret TAKEN already exists' },
    });
    expect(await v1(alice, 'PUT', '/api/v1/secrets/FROM_V0', { name: 'TAKEN' })).toMatchObject({
      status: 400,
      body: { detail: 'Secret TAKEN already exists' },
    });
    expect((await app.server.deps.services.secrets.resolve('v1-alice')).find((s) => s.name === 'TAKEN')?.value).toBe('1');
    expect(await v1(alice, 'PUT', '/api/v1/secrets/NOPE', { name: 'X' })).toMatchObject({
      status: 404,
      body: { detail: 'Secret with ID NOPE not found' },
    });
    expect(await v1(alice, 'DELETE', '/api/v1/secrets/NOPE')).toMatchObject({
      status: 404,
      body: { detail: 'Secret with ID NOPE not found' },
    });
    expect((await v1(alice, 'GET', '/api/v1/secrets/search?limit=101')).status).toBe(422);
    expect((await v1(alice, 'GET', '/api/v1/secrets/search?limit=0')).status).toBe(422);
    expect((await v1(alice, 'POST', '/api/v1/secrets', { name: '', value: 'x' })).status).toBe(422);
  });

  it("never shows or changes one user's secrets to another", async () => {
    expect(await allNames(bob)).toEqual([]);
    expect(await allNames(bob, '&name__contains=PAGE')).toEqual([]);
    expect((await v1(bob, 'PUT', '/api/v1/secrets/TAKEN', { name: 'STOLEN' })).status).toBe(404);
    expect((await v1(bob, 'DELETE', '/api/v1/secrets/TAKEN')).status).toBe(404);
    expect((await v1(bob, 'POST', '/api/v1/secrets', { name: 'TAKEN', value: 'bob-value' })).status).toBe(201);
    expect((await app.server.deps.services.secrets.resolve('v1-alice')).find((s) => s.name === 'TAKEN')?.value).toBe('1');
    expect(await allNames(bob)).toEqual(['TAKEN']);
  });

  it('stores and removes git provider tokens through the same checks as /api/add-git-providers', async () => {
    const stored = await v1(bob, 'POST', '/api/v1/secrets/git-providers', { provider_tokens: { github: { token: 'ghp_v1' } } });
    expect(stored).toMatchObject({ status: 200, body: { message: 'Git providers stored' } });
    expect(await app.server.deps.services.gitProviders.resolve('v1-bob')).toEqual({ github: expect.objectContaining({ token: 'ghp_v1' }) });
    const refused = await v1(bob, 'POST', '/api/v1/secrets/git-providers', { provider_tokens: { github: { token: 'ghp_wrong' } } });
    expect(refused).toMatchObject({ status: 401, body: { detail: 'Invalid token. Please make sure it is a valid github token.' } });
    expect(refused.text).not.toContain('ghp_wrong');
    expect((await v1(bob, 'POST', '/api/v1/secrets/git-providers', { provider_tokens: { nope: { token: 'x' } } })).status).toBe(422);
    expect(await v1(bob, 'DELETE', '/api/v1/secrets/git-providers')).toMatchObject({
      status: 200,
      body: { message: 'Unset Git provider tokens' },
    });
    expect(await app.server.deps.services.gitProviders.resolve('v1-bob')).toEqual({});
    // Alice's tokens were never touched by bob's calls.
    expect(await app.server.deps.services.gitProviders.resolve('v1-alice')).toEqual({});
  });
});
