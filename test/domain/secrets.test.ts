// Custom secrets through the procedures (createCaller, no HTTP): the V0 list and the V1 search
// over one store, values write-only and encrypted at rest, renames keeping the value, the
// refusals (a taken name, an unknown one, bad paging) with nothing changed, paging and the
// name filter, one user's secrets out of another's sight and reach, and the git provider tokens
// the V1 routes store. The wire bytes (201s, the V0 and V1 failure bodies, 422 shapes, names
// in paths) are in test/rest/secrets.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refusal, startTestDomain, type TestDomain } from '../helpers/domain.js';
import { startFakeGitProvider, type FakeGitProvider } from '../helpers/fake-git-provider.js';

let domain: TestDomain;
let provider: FakeGitProvider;

beforeAll(async () => {
  provider = await startFakeGitProvider();
  provider.validTokens.add('ghp_v1');
  domain = await startTestDomain('secrets', { GITHUB_API_URL: provider.url });
});
afterAll(async () => {
  await domain?.stop();
  await provider?.close();
});

let counter = 0;
const freshUser = (name: string) => `${name}-${++counter}`;
const resolve = (user: string) => domain.deps.services.secrets.resolve(user);

/** Every name the V1 search gives, page after page (as the CloudClient's listSecrets reads them). */
async function allNames(user: string, filter: { name__contains?: string } = {}, limit = 100): Promise<string[]> {
  const names: string[] = [];
  let page_id: string | null = null;
  do {
    const page: { items: { name: string }[]; next_page_id: string | null } = await domain
      .as(user)
      .secretsV1.search({ limit, ...filter, ...(page_id ? { page_id } : {}) });
    names.push(...page.items.map((item) => item.name));
    page_id = page.next_page_id;
  } while (page_id);
  return names;
}

describe('custom secrets (V0 procedures)', () => {
  it('creates, lists names and descriptions only (in creation order), renames keeping the value, and deletes', async () => {
    const id = freshUser('v0');
    const user = domain.as(id);
    expect(await user.secrets.list()).toEqual({ custom_secrets: [] });
    expect(await user.secrets.create({ name: 'OPENAI_KEY', value: 'sk-custom-123', description: 'for tests' })).toEqual({
      message: 'Secret created successfully',
    });
    await user.secrets.create({ name: 'NO_DESC', value: 'v2' });
    const listed = await user.secrets.list();
    expect(listed).toEqual({
      custom_secrets: [
        { name: 'OPENAI_KEY', description: 'for tests' },
        { name: 'NO_DESC', description: '' },
      ],
    });
    expect(JSON.stringify(listed)).not.toContain('sk-custom-123');

    await user.secrets.update({ secret_id: 'OPENAI_KEY', name: 'LLM_KEY', description: 'renamed' });
    expect(await resolve(id)).toContainEqual({ name: 'LLM_KEY', value: 'sk-custom-123', description: 'renamed' });
    await user.secrets.delete({ secret_id: 'LLM_KEY' });
    expect((await user.secrets.list()).custom_secrets.map((s) => s.name)).toEqual(['NO_DESC']);
  });

  it('keeps values encrypted in the stored documents', async () => {
    const id = freshUser('raw');
    await domain.as(id).secrets.create({ name: 'RAW_CHECK', value: 'plain-value-xyz' });
    const raw = await domain.deps.db.models.CustomSecret.collection.find({ userId: id }).toArray();
    expect(JSON.stringify(raw)).not.toContain('plain-value-xyz');
    expect(raw.find((d) => d.name === 'RAW_CHECK')?.value).toMatch(/^enc:v1:/);
    expect(await resolve(id)).toEqual([{ name: 'RAW_CHECK', value: 'plain-value-xyz', description: '' }]);
  });

  it('refuses a taken name (CONFLICT secret_exists) on create and on rename, keeping the first value', async () => {
    const id = freshUser('dup');
    const user = domain.as(id);
    await user.secrets.create({ name: 'DUP', value: '1' });
    expect(await refusal(user.secrets.create({ name: 'DUP', value: '2' }))).toMatchObject({
      code: 'CONFLICT',
      reason: 'secret_exists',
      message: 'Secret DUP already exists',
    });
    await user.secrets.create({ name: 'OTHER', value: '3' });
    expect(await refusal(user.secrets.update({ secret_id: 'OTHER', name: 'DUP' }))).toMatchObject({
      code: 'CONFLICT',
      reason: 'secret_exists',
    });
    expect(await resolve(id)).toEqual([
      { name: 'DUP', value: '1', description: '' },
      { name: 'OTHER', value: '3', description: '' },
    ]);
  });

  it('refuses an unknown secret on update and delete (NOT_FOUND secret_not_found)', async () => {
    const user = domain.as(freshUser('unknown'));
    for (const call of [() => user.secrets.update({ secret_id: 'NOPE', name: 'X' }), () => user.secrets.delete({ secret_id: 'NOPE' })]) {
      expect(await refusal(call())).toMatchObject({
        code: 'NOT_FOUND',
        reason: 'secret_not_found',
        message: 'Secret with ID NOPE not found',
      });
    }
  });
});

