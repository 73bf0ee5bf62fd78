// Works one claimed lane (lanes.ts): sends its pending deliveries lowest place first, each
// only after the one before it was delivered or given up (in order per resource), and stops
// at the first failure, leaving the lane due at that delivery's next attempt. The retry
// schedule (WEBHOOK_RETRY_SCHEDULE) is the wait after each failed attempt; past its end the
// delivery is given up. Every attempt has a number decided by inserting its key
// (src/db/claims.ts), taken before anything is sent: two replicas never send the same attempt,
// and an attempt cut short by a crash is followed by the next number (at least once; the
// event id lets the receiver drop the repeat).
import type { Models, WebhookDeliveryRecord } from '../../models/index.js';
import type { DecisionClaims } from '../db/claims.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { WebhookEndpoints, WebhookEndpointRecord } from './endpoints.js';
import type { Lane } from './lanes.js';
import type { WebhookSender } from './sender.js';
import { signedHeaders } from './signing.js';

type Delivery = WebhookDeliveryRecord & { _id: string };

export interface LaneWorkerDeps {
  models: Models;
  endpoints: WebhookEndpoints;
  sender: WebhookSender;
  claims: DecisionClaims;
  /** The wait after the 1st, 2nd, … failed attempt; its length + 1 is the number of attempts. */
  retryScheduleMs: readonly number[];
  leaseMs: number;
  metrics: Metrics;
  log: Logger;
  now?: () => number;
}

/** Attempt numbers passed over at most, when earlier workers took (and died in) the next ones. */
const MAX_SKIPPED_ATTEMPTS = 16;

export class LaneWorker {
  private readonly now: () => number;

  constructor(private readonly deps: LaneWorkerDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** The lease queue's worker: returns when the lane is empty, waits for a retry, or is no longer ours. */
  async run(lane: Lane, owner: string): Promise<void> {
    const { WebhookDelivery, WebhookLane } = this.deps.models;
    let wakes = lane.wakes;
    for (;;) {
      const endpoint = await this.deps.endpoints.byId(lane.endpointId);
      // Deleted: its deliveries went with it.
      if (!endpoint) return void (await WebhookLane.deleteOne({ _id: lane._id }));
      const head = await WebhookDelivery.findOne({ endpointId: lane.endpointId, resourceKey: lane.resourceKey, status: 'pending' })
        .sort({ seq: 1 })
        .lean();
      if (!head) {
        // Empty, unless a delivery was added since the lane was last read: then look again.
        if ((await WebhookLane.deleteOne({ _id: lane._id, leaseOwner: owner, wakes })).deletedCount > 0) return;
        const current = await WebhookLane.findOne({ _id: lane._id }, { leaseOwner: 1, wakes: 1 }).lean();
        if (!current || current.leaseOwner !== owner) return;
        wakes = current.wakes;
        continue;
      }
      const now = new Date(this.now());
      if (head.nextAttemptAt && head.nextAttemptAt > now) {
        await WebhookLane.updateOne(
          { _id: lane._id, leaseOwner: owner },
          { $set: { dueAt: head.nextAttemptAt, leaseOwner: null, leaseExpiresAt: null } },
        );
        return;
      }
      // Still ours (and renewed for this attempt), or another replica has taken the lane over.
      const leaseEnd = new Date(now.getTime() + this.deps.leaseMs);
      const held = await WebhookLane.updateOne(
        { _id: lane._id, leaseOwner: owner },
        { $set: { leaseExpiresAt: leaseEnd, dueAt: leaseEnd } },
      );
      if (held.matchedCount === 0 || !(await this.attempt(endpoint, head))) return;
    }
  }

  /** One attempt, recorded; false when no attempt number could be taken (the lane is left to lapse and be claimed again). */
  private async attempt(endpoint: WebhookEndpointRecord, delivery: Delivery): Promise<boolean> {
    const { models, claims, sender, retryScheduleMs, metrics, log } = this.deps;
    let attempt = delivery.attemptCount + 1;
    while (!(await claims.claim(`webhook-attempt:${delivery._id}:${attempt}`))) {
      if (attempt - delivery.attemptCount >= MAX_SKIPPED_ATTEMPTS) return false;
      attempt++;
    }
    await models.WebhookDelivery.updateOne({ _id: delivery._id }, { $max: { attemptCount: attempt } });
    const at = new Date(this.now());
    const headers = signedHeaders(this.deps.endpoints.signingSecrets(endpoint), delivery.eventId, delivery.body, attempt, at);
    const result = await sender.post(endpoint.url, headers, delivery.body);
    const finishedAt = new Date(this.now());
    const record = { attempt, at, statusCode: result.statusCode, error: result.error, durationMs: result.durationMs };
    const givenUp = !result.ok && attempt > retryScheduleMs.length;
    const set = result.ok
      ? { status: 'delivered', finishedAt, nextAttemptAt: null }
      : givenUp
        ? { status: 'failed', finishedAt, nextAttemptAt: null }
        : { nextAttemptAt: new Date(finishedAt.getTime() + retryScheduleMs[attempt - 1]!) };
    // Only while pending: a delivery deleted with its endpoint meanwhile stays deleted.
    await models.WebhookDelivery.updateOne({ _id: delivery._id, status: 'pending' }, { $set: set, $push: { attempts: record } });
    metrics.webhookAttempts.inc({ outcome: result.ok ? 'delivered' : givenUp ? 'given_up' : 'failed' });
    if (!result.ok) {
      log.info({ deliveryId: delivery._id, endpointId: endpoint._id, attempt, error: result.error, givenUp }, 'webhook attempt failed');
    }
    return true;
  }
}
