// /api/user/* against fake GitLab and Bitbucket APIs on 127.0.0.1: field mappings, GitLab's
// Link/X-Total paging and Bitbucket's body paging (the synthesized link header), workspaces,
// search, branches, suggested tasks, microagents (Bitbucket's raw files too), a self-hosted
// GitLab host, and the order of providers when a user holds several tokens.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { startFakeBitbucket } from '../helpers/fake-providers/bitbucket.js';
import { startFakeGitLab } from '../helpers/fake-providers/gitlab.js';
import type { FakeProvider } from '../helpers/fake-providers/server.js';

// The fake self-hosted hosts run on 127.0.0.1: a loopback address only the operator can allow.
const LOOPBACK = '127.0.0.1';

let app: TestApp;
let gitlab: FakeProvider;
let selfHosted: FakeProvider;
let bitbucket: FakeProvider;
let glKey: string;
let bbKey: string;

beforeAll(async () => {
  [gitlab, selfHosted, bitbucket] = await Promise.all([startFakeGitLab(), startFakeGitLab(), startFakeBitbucket()]);
  gitlab.validTokens.add('glpat-octo');
  selfHosted.validTokens.add('glpat-self');
  bitbucket.validTokens.add('octo:app-password');
  app = await startTestApp('user-gl-bb', {
    GITLAB_API_URL: `${gitlab.url}/api/v4`,
    BITBUCKET_API_URL: `${bitbucket.url}/2.0`,
    GIT_PROVIDER_HOSTS: LOOPBACK,
  });
  glKey = await app.keyFor('gl-user');
  bbKey = await app.keyFor('bb-user');
  for (const [k, tokens] of [
    [glKey, { gitlab: { token: 'glpat-octo' } }],
    [bbKey, { bitbucket: { token: 'octo:app-password' } }],
  ] as const) {
    expect((await call(app, 'POST', '/api/add-git-providers', { key: k, body: { provider_tokens: tokens } })).status).toBe(200);
  }
});
afterAll(async () => {
  await app?.stop();
  await Promise.all([gitlab?.close(), selfHosted?.close(), bitbucket?.close()]);
});

const get = (path: string, key: string) => call(app, 'GET', path, { key });

