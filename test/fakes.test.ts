// Proves the test fakes themselves: the fake GitHub Enterprise serves real clones (and pushes) to the
// system git with token auth, its API answers like GHE, and the stub LLM speaks OpenAI chat completions.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeGitHost, type FakeGitHost } from './helpers/fake-git-host.js';
import { startStubLlm, type StubLlm } from './helpers/stub-llm.js';

const execFileAsync = promisify(execFile);

describe('fake git host', () => {
  let host: FakeGitHost;
  let scratch: string;

  beforeAll(async () => {
    host = await startFakeGitHost();
    host.validTokens.add('good-token');
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-fakes-test-'));
    await host.createRepo(
      'acme',
      'widgets',
      { 'README.md': '# Widgets\n', '.openhands/setup.sh': '#!/bin/sh\necho setup\n' },
      { branches: { feature: { 'feature.txt': 'on the feature branch\n', 'README.md': '# Widgets (feature)\n' } } },
    );
  });

  afterAll(async () => {
    await host?.close();
    if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
  });

  /** Runs the system git hermetically: no user config, never prompts, credentials only from `token`. */
  function git(cwd: string, token: string | null, ...args: string[]) {
    const helper = token === null ? [] : ['-c', `credential.helper=!f() { echo username=x; echo password=${token}; }; f`];
    return execFileAsync('git', ['-c', 'credential.helper=', ...helper, ...args], {
      cwd,
      env: {
        PATH: process.env.PATH,
        HOME: scratch,
        GIT_CONFIG_NOSYSTEM: '1',
        GIT_CONFIG_GLOBAL: '/dev/null',
        GIT_TERMINAL_PROMPT: '0',
        GIT_AUTHOR_NAME: 'Tester',
        GIT_AUTHOR_EMAIL: 'tester@example.invalid',
        GIT_COMMITTER_NAME: 'Tester',
        GIT_COMMITTER_EMAIL: 'tester@example.invalid',
      },
    });
  }

  it('serves a clone to the system git with a valid token, branches included', async () => {
    const dir = path.join(scratch, 'clone-ok');
    await git(scratch, 'good-token', 'clone', '-q', `${host.url}/acme/widgets.git`, dir);
    expect(fs.readFileSync(path.join(dir, 'README.md'), 'utf8')).toBe('# Widgets\n');
    expect(fs.readFileSync(path.join(dir, '.openhands/setup.sh'), 'utf8')).toBe('#!/bin/sh\necho setup\n');
    expect(fs.existsSync(path.join(dir, 'feature.txt'))).toBe(false);
    const { stdout: head } = await git(dir, null, 'rev-parse', '--abbrev-ref', 'HEAD');
    expect(head.trim()).toBe('main');

    await git(dir, null, 'checkout', '-q', 'feature');
    expect(fs.readFileSync(path.join(dir, 'feature.txt'), 'utf8')).toBe('on the feature branch\n');
    expect(fs.readFileSync(path.join(dir, 'README.md'), 'utf8')).toBe('# Widgets (feature)\n');
    expect(fs.existsSync(path.join(dir, '.openhands/setup.sh'))).toBe(true); // on top of main
    const { stdout: log } = await git(dir, null, 'log', '--format=%s');
    expect(log.trim().split('\n')).toEqual(['Commit on feature', 'Initial commit']);

    const gitRequests = host.requests.filter((r) => r.path.startsWith('/acme/widgets.git/'));
    expect(gitRequests.some((r) => r.authorization === undefined)).toBe(true); // the first, unauthenticated probe
    const authorized = gitRequests.filter((r) => r.authorization !== undefined);
    expect(authorized.length).toBeGreaterThan(0);
    expect(authorized.map((r) => r.authorization)).toContain(`Basic ${Buffer.from('x:good-token').toString('base64')}`);
  });

  it('accepts a push over smart HTTP', async () => {
    const dir = path.join(scratch, 'clone-push');
    await git(scratch, 'good-token', 'clone', '-q', `${host.url}/acme/widgets.git`, dir);
    fs.writeFileSync(path.join(dir, 'pushed.txt'), 'pushed\n');
    await git(dir, null, 'add', 'pushed.txt');
    await git(dir, null, 'commit', '-q', '-m', 'Pushed commit');
    await git(dir, 'good-token', 'push', '-q', 'origin', 'HEAD:refs/heads/pushed');

    const again = path.join(scratch, 'clone-pushed');
    await git(scratch, 'good-token', 'clone', '-q', '--branch', 'pushed', `${host.url}/acme/widgets.git`, again);
    expect(fs.readFileSync(path.join(again, 'pushed.txt'), 'utf8')).toBe('pushed\n');
  });

  it('refuses a wrong token or no credentials without prompting', async () => {
    await expect(git(scratch, 'wrong-token', 'clone', '-q', `${host.url}/acme/widgets.git`, path.join(scratch, 'bad'))).rejects.toThrow(
      /Authentication failed/,
    );
    await expect(git(scratch, null, 'clone', '-q', `${host.url}/acme/widgets.git`, path.join(scratch, 'none'))).rejects.toThrow(
      /could not read Username/,
    );
    expect(fs.existsSync(path.join(scratch, 'bad'))).toBe(false);
  });

  it('answers a direct unauthenticated git request with a Basic challenge', async () => {
    const res = await fetch(`${host.url}/acme/widgets.git/info/refs?service=git-upload-pack`);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Basic realm="git"');
  });

  it('answers the GitHub Enterprise API with Bearer auth', async () => {
    const get = (p: string, token?: string) =>
      fetch(`${host.url}/api/v3${p}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });

    const user = await get('/user', 'good-token');
    expect(user.status).toBe(200);
    expect(await user.json()).toEqual({ login: 'octocat', id: 1 });

    const repo = await get('/repos/acme/widgets', 'good-token');
    expect(repo.status).toBe(200);
    expect(await repo.json()).toEqual({ full_name: 'acme/widgets', default_branch: 'main', private: true });

    const missing = await get('/repos/acme/nothing', 'good-token');
    expect(missing.status).toBe(404);

    for (const res of [await get('/user', 'wrong-token'), await get('/user'), await get('/repos/acme/widgets', 'wrong-token')]) {
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({ message: 'Bad credentials' });
    }
    expect(host.requests.at(-1)).toEqual({ path: '/api/v3/repos/acme/widgets', authorization: 'Bearer wrong-token' });
  });
});

describe('stub LLM', () => {
  let llm: StubLlm;

  beforeAll(async () => {
    llm = await startStubLlm();
  });

  afterAll(async () => {
    await llm?.close();
  });

  const chat = (body: unknown) =>
    fetch(`${llm.url}/chat/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: 'Bearer sk-test' },
      body: JSON.stringify(body),
    });

  it('answers a chat completion and records the request', async () => {
    expect(llm.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    const body = { model: 'gpt-test', messages: [{ role: 'user', content: 'Hi' }] };
    const res = await chat(body);
    expect(res.status).toBe(200);
    const answer = (await res.json()) as Record<string, unknown>;
    expect(answer).toMatchObject({
      id: 'chatcmpl-stub',
      object: 'chat.completion',
      model: 'gpt-test',
      choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'Hello from the stub LLM.' } }],
      usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 }, // STUB_USAGE
    });
    expect(typeof answer.created).toBe('number');

    const recorded = llm.requests.at(-1)!;
    expect(recorded.body).toEqual(body);
    expect(recorded.headers.authorization).toBe('Bearer sk-test');
    expect(recorded.headers['content-type']).toBe('application/json');
  });

  it('streams server-sent chunks when asked, with the reply set by setReply', async () => {
    llm.setReply('Streaming works fine.');
    const res = await chat({ model: 'gpt-stream', stream: true, messages: [{ role: 'user', content: 'Hi' }] });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const lines = (await res.text()).split('\n').filter((l) => l.startsWith('data: '));
    expect(lines.at(-1)).toBe('data: [DONE]');
    const chunks = lines.slice(0, -1).map(
      (l) =>
        JSON.parse(l.slice(6)) as {
          object: string;
          model: string;
          choices: { delta: { content?: string }; finish_reason: string | null }[];
        },
    );
    expect(chunks.length).toBeGreaterThan(2);
    expect(chunks.every((c) => c.object === 'chat.completion.chunk' && c.model === 'gpt-stream')).toBe(true);
    expect(chunks.map((c) => c.choices[0]!.delta.content ?? '').join('')).toBe('Streaming works fine.');
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe('stop');
    expect(llm.requests.at(-1)!.body).toMatchObject({ stream: true, model: 'gpt-stream' });
  });

  it('answers unknown paths with 404 JSON', async () => {
    const res = await fetch(`${llm.url}/models`);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: { message: expect.stringContaining('/v1/models') } });
    expect(llm.requests.at(-1)!.headers).not.toHaveProperty('Authorization');
  });
});
