// How /api/user/* fails: no token (the reference's bare-string 401s), a token the provider no
// longer accepts, a provider that is down, unreachable, rate limiting, answering garbage or
// too slowly, and a flood of calls to a slow provider, which stays bounded and never takes the
// service or the other providers down. No answer and no log line ever carries the token.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { startFakeGitHub } from '../helpers/fake-providers/github.js';
import { startFakeGitLab } from '../helpers/fake-providers/gitlab.js';
import type { FakeProvider } from '../helpers/fake-providers/server.js';

// The fake self-hosted hosts run on 127.0.0.1: a loopback address only the operator can allow.
const LOOPBACK = '127.0.0.1';

const TOKEN = 'ghp_failures_secret_token';
let app: TestApp;
let github: FakeProvider;
let gitlab: FakeProvider;
let key: string;
const logLines: string[] = [];
const answers: string[] = [];

const get = async (path: string, k = key) => {
  const res = await call(app, 'GET', path, { key: k });
  answers.push(res.text);
  return res;
};

beforeAll(async () => {
  [github, gitlab] = await Promise.all([startFakeGitHub(), startFakeGitLab()]);
  github.validTokens.add(TOKEN);
  gitlab.validTokens.add('glpat-fast');
  app = await startTestApp(
    'user-git-failures',
    {
      GITHUB_API_URL: github.url,
      GITLAB_API_URL: `${gitlab.url}/api/v4`,
      PROVIDER_TIMEOUT_MS: '1000',
      PROVIDER_MAX_CONCURRENCY: '4',
      GIT_PROVIDER_HOSTS: LOOPBACK,
    },
    { logLines },
  );
  key = await app.keyFor('failing');
  expect((await call(app, 'POST', '/api/add-git-providers', { key, body: { provider_tokens: { github: { token: TOKEN } } } })).status).toBe(
    200,
  );
});
afterAll(async () => {
  await app?.stop();
  await Promise.all([github?.close(), gitlab?.close()]);
});

describe('without a stored token', () => {
  it.each([
    ['/api/user/info', 'Git provider token required. (such as GitHub).'],
    ['/api/user/installations?provider=github', 'Git provider token required. (such as GitHub).'],
    ['/api/user/repositories?selected_provider=github&page=1&per_page=30', 'Git provider token required. (such as GitHub).'],
    ['/api/user/repository/branches?repository=acme%2Fwidgets', 'Git provider token required. (such as GitHub).'],
    ['/api/user/search/repositories?query=x&selected_provider=github', 'Git provider token required.'],
    ['/api/user/search/branches?repository=acme%2Fwidgets&query=x', 'Git provider token required.'],
    ['/api/user/suggested-tasks', 'No providers set.'],
  ])('%s → 401 %j', async (path, message) => {
    const nobody = await app.keyFor(`nobody-${Math.random().toString(36).slice(2, 8)}`);
    expect(await get(path, nobody)).toMatchObject({ status: 401, body: message });
  });

  it('lists no microagents and finds no microagent file', async () => {
    const nobody = await app.keyFor('nobody-microagents');
    expect(await get('/api/user/repository/acme/widgets/microagents', nobody)).toMatchObject({ status: 200, body: [] });
    expect(await get('/api/user/repository/acme/widgets/microagents/content?file_path=a.md', nobody)).toMatchObject({ status: 404 });
  });

  it('names the provider a user has no token for, and refuses to browse enterprise_sso', async () => {
    expect(await get('/api/user/repositories?selected_provider=gitlab&page=1&per_page=30')).toMatchObject({
      status: 401,
      body: 'No gitlab token is stored',
    });
    expect(await get('/api/user/repositories?selected_provider=enterprise_sso&page=1&per_page=30')).toMatchObject({ status: 400 });
  });

  it("never uses another user's token", async () => {
    const other = await app.keyFor('other-user');
    expect((await get('/api/user/info', other)).status).toBe(401);
  });
});

