// Lifecycle webhook endpoints over REST and tRPC (docs/webhooks.md): registering (the secret
// shown once, kept encrypted, never logged), test events verified by the published Standard
// Webhooks library, retries on the configured schedule until given up, secret rotation with
// both secrets signing, bad input, the SSRF rules, other users' endpoints, deletion, and the
// sandbox events.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTRPCClient, httpBatchLink } from '@trpc/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppRouter } from '../../routers/index.js';
import { transformer } from '../../src/trpc/transformer.js';
import { call, startTestApp, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { FAKE_AGENT_SPEC, writeSpecsFile } from '../helpers/specs.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-hooks-'));
const logLines: string[] = [];
/** Every secret the tests saw: none may reach a log line. */
const secrets: string[] = [];
let app: TestApp;
let receiver: WebhookReceiver;
let key: string;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  app = await startTestApp(
    'webhook-endpoints',
    {
      WEBHOOK_HOSTS: '127.0.0.1', // the receiver is on loopback: only an operator can allow that
      WEBHOOK_RETRY_SCHEDULE: '50ms,100ms',
      WEBHOOK_POLL_MS: '100',
      SANDBOX_SPECS_FILE: writeSpecsFile(tmp, [FAKE_AGENT_SPEC]),
    },
    { logLines },
  );
  key = await app.keyFor('hook-owner');
});

