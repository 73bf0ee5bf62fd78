// The bar for lifecycle webhooks (docs/webhooks.md): a loopback receiver verifying
// every request with the published Standard Webhooks library sees each lifecycle event of a
// conversation, from its start task's first status to its deletion, exactly once after
// de-duplication by id, in order per resource, although the receiver is down (503) through the
// whole start and run, and the service (two replicas on one database) is stopped and started
// again while the deliveries wait. No attempt of a delivery is sent by two replicas.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyText } from '../../src/crypto.js';
import { call, uniqueDbName } from '../helpers/app.js';
import { startConversationApp, type ConversationApp } from '../helpers/conversation-app.js';
import { eventually } from '../helpers/eventually.js';
import { startWebhookReceiver, type Receipt, type WebhookReceiver } from '../helpers/webhook-receiver.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-hooks-life-'));
const dbName = uniqueDbName('hooks-life');
/** Two replicas: one database, one data directory (the process sandboxes), one encryption key. */
const env = {
  DATA_DIR: path.join(tmp, 'data'),
  ENCRYPTION_KEY: generateKeyText(),
  WEBHOOK_HOSTS: '127.0.0.1', // the receiver is on loopback: only an operator can allow that
  // Short waits, and enough of them (about 45 s) that nothing is given up during the outage.
  WEBHOOK_RETRY_SCHEDULE: ['100ms', '200ms', '500ms', ...Array<string>(45).fill('1s')].join(','),
  WEBHOOK_POLL_MS: '100',
};
const replicas: ConversationApp[] = [];
const start = async (label: string) => {
  const app = await startConversationApp(label, env, { dbName });
  replicas.push(app);
  return app;
};
let receiver: WebhookReceiver;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
});