describe('GitLab', () => {
  it('maps the user and projects', async () => {
    expect((await get('/api/user/info', glKey)).body).toEqual({
      id: '42',
      login: 'octo',
      avatar_url: 'https://avatars.example.test/42',
      company: 'Acme',
      name: 'Octo Cat',
      email: 'octo@example.test',
    });
    const page = await get('/api/user/repositories?selected_provider=gitlab&sort=pushed&page=1&per_page=30', glKey);
    expect(page.body[0]).toMatchObject({
      id: '1045',
      full_name: 'acme/repo-45',
      git_provider: 'gitlab',
      owner_type: 'organization',
      pushed_at: '2025-02-15T00:00:00Z',
    });
    expect(page.body[1]).toMatchObject({ full_name: 'octo/repo-44', is_public: true, owner_type: 'user' });
    expect(gitlab.requests.at(-1)!.search).toBe('?page=1&per_page=30&order_by=last_activity_at&sort=desc&membership=true');
    expect(/[?&]page=(\d+)[^>]*>;\s*rel="next"/.exec(page.body[0].link_header)?.[1]).toBe('2');
  });

  it('reports the last branch page as last although GitLab still sends first/last links', async () => {
    const first = await get('/api/user/repository/branches?repository=acme%2Fwidgets&page=1&per_page=30', glKey);
    expect(first.body).toMatchObject({ has_next_page: true, total_count: 36, current_page: 1 });
    expect(first.body.branches[0]).toEqual({ name: 'main', commit_sha: 'sha-0', protected: false, last_push_date: '2025-01-01T00:00:00Z' });
    const last = await get('/api/user/repository/branches?repository=acme%2Fwidgets&page=2&per_page=30', glKey);
    expect(last.body).toMatchObject({ has_next_page: false, total_count: 36 });
    expect(last.body.branches).toHaveLength(6);
    const found = await get('/api/user/search/branches?repository=acme%2Fwidgets&query=release&selected_provider=gitlab', glKey);
    expect(found.body.map((b: { name: string }) => b.name)).toEqual(['release/1.0']);
    expect(found.body[0].protected).toBe(true);
  });

  it('searches projects by text and by pasted URL', async () => {
    const text = await get('/api/user/search/repositories?query=widgets&per_page=5&selected_provider=gitlab', glKey);
    expect(text.body.map((r: { full_name: string }) => r.full_name)).toEqual(['acme/widgets']);
    expect(gitlab.requests.at(-1)!.search).toContain('search=widgets&search_namespaces=true');
    const url = await get(
      `/api/user/search/repositories?query=${encodeURIComponent('https://gitlab.com/acme/widgets')}&selected_provider=gitlab`,
      glKey,
    );
    expect(url.body).toMatchObject([{ full_name: 'acme/widgets', link_header: null }]);
    expect(gitlab.requests.at(-1)!.path).toBe('/api/v4/projects/acme%2Fwidgets');
  });

  it('has no installations (400, in words)', async () => {
    expect(await get('/api/user/installations?provider=gitlab', glKey)).toMatchObject({
      status: 400,
      body: "Provider gitlab doesn't support installations",
    });
  });

  it('classifies merge requests (GraphQL) and lists assigned issues', async () => {
    expect((await get('/api/user/suggested-tasks', glKey)).body).toEqual([
      { git_provider: 'gitlab', task_type: 'MERGE_CONFLICTS', repo: 'acme/widgets', issue_number: 11, title: 'Conflicting change' },
      { git_provider: 'gitlab', task_type: 'FAILING_CHECKS', repo: 'acme/widgets', issue_number: 12, title: 'Red build' },
      { git_provider: 'gitlab', task_type: 'UNRESOLVED_COMMENTS', repo: 'octo/repo-02', issue_number: 13, title: 'Needs changes' },
      { git_provider: 'gitlab', task_type: 'OPEN_ISSUE', repo: 'acme/widgets', issue_number: 21, title: 'Crash on start' },
    ]);
    expect(gitlab.requests.some((r) => r.method === 'POST' && r.path === '/api/graphql')).toBe(true);
  });

  it('lists and reads microagents from the repository tree and raw files', async () => {
    const list = await get('/api/user/repository/acme/widgets/microagents', glKey);
    expect(list.body.map((m: { name: string }) => m.name)).toEqual(['cursorrules', 'testing']);
    const content = await get('/api/user/repository/acme/widgets/microagents/content?file_path=.openhands/microagents/testing.md', glKey);
    expect(content.body).toMatchObject({ triggers: ['test', 'pytest'], git_provider: 'gitlab', content: 'Run the tests with npm test.\n' });
  });

  it('browses a self-hosted GitLab at <host>/api/v4', async () => {
    const key = await app.keyFor('self-hosted');
    const stored = await call(app, 'POST', '/api/add-git-providers', {
      key,
      body: { provider_tokens: { gitlab: { token: 'glpat-self', host: selfHosted.url } } },
    });
    expect(stored.status).toBe(200);
    expect((await get('/api/user/repositories?selected_provider=gitlab&page=2&per_page=40', key)).body).toHaveLength(5);
    expect(selfHosted.requests.at(-1)).toMatchObject({ path: '/api/v4/projects', authorization: 'Bearer glpat-self' });
    expect((await get('/api/user/suggested-tasks', key)).body).toHaveLength(4);
    expect(selfHosted.requests.some((r) => r.path === '/api/graphql')).toBe(true);
  });
});