describe('custom secrets (V1 procedures)', () => {
  it('creates, searches names and descriptions by name, renames and deletes', async () => {
    const id = freshUser('v1');
    const user = domain.as(id);
    expect(await user.secretsV1.search({})).toEqual({ items: [], next_page_id: null });
    await user.secretsV1.create({ name: 'OPENAI_KEY', value: 'sk-v1-value', description: 'LLM' });
    await user.secretsV1.create({ name: 'ANTHROPIC_KEY', value: 'sk-ant-v1' });
    const page = await user.secretsV1.search({ limit: 100 });
    expect(page).toEqual({
      items: [
        { name: 'ANTHROPIC_KEY', description: '' },
        { name: 'OPENAI_KEY', description: 'LLM' },
      ],
      next_page_id: null,
    });
    expect(JSON.stringify(page)).not.toContain('sk-v1-value');
    expect(await user.secretsV1.update({ secret_id: 'OPENAI_KEY', name: 'LLM_KEY', description: 'renamed' })).toEqual({
      message: 'Secret updated successfully',
    });
    expect(await resolve(id)).toContainEqual({ name: 'LLM_KEY', value: 'sk-v1-value', description: 'renamed' });
    expect(await user.secretsV1.delete({ secret_id: 'LLM_KEY' })).toEqual({ message: 'Secret deleted successfully' });
    expect(await allNames(id)).toEqual(['ANTHROPIC_KEY']);
  });

  it('is the store of the V0 procedures, both ways', async () => {
    const id = freshUser('both');
    await domain.as(id).secrets.create({ name: 'FROM_V0', value: 'v0', description: 'old door' });
    expect(await allNames(id)).toEqual(['FROM_V0']);
    await domain.as(id).secretsV1.create({ name: 'FROM_V1', value: 'v1' });
    expect((await domain.as(id).secrets.list()).custom_secrets).toEqual([
      { name: 'FROM_V0', description: 'old door' },
      { name: 'FROM_V1', description: '' },
    ]);
  });

  it('pages to the end and filters by a part of the name in any case, taken literally', async () => {
    const id = freshUser('pages');
    for (const name of ['PAGE_C', 'PAGE_A', 'OTHER', 'PAGE_E', 'PAGE_B', 'PAGE_D', 'PA.GE']) {
      await domain.as(id).secretsV1.create({ name, value: `value-${name}` });
    }
    const everything = await allNames(id);
    expect(everything).toEqual(['OTHER', 'PA.GE', 'PAGE_A', 'PAGE_B', 'PAGE_C', 'PAGE_D', 'PAGE_E']);
    expect(await allNames(id, {}, 2)).toEqual(everything);
    expect(await allNames(id, { name__contains: 'page_' }, 2)).toEqual(['PAGE_A', 'PAGE_B', 'PAGE_C', 'PAGE_D', 'PAGE_E']);
    expect(await allNames(id, { name__contains: '.' })).toEqual(['PA.GE']); // "." is a dot, not "any character"
    expect(await allNames(id, { name__contains: 'nothing-like-this' })).toEqual([]);
  });

  it('refuses a taken name, an unknown one, a limit outside 1..100 and an empty name, changing nothing', async () => {
    const id = freshUser('refusals');
    const user = domain.as(id);
    await user.secretsV1.create({ name: 'TAKEN', value: '1' });
    await user.secretsV1.create({ name: 'KEPT', value: '2' });
    expect(await refusal(user.secretsV1.create({ name: 'TAKEN', value: '3' }))).toMatchObject({
      code: 'CONFLICT',
      reason: 'secret_exists',
    });
    expect(await refusal(user.secretsV1.update({ secret_id: 'KEPT', name: 'TAKEN' }))).toMatchObject({
      code: 'CONFLICT',
      reason: 'secret_exists',
    });
    for (const call of [
      () => user.secretsV1.update({ secret_id: 'NOPE', name: 'X' }),
      () => user.secretsV1.delete({ secret_id: 'NOPE' }),
    ]) {
      expect(await refusal(call())).toMatchObject({ code: 'NOT_FOUND', reason: 'secret_not_found' });
    }
    for (const limit of [101, 0]) {
      expect(await refusal(user.secretsV1.search({ limit }))).toMatchObject({ code: 'BAD_REQUEST', paths: [['limit']] });
    }
    expect(await refusal(user.secretsV1.create({ name: '', value: 'x' }))).toMatchObject({ code: 'BAD_REQUEST', paths: [['name']] });
    expect(await resolve(id)).toEqual([
      { name: 'TAKEN', value: '1', description: '' },
      { name: 'KEPT', value: '2', description: '' },
    ]);
  });

  it("never shows or changes one user's secrets to another, who may use the same names", async () => {
    const alice = freshUser('alice');
    const bob = freshUser('bob');
    await domain.as(alice).secretsV1.create({ name: 'TAKEN', value: '1' });
    await domain.as(alice).secretsV1.create({ name: 'PAGE_A', value: 'a' });
    expect(await allNames(bob)).toEqual([]);
    expect(await allNames(bob, { name__contains: 'PAGE' })).toEqual([]);
    expect(await refusal(domain.as(bob).secretsV1.update({ secret_id: 'TAKEN', name: 'STOLEN' }))).toMatchObject({ code: 'NOT_FOUND' });
    expect(await refusal(domain.as(bob).secretsV1.delete({ secret_id: 'TAKEN' }))).toMatchObject({ code: 'NOT_FOUND' });
    await domain.as(bob).secretsV1.create({ name: 'TAKEN', value: 'bob-value' });
    expect((await resolve(alice)).find((s) => s.name === 'TAKEN')?.value).toBe('1');
    expect(await allNames(bob)).toEqual(['TAKEN']);
  });
});

