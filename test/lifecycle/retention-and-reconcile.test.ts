// Retention and reconcile on the process runtime, over real HTTP with the fake agent server
// and small timers (1 s retention, 200 ms passes, 400 ms reconcile), two replicas on one
// database for retention.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyText } from '../../src/crypto.js';
import { isProcessAlive } from '../../src/processes.js';
import { call, startTestApp, testDatabaseUri, uniqueDbName, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { conversation, metric, sandbox, startConversation, userWithSettings, waitForSandbox } from '../helpers/lifecycle.js';
import { FAKE_AGENT_SPEC, writeSpecsFile } from '../helpers/specs.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-retention-'));
let env: Record<string, string>;
let app: TestApp;

beforeAll(async () => {
  env = {
    DATA_DIR: path.join(tmp, 'data'),
    MONGODB_URI: testDatabaseUri(uniqueDbName('retention')),
    ENCRYPTION_KEY: generateKeyText(),
    SANDBOX_SPECS_FILE: writeSpecsFile(tmp, [FAKE_AGENT_SPEC]),
    SANDBOX_STARTUP_TIMEOUT_MS: '5000',
    SANDBOX_MAX_RUNNING_PER_USER: '20',
    SANDBOX_IDLE_PAUSE_SECONDS: '0',
    SANDBOX_PAUSED_RETENTION_SECONDS: '1',
    SANDBOX_LIFECYCLE_INTERVAL_MS: '200',
    SANDBOX_RECONCILE_INTERVAL_MS: '400',
    START_TASK_POLL_MS: '100',
  };
  app = await startTestApp('retention', env);
});

