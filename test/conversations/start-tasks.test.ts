// Conversations over real HTTP with the process runtime and a fake agent server (a real
// process that runs the setup commands for real): the start-task lifecycle, what reaches
// the agent, errors, durability across crashes and replicas, isolation, paging, webhooks.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTRPCClient, httpBatchLink, httpSubscriptionLink, splitLink } from '@trpc/client';
import { EventSource } from 'eventsource';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StartTaskStatusSchema } from '../../contract/app-conversations.schema.js';
import { AgentServerClient } from '../../src/agent-server/client.js';
import type { AppRouter } from '../../routers/index.js';
import { generateKeyText } from '../../src/crypto.js';
import { transformer } from '../../src/trpc/transformer.js';
import { call, startTestApp, testDatabaseUri, uniqueDbName, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { FAKE_AGENT_SPEC, NEVER_HEALTHY_SPEC, writeSpecsFile } from '../helpers/specs.js';
import { startFakeGitProvider, type FakeGitProvider } from '../helpers/fake-git-provider.js';
import { runCli, startServiceProcess } from '../helpers/processes.js';
import { MongoClient } from 'mongodb';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-conv-'));
const dbName = uniqueDbName('conversations');
let env: Record<string, string>;
let app: TestApp;
let provider: FakeGitProvider;

beforeAll(async () => {
  provider = await startFakeGitProvider();
  provider.validTokens.add('ghp_conversation');
  const specsFile = writeSpecsFile(tmp, [FAKE_AGENT_SPEC, NEVER_HEALTHY_SPEC]);
  env = {
    // One data directory for every replica of this file: process sandboxes live there, and
    // any replica must be able to find (and clean up) a sandbox another one started.
    DATA_DIR: path.join(tmp, 'data'),
    MONGODB_URI: testDatabaseUri(dbName),
    ENCRYPTION_KEY: generateKeyText(),
    SANDBOX_SPECS_FILE: specsFile,
    SANDBOX_STARTUP_TIMEOUT_MS: '3000',
    SANDBOX_MAX_RUNNING_PER_USER: '50',
    START_TASK_POLL_MS: '100',
    // Long enough that a busy 2-core CI machine never lets a live lease lapse (renewed every third).
    START_TASK_LEASE_MS: '10000',
    GITHUB_API_URL: provider.url,
  };
  app = await startTestApp('conversations', env);
});

afterAll(async () => {
  await app.stop();
  await provider.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

let userCounter = 0;
async function userWithSettings(settings: Record<string, unknown> = {}) {
  const userId = `u${++userCounter}-${Math.random().toString(36).slice(2, 6)}`;
  const key = await app.keyFor(userId);
  await call(app, 'POST', '/api/settings', {
    key,
    body: { llm_model: 'openai/stub', llm_api_key: 'sk-stub-key', llm_base_url: 'http://127.0.0.1:9/v1', ...settings },
  });
  return { userId, key };
}

const task = async (key: string, id: string, target = app) =>
  (await call(target, 'GET', `/api/v1/app-conversations/start-tasks?ids=${id}`, { key })).body[0];
const waitForTask = (key: string, id: string, statuses = ['READY', 'ERROR'], target = app) =>
  eventually(
    `task ${statuses.join('/')}`,
    async () => {
      const t = await task(key, id, target);
      return t && statuses.includes(t.status) ? t : null;
    },
    30_000,
  );
const agentConversation = async (agentUrl: string, sessionKey: string, id: string) =>
  ((await (await fetch(`${agentUrl}/api/conversations?ids=${id}`, { headers: { 'x-session-api-key': sessionKey } })).json()) as any[])[0];

describe('V1 start tasks', () => {
  it('returns a WORKING task at once and reaches READY with a git-initialised workspace', async () => {
    const { key } = await userWithSettings();
    const res = await call(app, 'POST', '/api/v1/app-conversations', {
      key,
      body: { initial_message: { content: [{ type: 'text', text: 'Hello agent' }] }, title: 'ignored', unknown_key: 'ignored' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'WORKING',
      app_conversation_id: null,
      sandbox_id: null,
      agent_server_url: null,
      detail: null,
    });
    expect(res.body.id).toMatch(/^[0-9a-f]{32}$/);

    const ready = await waitForTask(key, res.body.id);
    expect(ready).toMatchObject({ status: 'READY', detail: null, sandbox_id: expect.stringMatching(/^[0-9a-f]{32}$/) });
    const conversationId = ready.app_conversation_id as string;
    const [conversation] = (await call(app, 'GET', `/api/v1/app-conversations?ids=${conversationId}&ids=0123`, { key })).body;
    expect(conversation).toMatchObject({
      id: conversationId,
      sandbox_id: ready.sandbox_id,
      sandbox_status: 'RUNNING',
      execution_status: 'idle',
      llm_model: 'openai/stub',
      conversation_url: `${ready.agent_server_url}/api/conversations/${conversationId}`,
      session_api_key: expect.any(String),
      sub_conversation_ids: [],
    });
    const sent = (await agentConversation(ready.agent_server_url, conversation.session_api_key, conversationId)).request;
    expect(fs.existsSync(path.join(sent.workspace.working_dir, '.git'))).toBe(true);
    expect(sent.initial_message).toEqual({ role: 'user', content: [{ type: 'text', text: 'Hello agent' }], run: false });
  });

  it('forwards the user settings to the agent: LLM, confirmation, iterations, MCP, secrets, git identity', async () => {
    const { key } = await userWithSettings({
      confirmation_mode: true,
      max_iterations: 42,
      git_user_name: 'Ada Lovelace',
      git_user_email: 'ada@example.com',
      mcp_config: {
        shttp_servers: [{ url: 'https://mcp.example.com/mcp', api_key: 'mcp-key', timeout: 30 }],
        stdio_servers: [{ name: 'fs', command: 'npx', args: ['-y', 'server-fs'], env: { ROOT: '/tmp' } }],
      },
    });
    await call(app, 'POST', '/api/secrets', { key, body: { name: 'NPM_TOKEN', value: 'npm-secret-value' } });
    const res = await call(app, 'POST', '/api/v1/app-conversations', { key, body: { llm_model: 'openai/override' } });
    const ready = await waitForTask(key, res.body.id);
    const [conversation] = (await call(app, 'GET', `/api/v1/app-conversations?ids=${ready.app_conversation_id}`, { key })).body;
    const sent = (await agentConversation(ready.agent_server_url, conversation.session_api_key, ready.app_conversation_id)).request;
    // The LLM gateway's URL and the conversation's token, never the key or its base URL (docs/llm-gateway.md).
    expect(sent.agent.llm).toEqual({
      usage_id: 'agent',
      model: 'openai/override',
      base_url: expect.stringMatching(/\/llm\/v1$/),
      api_key: expect.stringMatching(new RegExp(`^ohg_${ready.app_conversation_id}_`)),
    });
    expect(JSON.stringify(sent)).not.toContain('sk-stub-key');
    expect(JSON.stringify(sent)).not.toContain('mcp-key');
    expect(JSON.stringify(sent)).not.toContain('127.0.0.1:9');
    expect(sent.confirmation_policy).toEqual({ kind: 'AlwaysConfirm' });
    expect(sent.max_iterations).toBe(42);
    // A remote MCP server with a key is reached through the gateway with the conversation's token.
    expect(sent.agent.mcp_config).toEqual({
      shttp_0: {
        url: expect.stringMatching(/\/llm\/mcp\/shttp_0$/),
        transport: 'streamable-http',
        timeout: 30,
        headers: { Authorization: `Bearer ${sent.agent.llm.api_key}` },
      },
      fs: { command: 'npx', args: ['-y', 'server-fs'], env: { ROOT: '/tmp' } },
    });
    expect(sent.secrets).toEqual({ NPM_TOKEN: { kind: 'StaticSecret', value: 'npm-secret-value' } });
    const gitConfig = fs.readFileSync(path.join(sent.workspace.working_dir, '.git', 'config'), 'utf8');
    expect(gitConfig).toContain('name = Ada Lovelace');
    expect(gitConfig).toContain('email = ada@example.com');
    // The task record keeps no secret in clear.
    const rawTask = JSON.stringify(await app.rawCollection('start_tasks').findOne({ _id: res.body.id }));
    expect(rawTask).not.toContain('sk-stub-key');
    expect(rawTask).not.toContain('npm-secret-value');
  });

  it('gives the agent GIT_TOKEN as a lookup that answers the current token to the signed holder only', async () => {
    const { key } = await userWithSettings();
    await call(app, 'POST', '/api/add-git-providers', { key, body: { provider_tokens: { github: { token: 'ghp_conversation' } } } });
    const res = await call(app, 'POST', '/api/v1/app-conversations', { key, body: { git_provider: 'github' } });
    const ready = await waitForTask(key, res.body.id);
    const [conversation] = (await call(app, 'GET', `/api/v1/app-conversations?ids=${ready.app_conversation_id}`, { key })).body;
    const lookup = (await agentConversation(ready.agent_server_url, conversation.session_api_key, ready.app_conversation_id)).request
      .secrets.GIT_TOKEN;
    // The URL is the service as the sandbox reaches it, through its network's one path.
    expect(lookup).toMatchObject({ kind: 'LookupSecret', url: 'http://127.0.0.1:8010/api/v1/webhooks/secrets' });
    const fetchInside = `/usr/bin/python3 -c "import json, sys, urllib.request as u; print(u.urlopen(u.Request(sys.argv[1], headers=json.loads(sys.argv[2]))).read().decode())"`;
    const inside = await new AgentServerClient(ready.agent_server_url, conversation.session_api_key).bash(
      `${fetchInside} '${lookup.url}' '${JSON.stringify(lookup.headers)}'`,
    );
    expect(inside.stdout.trim()).toBe('ghp_conversation');
    const answer = await fetch(`${app.url}/api/v1/webhooks/secrets`, { headers: lookup.headers });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await answer.text()).toBe('ghp_conversation');
    const forged = lookup.headers['X-Access-Token'].replace(/.$/, (c: string) => (c === 'A' ? 'B' : 'A'));
    expect((await fetch(`${app.url}/api/v1/webhooks/secrets`, { headers: { 'X-Access-Token': forged } })).status).toBe(401);
    expect((await fetch(`${app.url}/api/v1/webhooks/secrets`, { headers: { 'x-session-api-key': key } })).status).toBe(401);
  });

  it('ends in ERROR with a reason when settings, the model or the LLM key are missing', async () => {
    const nobody = await app.keyFor('no-settings');
    const noSettings = (await call(app, 'POST', '/api/v1/app-conversations', { key: nobody, body: {} })).body;
    expect(await waitForTask(nobody, noSettings.id)).toMatchObject({
      status: 'ERROR',
      detail: 'Settings not found: save your LLM settings first',
    });

    const { key } = await userWithSettings({ llm_api_key: '' });
    const noKey = (await call(app, 'POST', '/api/v1/app-conversations', { key, body: {} })).body;
    expect(await waitForTask(key, noKey.id)).toMatchObject({
      status: 'ERROR',
      detail: 'Error authenticating with the LLM provider. Please check your API key',
    });
  });

  it('ends in ERROR when no stored token can read the repository', async () => {
    const { key } = await userWithSettings();
    const res = await call(app, 'POST', '/api/v1/app-conversations', {
      key,
      body: { selected_repository: 'acme/private', git_provider: 'github' },
    });
    expect(await waitForTask(key, res.body.id)).toMatchObject({
      status: 'ERROR',
      detail: 'Git provider authentication issue when getting remote URL: cannot access acme/private',
    });
  });

  it('ends in ERROR naming the outage, not the access, when the git provider is down', async () => {
    const { key } = await userWithSettings();
    await call(app, 'POST', '/api/add-git-providers', { key, body: { provider_tokens: { github: { token: 'ghp_conversation' } } } });
    provider.failWith = 503;
    try {
      const res = await call(app, 'POST', '/api/v1/app-conversations', {
        key,
        body: { selected_repository: 'acme/widgets', git_provider: 'github' },
      });
      expect(await waitForTask(key, res.body.id)).toMatchObject({ status: 'ERROR', detail: 'github is failing (HTTP 503)' });
    } finally {
      provider.failWith = null;
    }
  });

  it('ends in ERROR within the timeout when the sandbox never becomes healthy', async () => {
    const { key } = await userWithSettings();
    const sandbox = (await call(app, 'POST', '/api/v1/sandboxes?sandbox_spec_id=never-healthy', { key })).body;
    const started = Date.now();
    const res = await call(app, 'POST', '/api/v1/app-conversations', { key, body: { sandbox_id: sandbox.id } });
    const failed = await waitForTask(key, res.body.id);
    expect(failed.status).toBe('ERROR');
    expect(failed.detail).toBe(`Sandbox ${sandbox.id} failed to start: The agent server did not become healthy within 3 s`);
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it('resumes a paused sandbox given in the request and continues', async () => {
    const { key } = await userWithSettings();
    const first = await waitForTask(key, (await call(app, 'POST', '/api/v1/app-conversations', { key, body: {} })).body.id);
    await call(app, 'POST', `/api/v1/sandboxes/${first.sandbox_id}/pause`, { key });
    const second = await waitForTask(
      key,
      (await call(app, 'POST', '/api/v1/app-conversations', { key, body: { sandbox_id: first.sandbox_id } })).body.id,
    );
    expect(second).toMatchObject({ status: 'READY', sandbox_id: first.sandbox_id });
  });

  it('streams task snapshots as a JSON array that ends with READY', async () => {
    const { key } = await userWithSettings();
    const response = await fetch(`${app.url}/api/v1/app-conversations/stream-start`, {
      method: 'POST',
      headers: { 'x-session-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({}),
    });
    expect(response.status).toBe(200);
    const snapshots = JSON.parse(await response.text()) as { status: string }[];
    expect(snapshots[0]?.status).toBe('WORKING');
    expect(snapshots.at(-1)?.status).toBe('READY');
    const order: string[] = StartTaskStatusSchema.options.filter((status) => status !== 'ERROR');
    const seen = snapshots.map((s) => order.indexOf(s.status));
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
  });

  it('pushes task progress to a tRPC subscription (SSE) until READY', async () => {
    const { key } = await userWithSettings();
    const headers = { 'x-session-api-key': key };
    const trpc = createTRPCClient<AppRouter>({
      links: [
        splitLink({
          condition: (op) => op.type === 'subscription',
          true: httpSubscriptionLink({
            url: `${app.url}/trpc`,
            transformer,
            EventSource,
            eventSourceOptions: () => ({ fetch: (input, init) => fetch(input, { ...init, headers: { ...init?.headers, ...headers } }) }),
          }),
          false: httpBatchLink({ url: `${app.url}/trpc`, transformer, headers }),
        }),
      ],
    });
    const started = await trpc.appConversations.start.mutate({});
    const statuses = await new Promise<string[]>((resolve, reject) => {
      const seen: string[] = [];
      const subscription = trpc.appConversations.watchStartTask.subscribe(
        { task_id: started.id },
        {
          onData: (snapshot) => {
            seen.push(snapshot.status);
            if (snapshot.status === 'READY' || snapshot.status === 'ERROR') {
              subscription.unsubscribe();
              resolve(seen);
            }
          },
          onError: reject,
        },
      );
    });
    expect(statuses.at(-1)).toBe('READY');
    expect(statuses.length).toBeGreaterThan(1);
  });
});

describe('durability', () => {
  async function insertTask(userId: string, fields: Record<string, unknown>) {
    const id = Math.random().toString(16).slice(2).padEnd(32, '0').slice(0, 32);
    const now = new Date();
    await app.rawCollection('start_tasks').insertOne({
      _id: id as never,
      userId,
      status: 'PREPARING_REPOSITORY',
      detail: null,
      app_conversation_id: null,
      sandbox_id: null,
      agent_server_url: null,
      request: { pr_number: [], agent_type: 'default' },
      conversationId: id.split('').reverse().join(''),
      mcpConfig: null,
      attempts: 1,
      leaseOwner: 'replica-that-crashed',
      leaseExpiresAt: new Date(now.getTime() - 1000),
      createdAt: now,
      updatedAt: now,
      ...fields,
    });
    // Its claim-queue entry, as the service keeps it: due when the lease ends.
    const leaseEnd = (fields.leaseExpiresAt as Date | undefined) ?? new Date(now.getTime() - 1000);
    await app.rawCollection('start_task_queue').insertOne({ _id: id as never, dueAt: leaseEnd, createdAt: now });
    return id;
  }

  it('finishes a task whose worker died mid-way (expired lease)', async () => {
    const { userId, key } = await userWithSettings();
    const id = await insertTask(userId, {});
    expect(await waitForTask(key, id)).toMatchObject({ status: 'READY' });
  });

  it('launches the reserved sandbox anew when the restart came between its record and its start', async () => {
    const { userId, key } = await userWithSettings();
    // The earlier attempt recorded the sandbox its request reserved, and died before starting it.
    const { sandboxes, sandboxSpecs } = app.server.deps.services;
    const reserved = await sandboxes.insertRecord(userId, sandboxSpecs.default);
    const id = await insertTask(userId, { reservedSandboxId: reserved._id });
    expect(await waitForTask(key, id)).toMatchObject({ status: 'READY', sandbox_id: reserved._id, detail: null });
    const [sandbox] = (await call(app, 'GET', `/api/v1/sandboxes?id=${reserved._id}`, { key })).body;
    expect(sandbox).toMatchObject({ id: reserved._id, status: 'RUNNING' });
  });

  it('gives up, with a reason, on a task interrupted too often or too old', async () => {
    const { userId, key } = await userWithSettings();
    const tooOften = await insertTask(userId, { attempts: 3 });
    expect(await waitForTask(key, tooOften)).toMatchObject({
      status: 'ERROR',
      detail: 'The start was interrupted 3 times (service restarts) and was given up',
    });
    const tooOld = await insertTask(userId, { createdAt: new Date(Date.now() - 16 * 60_000) });
    expect(await waitForTask(key, tooOld)).toMatchObject({ status: 'ERROR', detail: 'The start did not finish within 15 minutes' });
  });

  it('leaves a task with a live lease alone (another replica is working it)', async () => {
    const { userId, key } = await userWithSettings();
    const id = await insertTask(userId, { leaseExpiresAt: new Date(Date.now() + 60_000) });
    // The runner has looked for due work a few times since (its queries of the queue).
    const polls = () =>
      app.commands.filter((c) => c.commandName === 'find' && (c.command as { find?: string }).find === 'start_task_queue').length;
    const target = polls() + 3;
    await eventually('three polls of the task queue', async () => polls() >= target);
    expect((await task(key, id)).status).toBe('PREPARING_REPOSITORY');
    // That replica's lease ends (on the task, and so in the queue).
    await app.rawCollection('start_tasks').updateOne({ _id: id as never }, { $set: { leaseExpiresAt: new Date(0) } });
    await app.rawCollection('start_task_queue').updateOne({ _id: id as never }, { $set: { dueAt: new Date(0) } });
    expect(await waitForTask(key, id)).toMatchObject({ status: 'READY' });
  });

  it('finishes a start after the service is killed mid-way and restarted', { timeout: 120_000 }, async () => {
    // A database of its own, so this file's in-process app (a replica too) cannot take the task.
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-killed-'));
    // A short lease: after the kill, the restarted service may take the task over soon.
    const processEnv = {
      ...env,
      DATA_DIR: dataDir,
      MONGODB_URI: testDatabaseUri(uniqueDbName('killed')),
      START_TASK_POLL_MS: '200',
      START_TASK_LEASE_MS: '2000',
    };
    const mongo = await new MongoClient(processEnv.MONGODB_URI).connect();
    let service = await startServiceProcess(processEnv);
    const at = (target: { url: string }) => async (id: string) =>
      (await call(target, 'GET', `/api/v1/app-conversations/start-tasks?ids=${id}`, { key })).body[0];
    let key = '';
    try {
      key = lastLine((await runCli(['keys', 'create', '--user', 'crash-user'], processEnv)).stdout);
      await call(service, 'POST', '/api/settings', { key, body: { llm_model: 'openai/stub', llm_api_key: 'sk-crash' } });
      const started = await call(service, 'POST', '/api/v1/app-conversations', { key, body: {} });
      await eventually('the task to be under way', async () => {
        const t = await at(service)(started.body.id);
        return t && !['WORKING', 'READY', 'ERROR'].includes(t.status) ? t : null;
      });
      await service.kill();
      const killedLog = service.stdout();
      const interrupted = await mongo.db().collection('start_tasks').findOne({ _id: started.body.id });
      expect(['READY', 'ERROR']).not.toContain(interrupted?.status);

      service = await startServiceProcess(processEnv);
      const done = await eventually('the restarted service to finish the task', async () => {
        const t = await at(service)(started.body.id);
        return ['READY', 'ERROR'].includes(t?.status) ? t : null;
      }).catch(async (error: Error) => {
        // What the task, its claim-queue entry and the restarted service say, for the failure's report.
        const db = mongo.db();
        const task = await db.collection('start_tasks').findOne({ _id: started.body.id });
        const entry = await db.collection('start_task_queue').findOne({ _id: started.body.id });
        throw new Error(
          `${error.message}\ntask: ${JSON.stringify(task)}\nqueue entry: ${JSON.stringify(entry)}\n${service.stdout().slice(-4000)}`,
        );
      });
      // The detail and the restarted service's last lines say why, if it ended otherwise.
      expect({
        status: done.status,
        detail: done.detail,
        log: done.status === 'READY' ? '' : `${killedLog.slice(-3000)}\n---\n${service.stdout().slice(-3000)}`,
      }).toEqual({
        status: 'READY',
        detail: null,
        log: '',
      });
      expect((await mongo.db().collection('start_tasks').findOne({ _id: started.body.id }))?.attempts).toBe(2);
    } finally {
      for (const s of await mongo.db().collection('sandboxes').find({}).toArray()) {
        await call(service, 'DELETE', `/api/v1/sandboxes/${String(s._id)}`, { key });
      }
      await service.stop();
      await mongo.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('works each task exactly once with two replicas on one database', async () => {
    const second = await startTestApp('conversations-replica', env);
    try {
      const { key } = await userWithSettings();
      const ids: string[] = [];
      for (let i = 0; i < 4; i++) {
        const target = i % 2 ? second : app;
        ids.push((await call(target, 'POST', '/api/v1/app-conversations', { key, body: {} })).body.id);
      }
      const done = await Promise.all(ids.map((id) => waitForTask(key, id)));
      expect(done.map((t) => t.status)).toEqual(['READY', 'READY', 'READY', 'READY']);
      // One sandbox and one conversation per task: no task was worked twice.
      expect(new Set(done.map((t) => t.sandbox_id)).size).toBe(4);
      const conversations = await app
        .rawCollection('app_conversations')
        .countDocuments({ _id: { $in: done.map((t) => t.app_conversation_id) } as never });
      expect(conversations).toBe(4);
      const attempts = await app
        .rawCollection('start_tasks')
        .find({ _id: { $in: ids } as never })
        .toArray();
      expect(attempts.map((t) => t.attempts)).toEqual([1, 1, 1, 1]);
    } finally {
      await second.stop({ keepSandboxes: true });
    }
  });
});

describe('isolation and paging', () => {
  it("keeps users' conversations and tasks apart", async () => {
    const alice = await userWithSettings();
    const bob = await userWithSettings();
    const ready = await waitForTask(
      alice.key,
      (await call(app, 'POST', '/api/v1/app-conversations', { key: alice.key, body: {} })).body.id,
    );
    const id = ready.app_conversation_id as string;
    expect((await call(app, 'GET', `/api/v1/app-conversations/start-tasks?ids=${ready.id}`, { key: bob.key })).body).toEqual([null]);
    expect((await call(app, 'GET', `/api/v1/app-conversations?ids=${id}`, { key: bob.key })).body).toEqual([null]);
    expect((await call(app, 'GET', '/api/v1/app-conversations/search', { key: bob.key })).body.items).toEqual([]);
    expect((await call(app, 'GET', '/api/v1/app-conversations/count', { key: bob.key })).body).toBe(0);
    expect((await call(app, 'GET', '/api/v1/app-conversations/start-tasks/count', { key: bob.key })).body).toBe(0);
    expect((await call(app, 'GET', `/api/conversations/${id}`, { key: bob.key })).body).toBeNull();
    expect((await call(app, 'PATCH', `/api/conversations/${id}`, { key: bob.key, body: { title: 'mine now' } })).status).toBe(404);
    expect((await call(app, 'DELETE', `/api/conversations/${id}`, { key: bob.key })).body).toBe(false);
    expect((await call(app, 'GET', `/api/conversations/${id}`, { key: alice.key })).body).toMatchObject({
      conversation_id: id,
      status: 'RUNNING',
    });
  });

  it('pages through every conversation exactly once (V1 and V0 lists)', async () => {
    const { userId, key } = await userWithSettings();
    const ids = Array.from(
      { length: 7 },
      (_, i) =>
        `${userId
          .replace(/[^0-9a-f]/g, '')
          .padEnd(8, 'a')
          .slice(0, 8)}${String(i).padStart(24, '0')}`,
    );
    // Through the record tables, as the store writes: on the embedded FerretDB they keep the lists the searches read.
    const conversations = app.server.deps.db.tables.conversations;
    for (const [i, id] of ids.entries()) {
      await conversations.insert({
        _id: id,
        userId,
        sandboxId: 'gone',
        title: `Paged ${i}`,
        pr_number: [],
        createdAt: new Date(Date.now() - i * 1000),
        updatedAt: new Date(),
      });
    }
    const collect = async (first: string, next: (page: any) => string | null, items: (page: any) => any[], idOf: (item: any) => string) => {
      const seen: string[] = [];
      let url: string | null = first;
      while (url) {
        const page: any = (await call(app, 'GET', url, { key })).body;
        seen.push(...items(page).map(idOf));
        const nextId = next(page);
        url = nextId ? `${first}&page_id=${encodeURIComponent(nextId)}` : null;
      }
      return seen;
    };
    const v1 = await collect(
      '/api/v1/app-conversations/search?limit=3',
      (p) => p.next_page_id,
      (p) => p.items,
      (c) => c.id,
    );
    expect(v1).toEqual(ids);
    expect(
      await collect(
        '/api/conversations?limit=2',
        (p) => p.next_page_id,
        (p) => p.results,
        (c) => c.conversation_id,
      ),
    ).toEqual(ids);
    expect((await call(app, 'GET', '/api/v1/app-conversations/count?title__contains=paged', { key })).body).toBe(7);
    const missing = (await call(app, 'GET', `/api/v1/app-conversations?ids=${ids[0]}`, { key })).body[0];
    expect(missing).toMatchObject({ sandbox_status: 'MISSING', conversation_url: null, execution_status: null });
  });
});

describe('V0 conversation endpoints', () => {
  it('creates, reads, renames, lists and deletes a conversation (and its sandbox)', async () => {
    const { key } = await userWithSettings();
    const created = await call(app, 'POST', '/api/conversations', {
      key,
      body: { initial_user_msg: 'Fix the bug', conversation_instructions: 'Be brief' },
    });
    expect(created.status).toBe(200);
    expect(created.body).toEqual({
      status: 'ok',
      conversation_id: expect.stringMatching(/^[0-9a-f]{32}$/),
      message: null,
      conversation_status: 'STARTING',
    });
    const id = created.body.conversation_id as string;
    expect((await call(app, 'GET', `/api/conversations/${id}`, { key })).body).toMatchObject({
      conversation_id: id,
      conversation_version: 'V1',
      trigger: 'gui',
    });
    const running = await eventually('V0 RUNNING', async () => {
      const info = (await call(app, 'GET', `/api/conversations/${id}`, { key })).body;
      return info?.status === 'RUNNING' ? info : null;
    });
    expect(running).toMatchObject({
      runtime_status: 'STATUS$READY',
      url: expect.stringContaining(`/api/conversations/${id}`),
      num_connections: 0,
    });

    expect(await call(app, 'PATCH', `/api/conversations/${id}`, { key, body: { title: '  Renamed  ' } })).toMatchObject({
      status: 200,
      body: true,
    });
    const listed = (await call(app, 'GET', '/api/conversations?limit=5', { key })).body;
    expect(listed.results).toContainEqual(expect.objectContaining({ conversation_id: id, title: 'Renamed' }));

    const sandboxId = (await call(app, 'GET', `/api/v1/app-conversations?ids=${id}`, { key })).body[0].sandbox_id;
    expect(await call(app, 'DELETE', `/api/conversations/${id}`, { key })).toMatchObject({ status: 200, body: true });
    expect((await call(app, 'GET', `/api/conversations/${id}`, { key })).body).toBeNull();
    expect((await call(app, 'GET', `/api/v1/sandboxes?id=${sandboxId}`, { key })).body).toEqual([null]);
    expect((await call(app, 'DELETE', `/api/conversations/${id}`, { key })).body).toBe(false);
  });

  it("hands the agent server the user's plugin marketplaces and title prompt (2026 settings)", async () => {
    const { key } = await userWithSettings();
    const marketplace = { name: 'team', source: 'github:acme/plugins', auto_load: true };
    await call(app, 'POST', '/api/v1/settings', {
      key,
      body: { registered_marketplaces: [marketplace], title_generation_prompt: 'Title: {conversation_content}' },
    });
    const res = await call(app, 'POST', '/api/v1/app-conversations', { key, body: {} });
    const ready = await waitForTask(key, res.body.id);
    const [conversation] = (await call(app, 'GET', `/api/v1/app-conversations?ids=${ready.app_conversation_id}`, { key })).body;
    const sent = (await agentConversation(ready.agent_server_url, conversation.session_api_key, ready.app_conversation_id)).request;
    expect(sent.agent.agent_context.registered_marketplaces).toEqual([marketplace]);
    expect(sent.prompt).toBe('Title: {conversation_content}');
  });

  it('applies a suggested task and a per-conversation MCP override (kept encrypted meanwhile)', async () => {
    const { key } = await userWithSettings({ mcp_config: { sse_servers: ['https://from-settings.example.com/sse'] } });
    const created = await call(app, 'POST', '/api/conversations', {
      key,
      body: {
        suggested_task: {
          git_provider: 'github',
          task_type: 'OPEN_ISSUE',
          repo: 'acme/widgets',
          issue_number: 12,
          title: 'Crash on start',
        },
        repository: null,
        mcp_config: { shttp_servers: [{ url: 'https://override.example.com/mcp', api_key: 'override-secret' }] },
      },
    });
    // No token can read acme/widgets here, so this is refused as the reference does...
    expect(created.status).toBe(401);
    // ...and with no repository involved the override reaches the agent.
    const plain = await call(app, 'POST', '/api/conversations', {
      key,
      body: {
        initial_user_msg: 'hi',
        mcp_config: { shttp_servers: [{ url: 'https://override.example.com/mcp', api_key: 'override-secret' }] },
      },
    });
    const id = plain.body.conversation_id as string;
    const rawTask = await app.rawCollection('start_tasks').findOne({ conversationId: id });
    expect(JSON.stringify(rawTask)).not.toContain('override-secret');
    await eventually('RUNNING', async () => (await call(app, 'GET', `/api/conversations/${id}`, { key })).body?.status === 'RUNNING');
    const [conversation] = (await call(app, 'GET', `/api/v1/app-conversations?ids=${id}`, { key })).body;
    const agentUrl = conversation.conversation_url.replace(/\/api\/conversations\/.*$/, '');
    const sent = (await agentConversation(agentUrl, conversation.session_api_key, id)).request;
    // The override's server, through the gateway (its key stays with the service's route).
    expect(sent.agent.mcp_config).toEqual({
      shttp_0: {
        url: expect.stringMatching(/\/llm\/mcp\/shttp_0$/),
        transport: 'streamable-http',
        timeout: 60,
        headers: { Authorization: `Bearer ${sent.agent.llm.api_key}` },
      },
    });
    expect(JSON.stringify(sent)).not.toContain('override-secret');
    const route = await app.server.deps.services.llmRoutes.byToken(sent.agent.llm.api_key);
    expect(app.server.deps.services.llmRoutes.mcpServer(route!, 'shttp_0')).toEqual({
      name: 'shttp_0',
      url: 'https://override.example.com/mcp',
      apiKey: 'override-secret',
    });
    expect(sent.initial_message.content).toEqual([{ type: 'text', text: 'hi' }]);
  });

  it('reads a failed start as ERROR with the error runtime status (the d6 UI shows an error, not "Connecting…")', async () => {
    const { key } = await userWithSettings();
    const sandbox = (await call(app, 'POST', '/api/v1/sandboxes?sandbox_spec_id=never-healthy', { key })).body;
    const res = await call(app, 'POST', '/api/v1/app-conversations', { key, body: { sandbox_id: sandbox.id } });
    expect((await waitForTask(key, res.body.id)).status).toBe('ERROR');
    // The conversation is marked failed just after its task's ERROR is written.
    const failed = await eventually('the conversation to read ERROR', async () =>
      ((await call(app, 'GET', '/api/conversations?limit=100', { key })).body.results as any[]).find((c) => c.status === 'ERROR'),
    );
    expect(failed).toMatchObject({ status: 'ERROR', runtime_status: 'STATUS$ERROR', url: null });
    expect((await call(app, 'GET', `/api/conversations/${failed.conversation_id}`, { key })).body).toMatchObject({
      conversation_id: failed.conversation_id,
      status: 'ERROR',
      runtime_status: 'STATUS$ERROR',
    });
  });

  it('answers the reference errors: settings, LLM key, repository access, bad ids, unknown keys', async () => {
    const nobody = await app.keyFor('v0-nobody');
    expect(await call(app, 'POST', '/api/conversations', { key: nobody, body: {} })).toMatchObject({
      status: 400,
      body: { status: 'error', message: 'Settings not found', msg_id: 'CONFIGURATION$SETTINGS_NOT_FOUND' },
    });
    const { key: noKey } = await userWithSettings({ llm_api_key: '' });
    expect(await call(app, 'POST', '/api/conversations', { key: noKey, body: {} })).toMatchObject({
      status: 400,
      body: { msg_id: 'STATUS$ERROR_LLM_AUTHENTICATION', message: 'Error authenticating with the LLM provider. Please check your API key' },
    });
    const { key } = await userWithSettings();
    const repo = await call(app, 'POST', '/api/conversations', { key, body: { repository: 'acme/private' } });
    expect(repo.status).toBe(401);
    expect(repo.body).toBe('Unable to access repo acme/private');
    expect((await call(app, 'POST', '/api/conversations', { key, body: { surprise: 1 } })).status).toBe(422);
    expect(await call(app, 'GET', `/api/conversations/${'a'.repeat(101)}`, { key })).toMatchObject({
      status: 400,
      body: { detail: 'Conversation ID is too long' },
    });
    expect(await call(app, 'GET', '/api/conversations/a..b', { key })).toMatchObject({
      status: 400,
      body: { detail: 'Conversation ID contains invalid path characters' },
    });
  });
});

describe('webhooks from the agent server', () => {
  it('updates status and title with the sandbox key, keeps other fields, and refuses other keys', async () => {
    const alice = await userWithSettings();
    const ready = await waitForTask(
      alice.key,
      (await call(app, 'POST', '/api/v1/app-conversations', { key: alice.key, body: { trigger: 'gui', pr_number: [7] } })).body.id,
    );
    const id = ready.app_conversation_id as string;
    const sandboxKey = (await call(app, 'GET', `/api/v1/sandboxes?id=${ready.sandbox_id}`, { key: alice.key })).body[0].session_api_key;
    const base = `/api/v1/webhooks/${ready.sandbox_id}`;

    const dashed = `${id.slice(0, 8)}-${id.slice(8, 12)}-${id.slice(12, 16)}-${id.slice(16, 20)}-${id.slice(20)}`;
    const events = [
      {
        kind: 'MessageEvent',
        source: 'user',
        llm_message: { role: 'user', content: [{ type: 'text', text: 'Please refactor the parser module\nthanks' }] },
      },
      { kind: 'ConversationStateUpdateEvent', key: 'execution_status', value: 'running' },
    ];
    expect(
      await call(app, 'POST', `${base}/events/${dashed.replace(/-/g, '')}`, { body: events, headers: { 'x-session-api-key': sandboxKey } }),
    ).toMatchObject({
      status: 200,
      body: { success: true },
    });
    let stored = await app.rawCollection('app_conversations').findOne({ _id: id as never });
    expect(stored).toMatchObject({
      title: 'Please refactor the parser module',
      execution_status: 'running',
      trigger: 'gui',
      pr_number: [7],
    });

    const info = { id: dashed, title: 'Parser refactor', execution_status: 'finished', agent: { llm: { model: 'openai/stub' } } };
    expect((await call(app, 'POST', `${base}/conversations`, { body: info, headers: { 'x-session-api-key': sandboxKey } })).status).toBe(
      200,
    );
    stored = await app.rawCollection('app_conversations').findOne({ _id: id as never });
    expect(stored).toMatchObject({
      title: 'Parser refactor',
      execution_status: 'finished',
      trigger: 'gui',
      pr_number: [7],
      llm_model: 'openai/stub',
    });

    // The user's own API key, another sandbox's key, or no key: 401, nothing changes.
    const bob = await userWithSettings();
    const bobReady = await waitForTask(bob.key, (await call(app, 'POST', '/api/v1/app-conversations', { key: bob.key, body: {} })).body.id);
    const bobSandboxKey = (await call(app, 'GET', `/api/v1/sandboxes?id=${bobReady.sandbox_id}`, { key: bob.key })).body[0].session_api_key;
    for (const headers of [{ 'x-session-api-key': alice.key }, { 'x-session-api-key': bobSandboxKey as string }, {}] as Record<
      string,
      string
    >[]) {
      const refused = await call(app, 'POST', `${base}/conversations`, { body: { ...info, title: 'hijacked' }, headers });
      expect(refused).toMatchObject({ status: 401, body: { detail: 'Unauthorized' } });
    }
    // Bob's sandbox cannot write into alice's conversation either.
    const crossed = await call(app, 'POST', `/api/v1/webhooks/${bobReady.sandbox_id}/conversations`, {
      body: { ...info, title: 'hijacked' },
      headers: { 'x-session-api-key': bobSandboxKey },
    });
    expect(crossed.status).toBe(401);
    expect((await app.rawCollection('app_conversations').findOne({ _id: id as never }))?.title).toBe('Parser refactor');
  });
});

const lastLine = (text: string) => text.trim().split('\n').at(-1)!;
