// The conversation page's routes over real HTTP, with the fake agent server in process
// sandboxes: on a running conversation, then stopped (paused sandbox), started again and
// resumed by the routes that need it, with its sandbox gone, with an agent server that stops
// answering, for another user, and for unknown conversations.
import fs from 'node:fs';
import path from 'node:path';
import { createTRPCClient, httpBatchLink } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppRouter } from '../../routers/index.js';
import { transformer } from '../../src/trpc/transformer.js';
import { call } from '../helpers/app.js';
import { signIn } from '../helpers/session.js';
import { startConversationApp, v0, type ConversationApp } from '../helpers/conversation-app.js';
import { eventually } from '../helpers/eventually.js';

let app: ConversationApp;
let alice: string;
let bob: string;
let id: string;
let sandboxId: string;
let workspace: string;
const page = (suffix: string) => `/api/conversations/${id}/${suffix}`;

async function upload(key: string, conversationId: string, files: Record<string, string>) {
  const form = new FormData();
  for (const [name, content] of Object.entries(files)) form.append('files', new Blob([content]), name);
  const response = await fetch(`${app.url}/api/conversations/${conversationId}/upload-files`, {
    method: 'POST',
    headers: { 'x-session-api-key': key },
    body: form,
  });
  return { status: response.status, body: (await response.json()) as any };
}

beforeAll(async () => {
  app = await startConversationApp('page', { SANDBOX_CALL_TIMEOUT_MS: '1500', MAX_UPLOAD_SIZE: '64kb' });
  alice = await app.user('alice');
  bob = await app.user('bob');
  const task = await app.startConversation(alice, { initial_message: { content: [{ type: 'text', text: 'Build the widget' }] } });
  expect(task.status, task.detail ?? '').toBe('READY');
  id = task.app_conversation_id;
  sandboxId = task.sandbox_id;
  workspace = app.server.deps.runtime.workingDir(sandboxId, app.server.deps.services.sandboxSpecs.default);
}, 60_000);

afterAll(async () => {
  await app.close();
});

