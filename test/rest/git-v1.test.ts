// /api/v1/git/*/search as today's clients call them (Bearer; the CloudClient's getInstallations,
// searchRepositories, getRepositoryBranches with query= always sent, getSuggestedTasks): pages
// of {items, next_page_id} over the provider clients of /api/user/*, against fake GitHub,
// GitLab and Bitbucket APIs on 127.0.0.1, with the providers' failures as {"detail": …}.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { startFakeBitbucket } from '../helpers/fake-providers/bitbucket.js';
import { startFakeGitHub } from '../helpers/fake-providers/github.js';
import { startFakeGitLab } from '../helpers/fake-providers/gitlab.js';
import type { FakeProvider } from '../helpers/fake-providers/server.js';

let app: TestApp;
let github: FakeProvider;
let gitlab: FakeProvider;
let bitbucket: FakeProvider;
let octo: string;
let nobody: string;

beforeAll(async () => {
  [github, gitlab, bitbucket] = await Promise.all([startFakeGitHub(), startFakeGitLab(), startFakeBitbucket()]);
  github.validTokens.add('ghp_v1');
  gitlab.validTokens.add('glpat-v1');
  bitbucket.validTokens.add('octo:app-password');
  app = await startTestApp('git-v1', {
    GITHUB_API_URL: github.url,
    GITLAB_API_URL: `${gitlab.url}/api/v4`,
    BITBUCKET_API_URL: `${bitbucket.url}/2.0`,
    PROVIDER_TIMEOUT_MS: '3000',
  });
  octo = await app.keyFor('git-v1-octo');
  nobody = await app.keyFor('git-v1-nobody');
  const tokens = { github: { token: 'ghp_v1' }, gitlab: { token: 'glpat-v1' }, bitbucket: { token: 'octo:app-password' } };
  expect((await get('/api/v1/secrets/git-providers', octo, 'POST', { provider_tokens: tokens })).status).toBe(200);
});
afterAll(async () => {
  await app?.stop();
  await Promise.all([github?.close(), gitlab?.close(), bitbucket?.close()]);
});

function get(path: string, key = octo, method = 'GET', body?: unknown) {
  return call(app, method, path, { headers: { authorization: `Bearer ${key}` }, ...(body === undefined ? {} : { body }) });
}

/** Follows next_page_id to the end, as the CloudClient's callers do; returns every page. */
async function pages<T>(path: string, key = octo): Promise<T[][]> {
  const all: T[][] = [];
  let pageId: string | null = null;
  do {
    const res = await get(`${path}${pageId ? `&page_id=${encodeURIComponent(pageId)}` : ''}`, key);
    expect(res.status, res.text).toBe(200);
    all.push(res.body.items);
    pageId = res.body.next_page_id;
  } while (pageId && all.length < 20);
  return all;
}

describe('GET /api/v1/git/repositories/search', () => {
  it("pages the user's repositories, most recently pushed first, one provider page per page", async () => {
    const all = await pages<{ id: string; full_name: string }>('/api/v1/git/repositories/search?provider=github&limit=30');
    expect(all.map((p) => p.length)).toEqual([30, 15]);
    expect(all[0]![0]).toMatchObject({ id: '1045', full_name: 'acme/repo-45', git_provider: 'github', main_branch: 'main' });
    expect(new Set(all.flat().map((r) => r.id)).size).toBe(45);
    expect(github.requests.some((r) => r.path === '/user/repos' && r.search.includes('page=2') && r.search.includes('per_page=30'))).toBe(
      true,
    );
  });

  it('searches with query, a page at a time', async () => {
    const all = await pages<{ full_name: string }>('/api/v1/git/repositories/search?provider=github&query=repo-1&limit=4');
    expect(all.map((p) => p.length)).toEqual([4, 4, 2]);
    expect(all.flat().every((r) => r.full_name.includes('repo-1'))).toBe(true);
  });

  it('pages GitLab projects and Bitbucket repositories the same way', async () => {
    const gl = await pages<{ git_provider: string }>('/api/v1/git/repositories/search?provider=gitlab&limit=20');
    expect(gl.map((p) => p.length)).toEqual([20, 20, 5]);
    expect(gl.flat().every((r) => r.git_provider === 'gitlab')).toBe(true);
    // Bitbucket lists a workspace's repositories (the installation); none without one, as /api/user/repositories.
    const bb = await pages<{ full_name: string }>('/api/v1/git/repositories/search?provider=bitbucket&installation_id=acme&limit=10');
    expect(bb.map((p) => p.length)).toEqual([10, 10, 3]);
    expect(bb.flat().every((r) => r.full_name.startsWith('acme/'))).toBe(true);
    expect((await get('/api/v1/git/repositories/search?provider=bitbucket')).body).toEqual({ items: [], next_page_id: null });
  });
});

