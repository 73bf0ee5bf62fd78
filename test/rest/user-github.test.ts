// /api/user/* against a fake GitHub (REST and GraphQL) on 127.0.0.1, through the production
// HTTP path: the user, paging with the link header, sort, search, branches, suggested tasks,
// microagents, and a GitHub Enterprise host.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { startFakeGitHub } from '../helpers/fake-providers/github.js';
import type { FakeProvider } from '../helpers/fake-providers/server.js';

// The fake self-hosted hosts run on 127.0.0.1: a loopback address only the operator can allow.
const LOOPBACK = '127.0.0.1';

let app: TestApp;
let github: FakeProvider;
let enterprise: FakeProvider;
let key: string;

beforeAll(async () => {
  [github, enterprise] = await Promise.all([startFakeGitHub(), startFakeGitHub()]);
  github.validTokens.add('ghp_octo');
  enterprise.validTokens.add('ghe_octo');
  app = await startTestApp('user-github', { GITHUB_API_URL: github.url, PROVIDER_TIMEOUT_MS: '3000', GIT_PROVIDER_HOSTS: LOOPBACK });
  key = await app.keyFor('octo');
  const stored = await call(app, 'POST', '/api/add-git-providers', { key, body: { provider_tokens: { github: { token: 'ghp_octo' } } } });
  expect(stored.status).toBe(200);
});
afterAll(async () => {
  await app?.stop();
  await Promise.all([github?.close(), enterprise?.close()]);
});

const get = (path: string, k = key) => call(app, 'GET', path, { key: k });

