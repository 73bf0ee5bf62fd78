// The lifecycle webhooks' payloads (the service's docs/webhooks.md): what a receiver gets in the
// body of each signed POST, typed by event type, after it has verified the signature (with any
// Standard Webhooks library, e.g. npm standardwebhooks). `data` is the resource as the API
// returns it, without the sandbox's session key.
import type { AppConversation, AppConversationStartTask, RouterOutputs, SandboxInfo } from './types.js';

/**
 * Every event type, in the service's order (test/client/package.test.ts keeps it equal to the
 * service's list).
 */
export const WEBHOOK_EVENT_TYPES = [
  'start_task.status_changed',
  'conversation.status_changed',
  'conversation.execution_status_changed',
  'conversation.budget_reached',
  'conversation.deleted',
  'sandbox.paused',
  'sandbox.resumed',
  'sandbox.deleted',
  'webhook.test',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

interface Envelope<Type extends WebhookEventType, Data> {
  /** The event's id (also the webhook-id header): the same on every retry, for de-duplication. */
  id: string;
  type: Type;
  /** When the change happened (ISO 8601). */
  timestamp: string;
  data: Data;
}

/** A start task entered a status (its creation too, WORKING). */
export type StartTaskStatusChangedEvent = Envelope<'start_task.status_changed', AppConversationStartTask>;
/**
 * A conversation's start ended (READY or ERROR), its agent server reported an execution status
 * (each in order), it reached its budget, or it was deleted (as it was just before).
 */
export type ConversationEvent = Envelope<
  'conversation.status_changed' | 'conversation.execution_status_changed' | 'conversation.budget_reached' | 'conversation.deleted',
  AppConversation
>;
/** A sandbox was paused (by its owner or a policy: status_reason says which), resumed or deleted. */
export type SandboxEvent = Envelope<'sandbox.paused' | 'sandbox.resumed' | 'sandbox.deleted', SandboxInfo>;
/** Sent by "send a test event" (sendTest / POST …/test). */
export type WebhookTestEvent = Envelope<'webhook.test', { endpoint_id: string; message: string }>;

/** Any body the service sends; narrow on `type`. */
export type WebhookEvent = StartTaskStatusChangedEvent | ConversationEvent | SandboxEvent | WebhookTestEvent;

export type WebhookEndpoint = RouterOutputs['webhookEndpoints']['get'];
export type WebhookEndpointWithSecret = RouterOutputs['webhookEndpoints']['create'];
export type WebhookDelivery = RouterOutputs['webhookEndpoints']['deliveries']['items'][number];
