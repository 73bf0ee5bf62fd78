// Sandboxes on the local-process runtime, over real HTTP: each sandbox is a real child
// process (a small fake agent server) with its own directory and loopback port.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTRPCClient, httpBatchLink } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppRouter } from '../../routers/index.js';
import { transformer } from '../../src/trpc/transformer.js';
import { generateKeyText } from '../../src/crypto.js';
import { call, startTestApp, testDatabaseUri, uniqueDbName, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { FAKE_AGENT_SPEC, NEVER_HEALTHY_SPEC, writeSpecsFile } from '../helpers/specs.js';
import { describeSandboxContract } from './contract.js';

let app: TestApp;
let alice: string;
let bob: string;
const specsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-specs-'));
const created: { key: string; id: string }[] = [];

beforeAll(async () => {
  const specsFile = writeSpecsFile(specsDir, [
    FAKE_AGENT_SPEC,
    NEVER_HEALTHY_SPEC,
    { id: 'needs-python', command: ['{agent_server_python}', '-m', 'openhands.agent_server', '--port', '{port}'] },
    { id: 'no-such-binary', command: ['/nonexistent/agent-server'] },
  ]);
  app = await startTestApp('sandboxes', {
    SANDBOX_SPECS_FILE: specsFile,
    SANDBOX_MAX_RUNNING_PER_USER: '2',
    SANDBOX_STARTUP_TIMEOUT_MS: '2000',
    AGENT_SERVER_PYTHON: '/nonexistent/python3.12',
  });
  alice = await app.keyFor('alice');
  bob = await app.keyFor('bob');
});

afterAll(async () => {
  for (const { key, id } of created) await call(app, 'DELETE', `/api/v1/sandboxes/${id}`, { key });
  await app.stop();
  fs.rmSync(specsDir, { recursive: true, force: true });
});

async function startSandbox(key: string, specId = 'fake-agent') {
  const res = await call(app, 'POST', `/api/v1/sandboxes?sandbox_spec_id=${encodeURIComponent(specId)}`, { key });
  if (res.status === 200) created.push({ key, id: res.body.id });
  return res;
}

const getSandbox = async (key: string, id: string) => (await call(app, 'GET', `/api/v1/sandboxes?id=${id}`, { key })).body[0];

const waitForStatus = (key: string, id: string, status: string) =>
  eventually(`sandbox ${id} ${status}`, async () => {
    const info = await getSandbox(key, id);
    return info?.status === status ? info : null;
  });

describe('sandbox specs', () => {
  it('lists the configured specs, first is the default', async () => {
    const page = await call(app, 'GET', '/api/v1/sandbox-specs/search?limit=2', { key: alice });
    expect(page.status).toBe(200);
    expect(page.body.items.map((s: { id: string }) => s.id)).toEqual(['fake-agent', 'never-healthy']);
    expect(page.body.next_page_id).toBe('2');
    const next = await call(app, 'GET', '/api/v1/sandbox-specs/search?limit=2&page_id=2', { key: alice });
    expect(next.body).toMatchObject({ items: [{ id: 'needs-python' }, { id: 'no-such-binary' }], next_page_id: null });
    expect(page.body.items[0]).toEqual({
      id: 'fake-agent',
      command: expect.any(Array),
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      initial_env: {},
      working_dir: '{sandbox_dir}/workspace/project',
    });
  });

  it('batch-gets specs in request order with null for unknown ids', async () => {
    const res = await call(app, 'GET', '/api/v1/sandbox-specs?id=never-healthy&id=nope&id=fake-agent', { key: alice });
    expect(res.body.map((s: { id: string } | null) => s?.id ?? null)).toEqual(['never-healthy', null, 'fake-agent']);
  });

  it('rejects limit 0 and limit above 100 with 422 on the query', async () => {
    for (const limit of ['0', '101', 'abc']) {
      const res = await call(app, 'GET', `/api/v1/sandbox-specs/search?limit=${limit}`, { key: alice });
      expect(res.status, limit).toBe(422);
      expect(res.body.detail[0].loc).toEqual(['query', 'limit']);
    }
  });
});

describe('sandbox lifecycle (process runtime)', () => {
  let sandboxId: string;
  let sessionKey: string;

  it('starts a sandbox that becomes RUNNING with an AGENT_SERVER URL and its own session key', async () => {
    const res = await startSandbox(alice);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      sandbox_spec_id: 'fake-agent',
      created_by_user_id: 'alice',
      status: expect.stringMatching(/STARTING|RUNNING/),
    });
    expect(res.body.id).toMatch(/^[0-9a-f]{32}$/);
    sandboxId = res.body.id;
    sessionKey = res.body.session_api_key;
    expect(sessionKey).toMatch(/^[0-9A-Za-z]{43}$/);

    const running = await waitForStatus(alice, sandboxId, 'RUNNING');
    const agentUrl = running.exposed_urls.find((u: { name: string }) => u.name === 'AGENT_SERVER').url;
    expect(agentUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    // The agent server answers only with the sandbox's key, and got the webhook URL.
    expect((await fetch(`${agentUrl}/api/test/env`)).status).toBe(401);
    const env = (await (await fetch(`${agentUrl}/api/test/env`, { headers: { 'x-session-api-key': sessionKey } })).json()) as any;
    // Isolated, it calls back through its network's one path to the service (src/sandbox/isolation/sandbox-network.ts).
    expect(env.webhookBaseUrl).toBe(`http://127.0.0.1:8010/api/v1/webhooks/${sandboxId}`);
    // Two worker ports, named as the reference names them, the reference container's inside its own
    // network and forwarded from host ports; VS Code is on by default in the agent server but not
    // running here, so it is not exposed.
    expect(env.ports).toMatchObject({ WORKER_1: '8011', WORKER_2: '8012', OH_VSCODE_PORT: '8001' });
    const exposed = running.exposed_urls.map((u: { name: string; url: string }) => u.name);
    expect(exposed).toEqual(['AGENT_SERVER', 'WORKER_1', 'WORKER_2']);
    const hostPorts = running.exposed_urls.map((u: { url: string }) => Number(new URL(u.url).port));
    expect(new Set(hostPorts).size).toBe(3);
    for (const port of hostPorts) expect([8000, 8011, 8012]).not.toContain(port);
    // Nothing of the service's own configuration leaks into the sandbox.
    expect(env.names).not.toContain('ENCRYPTION_KEY');
    expect(env.names).not.toContain('MONGODB_URI');
    // The raw record holds the session key encrypted.
    const raw = await app.rawCollection('sandboxes').findOne({ _id: sandboxId as never });
    expect(JSON.stringify(raw)).not.toContain(sessionKey);
  });

  it('lists sandboxes newest first and pages through them', async () => {
    const second = await startSandbox(alice);
    const page = await call(app, 'GET', '/api/v1/sandboxes/search?limit=1', { key: alice });
    expect(page.body.items.map((s: { id: string }) => s.id)).toEqual([second.body.id]);
    const rest = await call(app, 'GET', `/api/v1/sandboxes/search?limit=1&page_id=${page.body.next_page_id}`, { key: alice });
    expect(rest.body.items.map((s: { id: string }) => s.id)).toEqual([sandboxId]);
    expect(rest.body.next_page_id).toBeNull();
  });

  it('deletes a sandbox: process and directory gone, then 404 and null', async () => {
    const dir = app.server.deps.runtime.workingDir(sandboxId, app.server.deps.services.sandboxSpecs.find('fake-agent')!);
    const url = (await getSandbox(alice, sandboxId)).exposed_urls[0].url;
    expect(await call(app, 'DELETE', `/api/v1/sandboxes/${sandboxId}`, { key: alice })).toMatchObject({
      status: 200,
      body: { success: true },
    });
    expect(fs.existsSync(dir)).toBe(false);
    await expect(fetch(`${url}/alive`)).rejects.toThrow();
    expect((await call(app, 'GET', `/api/v1/sandboxes?id=${sandboxId}`, { key: alice })).body).toEqual([null]);
    expect((await call(app, 'DELETE', `/api/v1/sandboxes/${sandboxId}`, { key: alice })).status).toBe(404);
    expect((await call(app, 'POST', `/api/v1/sandboxes/${sandboxId}/pause`, { key: alice })).status).toBe(404);
  });

  it('accepts ?sandbox_id= on DELETE as the reference does', async () => {
    const res = await startSandbox(bob);
    const del = await call(app, 'DELETE', `/api/v1/sandboxes/ignored?sandbox_id=${res.body.id}`, { key: bob });
    expect(del).toMatchObject({ status: 200, body: { success: true } });
  });
});