describe('a running conversation', () => {
  it('names its sandbox in config (runtime_id) and the id as given (session_id)', async () => {
    expect(await call(app, 'GET', page('config'), { key: alice })).toMatchObject({
      status: 200,
      body: { runtime_id: sandboxId, session_id: id },
    });
  });

  it('lists its worker hosts with their ports, the ones the agent server was given', async () => {
    const hosts = (await call(app, 'GET', page('web-hosts'), { key: alice })).body.hosts as Record<string, number>;
    const [sandbox] = (await call(app, 'GET', `/api/v1/sandboxes?id=${sandboxId}`, { key: alice })).body;
    const agent = sandbox.exposed_urls.find((u: { name: string }) => u.name === 'AGENT_SERVER').url;
    const env = (await (await fetch(`${agent}/api/test/env`, { headers: { 'x-session-api-key': sandbox.session_api_key } })).json()) as any;
    // Keyed by the URL the owner opens (a host port forwarded into the sandbox's own network),
    // each with the port the agent server was told to run the app on inside it.
    const ports = [Number(env.ports.WORKER_1), Number(env.ports.WORKER_2)];
    expect(Object.values(hosts)).toEqual(ports);
    const workers = sandbox.exposed_urls.filter((u: { name: string }) => u.name.startsWith('WORKER_')).map((u: { url: string }) => u.url);
    expect(Object.keys(hosts)).toEqual(workers);
    expect(sandbox.exposed_urls.map((u: { name: string }) => u.name)).toEqual(['AGENT_SERVER', 'VSCODE', 'WORKER_1', 'WORKER_2']);
  });

  it('gives the VS Code URL with its token and folder, and it answers', async () => {
    const { vscode_url } = (await call(app, 'GET', page('vscode-url'), { key: alice })).body;
    const [sandbox] = (await call(app, 'GET', `/api/v1/sandboxes?id=${sandboxId}`, { key: alice })).body;
    expect(vscode_url).toBe(sandbox.exposed_urls.find((u: { name: string }) => u.name === 'VSCODE').url);
    const url = new URL(vscode_url);
    expect(url.searchParams.get('tkn')).toBe(sandbox.session_api_key);
    expect(url.searchParams.get('folder')).toBe(workspace);
    expect((await fetch(vscode_url)).status).toBe(200);
  });

  it('uploads files into the workspace root (multipart, repeated "files")', async () => {
    const uploaded = await upload(alice, id, { 'notes.txt': 'remember the milk\n', 'data.csv': 'a,b\n1,2\n' });
    expect(uploaded).toEqual({
      status: 200,
      body: { uploaded_files: [`${workspace}/notes.txt`, `${workspace}/data.csv`], skipped_files: [] },
    });
    expect(fs.readFileSync(path.join(workspace, 'notes.txt'), 'utf8')).toBe('remember the milk\n');
    // A name with a path keeps only its last segment; ".." is refused per file.
    const odd = await upload(alice, id, { '../../escape.txt': 'x', '..': 'y' });
    expect(odd.body).toEqual({ uploaded_files: [`${workspace}/escape.txt`], skipped_files: [{ name: '..', reason: 'Invalid file name' }] });
  });

  it("accepts the web UI's own session cookie on uploads, from its own origin only", async () => {
    const { cookie } = await signIn(app, alice);
    const send = (origin: string) => {
      const form = new FormData();
      form.append('files', new Blob(['from the browser']), 'browser.txt');
      return fetch(`${app.url}${page('upload-files')}`, { method: 'POST', headers: { cookie, origin }, body: form });
    };
    const own = await send(app.url);
    expect(own.status).toBe(200);
    expect(((await own.json()) as any).uploaded_files).toEqual([`${workspace}/browser.txt`]);
    expect((await send('https://evil.example.com')).status).toBe(403);
  });

  it('refuses uploads that are not multipart (415), have no files (422) or are too large (413)', async () => {
    expect((await call(app, 'POST', page('upload-files'), { key: alice, body: { files: [] } })).status).toBe(415);
    const empty = await fetch(`${app.url}${page('upload-files')}`, {
      method: 'POST',
      headers: { 'x-session-api-key': alice },
      body: new FormData(),
    });
    expect(empty.status).toBe(422);
    expect(await empty.json()).toEqual({ detail: [{ type: 'missing', loc: ['body', 'files'], msg: 'Field required' }] });
    const big = await upload(alice, id, { 'big.bin': 'x'.repeat(70 * 1024) });
    expect(big).toEqual({ status: 413, body: { detail: 'Request body too large (limit 64kb)' } });
  });

  it('lists workspace entries without hidden and git-ignored ones, also in a subdirectory', async () => {
    fs.writeFileSync(path.join(workspace, '.gitignore'), 'secret.log\n');
    fs.writeFileSync(path.join(workspace, 'secret.log'), 'x');
    fs.mkdirSync(path.join(workspace, 'src', 'node_modules'), { recursive: true });
    fs.writeFileSync(path.join(workspace, 'src', 'main.ts'), 'export {};\n');
    const root = (await call(app, 'GET', page('list-files'), { key: alice })).body;
    expect(root).toEqual(expect.arrayContaining(['.gitignore', 'notes.txt', 'data.csv', 'src/']));
    expect(root).not.toContain('.git/');
    expect(root).not.toContain('secret.log');
    expect((await call(app, 'GET', `${page('list-files')}?path=src`, { key: alice })).body).toEqual(['src/main.ts']);
    expect((await call(app, 'GET', `${page('list-files')}?path=nowhere`, { key: alice })).body).toEqual([]);
  });

  it('lists git changes (untracked files included) and diffs a file', async () => {
    const changes = (await call(app, 'GET', page('git/changes'), { key: alice })).body;
    expect(changes).toEqual(
      expect.arrayContaining([
        { status: 'A', path: 'notes.txt' },
        { status: 'A', path: 'src/main.ts' },
      ]),
    );
    expect(changes.map((c: { path: string }) => c.path)).not.toContain('secret.log');
    expect((await call(app, 'GET', `${page('git/diff')}?path=notes.txt`, { key: alice })).body).toEqual({
      modified: 'remember the milk', // the agent server joins the lines without a final newline
      original: '',
    });
    expect((await call(app, 'GET', page('git/diff'), { key: alice })).status).toBe(422);
    const outside = await call(app, 'GET', `${page('git/diff')}?path=../../etc/passwd`, { key: alice });
    expect(outside).toMatchObject({ status: 404, body: { error: expect.stringContaining('outside the workspace') } });
  });

  it("lists the repository's microagents, repo ones first", async () => {
    const dir = path.join(workspace, '.openhands', 'microagents');
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'deploy.md'), '---\ntriggers:\n- deploy\n---\nUse the deploy script.\n');
    fs.writeFileSync(path.join(dir, 'repo.md'), 'Run npm test before committing.\n');
    expect((await call(app, 'GET', page('microagents'), { key: alice })).body).toEqual({
      microagents: [
        { name: 'repo', type: 'repo', content: 'Run npm test before committing.\n', triggers: [], inputs: [], tools: [] },
        { name: 'deploy', type: 'knowledge', content: 'Use the deploy script.\n', triggers: ['deploy'], inputs: [], tools: [] },
      ],
    });
  });

  it('serves the trajectory from the agent server and a prompt to remember from the events around one', async () => {
    const trajectory = await eventually('the run to finish', async () => {
      const body = (await call(app, 'GET', page('trajectory'), { key: alice })).body;
      return body.trajectory.length === 4 ? body.trajectory : null;
    });
    expect(trajectory.map((e: { kind: string }) => e.kind)).toEqual([
      'MessageEvent',
      'ConversationStateUpdateEvent',
      'MessageEvent',
      'ConversationStateUpdateEvent',
    ]);
    // The events stored, not only counted: a batch claims its positions before it writes them.
    await eventually(
      'the events webhook',
      async () =>
        (await call(app, 'GET', `/api/v1/events/search?conversation_id__eq=${id}&limit=100`, { key: alice })).body.items?.length === 4,
    );
    expect(await call(app, 'GET', `${page('remember-prompt')}?event_id=2`, { key: alice })).toMatchObject({
      status: 200,
      body: { status: 'success', prompt: 'Remember: [agent] MessageEvent: Hello from the fake agent.' },
    });
    expect((await call(app, 'GET', `${page('remember-prompt')}?event_id=99`, { key: alice })).status).toBe(404);
    expect((await call(app, 'GET', `${page('remember-prompt')}?event_id=x`, { key: alice })).status).toBe(422);
  });

  it('keeps feedback owner-scoped, with the reference answer shape', async () => {
    await eventually(
      'the events webhook',
      async () => (await call(app, 'GET', `/api/v1/events/count?conversation_id__eq=${id}`, { key: alice })).body === 4,
    );
    const body = { version: '1.0', email: 'a@example.com', token: '', polarity: 'positive', permissions: 'private', trajectory: [] };
    const given = await call(app, 'POST', page('submit-feedback'), { key: alice, body });
    expect(given).toMatchObject({
      status: 200,
      body: { statusCode: 200, body: { feedback_id: expect.stringMatching(/^[0-9a-f]{32}$/), password: '' } },
    });
    const stored = await app.rawCollection('feedback').findOne({ _id: given.body.body.feedback_id });
    expect(stored).toMatchObject({ conversationId: id, polarity: 'positive', eventCount: 4 });
    expect((await call(app, 'POST', page('submit-feedback'), { key: bob, body })).status).toBe(404);
    // Served back to its author only (tRPC).
    const trpc = (key: string) =>
      createTRPCClient<AppRouter>({
        links: [httpBatchLink({ url: `${app.url}/trpc`, transformer, headers: { 'x-session-api-key': key } })],
      });
    expect(await trpc(alice).conversationWorkspace.feedback.query({ conversation_id: id })).toEqual([
      expect.objectContaining({ feedback_id: given.body.body.feedback_id, polarity: 'positive', permissions: 'private' }),
    ]);
    expect(await trpc(bob).conversationWorkspace.feedback.query({ conversation_id: id })).toEqual([]);
    expect((await call(app, 'POST', page('submit-feedback'), { key: alice, body: { ...body, polarity: 'meh' } })).status).toBe(422);
  });
});