describe('a token the provider no longer accepts', () => {
  it('answers the reference 401s', async () => {
    github.validTokens.delete(TOKEN);
    try {
      expect(await get('/api/user/info')).toMatchObject({ status: 401, body: 'Need valid provider token' });
      expect(await get('/api/user/repositories?selected_provider=github&page=1&per_page=30')).toMatchObject({
        status: 401,
        body: 'Invalid github token',
      });
      expect(await get('/api/user/repository/branches?repository=acme%2Fwidgets')).toMatchObject({
        status: 401,
        body: 'Invalid github token',
      });
      expect(await get('/api/user/search/branches?repository=acme%2Fwidgets&query=x&selected_provider=github')).toMatchObject({
        status: 401,
      });
      expect(await get('/api/user/repository/acme/widgets/microagents')).toMatchObject({
        status: 401,
        body: 'Unable to fetch microagents for acme/widgets',
      });
    } finally {
      github.validTokens.add(TOKEN);
    }
  });
});

describe('a provider in trouble answers 502 (or 429), never 500 and never an empty list', () => {
  const routes = [
    '/api/user/info',
    '/api/user/repositories?selected_provider=github&page=1&per_page=30',
    '/api/user/search/repositories?query=widgets&selected_provider=github',
    '/api/user/repository/branches?repository=acme%2Fwidgets',
    '/api/user/search/branches?repository=acme%2Fwidgets&query=x',
    '/api/user/suggested-tasks',
    '/api/user/repository/acme/widgets/microagents',
    '/api/user/repository/acme/widgets/microagents/content?file_path=.cursorrules',
  ];

  it.each(routes)('down (HTTP 503): %s', async (path) => {
    github.failWith = 503;
    try {
      expect(await get(path)).toMatchObject({ status: 502, body: { error: 'github is failing (HTTP 503)' } });
    } finally {
      github.failWith = null;
    }
  });

  it.each(routes)('malformed answer: %s', async (path) => {
    github.answerWith = { status: 200, text: '<html>maintenance</html>' };
    try {
      const res = await get(path);
      expect(res.status).toBe(502);
      expect(res.body.error).toMatch(/^github sent a/);
    } finally {
      github.answerWith = null;
    }
  });

  it.each([
    '{"success": true}',
    '[]',
    '[1, "two", null]',
    '[{"id": {}, "name": 5, "full_name": [], "stargazers_count": "many", "owner": 7}]',
    '{"items": [{"id": null, "full_name": {"x": 1}}], "total_count": "x"}',
    '{"data": {"viewer": 5, "search": {"nodes": [1]}}}',
    '{"data": {"user": {"pullRequests": {"nodes": [{"number": "x", "title": 5, "mergeable": "CONFLICTING"}]}, "issues": {"nodes": [{}]}}}}',
    'null',
    '42',
    '"text"',
  ])('any JSON of the wrong shape (%s) is a 502 naming github, never junk or a 500', async (text) => {
    github.answerWith = { status: 200, text };
    try {
      for (const path of routes) {
        const res = await get(path);
        // An empty list is a fair reading of "[]"; a missing microagent file is the route's 404.
        if (res.status === 200)
          expect(res.body, `${path}: ${res.text}`).toSatisfy((b: unknown) => /^\[\]$|"branches":\[\]/.test(JSON.stringify(b)));
        else if (res.status !== 404) expect(res, path).toMatchObject({ status: 502, body: { error: expect.stringMatching(/^github /) } });
      }
    } finally {
      github.answerWith = null;
    }
  });

  it('unexpected JSON shapes read as a failing provider', async () => {
    github.answerWith = { status: 200, text: '{"unexpected":true}' };
    try {
      expect(await get('/api/user/repositories?selected_provider=github&page=1&per_page=30')).toMatchObject({
        status: 502,
        body: { error: 'github sent an unexpected response' },
      });
    } finally {
      github.answerWith = null;
    }
  });

  it('unreachable (a self-hosted host that went away)', async () => {
    const host = await startFakeGitHub();
    host.validTokens.add('ghe_gone');
    const gone = await app.keyFor('host-gone');
    const stored = await call(app, 'POST', '/api/add-git-providers', {
      key: gone,
      body: { provider_tokens: { github: { token: 'ghe_gone', host: host.url } } },
    });
    expect(stored.status).toBe(200);
    await host.close();
    expect(await get('/api/user/repositories?selected_provider=github&page=1&per_page=30', gone)).toMatchObject({
      status: 502,
      body: { error: 'Could not reach github' },
    });
  });

  it('rate limited: 429 with Retry-After', async () => {
    github.rateLimited = true;
    try {
      const res = await get('/api/user/repositories?selected_provider=github&page=1&per_page=30');
      expect(res).toMatchObject({ status: 429, body: { error: 'github rate limit reached; try again later' } });
      expect(res.headers.get('retry-after')).toBe('30');
    } finally {
      github.rateLimited = false;
    }
  });

  it('too slow: 502 once the timeout passes', async () => {
    github.delayMs = 2500;
    try {
      expect(await get('/api/user/info')).toMatchObject({ status: 502, body: { error: 'github did not answer within 1000 ms' } });
    } finally {
      github.delayMs = 0;
    }
  });
});