describe('GitHub', () => {
  it('GET /api/user/info maps the user', async () => {
    const res = await get('/api/user/info');
    expect(res).toMatchObject({ status: 200 });
    expect(res.body).toEqual({
      id: '42',
      login: 'octo',
      avatar_url: 'https://avatars.example.test/42',
      company: 'Acme',
      name: 'Octo Cat',
      email: 'octo@example.test',
    });
    expect(github.requests.at(-1)).toMatchObject({ path: '/user', authorization: 'Bearer ghp_octo' });
  });

  it('pages repositories the way the UI does, with the link header on every item', async () => {
    const first = await get('/api/user/repositories?selected_provider=github&sort=pushed&page=1&per_page=30');
    expect(first.status).toBe(200);
    expect(first.body).toHaveLength(30);
    expect(github.requests.at(-1)!.search).toBe('?page=1&per_page=30&sort=pushed');
    expect(first.body[0]).toEqual({
      id: '1045',
      full_name: 'acme/repo-45',
      git_provider: 'github',
      is_public: false, // every third repository is private
      stargazers_count: (45 * 7) % 50,
      link_header: expect.stringContaining('rel="next"'),
      pushed_at: '2025-02-15T00:00:00Z',
      owner_type: 'organization',
      main_branch: 'main',
    });
    expect(new Set(first.body.map((r: { link_header: string }) => r.link_header)).size).toBe(1);
    // The UI's own rule: page=N inside the rel="next" link.
    const next = /<[^>]*[?&]page=(\d+)[^>]*>;\s*rel="next"/.exec(first.body[0].link_header)?.[1];
    expect(next).toBe('2');
    const second = await get(`/api/user/repositories?selected_provider=github&sort=pushed&page=${next}&per_page=30`);
    expect(second.body).toHaveLength(15);
    expect(second.body[0].link_header).not.toContain('rel="next"');
    const ids = [...first.body, ...second.body].map((r: { id: string }) => r.id);
    expect(new Set(ids).size).toBe(45);
  });

  it('passes the sort through', async () => {
    const byName = await get('/api/user/repositories?selected_provider=github&sort=full_name&page=1&per_page=3');
    expect(byName.body.map((r: { full_name: string }) => r.full_name)).toEqual(['acme/repo-03', 'acme/repo-05', 'acme/repo-07']);
    expect(github.requests.at(-1)!.search).toContain('sort=full_name');
  });

  it('lists every repository without a provider (no link header)', async () => {
    const all = await get('/api/user/repositories');
    expect(all.body).toHaveLength(45);
    expect(all.body.every((r: { link_header: unknown }) => r.link_header === null)).toBe(true);
  });

  it("lists installations as strings, and an installation's repositories", async () => {
    expect((await get('/api/user/installations?provider=github')).body).toEqual(['7001', '7002']);
    const repos = await get('/api/user/repositories?selected_provider=github&page=1&per_page=30&installation_id=7001');
    expect(repos.body).toHaveLength(1);
    expect(github.requests.at(-1)!.path).toBe('/user/installations/7001/repositories');
  });

  it('searches owner/repo in one request, free text across the user and their organisations', async () => {
    const exact = await get('/api/user/search/repositories?query=acme%2Fwidgets&per_page=100&selected_provider=github');
    expect(exact.body.map((r: { full_name: string }) => r.full_name)).toEqual(['acme/widgets']);
    expect(new URLSearchParams(github.requests.at(-1)!.search).get('q')).toBe('org:acme in:name widgets');

    const before = github.requests.length;
    const free = await get('/api/user/search/repositories?query=repo-1&per_page=100&selected_provider=github');
    expect(free.status).toBe(200);
    const names = free.body.map((r: { full_name: string }) => r.full_name);
    expect(names).toEqual(expect.arrayContaining(['octo/repo-10', 'acme/repo-11']));
    expect(new Set(free.body.map((r: { id: string }) => r.id)).size).toBe(names.length); // no duplicates
    const queries = github.requests
      .slice(before)
      .map((r) => new URLSearchParams(r.search).get('q'))
      .filter(Boolean);
    expect(queries).toEqual(expect.arrayContaining(['in:name repo-1 user:octo', 'repo-1 org:acme', 'repo-1 org:widgets-inc']));
  });

  it('turns a pasted public URL into a public-repository search', async () => {
    const res = await get(
      `/api/user/search/repositories?query=${encodeURIComponent('https://github.com/acme/widgets')}&per_page=3&selected_provider=github`,
    );
    expect(res.body.map((r: { full_name: string }) => r.full_name)).toEqual(['acme/widgets']);
    expect(new URLSearchParams(github.requests.at(-1)!.search).get('q')).toBe('in:name acme/widgets is:public');
  });

  it('pages branches and searches them (GraphQL)', async () => {
    const first = await get('/api/user/repository/branches?repository=acme%2Fwidgets&page=1&per_page=30');
    expect(first.body).toMatchObject({ has_next_page: true, current_page: 1, per_page: 30, total_count: null });
    expect(first.body.branches).toHaveLength(30);
    expect(first.body.branches[0]).toEqual({ name: 'main', commit_sha: 'sha-0', protected: false, last_push_date: null });
    const second = await get('/api/user/repository/branches?repository=acme%2Fwidgets&page=2&per_page=30');
    expect(second.body).toMatchObject({ has_next_page: false, current_page: 2 });
    expect(second.body.branches.map((b: { name: string }) => b.name)).toContain('release/1.0');

    const found = await get('/api/user/search/branches?repository=acme%2Fwidgets&query=release&per_page=30&selected_provider=github');
    expect(found.body).toEqual([
      { name: 'release/1.0', commit_sha: 'sha-release', protected: false, last_push_date: '2025-02-20T00:00:00Z' },
    ]);
    expect(github.requests.at(-1)).toMatchObject({ method: 'POST', path: '/graphql' });
  });

  it('answers an unknown repository with no branches (nothing to act on), as the reference', async () => {
    expect((await get('/api/user/repository/branches?repository=acme%2Fnope')).body).toEqual({
      branches: [],
      has_next_page: false,
      current_page: 1,
      per_page: 30,
      total_count: 0,
    });
    expect((await get('/api/user/search/branches?repository=acme%2Fnope&query=x')).body).toEqual([]);
  });

  it('classifies suggested tasks: PR tasks first, then assigned issues; a PR with nothing to do is dropped', async () => {
    expect((await get('/api/user/suggested-tasks')).body).toEqual([
      { git_provider: 'github', task_type: 'MERGE_CONFLICTS', repo: 'acme/widgets', issue_number: 11, title: 'Conflicting change' },
      { git_provider: 'github', task_type: 'FAILING_CHECKS', repo: 'acme/widgets', issue_number: 12, title: 'Red build' },
      { git_provider: 'github', task_type: 'UNRESOLVED_COMMENTS', repo: 'octo/repo-02', issue_number: 13, title: 'Needs changes' },
      { git_provider: 'github', task_type: 'OPEN_ISSUE', repo: 'acme/widgets', issue_number: 21, title: 'Crash on start' },
    ]);
  });

  it("lists a repository's microagents (with .cursorrules; not README.md or non-markdown) at its raw path", async () => {
    const res = await get('/api/user/repository/acme/widgets/microagents');
    expect(res.status).toBe(200);
    expect(res.body.map(({ name, path }: { name: string; path: string }) => ({ name, path }))).toEqual([
      { name: 'cursorrules', path: '.cursorrules' },
      { name: 'testing', path: '.openhands/microagents/testing.md' },
    ]);
    expect(Date.parse(res.body[0].created_at)).not.toBeNaN();
    expect((await get('/api/user/repository/github.com/acme/widgets/microagents')).body).toHaveLength(2); // domain/owner/repo
    expect((await get('/api/user/repository/octo/repo-02/microagents')).body).toEqual([]);
  });

  it('reads a microagent: front matter triggers, body without it, the provider', async () => {
    const res = await get('/api/user/repository/acme/widgets/microagents/content?file_path=.openhands%2Fmicroagents%2Ftesting.md');
    expect(res.body).toEqual({
      content: 'Run the tests with npm test.\n',
      path: '.openhands/microagents/testing.md',
      triggers: ['test', 'pytest'],
      git_provider: 'github',
    });
    const missing = await get('/api/user/repository/acme/widgets/microagents/content?file_path=.openhands%2Fmicroagents%2Fnone.md');
    expect(missing).toMatchObject({
      status: 404,
      body: { error: 'Microagent file .openhands/microagents/none.md not found in acme/widgets' },
    });
  });

  it('answers bad input with 422 in the validation shape', async () => {
    const cases: [string, (string | number)[]][] = [
      ['/api/user/repositories?selected_provider=gitbox', ['query', 'selected_provider']],
      ['/api/user/repositories?selected_provider=github&per_page=500', ['query', 'per_page']],
      ['/api/user/repositories?selected_provider=github&page=zero', ['query', 'page']],
      ['/api/user/repositories?selected_provider=github&sort=random', ['query', 'sort']],
      ['/api/user/installations', ['query', 'provider']],
      ['/api/user/search/repositories?per_page=5', ['query', 'query']],
      ['/api/user/repository/branches?repository=..%2Fetc', ['query', 'repository']],
      ['/api/user/search/branches?repository=acme%2Fwidgets', ['query', 'query']],
      ['/api/user/repository/acme/widgets/microagents/content', ['query', 'file_path']],
      ['/api/user/repository/acme/widgets/microagents/content?file_path=..%2F..%2Fsecret', ['query', 'file_path']],
      ['/api/user/repository/widgets/microagents', ['path', 'repository_name']],
    ];
    for (const [path, loc] of cases) {
      const res = await get(path);
      expect(res.status, path).toBe(422);
      expect(res.body.detail[0].loc, path).toEqual(loc);
    }
  });

  it('browses a GitHub Enterprise host at <host>/api/v3 with its own token', async () => {
    const entKey = await app.keyFor('enterprise-user');
    const stored = await call(app, 'POST', '/api/add-git-providers', {
      key: entKey,
      body: { provider_tokens: { github: { token: 'ghe_octo', host: enterprise.url } } },
    });
    expect(stored.status).toBe(200);
    const repos = await get('/api/user/repositories?selected_provider=github&page=1&per_page=5', entKey);
    expect(repos.body).toHaveLength(5);
    expect(enterprise.requests.at(-1)).toMatchObject({ path: '/api/v3/user/repos', authorization: 'Bearer ghe_octo' });
    const branches = await get('/api/user/search/branches?repository=acme%2Fwidgets&query=feature-0&selected_provider=github', entKey);
    expect(branches.body).toHaveLength(9);
    expect(enterprise.requests.at(-1)!.path).toBe('/api/graphql');
    expect(github.requests.some((r) => r.authorization === 'Bearer ghe_octo')).toBe(false);
  });
});