afterAll(async () => {
  const [last, ...others] = replicas.reverse();
  for (const app of others) await app.close({ keepSandboxes: true });
  await last?.close();
  await receiver.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const TASK_ORDER = [
  'WORKING',
  'WAITING_FOR_SANDBOX',
  'PREPARING_REPOSITORY',
  'RUNNING_SETUP_SCRIPT',
  'SETTING_UP_GIT_HOOKS',
  'STARTING_CONVERSATION',
  'READY',
];

describe('a conversation told by lifecycle webhooks', () => {
  it('reaches the receiver whole, once, in order, across an outage and a restart of both replicas', { timeout: 180_000 }, async () => {
    let [a, b] = [await start('hooks-life-a'), await start('hooks-life-b')];
    const key = await a.user('hook-life');
    const registered = await call(b, 'POST', '/api/v1/webhook-endpoints', { key, body: { url: `${receiver.url}/in` } });
    expect(registered.status, registered.text).toBe(201);
    const endpoint = registered.body as { id: string; secret: string };
    receiver.setSecrets(endpoint.secret);
    receiver.mode = 'outage';

    // The whole start and run while the receiver is down.
    const task = await a.startConversation(key, { initial_message: { content: [{ type: 'text', text: 'Hello' }] } });
    expect(task.status, task.detail ?? '').toBe('READY');
    const conversationKey = `app_conversation:${task.app_conversation_id}`;
    await eventually('the run to finish and its events to be stored', async () => {
      const stored = await a.rawCollection('webhook_deliveries').find({ resourceKey: conversationKey }).toArray();
      return stored.some((d) => JSON.parse(String(d.body)).data.execution_status === 'finished');
    });
    await eventually('retries during the outage', async () => receiver.receipts.some((r) => r.attempt >= 3));

    // Both replicas stop while every delivery waits; the service comes back, then the receiver.
    for (const app of [a, b]) {
      await app.close({ keepSandboxes: true });
      replicas.splice(replicas.indexOf(app), 1);
    }
    const refusedBefore = receiver.receipts.length;
    [a, b] = [await start('hooks-life-a2'), await start('hooks-life-b2')];
    receiver.mode = 'ok';

    const deleted = await call(a, 'DELETE', `/api/v1/app-conversations/${task.app_conversation_id}`, { key });
    expect(deleted.status, deleted.text).toBe(200);
    await eventually(
      'the deletion to arrive',
      async () => receiver.uniqueEvents().some((e) => e.type === 'conversation.deleted'),
      60_000,
    ).catch(async (error: Error) => {
      // The lanes and deliveries as they are, for the failure's report.
      const lanes = await a.rawCollection('webhook_lanes').find({}).toArray();
      const deliveries = await a.rawCollection('webhook_deliveries').find({ endpointId: endpoint.id }).sort({ seq: 1 }).toArray();
      const brief = deliveries.map(({ body: _body, attempts, ...d }) => ({ ...d, attempts: (attempts as unknown[]).length }));
      throw new Error(`${error.message}\nlanes: ${JSON.stringify(lanes)}\ndeliveries: ${JSON.stringify(brief)}`);
    });
    const stored = await eventually('every stored delivery to be delivered', async () => {
      const all = await a.rawCollection('webhook_deliveries').find({ endpointId: endpoint.id }).sort({ seq: 1 }).toArray();
      return all.every((d) => d.status === 'delivered') ? all : null;
    });

    expect(receiver.receipts.length).toBeGreaterThan(refusedBefore);
    expect(receiver.receipts.filter((r) => !r.verified)).toEqual([]);
    // No attempt of any delivery was sent twice (each attempt's number is claimed by one replica).
    const attempts = receiver.receipts.map((r) => `${r.id}#${r.attempt}`);
    expect(new Set(attempts).size).toBe(attempts.length);

    // Exactly once after de-duplication: one unique event per stored delivery, nothing else.
    const unique = receiver.uniqueEvents();
    expect(unique.map((e) => e.id).sort()).toEqual(stored.map((d) => String(d.eventId)).sort());

    // In order per resource: each resource's events arrive in the order they were stored.
    const byResource = (events: { id: string }[], keyOf: (id: string) => string) => {
      const lanes = new Map<string, string[]>();
      for (const e of events) lanes.set(keyOf(e.id), [...(lanes.get(keyOf(e.id)) ?? []), e.id]);
      return lanes;
    };
    const resourceOf = new Map(stored.map((d) => [String(d.eventId), String(d.resourceKey)]));
    const storedIds = stored.map((d) => ({ id: String(d.eventId) }));
    expect(byResource(unique, (id) => resourceOf.get(id)!)).toEqual(byResource(storedIds, (id) => resourceOf.get(id)!));

    // What the receiver was told, resource by resource.
    const of = (kind: string, id: string) => unique.filter((e) => resourceOf.get(e.id) === `${kind}:${id}`);
    const statuses = of('start_task', task.id).map((e) => e.data.status as string);
    expect(statuses[0]).toBe('WORKING');
    expect(statuses.at(-1)).toBe('READY');
    // Every status once, in the lifecycle's order.
    expect(statuses).toEqual(TASK_ORDER.filter((s) => statuses.includes(s)));
    for (const e of of('start_task', task.id)) expect(e).toMatchObject({ type: 'start_task.status_changed', data: { id: task.id } });
    expect(of('start_task', task.id).at(-1)!.data).toMatchObject({
      app_conversation_id: task.app_conversation_id,
      sandbox_id: task.sandbox_id,
    });
    const told = of('app_conversation', task.app_conversation_id);
    // The start's end, each execution status the agent server reported (the fake reports idle,
    // running, finished), then the deletion; the start's end may race the first report.
    expect(told.filter((e) => e.type === 'conversation.execution_status_changed').map((e) => e.data.execution_status)).toEqual([
      'idle',
      'running',
      'finished',
    ]);
    expect(told.filter((e) => e.type === 'conversation.status_changed')).toHaveLength(1);
    expect(told.at(-1)!.type).toBe('conversation.deleted');
    expect(told).toHaveLength(5);
    for (const e of told) {
      expect(e.data).toMatchObject({ id: task.app_conversation_id, sandbox_id: task.sandbox_id, session_api_key: null });
    }
    // Each attempt carried the event's own timestamp and id: a receiver can order and de-duplicate.
    const timestamps = unique.map((e) => Date.parse(e.timestamp));
    expect(timestamps.every((t) => Number.isFinite(t))).toBe(true);
    const retried = receiver.receipts.filter((r: Receipt) => r.attempt > 1 && typeof r.answered === 'number' && r.answered < 300);
    expect(retried.length).toBeGreaterThan(0);
  });
});