describe('a slow provider under load', () => {
  const repos = '/api/user/repositories?selected_provider=github&page=1&per_page=30';

  it('queues calls beyond its share of the slots (half of PROVIDER_MAX_CONCURRENCY per host) and answers them all', async () => {
    github.maxInFlight = 0;
    github.delayMs = 100; // well inside the deadline: nothing is abandoned, so the count is exact
    try {
      const answers = await Promise.all(Array.from({ length: 8 }, () => get(repos)));
      expect(answers.map((r) => r.status)).toEqual(Array(8).fill(200));
      expect(github.maxInFlight).toBe(2);
    } finally {
      github.delayMs = 0;
    }
  });

  it('answers callers that time out or wait out their deadline promptly, and leaves the service and other providers working', async () => {
    const gitlabKey = await app.keyFor('gitlab-while-github-is-slow');
    expect(
      (
        await call(app, 'POST', '/api/add-git-providers', {
          key: gitlabKey,
          body: { provider_tokens: { gitlab: { token: 'glpat-fast' } } },
        })
      ).status,
    ).toBe(200);
    github.delayMs = 5000;
    try {
      // Two calls hold GitHub's two slots until they time out at 1 s; calls queued once they
      // hold them get the freed slots or spend their whole deadline waiting ("busy", 503).
      const holders = [get(repos), get(repos)];
      await eventually('both slots to be held at GitHub', async () => github.inFlight === 2);
      const queued = Array.from({ length: 12 }, () => get(repos));
      const [alive, settings, otherProvider] = await Promise.all([
        call(app, 'GET', '/alive'),
        get('/api/settings'),
        get('/api/user/repositories?selected_provider=gitlab&page=1&per_page=5', gitlabKey),
      ]);
      expect(alive.status).toBe(200);
      expect(settings.status).toBe(404); // no settings saved: the service itself answers
      expect(otherProvider.status).toBe(200);
      expect(otherProvider.body).toHaveLength(5);

      for (const res of await Promise.all(holders))
        expect(res).toMatchObject({ status: 502, body: { error: 'github did not answer within 1000 ms' } });
      const late = await Promise.all(queued);
      expect(late.every((r) => r.status === 502 || r.status === 503)).toBe(true);
      const busy = late.filter((r) => r.status === 503);
      expect(busy.length).toBeGreaterThanOrEqual(1);
      expect(busy[0]!.body).toEqual({ error: 'Too many git provider requests in progress; try again shortly' });
      expect(busy[0]!.headers.get('retry-after')).toBe('1');
    } finally {
      github.delayMs = 0;
    }
  });
});

describe('secrets', () => {
  it('never puts the token in an answer or a log line (the fake echoes it in its error bodies)', () => {
    expect(answers.length).toBeGreaterThan(40);
    expect(answers.filter((a) => a.includes(TOKEN))).toEqual([]);
    expect(logLines.length).toBeGreaterThan(10);
    expect(logLines.filter((l) => l.includes(TOKEN) || l.includes('glpat-fast'))).toEqual([]);
    expect(logLines.some((l) => l.includes('git provider call failed'))).toBe(true);
  });
});
