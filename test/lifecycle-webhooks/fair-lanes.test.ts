// One user's webhook backlog cannot hold up another user's deliveries (docs/webhooks.md, "Fair
// shares"): test events are limited per user (WEBHOOK_TESTS_PER_MINUTE; past it 429 with
// Retry-After), and a user holds at most half of a replica's sending lanes, so while every one
// of Alice's test events hangs at her receiver, Bob's real lifecycle event is still delivered.
// Over real HTTP, with receivers on loopback; nothing waits for a clock (Alice's receiver holds
// her requests until the test ends, far inside WEBHOOK_TIMEOUT_MS).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { FAKE_AGENT_SPEC } from '../helpers/specs.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

const TESTS_PER_MINUTE = 10;
/** CONCURRENT_LANES / 2 (src/lifecycle-webhooks/index.ts). */
const LANES_PER_USER = 4;
let app: TestApp;
let hanging: WebhookReceiver;
let answering: WebhookReceiver;

beforeAll(async () => {
  hanging = await startWebhookReceiver();
  hanging.mode = 'hang';
  answering = await startWebhookReceiver();
  app = await startTestApp(
    'fair-lanes',
    {
      WEBHOOK_HOSTS: '127.0.0.1', // the receivers are on loopback: only an operator can allow that
      WEBHOOK_TESTS_PER_MINUTE: String(TESTS_PER_MINUTE),
      WEBHOOK_TIMEOUT_MS: '60000',
      WEBHOOK_RETRY_SCHEDULE: '1h',
      WEBHOOK_POLL_MS: '100',
    },
    { specs: [FAKE_AGENT_SPEC] },
  );
});
afterAll(async () => {
  await hanging?.close(); // ends the held attempts first
  await answering?.close();
  await app?.stop();
});

async function register(key: string, receiver: WebhookReceiver, eventTypes: string[] | null = null): Promise<string> {
  const created = await call(app, 'POST', '/api/v1/webhook-endpoints', {
    key,
    body: { url: `${receiver.url}/in`, event_types: eventTypes },
  });
  expect(created.status, created.text).toBe(201);
  return created.body.id as string;
}

const held = () => hanging.receipts.filter((r) => r.answered === 'held').length;

describe('webhook lanes shared between users', () => {
  it("limits test events, and delivers another user's event while one user's backlog hangs", async () => {
    const alice = await app.keyFor('backlog-alice');
    const bob = await app.keyFor('bystander-bob');
    const aliceEndpoint = await register(alice, hanging);
    const bobEndpoint = await register(bob, answering, ['start_task.status_changed']);

    for (let i = 0; i < TESTS_PER_MINUTE; i++) {
      const sent = await call(app, 'POST', `/api/v1/webhook-endpoints/${aliceEndpoint}/test`, { key: alice });
      expect(sent.status, sent.text).toBe(202);
    }
    const refused = await call(app, 'POST', `/api/v1/webhook-endpoints/${aliceEndpoint}/test`, { key: alice });
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ message: `Too many test events: at most ${TESTS_PER_MINUTE} a minute` });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // The same limit over tRPC, in its error shape.
    const overTrpc = await call(app, 'POST', '/trpc/webhookEndpoints.sendTest', {
      key: alice,
      body: { json: { endpoint_id: aliceEndpoint } },
    });
    expect(overTrpc.status).toBe(429);
    expect(overTrpc.body.error.json.data).toMatchObject({ code: 'TOO_MANY_REQUESTS', retryAfterSeconds: expect.any(Number) });
    // Another user's test events have their own limit.
    expect((await call(app, 'POST', `/api/v1/webhook-endpoints/${bobEndpoint}/test`, { key: bob })).status).toBe(202);

    // Alice's ten lanes are due at once; she may hold only her share of the eight.
    await eventually('Alice holding her share of the lanes', async () => held() >= LANES_PER_USER);
    const started = await call(app, 'POST', '/api/v1/app-conversations', { key: bob, body: {} });
    expect(started.status, started.text).toBe(200);
    const delivered = await eventually("Bob's start task event delivered", async () =>
      answering.receipts.find(
        (r) => r.body.type === 'start_task.status_changed' && (r.body.data as { id?: string }).id === started.body.id,
      ),
    );
    expect(delivered.answered).toBe(204);
    // Meanwhile every attempt to Alice still hangs, and she never held more than her share.
    expect(held()).toBe(LANES_PER_USER);
    const pending = await call(app, 'GET', `/api/v1/webhook-endpoints/${aliceEndpoint}/deliveries?status=pending&limit=100`, {
      key: alice,
    });
    expect(pending.body.items).toHaveLength(TESTS_PER_MINUTE);
    for (const delivery of pending.body.items) expect(delivery.attempts).toEqual([]);
  });
});
