// Deferred initialisation and the conversation's environment, on the process runtime with the
// fake agent server (which implements OH_DEFERRED_INIT and POST /api/init as agent server 1.58):
// a warm sandbox of a deferred_init spec waits dormant (its /api/* answers 503) with nothing of a
// user's; the claim initialises it with the session key and the conversation's secrets in its
// environment, and the start reaches READY from the pool. A cold start gets the same environment
// at launch; both keep it across a pause and resume (sealed on the record, never in clear).
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WARM_POOL_OWNER } from '../../models/index.js';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { userWithSettings, waitForSandbox, waitForTask } from '../helpers/lifecycle.js';
import { FAKE_AGENT_SPEC, writeSpecsFile } from '../helpers/specs.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-deferred-'));
const DEFERRED_SPEC = { ...FAKE_AGENT_SPEC, id: 'fake-deferred', deferred_init: true };
const TOKEN = `finish-${crypto.randomBytes(6).toString('hex')}`;
const sha256 = (text: string) => crypto.createHash('sha256').update(text).digest('hex');
let app: TestApp;

beforeAll(async () => {
  app = await startTestApp('deferred-init', {
    SANDBOX_SPECS_FILE: writeSpecsFile(tmp, [DEFERRED_SPEC, { ...FAKE_AGENT_SPEC, id: 'plain' }]),
    SANDBOX_STARTUP_TIMEOUT_MS: '5000',
    SANDBOX_WARM_POOL_SIZE: '1',
    SANDBOX_LIFECYCLE_INTERVAL_MS: '200',
    START_TASK_POLL_MS: '100',
  });
});
afterAll(async () => {
  await app?.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** What the fake agent server of a sandbox says of its environment (names, one value's digest, deferral). */
async function environmentOf(target: TestApp, key: string, sandboxId: string) {
  const [sandbox] = (await call(target, 'GET', `/api/v1/sandboxes?id=${sandboxId}`, { key })).body;
  const url = sandbox.exposed_urls.find((u: { name: string }) => u.name === 'AGENT_SERVER').url;
  const res = await fetch(`${url}/api/test/env?digest=FINISH_TOKEN`, { headers: { 'x-session-api-key': sandbox.session_api_key } });
  expect(res.status).toBe(200);
  return (await res.json()) as { names: string[]; digest: string; deferred: { startedDormant: boolean; initialised: boolean } };
}

async function userWithSecret(): Promise<string> {
  const { key } = await userWithSettings(app);
  expect((await call(app, 'POST', '/api/secrets', { key, body: { name: 'FINISH_TOKEN', value: TOKEN } })).status).toBe(201);
  return key;
}

describe('a warm sandbox started dormant', () => {
  it('waits with nothing of a user, then is initialised at its claim with the session key and the secrets', async () => {
    const warmId = await eventually('a running dormant warm sandbox', async () => {
      const [warm] = await app.rawCollection('sandboxes').find({ userId: WARM_POOL_OWNER }).toArray();
      if (!warm?.dormant) return null;
      return (await app.server.deps.runtime.state(String(warm._id), 'running')).status === 'RUNNING' ? String(warm._id) : null;
    });
    // Dormant: it answers /alive, and no conversation route before POST /api/init.
    const url = (await app.server.deps.runtime.state(warmId, 'running')).exposedUrls!.find((u) => u.name === 'AGENT_SERVER')!.url;
    expect((await fetch(`${url}/api/conversations`)).status).toBe(503);
    expect((await fetch(`${url}/api/init`, { method: 'POST', body: '{}' })).status).toBe(401); // not without its sealing key

    const key = await userWithSecret();
    const started = await call(app, 'POST', '/api/v1/app-conversations', { key, body: { secrets: { GIVEN: 'request-secret' } } });
    const ready = await waitForTask(app, key, started.body.id);
    expect(ready).toMatchObject({ status: 'READY', sandbox_id: warmId, sandbox_source: 'warm_pool' });
    const env = await environmentOf(app, key, warmId);
    expect(env.deferred).toEqual({ startedDormant: true, initialised: true });
    expect(env.digest).toBe(sha256(TOKEN));
    expect(env.names).toContain('GIVEN');
    const record = await app.rawCollection('sandboxes').findOne({ _id: warmId as never });
    expect(record).toMatchObject({ dormant: false, sealedEnv: expect.stringMatching(/^enc:/) });
    expect(JSON.stringify(record)).not.toContain(TOKEN);

    // Paused and resumed: a normal launch (not dormant), the same environment.
    expect((await call(app, 'POST', `/api/v1/sandboxes/${warmId}/pause`, { key })).status).toBe(200);
    await waitForSandbox(app, key, warmId, 'PAUSED');
    expect((await call(app, 'POST', `/api/v1/sandboxes/${warmId}/resume`, { key })).status).toBe(200);
    await waitForSandbox(app, key, warmId, 'RUNNING');
    const resumed = await environmentOf(app, key, warmId);
    expect(resumed.deferred.startedDormant).toBe(false);
    expect(resumed.digest).toBe(sha256(TOKEN));
  });
});

describe('a cold start', () => {
  it("runs the agent server with the conversation's secrets in its environment", async () => {
    const cold = await startTestApp('deferred-cold', { SANDBOX_SPECS_FILE: path.join(tmp, 'specs.json'), START_TASK_POLL_MS: '100' });
    try {
      const { key } = await userWithSettings(cold);
      expect((await call(cold, 'POST', '/api/secrets', { key, body: { name: 'FINISH_TOKEN', value: TOKEN } })).status).toBe(201);
      const started = await call(cold, 'POST', '/api/v1/app-conversations', { key, body: {} });
      const ready = await waitForTask(cold, key, started.body.id);
      expect(ready).toMatchObject({ status: 'READY', sandbox_source: 'cold_start' });
      const env = await environmentOf(cold, key, ready.sandbox_id);
      expect(env.digest).toBe(sha256(TOKEN));
      expect(env.deferred.startedDormant).toBe(false);
    } finally {
      await cold.stop();
    }
  });
});
