// Webhook endpoints: a user's (or, owned by ALL_USERS, the operator's) URLs with their event
// types and signing secret. The URL obeys the same SSRF rules as a git provider host a user
// names (WEBHOOK_HOSTS, checked again at every delivery); the secret is sealed with the
// SecretBox, shown only when created or rotated, and after a rotation the previous one keeps
// signing for a day so receivers can switch without dropping deliveries. Another user's
// endpoint behaves exactly as if absent.
import { ALL_USERS, endpointSecretContext, type Models, type WebhookEndpointRecord as StoredEndpoint } from '../../models/index.js';
import { pageFromExtra, pageOffset } from '../../contract/common.schema.js';
import type { WebhookEndpoint, WebhookEventType } from '../../contract/webhook-endpoints.schema.js';
import { randomBase62, type SecretBox } from '../crypto.js';
import { AppError } from '../errors.js';
import type { ProviderHostPolicy } from '../git/providers/provider-hosts.js';
import { newWebhookSecret } from './signing.js';

export type WebhookEndpointRecord = StoredEndpoint & { _id: string };

/** Endpoints one owner may have (each event is written once per listening endpoint). */
export const MAX_ENDPOINTS_PER_OWNER = 20;
/** How long a rotated-out secret still signs. */
export const PREVIOUS_SECRET_GRACE_MS = 24 * 3600_000;

export interface EndpointInput {
  url: string;
  description?: string | null | undefined;
  event_types?: WebhookEventType[] | null | undefined;
  secret?: string | undefined;
}

const notFound = (id: string) =>
  new AppError('NOT_FOUND', `Webhook endpoint ${id} not found`, { reason: 'webhook_endpoint_not_found', fields: { endpoint_id: id } });

export class WebhookEndpoints {
  constructor(
    private readonly models: Models,
    private readonly box: SecretBox,
    private readonly hosts: ProviderHostPolicy,
    private readonly now: () => number = Date.now,
  ) {}

  async create(ownerId: string, input: EndpointInput): Promise<WebhookEndpoint & { secret: string }> {
    this.checkUrl(input.url);
    if ((await this.models.WebhookEndpoint.countDocuments({ userId: ownerId })) >= MAX_ENDPOINTS_PER_OWNER) {
      throw new AppError('CONFLICT', `At most ${MAX_ENDPOINTS_PER_OWNER} webhook endpoints`, { reason: 'webhook_endpoint_limit' });
    }
    const id = `ep_${randomBase62(24)}`;
    const secret = input.secret ?? newWebhookSecret();
    const now = new Date(this.now());
    const record = {
      _id: id,
      userId: ownerId,
      url: input.url,
      description: input.description ?? null,
      eventTypes: input.event_types ?? [],
      secret: this.box.encrypt(secret, endpointSecretContext(id)),
      previousSecret: null,
      previousSecretUntil: null,
      createdAt: now,
      updatedAt: now,
    };
    await this.models.WebhookEndpoint.create(record);
    return { ...this.toApi(record), secret };
  }

  async search(ownerId: string, pageId: string | null | undefined, limit: number) {
    const offset = pageOffset(pageId);
    const records = await this.models.WebhookEndpoint.find({ userId: ownerId })
      .sort({ createdAt: 1, _id: 1 })
      .skip(offset)
      .limit(limit + 1)
      .lean();
    const { page, next_page_id } = pageFromExtra(records, offset, limit);
    return { items: page.map((r) => this.toApi(r)), next_page_id };
  }

  async get(ownerId: string, id: string): Promise<WebhookEndpoint> {
    return this.toApi(await this.owned(ownerId, id));
  }

  async update(ownerId: string, id: string, input: Partial<EndpointInput>): Promise<WebhookEndpoint> {
    if (input.url !== undefined) this.checkUrl(input.url);
    const set: Record<string, unknown> = { updatedAt: new Date(this.now()) };
    if (input.url !== undefined) set.url = input.url;
    if (input.description !== undefined) set.description = input.description;
    if (input.event_types !== undefined) set.eventTypes = input.event_types ?? [];
    const record = await this.models.WebhookEndpoint.findOneAndUpdate({ _id: id, userId: ownerId }, { $set: set }, { new: true }).lean();
    if (!record) throw notFound(id);
    return this.toApi(record);
  }