describe('sandbox start failures', () => {
  it('takes the spec from a JSON body, or the default spec with no body and no content type', async () => {
    const carol = await app.keyFor('carol');
    const viaBody = await call(app, 'POST', '/api/v1/sandboxes', { key: carol, body: { sandbox_spec_id: 'fake-agent' } });
    expect(viaBody.status).toBe(200);
    created.push({ key: carol, id: viaBody.body.id });
    const bare = await fetch(`${app.url}/api/v1/sandboxes`, { method: 'POST', headers: { 'x-session-api-key': carol } });
    expect(bare.status).toBe(200);
    const body = (await bare.json()) as any;
    created.push({ key: carol, id: body.id });
    expect(body.sandbox_spec_id).toBe('fake-agent');
  });

  it('answers 404 for an unknown spec and leaves no record', async () => {
    const dave = await app.keyFor('dave');
    const res = await startSandbox(dave, 'nope');
    expect(res).toMatchObject({ status: 404, body: { detail: 'Not Found' } });
    expect(await app.rawCollection('sandboxes').countDocuments({ userId: 'dave' })).toBe(0);
  });

  it('fails at once, naming what is missing, when no Python >= 3.12 is available', async () => {
    const frank = await app.keyFor('frank');
    const started = Date.now();
    const res = await startSandbox(frank, 'needs-python');
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(res.status).toBe(503);
    expect(res.body.detail).toMatch(/Python >= 3\.12/);
    expect(await app.rawCollection('sandboxes').countDocuments({ userId: 'frank' })).toBe(0);
  });

  it('answers 400 for a spec whose command cannot run, leaving nothing behind', async () => {
    const gina = await app.keyFor('gina');
    const res = await startSandbox(gina, 'no-such-binary');
    expect(res.status).toBe(400);
    expect(res.body.detail).toContain('/nonexistent/agent-server');
    expect(await app.rawCollection('sandboxes').countDocuments({ userId: 'gina' })).toBe(0);
  });
});