describe('when it cannot reach into the sandbox', () => {
  it('answers 503 promptly when the agent server stops answering, then heals', async () => {
    const [sandbox] = (await call(app, 'GET', `/api/v1/sandboxes?id=${sandboxId}`, { key: alice })).body;
    const agent = sandbox.exposed_urls[0].url;
    const behave = (hang: boolean) =>
      fetch(`${agent}/api/test/behaviour`, {
        method: 'POST',
        headers: { 'x-session-api-key': sandbox.session_api_key, 'content-type': 'application/json' },
        body: JSON.stringify({ hang }),
      });
    await behave(true);
    try {
      const started = Date.now();
      const hung = await call(app, 'GET', page('git/changes'), { key: alice });
      expect(hung).toMatchObject({
        status: 503,
        body: { error: expect.stringMatching(/^Agent server unreachable .*no answer within 1\.5 s/) },
      });
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      await behave(false);
    }
    expect((await call(app, 'GET', page('git/changes'), { key: alice })).status).toBe(200);
  });
});

describe('stop, start and transparent resume', () => {
  const sandboxStatus = async () => (await call(app, 'GET', `/api/v1/sandboxes?id=${sandboxId}`, { key: alice })).body[0].status;
  const stop = async () => {
    expect((await call(app, 'POST', page('stop'), { key: alice })).body.message).toBe('Conversation stopped successfully');
    expect(await sandboxStatus()).toBe('PAUSED');
  };

  it('stops by pausing the sandbox; the routes that need no live sandbox answer without resuming it', async () => {
    expect(await call(app, 'POST', page('stop'), { key: alice })).toMatchObject({
      status: 200,
      body: { status: 'ok', conversation_id: id, message: 'Conversation stopped successfully', conversation_status: 'RUNNING' },
    });
    expect((await v0(app, alice, id)).status).toBe('STOPPED');
    expect((await call(app, 'GET', page('config'), { key: alice })).body).toEqual({ runtime_id: sandboxId, session_id: id });
    expect((await call(app, 'GET', page('web-hosts'), { key: alice })).body).toEqual({ hosts: {} });
    expect((await call(app, 'GET', page('vscode-url'), { key: alice })).body).toEqual({ vscode_url: null });
    // The trajectory and the events come from what the webhooks delivered.
    expect((await call(app, 'GET', page('trajectory'), { key: alice })).body.trajectory).toHaveLength(4);
    expect((await call(app, 'GET', `/api/v1/events/count?conversation_id__eq=${id}`, { key: alice })).body).toBe(4);
    expect((await call(app, 'POST', page('stop'), { key: alice })).body).toMatchObject({
      message: 'Conversation was not running',
      conversation_status: 'STOPPED',
    });
    expect(await sandboxStatus()).toBe('PAUSED');
    expect((await v0(app, alice, id)).status).toBe('STOPPED');
  });

  it('starts again: answers once the sandbox runs, with its workspace, and the agent server still knows the conversation', async () => {
    expect(await call(app, 'POST', page('start'), { key: alice, body: { providers_set: ['github'] } })).toMatchObject({
      status: 200,
      body: { status: 'ok', conversation_id: id, message: null, conversation_status: 'RUNNING' },
    });
    expect(await sandboxStatus()).toBe('RUNNING');
    expect((await v0(app, alice, id)).status).toBe('RUNNING');
    expect((await call(app, 'POST', page('start'), { key: alice, body: {} })).body.conversation_status).toBe('RUNNING');
    expect((await call(app, 'GET', page('git/changes'), { key: alice })).body).toEqual(
      expect.arrayContaining([{ status: 'A', path: 'notes.txt' }]),
    );
    expect((await call(app, 'GET', page('trajectory'), { key: alice })).body.trajectory).toHaveLength(4);
  });

  it.each([
    ['git/changes', (body: unknown) => expect(body).toEqual(expect.arrayContaining([{ status: 'A', path: 'notes.txt' }]))],
    ['list-files', (body: unknown) => expect(body).toEqual(expect.arrayContaining(['notes.txt', 'src/']))],
    ['git/diff?path=notes.txt', (body: unknown) => expect(body).toEqual({ modified: 'remember the milk', original: '' })],
    ['microagents', (body: any) => expect(body.microagents.map((m: { name: string }) => m.name)).toEqual(['repo', 'deploy'])],
    [
      'remember-prompt?event_id=2',
      (body: unknown) => expect(body).toEqual({ status: 'success', prompt: 'Remember: [agent] MessageEvent: Hello from the fake agent.' }),
    ],
  ] as const)('resumes the stopped conversation for GET %s, which answers', async (route, check) => {
    await stop();
    const answer = await call(app, 'GET', page(route), { key: alice });
    expect(answer.status, answer.text).toBe(200);
    check(answer.body);
    expect(await sandboxStatus()).toBe('RUNNING');
    expect((await v0(app, alice, id)).status).toBe('RUNNING');
  });

  it('resumes the stopped conversation for an upload', async () => {
    await stop();
    expect(await upload(alice, id, { 'late.txt': 'after the stop' })).toEqual({
      status: 200,
      body: { uploaded_files: [`${workspace}/late.txt`], skipped_files: [] },
    });
    expect(fs.readFileSync(path.join(workspace, 'late.txt'), 'utf8')).toBe('after the stop');
    expect(await sandboxStatus()).toBe('RUNNING');
  });
});

