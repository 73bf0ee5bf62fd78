// At the per-user running limit (SANDBOX_MAX_RUNNING_PER_USER = 2), both ways of
// SANDBOX_AT_LIMIT, on one replica and on two sharing a database and data (the fake agent
// server in process sandboxes):
// - refuse (the default): a V1 start, a stream-start, a V0 create, a sandbox start and a resume
//   are refused at the request with 429 and Retry-After (no task, no conversation left behind),
//   a start in a running sandbox needs no slot, a failed start gives its slot back, nothing is
//   paused behind the user's back, and concurrent starts across replicas admit exactly the limit;
// - pause-oldest: a start, a sandbox start or a resume pauses the user's least recently used
//   sandbox (an agent that reports running last), which says why and resumes when used; across
//   replicas the limit still holds.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyText } from '../../src/crypto.js';
import { LIMIT_PAUSED } from '../../src/sandbox/service/sandbox-room.js';
import { call, uniqueDbName } from '../helpers/app.js';
import { startConversationApp, waitForTask, type ConversationApp } from '../helpers/conversation-app.js';
import { eventually } from '../helpers/eventually.js';

const LIMIT = 2;
const hello = { initial_message: { content: [{ type: 'text', text: 'Hello' }] } };
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-at-limit-'));

/** Two replicas: one database, one data directory (the process sandboxes), one encryption key. */
async function replicas(label: string, atLimit: string): Promise<[ConversationApp, ConversationApp]> {
  const env = {
    SANDBOX_MAX_RUNNING_PER_USER: String(LIMIT),
    SANDBOX_AT_LIMIT: atLimit,
    SANDBOX_MAX_CONCURRENT_STARTS: '10',
    DATA_DIR: path.join(tmp, label),
    ENCRYPTION_KEY: generateKeyText(),
    RATE_LIMIT_PER_USER: 'off',
  };
  const dbName = uniqueDbName(label);
  return [await startConversationApp(label, env, { dbName }), await startConversationApp(`${label}-2`, env, { dbName })];
}

const as = (app: ConversationApp, key: string, method: string, urlPath: string, body?: unknown) =>
  call(app, method, urlPath, { headers: { authorization: `Bearer ${key}` }, ...(body === undefined ? {} : { body }) });

async function startReady(app: ConversationApp, key: string, body: Record<string, unknown> = hello) {
  const started = await as(app, key, 'POST', '/api/v1/app-conversations', body);
  expect(started.status, started.text).toBe(200);
  const task = await waitForTask(app, key, started.body.id);
  expect(task.status, task.detail ?? '').toBe('READY');
  return task;
}

async function sandboxes(app: ConversationApp, key: string) {
  return (await as(app, key, 'GET', '/api/v1/sandboxes/search?limit=50')).body.items as {
    id: string;
    status: string;
    status_reason: string;
  }[];
}
const running = async (app: ConversationApp, key: string) =>
  (await sandboxes(app, key))
    .filter((s) => s.status === 'RUNNING')
    .map((s) => s.id)
    .sort();
/** Waits until exactly these sandboxes of the user run (a new one may still be STARTING). */
const runningAre = (app: ConversationApp, key: string, ids: string[]) =>
  eventually(
    `running sandboxes ${ids.join(', ')}`,
    async () => JSON.stringify(await running(app, key)) === JSON.stringify([...ids].sort()),
  );

afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe('SANDBOX_AT_LIMIT=refuse (the default)', () => {
  let app: ConversationApp;
  let replica: ConversationApp;
  beforeAll(async () => {
    [app, replica] = await replicas('limit-refuse', 'refuse');
  }, 60_000);
  afterAll(async () => {
    await replica?.close({ keepSandboxes: true });
    await app?.close();
  });

  it('refuses every kind of start at the request with 429 and Retry-After, leaving no task or conversation', async () => {
    const key = await app.user('full');
    const [first] = [await startReady(app, key), await startReady(app, key)];
    const counts = async () => [
      (await as(app, key, 'GET', '/api/v1/app-conversations/start-tasks/count')).body,
      (await as(app, key, 'GET', '/api/v1/app-conversations/count')).body,
    ];
    const before = await counts();
    const refused = await as(app, key, 'POST', '/api/v1/app-conversations', hello);
    expect(refused).toMatchObject({ status: 429, body: { detail: `Sandbox limit reached (${LIMIT} running)` } });
    expect(refused.headers.get('retry-after')).toBe('30');
    expect((await as(app, key, 'POST', '/api/v1/app-conversations/stream-start', hello)).status).toBe(429);
    expect(await as(app, key, 'POST', '/api/conversations', { initial_user_msg: 'Hello' })).toMatchObject({
      status: 429,
      body: { detail: `Sandbox limit reached (${LIMIT} running)` },
    });
    expect((await as(app, key, 'POST', '/api/v1/sandboxes', {})).status).toBe(429);
    expect(await counts()).toEqual(before);
    // A start in one of its running sandboxes needs no slot.
    expect((await startReady(app, key, { ...hello, sandbox_id: first.sandbox_id })).sandbox_id).toBe(first.sandbox_id);
    // Nothing was paused behind the user's back; a pause of its own frees a slot, and its resume is refused while full.
    expect(await running(app, key)).toHaveLength(LIMIT);
    expect((await as(app, key, 'POST', `/api/v1/sandboxes/${first.sandbox_id}/pause`, {})).status).toBe(200);
    await startReady(app, key);
    expect((await as(app, key, 'POST', `/api/v1/sandboxes/${first.sandbox_id}/resume`, {})).status).toBe(429);
    expect((await as(app, key, 'POST', `/api/conversations/${first.app_conversation_id}/start`, {})).status).toBe(429);
  });

  it('gives the slot of a start that failed back', async () => {
    const key = await app.keyFor(`no-settings-${Date.now()}`); // no LLM settings: the start ends in ERROR
    const slots = () => app.rawCollection('sandbox_slots').countDocuments({ userId: { $regex: '^no-settings' } });
    // More failed starts than the limit, one after the other: each gets its slot because the one
    // before gave its own back. That happens right after the task's ERROR is written (the failed
    // start's last steps), so each waits for it: a start sent in between could still meet the limit.
    for (let i = 0; i < LIMIT + 1; i++) {
      const started = await as(app, key, 'POST', '/api/v1/app-conversations', hello);
      expect(started.status).toBe(200);
      expect((await waitForTask(app, key, started.body.id)).detail).toMatch(/^Settings not found/);
      await eventually('the failed start to give its slot back', async () => (await slots()) === 0);
    }
  });

  it('admits exactly the limit of concurrent starts split across two replicas', async () => {
    const key = await app.user('race');
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) => as(i % 2 ? replica : app, key, 'POST', '/api/v1/app-conversations', hello)),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 429, 429, 429, 429]);
    for (const accepted of answers.filter((a) => a.status === 200)) {
      expect((await waitForTask(app, key, accepted.body.id)).status).toBe('READY');
    }
    await eventually('the limit of sandboxes running', async () => (await running(replica, key)).length === LIMIT);
  });
});

