// What the webhook-endpoint procedures call (routers/webhook-endpoints.router.ts): the
// endpoints themselves (endpoints.ts), their delivery history, and a test event, which goes
// through the outbox like any other event (signed, retried, in the history) to that endpoint
// alone, at most WEBHOOK_TESTS_PER_MINUTE per owner (each is a delivery stored and sent like a
// real one: unlimited, they would fill the outbox every user's events go through). Owner ids
// are the caller's; the operator CLI passes ALL_USERS.
import type { Models, WebhookDeliveryRecord } from '../../models/index.js';
import { pageFromExtra, pageOffset } from '../../contract/common.schema.js';
import type { WebhookDelivery, WebhookEventType } from '../../contract/webhook-endpoints.schema.js';
import type { EndpointInput, WebhookEndpoints } from './endpoints.js';
import { messageFor, type WebhookOutbox } from './outbox.js';
import { AppError } from '../errors.js';
import { TokenBuckets } from '../rate-limit.js';

type DeliveryStatus = WebhookDelivery['status'];

export class WebhookEndpointsService {
  /** Test events per owner: a bucket of testsPerMinute, refilled over a minute (per replica, as the request limits). */
  private readonly tests: TokenBuckets;

  constructor(
    private readonly models: Models,
    private readonly endpoints: WebhookEndpoints,
    private readonly outbox: WebhookOutbox,
    /** Tells this process's dispatcher that work was added. */
    private readonly kick: () => void,
    testsPerMinute: number,
    private readonly now: () => number = Date.now,
  ) {
    this.tests = new TokenBuckets(testsPerMinute, 60_000, now);
  }

  search(ownerId: string, pageId: string | null | undefined, limit: number) {
    return this.endpoints.search(ownerId, pageId, limit);
  }

  get(ownerId: string, id: string) {
    return this.endpoints.get(ownerId, id);
  }

  create(ownerId: string, input: EndpointInput) {
    return this.endpoints.create(ownerId, input);
  }

  update(ownerId: string, id: string, input: Partial<EndpointInput>) {
    return this.endpoints.update(ownerId, id, input);
  }

  delete(ownerId: string, id: string) {
    return this.endpoints.delete(ownerId, id);
  }

  rotateSecret(ownerId: string, id: string, secret?: string) {
    return this.endpoints.rotateSecret(ownerId, id, secret);
  }

  /** An endpoint's deliveries, newest first, optionally of one status. */
  async deliveries(
    ownerId: string,
    endpointId: string,
    filter: { status?: DeliveryStatus | null | undefined; page_id?: string | null | undefined; limit: number },
  ): Promise<{ items: WebhookDelivery[]; next_page_id: string | null }> {
    await this.endpoints.owned(ownerId, endpointId);
    const offset = pageOffset(filter.page_id);
    const records = await this.models.WebhookDelivery.find({ endpointId, ...(filter.status ? { status: filter.status } : {}) })
      .sort({ createdAt: -1, _id: -1 })
      .skip(offset)
      .limit(filter.limit + 1)
      .lean();
    const { page, next_page_id } = pageFromExtra(records, offset, filter.limit);
    return { items: page.map(toDelivery), next_page_id };
  }

  /** Queues a webhook.test event for this endpoint only; the answer is its delivery, pending. */
  async sendTest(ownerId: string, endpointId: string): Promise<WebhookDelivery> {
    const endpoint = await this.endpoints.owned(ownerId, endpointId);
    const taken = this.tests.take(ownerId);
    if (!taken.ok) {
      throw new AppError('TOO_MANY_REQUESTS', `Too many test events: at most ${this.tests.capacity} a minute`, {
        reason: 'rate_limited',
        retryAfterSeconds: taken.retryAfterSeconds,
      });
    }
    const type: WebhookEventType = 'webhook.test';
    const data = { endpoint_id: endpointId, message: 'A test event from agent-control-plane' };
    // Each test event is a lane of its own: nothing orders it against other events.
    const message = messageFor(type, 'test', data, new Date(this.now()));
    message.resourceKey = `test:${message.eventId}`;
    const id = await this.outbox.enqueue(endpoint, message);
    this.kick();
    const record = await this.models.WebhookDelivery.findOne({ _id: id }).lean();
    return toDelivery(record!);
  }
}

function toDelivery(record: WebhookDeliveryRecord & { _id: string }): WebhookDelivery {
  return {
    id: record._id,
    event_id: record.eventId,
    event_type: record.eventType as WebhookEventType,
    status: record.status,
    attempt_count: record.attemptCount,
    next_attempt_at: record.status === 'pending' && record.nextAttemptAt ? record.nextAttemptAt.toISOString() : null,
    created_at: record.createdAt.toISOString(),
    finished_at: record.finishedAt ? record.finishedAt.toISOString() : null,
    payload: JSON.parse(record.body) as Record<string, unknown>,
    attempts: record.attempts.map((a) => ({
      attempt: a.attempt,
      at: a.at.toISOString(),
      status_code: a.statusCode ?? null,
      error: a.error ?? null,
      duration_ms: a.durationMs,
    })),
  };
}
