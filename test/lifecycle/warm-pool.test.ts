// The warm pool on the process runtime: two replicas on one database and data directory, a
// pool of one fake-agent sandbox, 200 ms passes. Claims are exclusive across users and
// replicas, the pool refills without overfilling, and the per-user limit still applies.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WARM_POOL_OWNER } from '../../models/index.js';
import { generateKeyText } from '../../src/crypto.js';
import { call, startTestApp, testDatabaseUri, uniqueDbName, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { lifecyclePasses, metric, sandbox, task, userWithSettings, waitForSandbox, waitForTask } from '../helpers/lifecycle.js';
import { FAKE_AGENT_SPEC, writeSpecsFile } from '../helpers/specs.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-warm-'));
let app: TestApp;
let replica: TestApp;
const appLines: string[] = [];

beforeAll(async () => {
  const env = {
    DATA_DIR: path.join(tmp, 'data'),
    MONGODB_URI: testDatabaseUri(uniqueDbName('warm')),
    ENCRYPTION_KEY: generateKeyText(),
    SANDBOX_SPECS_FILE: writeSpecsFile(tmp, [FAKE_AGENT_SPEC, { ...FAKE_AGENT_SPEC, id: 'other-spec' }]),
    SANDBOX_STARTUP_TIMEOUT_MS: '5000',
    SANDBOX_MAX_RUNNING_PER_USER: '2',
    SANDBOX_WARM_POOL_SIZE: '1',
    SANDBOX_LIFECYCLE_INTERVAL_MS: '200',
    START_TASK_POLL_MS: '100',
  };
  app = await startTestApp('warm', env, { logLines: appLines });
  replica = await startTestApp('warm-replica', env);
});

