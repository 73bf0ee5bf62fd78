// What the domain tells the lifecycle webhooks (src/lifecycle-webhooks/): a start task, a
// conversation or a sandbox changed, with the resource as the API returns it. The code that
// changes the state emits right after its write; the outbox behind this interface stores the
// event durably for every endpoint that wants it, and delivery happens later, on any replica.
// Defined here so the services (sandboxes and their lifecycle passes) can emit too.
import type { WebhookEventType } from '../../contract/webhook-endpoints.schema.js';

export type LifecycleResourceKind = 'start_task' | 'app_conversation' | 'sandbox';

export interface LifecycleEvent {
  type: WebhookEventType;
  /** The resource's owner: their endpoints (and the operator's) hear it. */
  userId: string;
  /** Events of one resource reach each endpoint in the order they were emitted. */
  resource: { kind: LifecycleResourceKind; id: string };
  /** The resource as the API returns it, credentials left out (see redactedForEvent). */
  data: Record<string, unknown>;
}

export interface LifecycleEvents {
  /** Stores the event for delivery. Never throws: a failure is logged (the state change stands). */
  emit(event: LifecycleEvent): Promise<void>;
  /** Whether an endpoint would receive events of `type` about `userId`'s resources now (true when that cannot be read). */
  listens(userId: string, type: LifecycleEvent['type']): Promise<boolean>;
}

export const NO_LIFECYCLE_EVENTS: LifecycleEvents = { emit: async () => {}, listens: async () => false };

/**
 * A resource as an event carries it: the sandbox's session key (which controls its agent
 * server) is not sent to receivers, nor the VS Code URL's token; receivers that need them
 * read the resource through the API.
 */
export function redactedForEvent<T extends Record<string, unknown>>(resource: T): T {
  const copy: Record<string, unknown> = { ...resource };
  if ('session_api_key' in copy) copy.session_api_key = null;
  if (Array.isArray(copy.exposed_urls)) {
    copy.exposed_urls = (copy.exposed_urls as { name: string; url: string }[]).map((u) => ({ ...u, url: u.url.replace(/\?.*$/, '') }));
  }
  return copy as T;
}