  /** The endpoint and everything queued for it: no delivery starts after this answers. */
  async delete(ownerId: string, id: string): Promise<void> {
    if ((await this.models.WebhookEndpoint.deleteOne({ _id: id, userId: ownerId })).deletedCount === 0) throw notFound(id);
    await this.models.WebhookLane.deleteMany({ endpointId: id });
    await this.models.WebhookDelivery.deleteMany({ endpointId: id });
  }

  /** A new secret (generated, or the caller's); the current one keeps signing beside it for a day. */
  async rotateSecret(ownerId: string, id: string, given?: string): Promise<WebhookEndpoint & { secret: string }> {
    const current = await this.owned(ownerId, id);
    const secret = given ?? newWebhookSecret();
    const now = this.now();
    const record = await this.models.WebhookEndpoint.findOneAndUpdate(
      { _id: id, userId: ownerId, secret: current.secret },
      {
        $set: {
          secret: this.box.encrypt(secret, endpointSecretContext(id)),
          previousSecret: current.secret,
          previousSecretUntil: new Date(now + PREVIOUS_SECRET_GRACE_MS),
          updatedAt: new Date(now),
        },
      },
      { new: true },
    ).lean();
    // Rotated by another request meanwhile: that rotation stands, this one is refused as stale.
    if (!record) throw new AppError('CONFLICT', `The secret of ${id} was rotated meanwhile; retry`);
    return { ...this.toApi(record), secret };
  }

  /** The owner's endpoint record, or NOT_FOUND. */
  async owned(ownerId: string, id: string): Promise<WebhookEndpointRecord> {
    const record = await this.models.WebhookEndpoint.findOne({ _id: id, userId: ownerId }).lean();
    if (!record) throw notFound(id);
    return record;
  }

  /** Whoever owns it (the delivery worker); null once deleted. */
  async byId(id: string): Promise<WebhookEndpointRecord | null> {
    return this.models.WebhookEndpoint.findOne({ _id: id }).lean();
  }

  /** The endpoints that hear this user's events of this type: theirs and the operator's. */
  async listening(userId: string, type: WebhookEventType): Promise<WebhookEndpointRecord[]> {
    const records = await this.models.WebhookEndpoint.find({ userId: { $in: [userId, ALL_USERS] } })
      .sort({ createdAt: 1, _id: 1 })
      .lean();
    return records.filter((r) => r.eventTypes.length === 0 || r.eventTypes.includes(type));
  }

  /** The secrets that sign a delivery now: the current one, and a rotated-out one within its grace. */
  signingSecrets(record: WebhookEndpointRecord): string[] {
    const context = endpointSecretContext(record._id);
    const secrets = [this.box.decrypt(record.secret, context)];
    if (record.previousSecret && record.previousSecretUntil && record.previousSecretUntil.getTime() > this.now()) {
      secrets.push(this.box.decrypt(record.previousSecret, context));
    }
    return secrets;
  }

  private checkUrl(url: string): void {
    const { origin, host } = new URL(url);
    if (!this.hosts.hostAllowed(origin)) {
      throw new AppError('UNPROCESSABLE_CONTENT', `Webhook URL host ${host} is not allowed here (WEBHOOK_HOSTS)`, {
        reason: 'webhook_url_not_allowed',
        fields: { field: 'url' },
      });
    }
  }

  private toApi(record: Omit<WebhookEndpointRecord, 'eventTypes'> & { eventTypes: string[] }): WebhookEndpoint {
    const until = record.previousSecretUntil;
    return {
      id: record._id,
      url: record.url,
      description: record.description ?? null,
      event_types: record.eventTypes.length > 0 ? (record.eventTypes as WebhookEventType[]) : null,
      created_at: record.createdAt.toISOString(),
      updated_at: record.updatedAt.toISOString(),
      previous_secret_expires_at: until && until.getTime() > this.now() ? until.toISOString() : null,
    };
  }
}