afterAll(async () => {
  await replica?.stop({ keepSandboxes: true }); // first, so it starts no warm sandbox after the cleanup's list
  await app.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const warmRecords = () => app.rawCollection('sandboxes').find({ userId: WARM_POOL_OWNER }).toArray();

/** The pool's one sandbox, once it is RUNNING (and the pool holds exactly one). */
async function warmSandbox(): Promise<string> {
  return eventually('one running warm sandbox', async () => {
    const warm = await warmRecords();
    if (warm.length !== 1) return null;
    const id = String(warm[0]!._id);
    return (await app.server.deps.runtime.state(id, 'running')).status === 'RUNNING' ? id : null;
  });
}

describe('warm pool', () => {
  it('keeps one warm sandbox of the default spec running, owned by no user, with two replicas refilling', async () => {
    const id = await warmSandbox();
    await lifecyclePasses([app, replica], 'warm-pool', 3); // several refill passes on both replicas
    expect((await warmRecords()).map((r) => String(r._id))).toEqual([id]);
    expect((await warmRecords())[0]).toMatchObject({ specId: FAKE_AGENT_SPEC.id, desired: 'running' });
    const { key } = await userWithSettings(app);
    expect((await call(app, 'GET', `/api/v1/sandboxes?id=${id}`, { key })).body).toEqual([null]);
    const search = (await call(app, 'GET', '/api/v1/sandboxes/search', { key })).body;
    expect(search.items).toEqual([]);
  });

  it('runs a first command in each running warm sandbox once, before any user claims it', async () => {
    const id = await warmSandbox();
    const warmedUp = () => appLines.filter((l) => l.includes('"warmed up a warm sandbox"') && l.includes(id));
    await eventually('the warm-up of the warm sandbox', async () => (warmedUp().length === 1 ? true : null));
    await lifecyclePasses([app], 'warm-pool', 3);
    expect(warmedUp()).toHaveLength(1);
    expect(appLines.some((l) => l.includes('warming up a warm sandbox failed'))).toBe(false);
  });

  it('hands the warm sandbox to exactly one of two users starting at once on two replicas, and refills', async () => {
    const warmId = await warmSandbox();
    const alice = await userWithSettings(app, 'alice');
    const bob = await userWithSettings(app, 'bob');
    const [aliceTask, bobTask] = await Promise.all([
      call(app, 'POST', '/api/v1/app-conversations', { key: alice.key, body: {} }),
      call(replica, 'POST', '/api/v1/app-conversations', { key: bob.key, body: {} }),
    ]);
    const done = await Promise.all([waitForTask(app, alice.key, aliceTask.body.id), waitForTask(replica, bob.key, bobTask.body.id)]);
    expect(done.map((t) => t.status)).toEqual(['READY', 'READY']);
    // The warm sandbox goes to exactly one of them; the other starts cold, or claims the sandbox
    // the pool refilled meanwhile (its start may come later than the refill), never the same one.
    expect(done.filter((t) => t.sandbox_id === warmId)).toHaveLength(1);
    const winnerIndex = done.findIndex((t) => t.sandbox_id === warmId);
    const winner = [alice, bob][winnerIndex]!;
    const loser = [alice, bob][1 - winnerIndex]!;
    expect(done[winnerIndex]!.sandbox_source).toBe('warm_pool');
    expect(['cold_start', 'warm_pool']).toContain(done[1 - winnerIndex]!.sandbox_source);
    expect(done[1 - winnerIndex]!.sandbox_id).not.toBe(warmId);

    // The warm sandbox is the winner's now, and only the winner's.
    expect((await app.rawCollection('sandboxes').findOne({ _id: warmId as never }))?.userId).toBe(winner.userId);
    const claimed = await sandbox(app, winner.key, warmId);
    expect(claimed).toMatchObject({ status: 'RUNNING', created_by_user_id: winner.userId });
    expect(await sandbox(app, loser.key, warmId)).toBeNull();
    // Its session key, made at warm-up, is the key the agent server accepts, and its webhooks map to the winner.
    const agentUrl = claimed.exposed_urls[0].url as string;
    const agentEnv = await fetch(`${agentUrl}/api/test/env`, { headers: { 'x-session-api-key': claimed.session_api_key } });
    const env = (await agentEnv.json()) as { webhookBaseUrl: string };
    expect(env.webhookBaseUrl).toMatch(new RegExp(`/api/v1/webhooks/${warmId}$`));
    const conversationId = done[winnerIndex]!.app_conversation_id as string;
    const webhook = await call(replica, 'POST', `/api/v1/webhooks/${warmId}/conversations`, {
      body: { id: conversationId, title: 'Renamed by the agent' },
      headers: { 'x-session-api-key': claimed.session_api_key },
    });
    expect(webhook.status).toBe(200);
    const renamed = (await call(app, 'GET', `/api/v1/app-conversations?ids=${conversationId}`, { key: winner.key })).body[0];
    expect(renamed.title).toBe('Renamed by the agent');

    // The pool refills to exactly one, with a new sandbox.
    const refill = await warmSandbox();
    expect(refill).not.toBe(warmId);
    await lifecyclePasses([app, replica], 'warm-pool', 3);
    expect((await warmRecords()).map((r) => String(r._id))).toEqual([refill]);

    const claims = async (labels: Record<string, string>) =>
      (await metric(app, 'sandbox_starts_total', labels)) + (await metric(replica, 'sandbox_starts_total', labels));
    const warmStarts = done.filter((t) => t.sandbox_source === 'warm_pool').length;
    expect(await claims({ source: 'warm_pool' })).toBe(warmStarts);
    expect(await claims({ source: 'cold_start' })).toBe(2 - warmStarts);
    const readyByWarm = async (target: TestApp) =>
      metric(target, 'start_task_duration_seconds_count', { outcome: 'READY', sandbox_source: 'warm_pool' });
    expect((await readyByWarm(app)) + (await readyByWarm(replica))).toBe(warmStarts);
  });

  it('claims for a direct sandbox start of the default spec too, within the per-user limit', async () => {
    const { key } = await userWithSettings(app);
    const others: string[] = [];
    for (let i = 0; i < 2; i++) others.push((await call(app, 'POST', '/api/v1/sandboxes?sandbox_spec_id=other-spec', { key })).body.id);
    const warmId = await warmSandbox();
    expect(others).not.toContain(warmId); // another spec never takes a warm sandbox
    for (const id of others) await waitForSandbox(app, key, id, 'RUNNING');

    const refused = await call(replica, 'POST', '/api/v1/sandboxes', { key });
    expect(refused.status).toBe(429);
    expect((await warmRecords()).map((r) => String(r._id))).toEqual([warmId]); // still unclaimed

    await call(app, 'DELETE', `/api/v1/sandboxes/${others[0]}`, { key });
    const started = await call(replica, 'POST', '/api/v1/sandboxes', { key });
    expect(started.status).toBe(200);
    expect(started.body).toMatchObject({ id: warmId, status: 'RUNNING' });
  });

  it('reports the source on the start task while it is under way', async () => {
    const { key } = await userWithSettings(app);
    await warmSandbox();
    const res = await call(app, 'POST', '/api/v1/app-conversations', { key, body: {} });
    const seen = await eventually('the sandbox source', async () => (await task(app, key, res.body.id))?.sandbox_source);
    expect(seen).toBe('warm_pool');
    expect((await waitForTask(app, key, res.body.id)).status).toBe('READY');
  });

  it("reads the warm pool and each user's slots by id: no start or release scans every sandbox or every slot", async () => {
    // On the embedded database a filter that names no _id reads the whole collection, so a start
    // that looked up the pool or the slots by owner cost more with every sandbox stored.
    const finds = [...app.commands, ...replica.commands].filter((c) => c.commandName === 'find');
    const filters = (collection: string) =>
      finds.filter((c) => c.command.find === collection).map((c) => c.command.filter as Record<string, unknown>);
    // By owner (the pool's or a user's); the lifecycle passes' own reads over every sandbox aside.
    expect(filters('sandboxes').filter((f) => typeof f.userId === 'string' && !('_id' in f))).toEqual([]);
    const slotReads = filters('sandbox_slots');
    expect(slotReads.length).toBeGreaterThan(0); // the starts above read them
    expect(slotReads.filter((f) => !(f._id as { $in?: unknown } | undefined)?.$in)).toEqual([]);
    // A slot freed (the sandbox deleted above) is found by the user's slot ids, not by its sandbox alone.
    const slotDeletes = [...app.commands, ...replica.commands]
      .filter((c) => c.commandName === 'delete' && c.command.delete === 'sandbox_slots')
      .flatMap((c) => (c.command.deletes as { q: Record<string, unknown> }[]).map((d) => d.q));
    expect(slotDeletes.length).toBeGreaterThan(0);
    expect(slotDeletes.filter((q) => !('_id' in q))).toEqual([]);
  });
});