describe('SANDBOX_AT_LIMIT=pause-oldest', () => {
  let app: ConversationApp;
  let replica: ConversationApp;
  beforeAll(async () => {
    [app, replica] = await replicas('limit-pause', 'pause-oldest');
  }, 60_000);
  afterAll(async () => {
    await replica?.close({ keepSandboxes: true });
    await app?.close();
  });

  /** Lets the user's sandboxes count as started long ago (a sandbox younger than a minute is never paused for room), each last used at `lastUsed[id]`. */
  async function settle(lastUsed: Record<string, number> = {}) {
    await app.rawCollection('sandbox_slots').updateMany({}, { $set: { at: new Date(Date.now() - 120_000) } });
    for (const [id, ago] of Object.entries(lastUsed)) {
      await app.rawCollection('sandboxes').updateOne({ _id: id as never }, { $set: { lastUsedAt: new Date(Date.now() - ago) } });
    }
  }

  it('pauses the least recently used sandbox for a new start, which says why and resumes when used', async () => {
    const key = await app.user('oldest');
    const a = await startReady(app, key);
    const b = await startReady(app, key);
    await settle({ [a.sandbox_id]: 10_000, [b.sandbox_id]: 50_000 });
    const c = await startReady(app, key);
    const states = Object.fromEntries((await sandboxes(app, key)).map((s) => [s.id, s]));
    expect(states[b.sandbox_id]).toMatchObject({ status: 'PAUSED', status_reason: LIMIT_PAUSED });
    expect([states[a.sandbox_id]!.status, states[c.sandbox_id]!.status]).toEqual(['RUNNING', 'RUNNING']);
    // Using the paused one brings it back and makes room again: now the least recently used of the others goes.
    await settle({ [a.sandbox_id]: 90_000, [c.sandbox_id]: 5_000 });
    const sent = await as(app, key, 'POST', `/api/v1/app-conversations/${b.app_conversation_id}/send-message`, hello.initial_message);
    expect(sent.body).toMatchObject({ success: true, message: 'The sandbox was PAUSED and has been resumed' });
    await runningAre(app, key, [b.sandbox_id, c.sandbox_id]);
  });

  it('pauses an agent that reports running only when every candidate runs one', async () => {
    const key = await app.user('busy');
    const a = await startReady(app, key);
    const b = await startReady(app, key);
    // a is the least recently used, but its agent reports running: b goes.
    await settle({ [a.sandbox_id]: 100_000, [b.sandbox_id]: 10_000 });
    await app
      .rawCollection('sandboxes')
      .updateOne({ _id: a.sandbox_id as never }, { $set: { runningConversations: [a.app_conversation_id] } });
    const fresh = await as(app, key, 'POST', '/api/v1/sandboxes', {});
    expect(fresh.status).toBe(200);
    await runningAre(app, key, [a.sandbox_id, fresh.body.id]);
    // With every candidate busy, the least recently used busy one goes: the limit holds.
    await app.rawCollection('sandboxes').updateMany({ _id: { $in: [fresh.body.id] } as never }, { $set: { runningConversations: ['x'] } });
    await settle({ [a.sandbox_id]: 100_000, [fresh.body.id]: 1_000 });
    expect((await as(app, key, 'POST', `/api/v1/sandboxes/${b.sandbox_id}/resume`, {})).status).toBe(200);
    await runningAre(app, key, [b.sandbox_id, fresh.body.id]);
  });

  it('holds the limit across two replicas making room at once', async () => {
    const key = await app.user('replicas');
    await startReady(app, key);
    await startReady(replica, key);
    await settle();
    const answers = await Promise.all([as(app, key, 'POST', '/api/v1/sandboxes', {}), as(replica, key, 'POST', '/api/v1/sandboxes', {})]);
    expect(answers.map((a) => a.status)).toEqual([200, 200]);
    await runningAre(
      app,
      key,
      answers.map((a) => a.body.id),
    );
    expect((await sandboxes(replica, key)).filter((s) => s.status === 'PAUSED').map((s) => s.status_reason)).toEqual([
      LIMIT_PAUSED,
      LIMIT_PAUSED,
    ]);
  });
});