describe('git provider tokens (V1 procedures)', () => {
  it('stores a token the provider accepts, refuses one it rejects or an unknown provider, and unsets them', async () => {
    const bob = freshUser('tokens');
    const alice = freshUser('untouched');
    const user = domain.as(bob);
    expect(await user.secretsV1.storeGitProviders({ provider_tokens: { github: { token: 'ghp_v1' } } })).toEqual({
      message: 'Git providers stored',
    });
    expect(await domain.deps.services.gitProviders.resolve(bob)).toEqual({ github: expect.objectContaining({ token: 'ghp_v1' }) });
    const refused = await refusal(user.secretsV1.storeGitProviders({ provider_tokens: { github: { token: 'ghp_wrong' } } }));
    expect(refused).toMatchObject({
      code: 'UNAUTHORIZED',
      reason: 'invalid_provider_token',
      message: 'Invalid token. Please make sure it is a valid github token.',
    });
    expect(await domain.deps.services.gitProviders.resolve(bob)).toEqual({ github: expect.objectContaining({ token: 'ghp_v1' }) });
    expect(await refusal(user.secretsV1.storeGitProviders({ provider_tokens: { nope: { token: 'x' } } as never }))).toMatchObject({
      code: 'BAD_REQUEST',
      issues: [{ code: 'unrecognized_keys', path: ['provider_tokens'], keys: ['nope'] }],
    });
    expect(await user.secretsV1.unsetGitProviders()).toEqual({ message: 'Unset Git provider tokens' });
    expect(await domain.deps.services.gitProviders.resolve(bob)).toEqual({});
    // Another user's tokens were never touched by these calls.
    expect(await domain.deps.services.gitProviders.resolve(alice)).toEqual({});
  });
});