describe('Bitbucket', () => {
  it('authenticates user:app-password with Basic and maps the user', async () => {
    expect((await get('/api/user/info', bbKey)).body).toEqual({
      id: 'acc-42',
      login: 'octo',
      avatar_url: 'https://avatars.example.test/42',
      company: null,
      name: 'Octo Cat',
      email: null,
    });
    expect(bitbucket.requests.at(-1)!.authorization).toBe(`Basic ${Buffer.from('octo:app-password').toString('base64')}`);
  });

  it('lists workspaces as installations and pages their repositories with a synthesized link header', async () => {
    expect((await get('/api/user/installations?provider=bitbucket', bbKey)).body).toEqual(['acme', 'octo']);
    expect((await get('/api/user/repositories?selected_provider=bitbucket&page=1&per_page=30', bbKey)).body).toEqual([]); // no workspace: nothing
    const first = await get(
      '/api/user/repositories?selected_provider=bitbucket&sort=pushed&page=1&per_page=10&installation_id=acme',
      bbKey,
    );
    expect(first.body).toHaveLength(10);
    expect(first.body[0]).toEqual({
      id: '{00001045-0000-4000-8000-000000000000}',
      full_name: 'acme/repo-45',
      git_provider: 'bitbucket',
      is_public: false,
      stargazers_count: null,
      link_header: `<${bitbucket.url}/2.0/repositories/acme?page=2>; rel="next"`,
      pushed_at: '2025-02-15T00:00:00Z',
      owner_type: 'organization',
      main_branch: 'main',
    });
    const last = await get('/api/user/repositories?selected_provider=bitbucket&sort=pushed&page=3&per_page=10&installation_id=acme', bbKey);
    expect(last.body).toHaveLength(3);
    expect(last.body[0].link_header).toBe('');
  });

  it('searches a workspace by name and every workspace by text', async () => {
    const scoped = await get('/api/user/search/repositories?query=acme%2Fwidg&selected_provider=bitbucket', bbKey);
    expect(scoped.body.map((r: { full_name: string }) => r.full_name)).toEqual(['acme/widgets']);
    expect(new URLSearchParams(bitbucket.requests.at(-1)!.search).get('q')).toBe('name~"widg"');
    const free = await get('/api/user/search/repositories?query=repo-0&per_page=100&selected_provider=bitbucket', bbKey);
    expect(free.body.map((r: { full_name: string }) => r.full_name).sort()).toEqual([
      'acme/repo-03',
      'acme/repo-05',
      'acme/repo-07',
      'acme/repo-09',
      'octo/repo-02',
      'octo/repo-04',
      'octo/repo-06',
      'octo/repo-08',
    ]);
  });

  it("pages branches with the body's next and size", async () => {
    const page = await get('/api/user/repository/branches?repository=acme%2Fwidgets&page=1&per_page=30', bbKey);
    expect(page.body).toMatchObject({ has_next_page: true, total_count: 36 });
    expect(page.body.branches[0]).toEqual({ name: 'main', commit_sha: 'sha-0', protected: false, last_push_date: '2025-01-01T00:00:00Z' });
    expect(bitbucket.requests.at(-1)!.search).toBe('?pagelen=30&page=1&sort=-target.date');
  });

  it('reads microagents from the main branch, raw files included (the reference could not)', async () => {
    const list = await get('/api/user/repository/acme/widgets/microagents', bbKey);
    expect(list.body.map((m: { path: string }) => m.path)).toEqual(['.cursorrules', '.openhands/microagents/testing.md']);
    const content = await get('/api/user/repository/acme/widgets/microagents/content?file_path=.openhands/microagents/testing.md', bbKey);
    expect(content.body).toEqual({
      content: 'Run the tests with npm test.\n',
      path: '.openhands/microagents/testing.md',
      triggers: ['test', 'pytest'],
      git_provider: 'bitbucket',
    });
    expect(bitbucket.requests.at(-1)!.path).toBe('/2.0/repositories/acme/widgets/src/main/.openhands/microagents/testing.md');
  });

  it('has no suggested tasks', async () => {
    expect(await get('/api/user/suggested-tasks', bbKey)).toMatchObject({ status: 200, body: [] });
  });
});

describe('several providers', () => {
  it('answers the user from the first stored provider that answers, and merges suggested tasks in order', async () => {
    const key = await app.keyFor('both');
    const stored = await call(app, 'POST', '/api/add-git-providers', {
      key,
      body: { provider_tokens: { gitlab: { token: 'glpat-octo' }, bitbucket: { token: 'octo:app-password' } } },
    });
    expect(stored.status).toBe(200);
    expect((await get('/api/user/info', key)).body.id).toBe('42'); // GitLab, stored first
    gitlab.failWith = 503;
    try {
      expect((await get('/api/user/info', key)).body.id).toBe('acc-42'); // GitLab down: Bitbucket answers
      const tasks = await get('/api/user/suggested-tasks', key);
      expect(tasks).toMatchObject({ status: 200, body: [] }); // GitLab's tasks are left out, Bitbucket has none
    } finally {
      gitlab.failWith = null;
    }
    expect((await get('/api/user/suggested-tasks', key)).body).toHaveLength(4);
  });
});