describe('another user and unknown conversations', () => {
  const unknown = 'f'.repeat(32);
  it.each([
    'config',
    'web-hosts',
    'vscode-url',
    'microagents',
    'list-files',
    'git/changes',
    'git/diff?path=a',
    'trajectory',
    'remember-prompt?event_id=0',
  ])('GET %s answers 404 {"detail": "Conversation <id> not found"}', async (route) => {
    for (const [key, conversation] of [
      [bob, id],
      [alice, unknown],
    ] as const) {
      expect(await call(app, 'GET', `/api/conversations/${conversation}/${route}`, { key })).toEqual(
        expect.objectContaining({ status: 404, body: { detail: `Conversation ${conversation} not found` } }),
      );
    }
  });

  it('answers start and stop with the reference 404 body, and refuses uploads the same way', async () => {
    for (const action of ['start', 'stop']) {
      expect(await call(app, 'POST', page(action), { key: bob, body: {} })).toMatchObject({
        status: 404,
        body: { status: 'error', conversation_id: id },
      });
    }
    expect(await upload(bob, id, { 'x.txt': 'x' })).toEqual({ status: 404, body: { detail: `Conversation ${id} not found` } });
    expect(await upload('not-a-key', id, { 'x.txt': 'x' })).toEqual({ status: 401, body: { detail: 'Unauthorized' } });
    expect((await v0(app, alice, id)).status).toBe('RUNNING');
  });
});

describe('a conversation whose sandbox is gone', () => {
  it('answers 409 with the reason, and start cannot bring it back', async () => {
    const task = await app.startConversation(alice);
    const gone = task.app_conversation_id;
    expect((await call(app, 'DELETE', `/api/v1/sandboxes/${task.sandbox_id}`, { key: alice })).status).toBe(200);
    expect(await call(app, 'GET', `/api/conversations/${gone}/git/changes`, { key: alice })).toMatchObject({
      status: 409,
      body: { error: `The sandbox of conversation ${gone} no longer exists` },
    });
    expect(await call(app, 'POST', `/api/conversations/${gone}/start`, { key: alice, body: {} })).toMatchObject({
      status: 409,
      body: { status: 'error', conversation_id: gone, message: 'Failed to start conversation: its sandbox no longer exists' },
    });
    expect((await call(app, 'GET', `/api/conversations/${gone}/config`, { key: alice })).body).toEqual({
      runtime_id: task.sandbox_id,
      session_id: gone,
    });
    expect((await v0(app, alice, gone)).status).toBe('ARCHIVED');
  });
});