describe('service restart (process runtime)', () => {
  it('finds a running sandbox again after the service restarts on the same data directory', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-restart-'));
    const env = {
      DATA_DIR: dataDir,
      MONGODB_URI: testDatabaseUri(uniqueDbName('restart')),
      ENCRYPTION_KEY: generateKeyText(),
      SANDBOX_SPECS_FILE: path.join(specsDir, 'specs.json'),
    };
    const first = await startTestApp('restart-1', env);
    const key = await first.keyFor('restarter');
    const id = (await call(first, 'POST', '/api/v1/sandboxes', { key })).body.id as string;
    await eventually(
      'RUNNING',
      async () => (await call(first, 'GET', `/api/v1/sandboxes?id=${id}`, { key })).body[0]?.status === 'RUNNING',
    );
    await first.stop({ keepSandboxes: true });

    const second = await startTestApp('restart-2', env);
    try {
      const info = (await call(second, 'GET', `/api/v1/sandboxes?id=${id}`, { key })).body[0];
      expect(info).toMatchObject({ id, status: 'RUNNING' });
      expect((await fetch(`${info.exposed_urls[0].url}/alive`)).status).toBe(200);
      expect((await call(second, 'DELETE', `/api/v1/sandboxes/${id}`, { key })).status).toBe(200);
      await expect(fetch(`${info.exposed_urls[0].url}/alive`)).rejects.toThrow();
    } finally {
      await second.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
  it('gives a resumed sandbox a new session key: the old one opens nothing, its sealing key stays', async () => {
    const erin = await app.keyFor('erin');
    const start = await startSandbox(erin);
    expect(start.status).toBe(200);
    const started = start.body;
    const running = await waitForStatus(erin, started.id, 'RUNNING');
    const agentUrl = () => running.exposed_urls[0].url as string;
    const envWith = async (url: string, sessionKey: string) =>
      fetch(`${url}/api/test/env`, { headers: { 'x-session-api-key': sessionKey } }).then(async (r) => ({
        status: r.status,
        body: r.ok ? ((await r.json()) as any) : null,
      }));
    const sealing = (await envWith(agentUrl(), started.session_api_key)).body.secretKeyHash;
    expect((await call(app, 'POST', `/api/v1/sandboxes/${started.id}/pause`, { key: erin })).status).toBe(200);
    // Two resumes at once (a page's routes, another replica): one new key, the one the sandbox runs with.
    const resumes = await Promise.all([1, 2].map(() => call(app, 'POST', `/api/v1/sandboxes/${started.id}/resume`, { key: erin })));
    expect(resumes.map((r) => r.status)).toEqual([200, 200]);
    const resumed = await waitForStatus(erin, started.id, 'RUNNING');
    expect(resumed.session_api_key).toMatch(/^[0-9A-Za-z]{43}$/);
    expect(resumed.session_api_key).not.toBe(started.session_api_key);
    const url = resumed.exposed_urls[0].url as string;
    expect((await envWith(url, started.session_api_key)).status).toBe(401);
    const now = await envWith(url, resumed.session_api_key);
    expect(now.status).toBe(200);
    expect(now.body.secretKeyHash).toBe(sealing);
    expect(sealing).not.toBe(createHash('sha256').update(started.session_api_key).digest('hex'));
    expect((await call(app, 'DELETE', `/api/v1/sandboxes/${started.id}`, { key: erin })).status).toBe(200);
  });
});

describe('sandboxes over tRPC', () => {
  it('starts, reads, pauses, resumes and deletes through typed procedures', async () => {
    const key = await app.keyFor('trpc-sandboxes');
    const trpc = createTRPCClient<AppRouter>({
      links: [httpBatchLink({ url: `${app.url}/trpc`, transformer, headers: { 'x-session-api-key': key } })],
    });
    expect((await trpc.sandboxSpecs.search.query({ limit: 1 })).items[0]?.id).toBe('fake-agent');
    const started = await trpc.sandboxes.start.mutate({ sandbox_spec_id: 'fake-agent' });
    created.push({ key, id: started.id });
    await eventually('RUNNING over tRPC', async () => (await trpc.sandboxes.batchGet.query({ id: [started.id] }))[0]?.status === 'RUNNING');
    expect(await trpc.sandboxes.pause.mutate({ sandbox_id: started.id })).toEqual({ success: true });
    expect((await trpc.sandboxes.batchGet.query({ id: [started.id] }))[0]?.status).toBe('PAUSED');
    expect(await trpc.sandboxes.resume.mutate({ sandbox_id: started.id })).toEqual({ success: true });
    expect(await trpc.sandboxes.delete.mutate({ id: started.id })).toEqual({ success: true });
    await expect(trpc.sandboxes.pause.mutate({ sandbox_id: started.id })).rejects.toMatchObject({ data: { code: 'NOT_FOUND' } });
    await expect(trpc.sandboxes.search.query({ limit: 500 })).rejects.toMatchObject({ data: { code: 'BAD_REQUEST' } });
  });
});

describeSandboxContract('process', () => {
  const workspace = (id: string) => app.server.deps.runtime.workingDir(id, app.server.deps.services.sandboxSpecs.find('fake-agent')!);
  return {
    app,
    healthySpec: 'fake-agent',
    neverHealthySpec: 'never-healthy',
    maxRunning: 2,
    // A real file in the sandbox's working directory, written while it runs.
    markWorkspace: async (id) => fs.writeFileSync(path.join(workspace(id), 'contract-mark.txt'), 'kept'),
    workspaceMarked: async (id) => fs.readFileSync(path.join(workspace(id), 'contract-mark.txt'), 'utf8') === 'kept',
  };
});