afterAll(async () => {
  await app.stop();
  await receiver.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const trpcFor = (apiKey: string) =>
  createTRPCClient<AppRouter>({
    links: [httpBatchLink({ url: `${app.url}/trpc`, transformer, headers: () => ({ 'x-session-api-key': apiKey }) })],
  });

async function register(body: Record<string, unknown> = {}, as = key) {
  const created = await call(app, 'POST', '/api/v1/webhook-endpoints', { key: as, body: { url: `${receiver.url}/in`, ...body } });
  expect(created.status, created.text).toBe(201);
  secrets.push(created.body.secret);
  return created.body as { id: string; secret: string; url: string; event_types: string[] | null };
}

/** The endpoint's delivery of an event, once it is no longer pending. */
const settled = (endpointId: string, deliveryId: string) =>
  eventually(`delivery ${deliveryId} to settle`, async () => {
    const page = await call(app, 'GET', `/api/v1/webhook-endpoints/${endpointId}/deliveries`, { key });
    const found = page.body.items.find((d: { id: string }) => d.id === deliveryId);
    return found && found.status !== 'pending' ? found : null;
  });

describe('webhook endpoints', () => {
  it('registers an endpoint, shows its secret once and keeps it encrypted at rest', async () => {
    const endpoint = await register({ description: 'CI', event_types: ['conversation.execution_status_changed'] });
    expect(endpoint).toMatchObject({ url: `${receiver.url}/in`, event_types: ['conversation.execution_status_changed'] });
    expect(endpoint.secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    const read = await call(app, 'GET', `/api/v1/webhook-endpoints/${endpoint.id}`, { key });
    expect(read.status).toBe(200);
    expect(read.body).toEqual({
      id: endpoint.id,
      url: `${receiver.url}/in`,
      description: 'CI',
      event_types: ['conversation.execution_status_changed'],
      created_at: expect.any(String),
      updated_at: expect.any(String),
      previous_secret_expires_at: null,
    });
    const listed = await call(app, 'GET', '/api/v1/webhook-endpoints/search', { key });
    expect(listed.body.items.map((e: { id: string }) => e.id)).toContain(endpoint.id);
    expect(listed.text).not.toContain('whsec_');
    const stored = await app.rawCollection('webhook_endpoints').findOne({ _id: endpoint.id as never });
    expect(stored!.secret).toMatch(/^enc:v1:/);
    expect(JSON.stringify(stored)).not.toContain(endpoint.secret.slice('whsec_'.length));

    const updated = await call(app, 'PATCH', `/api/v1/webhook-endpoints/${endpoint.id}`, { key, body: { event_types: null } });
    expect(updated.body).toMatchObject({ event_types: null, description: 'CI' });
  });

  it('sends a test event signed as Standard Webhooks says, and keeps its history, over REST and tRPC', async () => {
    const given = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    const endpoint = await register({ secret: given });
    expect(endpoint.secret).toBe(given);
    receiver.setSecrets(given);
    const queued = await call(app, 'POST', `/api/v1/webhook-endpoints/${endpoint.id}/test`, { key });
    expect(queued.status).toBe(202);
    expect(queued.body).toMatchObject({ event_type: 'webhook.test', status: 'pending', attempt_count: 0 });
    const delivered = await settled(endpoint.id, queued.body.id);
    expect(delivered).toMatchObject({ status: 'delivered', attempt_count: 1, next_attempt_at: null });
    expect(delivered.attempts).toEqual([
      { attempt: 1, at: expect.any(String), status_code: 204, error: null, duration_ms: expect.any(Number) },
    ]);
    const receipt = receiver.receipts.find((r) => r.id === queued.body.event_id)!;
    expect(receipt).toMatchObject({ verified: true, attempt: 1 });
    expect(receipt.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(receipt.body).toEqual({
      id: queued.body.event_id,
      type: 'webhook.test',
      timestamp: expect.any(String),
      data: { endpoint_id: endpoint.id, message: expect.any(String) },
    });
    expect(delivered.payload).toEqual(receipt.body);

    const trpc = trpcFor(key);
    const viaTrpc = await trpc.webhookEndpoints.sendTest.mutate({ endpoint_id: endpoint.id });
    const history = await eventually('the tRPC test event to be delivered', async () => {
      const page = await trpc.webhookEndpoints.deliveries.query({ endpoint_id: endpoint.id, status: 'delivered' });
      return page.items.some((d) => d.id === viaTrpc.id) ? page : null;
    });
    expect(history.items.map((d) => d.event_id)).toEqual([viaTrpc.event_id, queued.body.event_id]); // newest first
    expect(receiver.receipts.find((r) => r.id === viaTrpc.event_id)?.verified).toBe(true);
  });

  it('retries a failing receiver on the schedule, then gives the delivery up', async () => {
    const endpoint = await register();
    receiver.setSecrets(endpoint.secret);
    receiver.mode = 'outage';
    try {
      const queued = await call(app, 'POST', `/api/v1/webhook-endpoints/${endpoint.id}/test`, { key });
      const failed = await settled(endpoint.id, queued.body.id);
      // WEBHOOK_RETRY_SCHEDULE=50ms,100ms: the first attempt and two retries.
      expect(failed).toMatchObject({ status: 'failed', attempt_count: 3, next_attempt_at: null, finished_at: expect.any(String) });
      expect(
        failed.attempts.map((a: { attempt: number; status_code: number; error: string }) => [a.attempt, a.status_code, a.error]),
      ).toEqual([
        [1, 503, 'The receiver answered HTTP 503'],
        [2, 503, 'The receiver answered HTTP 503'],
        [3, 503, 'The receiver answered HTTP 503'],
      ]);
      const times = failed.attempts.map((a: { at: string }) => Date.parse(a.at));
      expect(times[1] - times[0]).toBeGreaterThanOrEqual(50);
      expect(times[2] - times[1]).toBeGreaterThanOrEqual(100);
      const failedOnly = await call(app, 'GET', `/api/v1/webhook-endpoints/${endpoint.id}/deliveries?status=failed`, { key });
      expect(failedOnly.body.items.map((d: { id: string }) => d.id)).toEqual([queued.body.id]);
      expect(receiver.receipts.filter((r) => r.id === queued.body.event_id).map((r) => r.attempt)).toEqual([1, 2, 3]);
    } finally {
      receiver.mode = 'ok';
    }
  });

  it('rotates the secret: the new one signs, and the previous one too for a day', async () => {
    const endpoint = await register();
    const rotated = await call(app, 'POST', `/api/v1/webhook-endpoints/${endpoint.id}/rotate-secret`, { key, body: {} });
    expect(rotated.status).toBe(200);
    secrets.push(rotated.body.secret);
    expect(rotated.body.secret).not.toBe(endpoint.secret);
    expect(Date.parse(rotated.body.previous_secret_expires_at) - Date.now()).toBeGreaterThan(23 * 3600_000);
    receiver.setSecrets(endpoint.secret, rotated.body.secret);
    const queued = await call(app, 'POST', `/api/v1/webhook-endpoints/${endpoint.id}/test`, { key });
    await settled(endpoint.id, queued.body.id);
    const receipt = receiver.receipts.find((r) => r.id === queued.body.event_id)!;
    expect(String(receipt.headers['webhook-signature']).split(' ')).toHaveLength(2);
    // A receiver that knows either secret accepts it.
    for (const secret of [endpoint.secret, rotated.body.secret]) {
      const { Webhook } = await import('standardwebhooks');
      const headers = Object.fromEntries(Object.entries(receipt.headers).map(([k, v]) => [k, String(v)]));
      expect(new Webhook(secret).verify(JSON.stringify(receipt.body), headers)).toEqual(receipt.body);
    }
    const trpcRotated = await trpcFor(key).webhookEndpoints.rotateSecret.mutate({ endpoint_id: endpoint.id });
    secrets.push(trpcRotated.secret);
    expect(trpcRotated.secret).toMatch(/^whsec_/);
  });

  it('answers bad input with 422 over REST and BAD_REQUEST with field errors over tRPC', async () => {
    const bad: [string, Record<string, unknown>][] = [
      ['url', {}],
      ['url', { url: 'not a url' }],
      ['url', { url: 'ftp://127.0.0.1/in' }],
      ['url', { url: 'http://user:pw@127.0.0.1/in' }],
      ['url', { url: 'http://127.0.0.1/in#frag' }],
      ['event_types', { url: `${receiver.url}/in`, event_types: ['conversation.exploded'] }],
      ['secret', { url: `${receiver.url}/in`, secret: 'hunter2' }],
      ['secret', { url: `${receiver.url}/in`, secret: 'whsec_AAAA' }],
      ['description', { url: `${receiver.url}/in`, description: 'x'.repeat(501) }],
      ['surprise', { url: `${receiver.url}/in`, surprise: true }],
    ];
    for (const [field, body] of bad) {
      const answer = await call(app, 'POST', '/api/v1/webhook-endpoints', { key, body });
      expect(answer.status, JSON.stringify(body)).toBe(422);
      expect(JSON.stringify(answer.body.detail), JSON.stringify(body)).toContain(field === 'surprise' ? 'Extra inputs' : field);
    }
    const endpoint = await register();
    for (const [method, suffix, body] of [
      ['PATCH', '', { url: 'gopher://x' }],
      ['POST', '/rotate-secret', { secret: 'whsec_short' }],
      ['GET', '/deliveries?limit=0', undefined],
      ['GET', '/deliveries?status=lost', undefined],
    ] as const) {
      const answer = await call(app, method, `/api/v1/webhook-endpoints/${endpoint.id}${suffix}`, { key, ...(body ? { body } : {}) });
      expect(answer.status, `${method} ${suffix}`).toBe(422);
    }
    await expect(trpcFor(key).webhookEndpoints.create.mutate({ url: 'nope' })).rejects.toMatchObject({
      data: { code: 'BAD_REQUEST', fieldErrors: [expect.objectContaining({ path: ['url'] })] },
    });
    expect((await app.rawCollection('webhook_endpoints').find({ url: 'nope' }).toArray()).length).toBe(0);
  });

  it("keeps a user's endpoints, history and actions from everyone else (404)", async () => {
    const endpoint = await register();
    const other = await app.keyFor('hook-stranger');
    for (const [method, suffix, body] of [
      ['GET', '', undefined],
      ['PATCH', '', { description: 'mine now' }],
      ['DELETE', '', undefined],
      ['POST', '/rotate-secret', {}],
      ['POST', '/test', undefined],
      ['GET', '/deliveries', undefined],
    ] as const) {
      const answer = await call(app, method, `/api/v1/webhook-endpoints/${endpoint.id}${suffix}`, {
        key: other,
        ...(body ? { body } : {}),
      });
      expect(answer.status, `${method} ${suffix}`).toBe(404);
      expect(answer.body).toEqual({ detail: `Webhook endpoint ${endpoint.id} not found` });
    }
    expect((await call(app, 'GET', '/api/v1/webhook-endpoints/search', { key: other })).body.items).toEqual([]);
    await expect(trpcFor(other).webhookEndpoints.get.query({ endpoint_id: endpoint.id })).rejects.toMatchObject({
      data: { code: 'NOT_FOUND' },
    });
    expect((await call(app, 'GET', `/api/v1/webhook-endpoints/${endpoint.id}`, { key })).body.description).toBeNull();
  });

  it('stops delivering to a deleted endpoint', async () => {
    const doomed = await register();
    const kept = await register();
    receiver.setSecrets(doomed.secret, kept.secret);
    receiver.mode = (r) => (r.body.data.endpoint_id === doomed.id ? 503 : 204);
    try {
      const queued = await call(app, 'POST', `/api/v1/webhook-endpoints/${doomed.id}/test`, { key });
      await eventually('a failed attempt', async () => receiver.receipts.some((r) => r.id === queued.body.event_id));
      expect((await call(app, 'DELETE', `/api/v1/webhook-endpoints/${doomed.id}`, { key })).body).toEqual({ success: true });
      const attemptsAtDelete = receiver.receipts.filter((r) => r.id === queued.body.event_id).length;
      expect(await app.rawCollection('webhook_deliveries').countDocuments({ endpointId: doomed.id })).toBe(0);
      expect(await app.rawCollection('webhook_lanes').countDocuments({ endpointId: doomed.id })).toBe(0);
      // Work queued after the deletion goes through (the retries of the deleted one were due long before).
      const later = await call(app, 'POST', `/api/v1/webhook-endpoints/${kept.id}/test`, { key });
      await settled(kept.id, later.body.id);
      const retry = await call(app, 'POST', `/api/v1/webhook-endpoints/${kept.id}/test`, { key });
      await settled(kept.id, retry.body.id);
      // At most the attempt that was in flight when the delete answered.
      expect(receiver.receipts.filter((r) => r.id === queued.body.event_id).length).toBeLessThanOrEqual(attemptsAtDelete + 1);
      expect((await call(app, 'GET', `/api/v1/webhook-endpoints/${doomed.id}`, { key })).status).toBe(404);
    } finally {
      receiver.mode = 'ok';
    }
  });

  it('takes over a lane whose claimer died between claiming it and leasing it', async () => {
    const endpoint = await register();
    receiver.setSecrets(endpoint.secret);
    receiver.mode = 'hang';
    try {
      const queued = await call(app, 'POST', `/api/v1/webhook-endpoints/${endpoint.id}/test`, { key });
      await eventually('the first attempt, held open', async () => receiver.receipts.some((r) => r.id === queued.body.event_id));
      // While that attempt hangs, a replica takes the lane's next claim and dies before leasing it:
      // its claim's key stays, ten minutes old.
      const lane = (await app.rawCollection('webhook_lanes').findOne({ endpointId: endpoint.id }))!;
      expect(lane.claims).toBe(1);
      await app
        .rawCollection('claims')
        .insertOne({ _id: `webhook-lane:${lane._id}:${lane.incarnation}:1` as never, at: new Date(Date.now() - 600_000) });
      receiver.mode = 'ok';
      receiver.dropHeld();
      const delivered = await settled(endpoint.id, queued.body.id);
      expect(delivered).toMatchObject({ status: 'delivered', attempt_count: 2 });
      expect(delivered.attempts.map((a: { error: string | null }) => a.error)).toEqual(['The connection was reset', null]);
    } finally {
      receiver.mode = 'ok';
    }
  });

  it('tells of a sandbox paused, resumed and deleted, in that order, without its session key', async () => {
    const endpoint = await register({ event_types: ['sandbox.paused', 'sandbox.resumed', 'sandbox.deleted'] });
    receiver.setSecrets(endpoint.secret);
    const sandbox = (await call(app, 'POST', '/api/v1/sandboxes', { key })).body;
    await eventually(
      'the sandbox to run',
      async () => (await call(app, 'GET', `/api/v1/sandboxes?id=${sandbox.id}`, { key })).body[0]?.status === 'RUNNING',
    );
    for (const action of ['pause', 'resume']) {
      expect((await call(app, 'POST', `/api/v1/sandboxes/${sandbox.id}/${action}`, { key })).status).toBe(200);
      // Each event alone in its lane: the lane is emptied and removed, and the next one makes it anew.
      await eventually(`the ${action} event delivered and its lane removed`, async () => {
        const told = receiver.uniqueEvents().some((e) => e.data.id === sandbox.id && e.type === `sandbox.${action}d`);
        return told && (await app.rawCollection('webhook_lanes').countDocuments({ endpointId: endpoint.id })) === 0;
      });
    }
    expect((await call(app, 'DELETE', `/api/v1/sandboxes/${sandbox.id}`, { key })).status).toBe(200);
    const events = await eventually('the three sandbox events', async () => {
      const mine = receiver.uniqueEvents().filter((e) => e.data.id === sandbox.id);
      return mine.length === 3 ? mine : null;
    });
    expect(events.map((e) => [e.type, e.data.status])).toEqual([
      ['sandbox.paused', 'PAUSED'],
      ['sandbox.resumed', expect.stringMatching(/^(STARTING|RUNNING)$/)],
      ['sandbox.deleted', 'MISSING'],
    ]);
    for (const event of events) {
      expect(event.data).toMatchObject({ id: sandbox.id, created_by_user_id: 'hook-owner', session_api_key: null });
      expect(JSON.stringify(event)).not.toContain(sandbox.session_api_key);
    }
  });

  it('writes no secret to any log line', () => {
    expect(secrets.length).toBeGreaterThan(5);
    const leaks = logLines.filter((line) => secrets.some((s) => line.includes(s) || line.includes(s.slice('whsec_'.length))));
    expect(leaks).toEqual([]);
    expect(logLines.some((line) => line.includes('webhook attempt failed'))).toBe(true);
  });
});