describe('GET /api/v1/git/installations/search', () => {
  it('pages GitHub App installations and Bitbucket workspaces; GitLab has none (400)', async () => {
    expect((await get('/api/v1/git/installations/search?provider=github')).body).toEqual({ items: ['7001', '7002'], next_page_id: null });
    expect(await pages('/api/v1/git/installations/search?provider=github&limit=1')).toEqual([['7001'], ['7002']]);
    expect((await get('/api/v1/git/installations/search?provider=bitbucket&limit=100')).body).toEqual({
      items: ['acme', 'octo'],
      next_page_id: null,
    });
    expect(await get('/api/v1/git/installations/search?provider=gitlab')).toMatchObject({
      status: 400,
      body: { detail: "Provider gitlab doesn't support installations" },
    });
  });
});

describe('GET /api/v1/git/branches/search', () => {
  it('pages the branches with the empty query the clients always send', async () => {
    const all = await pages<{ name: string }>('/api/v1/git/branches/search?provider=github&repository=acme%2Fwidgets&limit=30&query=');
    expect(all.map((p) => p.length)).toEqual([30, 6]);
    expect(all[0]![0]).toEqual({ name: 'main', commit_sha: 'sha-0', protected: false, last_push_date: null });
    expect(all.flat().map((b) => b.name)).toContain('release/1.0');
  });

  it('pages the branches whose name matches a query', async () => {
    const all = await pages<{ name: string }>(
      '/api/v1/git/branches/search?provider=github&repository=acme%2Fwidgets&limit=5&query=feature-0',
    );
    expect(all.flat().map((b) => b.name)).toEqual(Array.from({ length: 9 }, (_, i) => `feature-0${i + 1}`));
    expect(all.map((p) => p.length)).toEqual([5, 4]);
  });

  it("asks the named provider only, and says so when the repository is not that provider's", async () => {
    const gl = await get('/api/v1/git/branches/search?provider=gitlab&repository=acme%2Fwidgets&query=');
    expect(gl.status).toBe(200);
    expect(gl.body.items.length).toBeGreaterThan(0);
    const unknown = await get('/api/v1/git/branches/search?provider=github&repository=acme%2Fno-such-repo&query=');
    expect(unknown).toMatchObject({ status: 200, body: { items: [], next_page_id: null } });
  });
});

describe('GET /api/v1/git/suggested-tasks/search', () => {
  it('pages the suggested tasks of every provider', async () => {
    const all = await pages<{ task_type: string; git_provider: string }>('/api/v1/git/suggested-tasks/search?limit=3');
    const tasks = all.flat();
    expect(all.slice(0, -1).every((p) => p.length === 3)).toBe(true);
    expect(tasks).toContainEqual({
      git_provider: 'github',
      task_type: 'MERGE_CONFLICTS',
      repo: 'acme/widgets',
      issue_number: 11,
      title: 'Conflicting change',
    });
    expect(new Set(tasks.map((t) => t.git_provider))).toEqual(new Set(['github', 'gitlab']));
    const whole = await get('/api/v1/git/suggested-tasks/search');
    expect(whole.body.items).toEqual(tasks);
  });
});

describe('failures', () => {
  it('validates provider, limit and the query every branch search sends', async () => {
    for (const path of [
      '/api/v1/git/repositories/search',
      '/api/v1/git/repositories/search?provider=gitea',
      '/api/v1/git/repositories/search?provider=github&limit=101',
      '/api/v1/git/installations/search?provider=github&limit=0',
      '/api/v1/git/branches/search?provider=github&repository=acme%2Fwidgets',
      '/api/v1/git/branches/search?provider=github&repository=..%2Fetc&query=',
      '/api/v1/git/suggested-tasks/search?limit=x',
    ]) {
      expect((await get(path)).status, path).toBe(422);
    }
  });

  it('answers the provider failures as {"detail"}: no token, down, rate limited', async () => {
    expect(await get('/api/v1/git/repositories/search?provider=github', nobody)).toMatchObject({
      status: 401,
      body: { detail: expect.stringContaining('Git provider token required') },
    });
    expect(await get('/api/v1/git/suggested-tasks/search', nobody)).toMatchObject({ status: 401, body: { detail: 'No providers set.' } });
    github.failWith = 503;
    try {
      const down = await get('/api/v1/git/repositories/search?provider=github');
      expect(down).toMatchObject({ status: 502, body: { detail: 'github is failing (HTTP 503)' } });
      expect(down.text).not.toContain('ghp_v1');
    } finally {
      github.failWith = null;
    }
    gitlab.rateLimited = true;
    try {
      const limited = await get('/api/v1/git/branches/search?provider=gitlab&repository=acme%2Fwidgets&query=');
      expect(limited).toMatchObject({ status: 429, body: { detail: expect.stringContaining('rate limit') } });
      expect(limited.headers.get('retry-after')).toBe('30');
    } finally {
      gitlab.rateLimited = false;
    }
  });
});