afterAll(async () => {
  await app.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const sandboxDir = (id: string) => path.join(env.DATA_DIR!, 'sandboxes', id);
// The service's own record of a sandbox's process, kept out of the sandbox's folder.
const pidOf = (id: string) =>
  (JSON.parse(fs.readFileSync(path.join(env.DATA_DIR!, 'sandboxes/.state', id, 'runtime.json'), 'utf8')) as { pid: number }).pid;

describe('retention', () => {
  it('deletes sandboxes paused past the retention period, once across replicas; their conversations stay listed and say why', async () => {
    const replica = await startTestApp('retention-replica', env);
    try {
      const { key } = await userWithSettings(app);
      const count = async () =>
        (await metric(app, 'sandbox_lifecycle_actions_total', { action: 'retention_delete' })) +
        (await metric(replica, 'sandbox_lifecycle_actions_total', { action: 'retention_delete' }));
      const before = await count();
      const kept = await startConversation(app, key);
      const paused = await startConversation(replica, key);
      expect(kept.status).toBe('READY');
      expect(paused.status).toBe('READY');
      await call(app, 'POST', `/api/v1/sandboxes/${paused.sandbox_id}/pause`, { key });

      await eventually('the paused sandbox to be deleted', async () => (await sandbox(app, key, paused.sandbox_id)) === null);
      expect(fs.existsSync(sandboxDir(paused.sandbox_id))).toBe(false);
      // Counted once the removal returns (after the record goes): by one replica only.
      await eventually('the deletion to be counted', async () => (await count()) > before);
      expect((await count()) - before).toBe(1);
      // Running sandboxes are not the policy's business.
      expect((await sandbox(app, key, kept.sandbox_id)).status).toBe('RUNNING');

      const reason = 'The workspace was deleted after 1 s paused (retention)';
      expect(await conversation(app, key, paused.app_conversation_id)).toMatchObject({
        sandbox_status: 'MISSING',
        sandbox_status_reason: reason,
      });
      const listed = (await call(app, 'GET', '/api/v1/app-conversations/search', { key })).body.items;
      expect(listed.map((c: { id: string }) => c.id)).toContain(paused.app_conversation_id);
      const v0 = (await call(app, 'GET', `/api/conversations/${paused.app_conversation_id}`, { key })).body;
      expect(v0).toMatchObject({ status: 'ARCHIVED', sandbox_status_reason: reason });
      expect((await conversation(app, key, kept.app_conversation_id)).sandbox_status_reason).toBeNull();

      // Its routes have nothing to resume: 409 with the reason, and V0 start the same.
      const gone = `The sandbox of conversation ${paused.app_conversation_id} no longer exists: ${reason}`;
      const route = (suffix: string) => `/api/conversations/${paused.app_conversation_id}/${suffix}`;
      expect(await call(app, 'GET', route('git/changes'), { key })).toMatchObject({ status: 409, body: { error: gone } });
      expect(await call(app, 'POST', route('start'), { key, body: {} })).toMatchObject({
        status: 409,
        body: {
          status: 'error',
          conversation_id: paused.app_conversation_id,
          message: `Failed to start conversation: its sandbox no longer exists: ${reason}`,
        },
      });

      // Starting a conversation in the deleted sandbox fails with a reason, not a hang.
      const again = await startConversation(app, key, { sandbox_id: paused.sandbox_id });
      expect(again).toMatchObject({ status: 'ERROR', detail: `Sandbox not found: ${paused.sandbox_id}` });
    } finally {
      await replica.stop({ keepSandboxes: true });
    }
  });
});

describe('reconcile', () => {
  it('removes a sandbox process and directory that no record names', async () => {
    const before = await metric(app, 'sandbox_lifecycle_actions_total', { action: 'orphan_removed' });
    const id = crypto.randomBytes(16).toString('hex');
    const runtime = app.server.deps.runtime;
    const lifecycle = app.server.deps.services.sandboxLifecycle;
    // The reconciler waits while the orphan comes up: it removes an orphan seen by two passes
    // (400 ms apart here), which can be sooner than a loaded machine starts the fake agent server.
    await lifecycle.stop();
    let pid: number;
    try {
      // Started behind the service's back: runtime objects without a record.
      await runtime.start({
        sandboxId: id,
        userId: 'nobody',
        spec: app.server.deps.services.sandboxSpecs.default,
        sessionApiKey: 'orphan-key',
        secretKey: 'sealing-key',
        webhookBaseUrl: 'http://127.0.0.1:9/api/v1/webhooks/x',
      });
      await eventually('the orphan to run', async () => (await runtime.state(id, 'running')).status === 'RUNNING');
      pid = pidOf(id);
      expect(isProcessAlive(pid)).toBe(true);
    } finally {
      lifecycle.start();
    }

    await eventually('the orphan to be removed', async () => !fs.existsSync(sandboxDir(id)));
    expect(isProcessAlive(pid)).toBe(false);
    expect(await metric(app, 'sandbox_lifecycle_actions_total', { action: 'orphan_removed' })).toBe(before + 1);
  });

  it('removes a record whose runtime objects vanished, and its conversations say the workspace is gone', async () => {
    const { key } = await userWithSettings(app);
    const ready = await startConversation(app, key);
    const other = (await call(app, 'POST', '/api/v1/sandboxes', { key })).body.id as string;
    await waitForSandbox(app, key, other, 'RUNNING');
    await app.server.deps.runtime.remove(ready.sandbox_id); // process and directory gone, record left

    await eventually('the record to be removed', async () => (await sandbox(app, key, ready.sandbox_id)) === null);
    expect(await conversation(app, key, ready.app_conversation_id)).toMatchObject({
      sandbox_status: 'MISSING',
      sandbox_status_reason: 'The workspace no longer exists: its runtime objects were removed outside this service',
    });
    // Counted once the removal has returned (its slot released), a moment after the record went.
    await eventually(
      'the removal to be counted',
      async () => (await metric(app, 'sandbox_lifecycle_actions_total', { action: 'lost_record_removed' })) >= 1,
    );
    // Sandboxes that have both sides are left alone.
    expect((await sandbox(app, key, other)).status).toBe('RUNNING');
  });
});
