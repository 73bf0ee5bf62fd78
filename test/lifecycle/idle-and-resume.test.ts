// Idle auto-pause and transparent resume on the process runtime, over real HTTP with the fake
// agent server, small timers (2 s idle time, 200 ms passes) and two replicas on one database.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyText } from '../../src/crypto.js';
import { isProcessAlive } from '../../src/processes.js';
import { call, startTestApp, testDatabaseUri, uniqueDbName, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import {
  conversation,
  FLAKY_AGENT_SPEC,
  metric,
  reportExecutionStatus,
  sandbox,
  lifecyclePasses,
  startConversation,
  userWithSettings,
  waitForSandbox,
} from '../helpers/lifecycle.js';
import { FAKE_AGENT_SPEC, writeSpecsFile } from '../helpers/specs.js';

const IDLE_MS = 2_000;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-idle-'));
let env: Record<string, string>;
let app: TestApp;

beforeAll(async () => {
  env = {
    // One data directory and database for both replicas (process sandboxes live there).
    DATA_DIR: path.join(tmp, 'data'),
    MONGODB_URI: testDatabaseUri(uniqueDbName('idle')),
    ENCRYPTION_KEY: generateKeyText(),
    SANDBOX_SPECS_FILE: writeSpecsFile(tmp, [FAKE_AGENT_SPEC, FLAKY_AGENT_SPEC]),
    SANDBOX_STARTUP_TIMEOUT_MS: '5000',
    SANDBOX_MAX_RUNNING_PER_USER: '20',
    SANDBOX_IDLE_PAUSE_SECONDS: String(IDLE_MS / 1000),
    SANDBOX_LIFECYCLE_INTERVAL_MS: '200',
    SANDBOX_RESUME_BACKOFF_MS: '200',
    START_TASK_POLL_MS: '100',
    START_TASK_LEASE_MS: '10000',
  };
  app = await startTestApp('idle', env);
});

afterAll(async () => {
  await app.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const sandboxDir = (id: string) => path.join(env.DATA_DIR!, 'sandboxes', id);
const sandboxKeyOf = async (key: string, id: string) => (await sandbox(app, key, id)).session_api_key as string;

describe('idle auto-pause', () => {
  it('pauses a sandbox nobody uses, keeps its workspace, and says why', async () => {
    const { key } = await userWithSettings(app);
    const before = await metric(app, 'sandbox_lifecycle_actions_total', { action: 'idle_pause' });
    const id = (await call(app, 'POST', '/api/v1/sandboxes', { key })).body.id as string;
    await waitForSandbox(app, key, id, 'RUNNING');
    fs.writeFileSync(path.join(sandboxDir(id), 'workspace-mark'), 'kept');
    const { pid } = JSON.parse(fs.readFileSync(path.join(env.DATA_DIR!, 'sandboxes/.state', id, 'runtime.json'), 'utf8')) as {
      pid: number;
    };

    const paused = await waitForSandbox(app, key, id, 'PAUSED', 15_000);
    expect(paused.status_reason).toBe('Paused automatically after a period without use; it resumes when used');
    expect(fs.readFileSync(path.join(sandboxDir(id), 'workspace-mark'), 'utf8')).toBe('kept');
    await eventually('the agent server process to stop', async () => !isProcessAlive(pid));
    // Counted once the runtime's pause has returned (the status reads PAUSED a moment earlier).
    await eventually(
      'the pause to be counted',
      async () => (await metric(app, 'sandbox_lifecycle_actions_total', { action: 'idle_pause' })) > before,
    );
  });

  it('never pauses a sandbox whose agent reports running, and pauses it once the agent stops', async () => {
    const { key } = await userWithSettings(app);
    const busy = await startConversation(app, key);
    const sandboxKey = await sandboxKeyOf(key, busy.sandbox_id);
    await reportExecutionStatus(app, busy.sandbox_id, sandboxKey, busy.app_conversation_id, 'running');
    const control = await startConversation(app, key);

    await waitForSandbox(app, key, control.sandbox_id, 'PAUSED', 15_000);
    // The busy sandbox is past its idle time too, and the pauser has looked at it since.
    await eventually('the busy sandbox to be past its idle time', async () => {
      const record = await app.rawCollection('sandboxes').findOne({ _id: busy.sandbox_id as never });
      return Date.now() - (record?.lastUsedAt as Date).getTime() > IDLE_MS;
    });
    await lifecyclePasses([app], 'idle-pause', 2);
    expect((await sandbox(app, key, busy.sandbox_id)).status).toBe('RUNNING');
    const record = await app.rawCollection('sandboxes').findOne({ _id: busy.sandbox_id as never });
    expect(record?.runningConversations).toEqual([busy.app_conversation_id]);

    await reportExecutionStatus(app, busy.sandbox_id, sandboxKey, busy.app_conversation_id, 'finished');
    await waitForSandbox(app, key, busy.sandbox_id, 'PAUSED', 15_000);
  });

  it('counts webhooks as use: a sandbox that keeps hearing from its agent stays running', async () => {
    const { key } = await userWithSettings(app);
    const started = await startConversation(app, key);
    const sandboxKey = await sandboxKeyOf(key, started.sandbox_id);
    // A report before every pass of the pauser, for twice the idle time.
    for (const until = Date.now() + IDLE_MS * 2; Date.now() < until;) {
      await reportExecutionStatus(app, started.sandbox_id, sandboxKey, started.app_conversation_id, 'idle');
      await lifecyclePasses([app], 'idle-pause', 1);
    }
    expect((await sandbox(app, key, started.sandbox_id)).status).toBe('RUNNING');
    await waitForSandbox(app, key, started.sandbox_id, 'PAUSED', 15_000);
  });

  it('decides each idle sandbox once when two replicas run the policy', async () => {
    const replica = await startTestApp('idle-replica', env);
    try {
      const { key } = await userWithSettings(app);
      const count = async () =>
        (await metric(app, 'sandbox_lifecycle_actions_total', { action: 'idle_pause' })) +
        (await metric(replica, 'sandbox_lifecycle_actions_total', { action: 'idle_pause' }));
      const before = await count();
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push((await call(i % 2 ? replica : app, 'POST', '/api/v1/sandboxes', { key })).body.id);
      for (const id of ids) await waitForSandbox(app, key, id, 'PAUSED', 15_000);
      // The record says PAUSED once the decision is taken; the pause is counted after the runtime's stop.
      await eventually('each pause to be counted', async () => (await count()) - before >= 3, 10_000);
      await lifecyclePasses([app, replica], 'idle-pause', 3); // nothing is paused twice
      expect((await count()) - before).toBe(3);

      // The pass reads every sandbox, so the two replicas run it once per interval between them
      // (the other's turn counts as a pass without a duration).
      const sum = async (name: string) =>
        (await metric(app, name, { job: 'idle-pause' })) + (await metric(replica, name, { job: 'idle-pause' }));
      const [ran, turns, since] = [
        await sum('sandbox_lifecycle_pass_duration_seconds_count'),
        await sum('sandbox_lifecycle_passes_total'),
        Date.now(),
      ];
      await lifecyclePasses([app, replica], 'idle-pause', 5);
      // The windows that can end a pass in that span: a pass counts when it ends, so one started
      // a window or two before `since` on a loaded machine (a pass can outlast the 200 ms) counts too.
      const windows = Math.ceil((Date.now() - since) / Number(env.SANDBOX_LIFECYCLE_INTERVAL_MS)) + 2;
      expect((await sum('sandbox_lifecycle_passes_total')) - turns).toBeGreaterThanOrEqual(10);
      expect((await sum('sandbox_lifecycle_pass_duration_seconds_count')) - ran).toBeLessThanOrEqual(windows);
    } finally {
      await replica.stop({ keepSandboxes: true });
    }
  });
});

describe('transparent resume', () => {
  it('resumes an idle-paused sandbox when a conversation starts in it', async () => {
    const { key } = await userWithSettings(app);
    const first = await startConversation(app, key);
    await waitForSandbox(app, key, first.sandbox_id, 'PAUSED', 15_000);
    const resumes = await metric(app, 'sandbox_resume_duration_seconds_count', { outcome: 'running' });

    const second = await startConversation(app, key, { sandbox_id: first.sandbox_id });
    expect(second, second.detail ?? '').toMatchObject({ status: 'READY', sandbox_id: first.sandbox_id, sandbox_source: 'existing' });
    expect((await sandbox(app, key, first.sandbox_id)).status).toBe('RUNNING');
    expect((await conversation(app, key, second.app_conversation_id)).sandbox_status).toBe('RUNNING');
    expect(await metric(app, 'sandbox_resume_duration_seconds_count', { outcome: 'running' })).toBe(resumes + 1);
  });

  it('resumes a paused sandbox for the hook the conversation routes call (ensureRunning), for its owner only', async () => {
    const owner = await userWithSettings(app);
    const stranger = await userWithSettings(app);
    const id = (await call(app, 'POST', '/api/v1/sandboxes', { key: owner.key })).body.id as string;
    await waitForSandbox(app, owner.key, id, 'RUNNING');
    await call(app, 'POST', `/api/v1/sandboxes/${id}/pause`, { key: owner.key });
    const lifecycle = app.server.deps.services.sandboxLifecycle;

    await expect(lifecycle.ensureRunning(stranger.userId, id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect((await sandbox(app, owner.key, id)).status).toBe('PAUSED');
    const connection = await lifecycle.ensureRunning(owner.userId, id);
    expect(connection.state.status).toBe('RUNNING');
    expect((await fetch(`${connection.internalUrl}/alive`)).status).toBe(200);
  });

  it('retries a failed resume with backoff, and ends in a clear error when every attempt fails', async () => {
    const { key } = await userWithSettings(app);
    const id = (await call(app, 'POST', '/api/v1/sandboxes?sandbox_spec_id=flaky-agent', { key })).body.id as string;
    await waitForSandbox(app, key, id, 'RUNNING');
    await call(app, 'POST', `/api/v1/sandboxes/${id}/pause`, { key });

    // The first resume fails (the agent server exits at once), the retry succeeds.
    const retries = await metric(app, 'sandbox_lifecycle_actions_total', { action: 'resume_retry' });
    fs.writeFileSync(path.join(sandboxDir(id), 'fail-next'), '');
    expect(await startConversation(app, key, { sandbox_id: id })).toMatchObject({ status: 'READY', sandbox_id: id });
    expect(await metric(app, 'sandbox_lifecycle_actions_total', { action: 'resume_retry' })).toBe(retries + 1);

    // Every attempt fails: the start ends in ERROR saying so, well within its deadline.
    await call(app, 'POST', `/api/v1/sandboxes/${id}/pause`, { key });
    fs.writeFileSync(path.join(sandboxDir(id), 'fail-always'), '');
    const began = Date.now();
    const failed = await startConversation(app, key, { sandbox_id: id });
    expect(failed.status).toBe('ERROR');
    expect(failed.detail).toMatch(
      new RegExp(`^Sandbox ${id} could not be resumed \\(3 attempts\\): The sandbox process exited \\(code 3\\)`),
    );
    expect(Date.now() - began).toBeLessThan(30_000);
    expect(await metric(app, 'sandbox_resume_duration_seconds_count', { outcome: 'failed' })).toBeGreaterThanOrEqual(1);

    // Through the hook, the same failure is a 503 with the reason.
    const lifecycle = app.server.deps.services.sandboxLifecycle;
    const { userId } = (await app.rawCollection('sandboxes').findOne({ _id: id as never }))!;
    await expect(lifecycle.ensureRunning(userId, id)).rejects.toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      reason: 'sandbox_resume_failed',
      message: expect.stringContaining('could not be resumed (3 attempts)'),
    });

    // Once the cause is gone, the sandbox comes back.
    fs.rmSync(path.join(sandboxDir(id), 'fail-always'));
    expect((await call(app, 'POST', `/api/v1/sandboxes/${id}/resume`, { key })).status).toBe(200);
    await waitForSandbox(app, key, id, 'RUNNING');
  });
});

describe('start times by phase', () => {
  it('records when a start entered each phase, and exposes phase and start durations by sandbox source', async () => {
    const { key } = await userWithSettings(app);
    const ready = await startConversation(app, key);
    expect(ready.sandbox_source).toBe('cold_start');
    const phases = Object.keys(ready.phase_times);
    expect(phases).toEqual([
      'WORKING',
      'WAITING_FOR_SANDBOX',
      'PREPARING_REPOSITORY',
      'RUNNING_SETUP_SCRIPT',
      'SETTING_UP_GIT_HOOKS',
      'STARTING_CONVERSATION',
      'READY',
    ]);
    const times = phases.map((p) => Date.parse(ready.phase_times[p]));
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect(ready.phase_times.WORKING).toBe(ready.created_at);

    const labels = { sandbox_source: 'cold_start' };
    expect(await metric(app, 'start_task_phase_duration_seconds_count', { ...labels, phase: 'WAITING_FOR_SANDBOX' })).toBeGreaterThan(0);
    expect(await metric(app, 'start_task_phase_duration_seconds_count', { ...labels, phase: 'STARTING_CONVERSATION' })).toBeGreaterThan(0);
    expect(await metric(app, 'start_task_duration_seconds_count', { ...labels, outcome: 'READY' })).toBeGreaterThan(0);
    expect(await metric(app, 'sandbox_starts_total', { source: 'cold_start' })).toBeGreaterThan(0);
  });
});
