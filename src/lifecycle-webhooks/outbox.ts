// The outbox: an emitted lifecycle event becomes one delivery record per endpoint that hears
// it, written at once (durable across restarts; sent later by whichever replica claims its
// lane, lanes.ts). Each delivery takes the next place (`seq`) in its lane (endpoint +
// resource): a unique index makes two writers racing for one place retry, and in this process
// the events of one resource are written one after another, so a lane's order is the order
// the changes were emitted in.
import { isDuplicateKeyError } from '../errors.js';
import type { Models } from '../../models/index.js';
import type { WebhookEventType } from '../../contract/webhook-endpoints.schema.js';
import { randomBase62 } from '../crypto.js';
import { KeyedQueue } from '../keyed-queue.js';
import type { Logger } from '../logger.js';
import type { LifecycleEvent, LifecycleEvents } from './lifecycle-events.js';
import type { WebhookEndpoints } from './endpoints.js';

export interface OutboxMessage {
  eventId: string;
  type: WebhookEventType;
  resourceKey: string;
  /** The JSON text every attempt sends (and signs). */
  body: string;
  createdAt: Date;
}

const PLACE_RETRIES = 8;

export const newEventId = () => `msg_${randomBase62(27)}`;
export const laneId = (endpointId: string, resourceKey: string) => `${endpointId}|${resourceKey}`;
export const deliveryId = (eventId: string, endpointId: string) => `${eventId}.${endpointId}`;

/** The body of every delivery: Standard Webhooks' {type, timestamp, data}, with the event's id. */
export function messageFor(type: WebhookEventType, resourceKey: string, data: Record<string, unknown>, at: Date): OutboxMessage {
  const eventId = newEventId();
  return {
    eventId,
    type,
    resourceKey,
    body: JSON.stringify({ id: eventId, type, timestamp: at.toISOString(), data }),
    createdAt: at,
  };
}

export class WebhookOutbox implements LifecycleEvents {
  /** Writes of one resource's events, one after another (their places in each lane). */
  private readonly order = new KeyedQueue();

  constructor(
    private readonly models: Models,
    private readonly endpoints: WebhookEndpoints,
    private readonly log: Logger,
    /** Tells this process's dispatcher that work was added. */
    private readonly kick: () => void,
    private readonly now: () => number = Date.now,
  ) {}

  async listens(userId: string, type: LifecycleEvent['type']): Promise<boolean> {
    try {
      return (await this.endpoints.listening(userId, type)).length > 0;
    } catch {
      return true; // emit() then tries, and logs what it could not store
    }
  }

  async emit(event: LifecycleEvent): Promise<void> {
    try {
      const listening = await this.endpoints.listening(event.userId, event.type);
      if (listening.length === 0) return;
      const resourceKey = `${event.resource.kind}:${event.resource.id}`;
      const message = messageFor(event.type, resourceKey, event.data, new Date(this.now()));
      await this.order.run(resourceKey, () => Promise.all(listening.map((endpoint) => this.enqueue(endpoint, message))));
      this.kick();
    } catch (error) {
      // The state change stands; only its notification is lost (the log says which).
      this.log.warn({ err: error, type: event.type, resource: event.resource, userId: event.userId }, 'a lifecycle event was not stored');
    }
  }

  /** One message for one endpoint: the lane's next place, and the lane woken. Returns the delivery's id. */
  async enqueue(endpoint: { _id: string; userId: string }, message: OutboxMessage): Promise<string> {
    const { WebhookDelivery, WebhookLane } = this.models;
    const endpointId = endpoint._id;
    const id = deliveryId(message.eventId, endpointId);
    for (let attempt = 1; ; attempt++) {
      const last = await WebhookDelivery.findOne({ endpointId, resourceKey: message.resourceKey }, { seq: 1 }).sort({ seq: -1 }).lean();
      try {
        await WebhookDelivery.create({
          _id: id,
          eventId: message.eventId,
          eventType: message.type,
          endpointId,
          resourceKey: message.resourceKey,
          seq: (last?.seq ?? 0) + 1,
          body: message.body,
          status: 'pending',
          attemptCount: 0,
          nextAttemptAt: message.createdAt,
          attempts: [],
          createdAt: message.createdAt,
          finishedAt: null,
        });
        break;
      } catch (error) {
        // Another replica took that place first: the next one.
        if (!isDuplicateKeyError(error) || attempt >= PLACE_RETRIES) throw error;
      }
    }
    await WebhookLane.updateOne(
      { _id: laneId(endpointId, message.resourceKey) },
      {
        $min: { dueAt: new Date(this.now()) },
        $inc: { wakes: 1 },
        $setOnInsert: {
          endpointId,
          userId: endpoint.userId,
          resourceKey: message.resourceKey,
          incarnation: randomBase62(16),
          claims: 0,
          leaseOwner: null,
          leaseExpiresAt: null,
        },
      },
      { upsert: true },
    );
    return id;
  }
}
